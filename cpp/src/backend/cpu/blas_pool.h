// NumPy's OpenBLAS on hetnn's side of the CPUs. OpenBLAS's own workers spin for about 0.1 s after every threaded
// call; on a machine with few CPUs the next hetnn op then shares its cores with them (a 784x512x128 matmul right
// after a NumPy one ran 3x slower than alone on 2 vCPUs). OpenBLAS 0.3.27+ lets a program run its threaded sections
// on the program's threads (openblas_set_threads_callback_function): this pool does, spinning as long as OpenBLAS's
// own would (NumPy keeps its quick wake-ups) except that the start of any hetnn CPU op sends its spinning workers to
// sleep at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hetnn::blas_pool {

struct Library {
  std::string path;    // the OpenBLAS shared object
  std::string symbols;  // its symbols' prefix and suffix, e.g. "scipy_openblas_...64_"
  bool shared = false; // its threaded sections run on this pool now
  std::string why;     // when not shared: the reason
};

// Every OpenBLAS loaded in the process now (pthreads builds with the callback API) gets this pool (on) or its own
// threads back (off). Libraries loaded later are found at the next call.
std::vector<Library> share(bool on);
// The pool's workers spin 2^e ticks after a call, as OpenBLAS's do (share() reads OPENBLAS_THREAD_TIMEOUT; the
// measuring commands shorten it for a run). e in 4..30 sets it; returns the exponent before (any other e: only that).
int spin_exponent(int e);
// What share() did last (empty before the first call).
std::vector<Library> libraries();

struct Stats {
  long long calls = 0;    // threaded OpenBLAS sections run here
  long long jobs = 0;     // their jobs
  long long quieted = 0;  // times a hetnn op sent spinning workers to sleep
  long long wakeups = 0;  // times a call had to wake a sleeping worker
  long long on_openmp = 0;  // calls run on hetnn's OpenMP team (warm from a hetnn op)
  long long openmp_preempted = 0;  // of those, calls with a thread descheduled for most of its job
  long long openmp_avoided = 0;    // calls the workers took while the team's threads were being held back
  long long thread_failures = 0;   // calls that ran on the team because no worker thread could be started
  int workers = 0;        // threads of the pool
  int spinning = 0;       // workers spinning now
};
Stats stats();

// What OpenBLAS calls (openblas_threads_callback): dojob(i, jobdata + i * elsize, dd) for every i < n, all at once;
// returns when all are done. Exposed for the unit tests.
using DoJob = void (*)(int, void*, int);
void run(int sync, DoJob dojob, int n, std::size_t elsize, void* jobdata, int dd);

// The unit tests' stand-in for a process at its thread limit: no new worker thread starts while on.
void refuse_threads_for_tests(bool on);

// Called at the start of every CPU op (and OpenCL commands on CPU devices): workers still spinning after a BLAS call
// go to sleep. One relaxed load when none spin.
void quiet();
// Called at the end of every CPU op: hetnn's OpenMP team is warm for a while, and a BLAS call then runs on it.
void openmp_used();

}  // namespace hetnn::blas_pool
