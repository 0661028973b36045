// Helpers of the CPU device's own loops (max_pool_cpu.cpp, nn_cpu.cpp).
#pragma once
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/ops.h"

// A function compiled for the x86-64 levels v4 (AVX-512), v3 (AVX2, FMA) and baseline, the best picked at load time
// (the library itself is built for baseline x86-64). Levels, not CPU names: GCC picks an "arch=<cpu>" clone only
// on that very CPU model (__builtin_cpu_is), so "arch=skylake-avx512" and "arch=haswell" left every AMD EPYC and
// every newer Xeon on the SSE2 baseline (measured on Zen 4: ReLU's backward at 1.1 ns an element). Put it on plain
// functions whose loops should vectorise wide; OpenMP regions stay outside (an outlined parallel body does not
// inherit the clone's target).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HETNN_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define HETNN_CLONES
#endif

namespace hetnn {

// Elements below which an element-wise op (built-in or a user kernel) runs on the calling thread, without a
// parallel region.
constexpr std::int64_t kElementwiseParallelMin = 1 << 15;

// Inputs are prefetched kPrefetchAhead bytes before they are read. The hardware's prefetchers alone left an exp of
// 256 MiB reading memory and computing in turn (an Emerald Rapids VM: 22 ms = the copy's 13 + the arithmetic's 9;
// with prefetcht0 4 KiB ahead, spread over the loop, 13.5; prefetchnta did nothing there). Costly loops prefetch as
// they go (prefetch_block); the others a chunk at a time (prefetch_lines), and only when their arrays are beyond
// the last-level cache: there an add of 256 MiB ran 1.09x and a negation 1.27x faster, at 16 MiB (in the cache)
// an add 0.89x.
constexpr std::size_t kPrefetchAhead = 4096;

// Prefetches bytes [from, to) of p into the second-level cache, a line at a time (a prefetch never faults).
inline void prefetch_lines(const void* p, std::size_t from, std::size_t to) {
  const char* c = static_cast<const char*>(p);
  for (std::size_t o = from; o < to; o += 64) __builtin_prefetch(c + o, 0, 2);
}

// Prefetches into the first-level cache the kPrefetchAhead bytes past the 64 elements at p that a costly loop
// takes next (the chunk's lines at once arrived too late for an exp: 18 ms at 256 MiB, spread 13.5). Past an
// array's end the lines are unused.
template <class T>
inline void prefetch_block(const T* p) {
  const char* c = reinterpret_cast<const char*>(p) + kPrefetchAhead;
  for (std::size_t o = 0; o < 64 * sizeof(T); o += 64) __builtin_prefetch(c + o, 0, 3);
}

// The activations on the CPU device, written once (the matmul epilogue where oneDNN has no post-op for a dtype, and
// the training ops). ReLU keeps NaN (NaN < 0 is false), as PyTorch does.
template <class T>
inline __attribute__((always_inline)) T activate(T x, Activation a) {
  return a == Activation::relu      ? (x < T(0) ? T(0) : x)
         : a == Activation::sigmoid ? T(1) / (T(1) + std::exp(-x))
         : a == Activation::tanh    ? std::tanh(x)
                                    : x;
}

// Splits [0, n) evenly over the OpenMP threads and runs fn(begin, end) on each share; on the calling thread alone
// when n < min_parallel (waking the other threads costs more than small loops take).
template <class Fn>
void parallel_ranges(std::int64_t n, Fn&& fn, std::int64_t min_parallel = 0) {
  if (n < min_parallel) {
    if (n > 0) fn(std::int64_t{0}, n);
    return;
  }
#pragma omp parallel
  {
    const std::int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    const std::int64_t b = n * t / nt, e = n * (t + 1) / nt;
    if (b < e) fn(b, e);
  }
}

// Splits [0, n) into pieces of `grain` and hands them to the OpenMP threads as each finishes the last one
// (dynamic): a thread its VM preempts, or a neighbour's load shares, holds back only its piece, not an even share
// of the whole (an even split waits for its slowest thread). For order-free loops (element-wise ops); on the calling
// thread alone when n < min_parallel.
template <class Fn>
void parallel_pieces(std::int64_t n, std::int64_t grain, Fn&& fn, std::int64_t min_parallel = 0) {
  if (n < min_parallel) {
    if (n > 0) fn(std::int64_t{0}, n);
    return;
  }
  const std::int64_t pieces = (n + grain - 1) / grain;
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t p = 0; p < pieces; ++p) fn(p * grain, std::min(n, (p + 1) * grain));
}

}  // namespace hetnn
