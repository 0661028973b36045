// A spinning thread's pause between two looks at what it waits for.
#pragma once
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace hetnn {

// Not sched_yield: under the EEVDF scheduler (Linux 6.6+) every yield moves the thread's deadline a whole slice
// later, so a worker that yielded through its spin waited out a busy neighbour's slices (2-14 ms) before its job ran,
// where OpenBLAS's own workers, which spin on nops, ran at once.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace hetnn
