#include "backend/cpu/cpu_threads.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "backend/cpu/blas_pool.h"
#include "core/errors.h"
#include "core/fork.h"
#include "core/warn.h"

namespace hetnn::cpu_threads {

namespace {

// Read once, before any setting: what OpenMP would use (OMP_NUM_THREADS or the CPUs of the affinity mask).
const int k_default = omp_get_max_threads();
std::atomic<int> g_threads{0};           // 0: OpenMP's default
std::atomic<unsigned> g_generation{0};   // bumped by set(): each thread re-applies once
thread_local unsigned t_generation = 0;

// At most this many threads per op: OMP_NUM_THREADS=100000 made libgomp segfault starting a team, and beyond a few
// threads per CPU an op only waits for its own threads.
const int k_max = std::max(1024, 4 * static_cast<int>(std::thread::hardware_concurrency()));

}  // namespace

int max_threads() { return k_max; }

void set(long long n) {
  if (n < 0 || n > k_max)
    throw ValueError("set_num_threads: n must be in 1.." + std::to_string(k_max) +
                     " (None or 0: OpenMP's default), got " + std::to_string(n));
  g_threads.store(static_cast<int>(n), std::memory_order_relaxed);
  g_generation.fetch_add(1, std::memory_order_release);
  apply();
}

void apply() {
  blas_pool::quiet();  // OpenBLAS workers of hetnn's pool still spinning would take this op's cores
  if (forked_child()) {  // libgomp's pool did not survive fork(): one thread, which needs no pool
    thread_local bool single = false;
    if (!single) omp_set_num_threads(1);
    single = true;
    return;
  }
  // oneDNN's kernels split their work for the team they ask for; with dynamic adjustment (OMP_DYNAMIC=true) libgomp
  // may start fewer threads (it subtracts the 15-minute load average), and parts of the output were never written.
  // The setting is per thread: turned off on the threads that run hetnn's CPU ops.
  if (omp_get_dynamic()) omp_set_dynamic(0);
  const unsigned gen = g_generation.load(std::memory_order_acquire);
  if (gen != t_generation) {
    t_generation = gen;
    const int n = g_threads.load(std::memory_order_relaxed);
    omp_set_num_threads(n > 0 ? n : k_default);
  }
  if (omp_get_max_threads() > k_max) {  // from OMP_NUM_THREADS or a direct omp_set_num_threads
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      warn("OpenMP is set to " + std::to_string(omp_get_max_threads()) + " threads (OMP_NUM_THREADS?); hetnn's CPU "
           "ops use at most " + std::to_string(k_max));
    omp_set_num_threads(k_max);
  }
}

int get() {
  apply();
  return omp_get_max_threads();
}

}  // namespace hetnn::cpu_threads
