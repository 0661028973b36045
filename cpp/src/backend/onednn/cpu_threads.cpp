#include "backend/onednn/cpu_threads.h"

#include <omp.h>

#include <atomic>

#include "core/errors.h"
#include "core/fork.h"

namespace hetnn::cpu_threads {

namespace {

// Read once, before any setting: what OpenMP would use (OMP_NUM_THREADS or the CPUs of the affinity mask).
const int k_default = omp_get_max_threads();
std::atomic<int> g_threads{0};           // 0: OpenMP's default
std::atomic<unsigned> g_generation{0};   // bumped by set(): each thread re-applies once
thread_local unsigned t_generation = 0;

}  // namespace

void set(int n) {
  if (n < 0) throw ValueError("set_num_threads: n must be >= 1 (or 0 for OpenMP's default), got " + std::to_string(n));
  g_threads.store(n, std::memory_order_relaxed);
  g_generation.fetch_add(1, std::memory_order_release);
  apply();
}

void apply() {
  if (forked_child()) {  // libgomp's pool did not survive fork(): one thread, which needs no pool
    thread_local bool single = false;
    if (!single) omp_set_num_threads(1);
    single = true;
    return;
  }
  const unsigned gen = g_generation.load(std::memory_order_acquire);
  if (gen == t_generation) return;
  t_generation = gen;
  const int n = g_threads.load(std::memory_order_relaxed);
  omp_set_num_threads(n > 0 ? n : k_default);
}

int get() {
  apply();
  return omp_get_max_threads();
}

}  // namespace hetnn::cpu_threads
