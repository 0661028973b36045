#include "backend/cpu/blas_pool.h"

#include <dlfcn.h>
#include <link.h>
#include <omp.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <system_error>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "core/cpu_relax.h"
#include "core/fork.h"

namespace hetnn::blas_pool {

namespace {

// OpenBLAS's callback interface (common_thread.h, 0.3.27+): run dojob(i, jobdata + i * elsize, dojob_data) for every
// i < numjobs, all at once (a threaded GEMM's jobs wait for each other's packed panels), and return when all are done.
using Callback = void (*)(int, DoJob, int, size_t, void*, int);
using SetCallback = void (*)(Callback);
using GetParallel = int (*)();

struct Task {
  DoJob dojob = nullptr;
  char* data = nullptr;
  size_t elsize = 0;
  int dd = 0;
};

// One per worker: the worker for slot i runs job i + 1 (the calling thread runs job 0).
struct Slot {
  std::atomic<uint64_t> gen{0};
  Task task;
};

// Ticks as OpenBLAS counts its spin: the time-stamp counter on x86, nanoseconds elsewhere.
uint64_t ticks() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

// OpenBLAS spins 2^THREAD_TIMEOUT ticks (28 unless OPENBLAS_THREAD_TIMEOUT or GOTO_THREAD_TIMEOUT says 4..30).
int env_spin_exponent() {
  int e = 28;
  for (const char* name : {"OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT"}) {
    const char* v = std::getenv(name);
    if (v && *v) {
      const int x = std::atoi(v);
      if (x > 0) e = x < 4 ? 4 : (x > 30 ? 30 : x);
      break;
    }
  }
  return e;
}

uint64_t spin_ticks(int e) {
#if defined(__x86_64__) || defined(__i386__)
  return uint64_t{1} << e;
#else
  return (uint64_t{1} << e) * 10 / 26;  // cycles at 2.6 GHz in nanoseconds
#endif
}

// Workers are detached and live until the process exits, so what they wait on is never destroyed: a condition
// variable destroyed at exit while a worker waited on it blocked the exit.
struct Shared {
  std::mutex call;   // one threaded section at a time: OpenBLAS indexes its per-job buffers by job number
  std::mutex child;  // the same in a forked child (never locked in the parent, so never inherited locked)
  std::mutex sleep;
  std::condition_variable wake;
  std::vector<Slot*> slots;  // grown under `call`
};
Shared& shared() {
  static auto* s = new Shared();
  return *s;
}
std::atomic<int> g_sleepers{0};
std::atomic<int> g_spinning{0};
std::atomic<uint64_t> g_quiet{0};       // bumped by quiet(): spinning workers go to sleep
std::atomic<uint64_t> g_quiet_seen{0};  // its value when the last call on the workers ended
std::atomic<int> g_remaining{0};
std::atomic<int> g_spin_exponent{28};
std::atomic<long long> g_calls{0}, g_jobs{0}, g_wakeups{0}, g_on_openmp{0};
// When hetnn's OpenMP team last started or finished work (steady-clock ns): its workers spin for about 0.7 ms after
// a region (GOMP_SPINCOUNT=10000), and a BLAS call in that window runs on them instead of waking this pool's
// workers, which would share the cores with those spinners.
std::atomic<long long> g_openmp_busy{0};
constexpr long long k_openmp_warm_ns = 500'000;
// Beside a busy CPU the team's threads, which have just run a hetnn op at full speed, are the ones the scheduler holds
// back, and OpenBLAS's jobs, which wait for each other many times per call, then wait out its slices: a 512^3
// product took 6-16 ms there against 1.5 on the pool's workers, which had slept through the hetnn op. Two calls in a
// row held back (a thread descheduled or late for more than half the call and more than a slice) send the calls to
// the workers for a while: 50 ms, doubled up to 1 s while the team's next try is held back too. (State updated under
// Shared::call.)
int g_held_streak = 0;
long long g_team_held_until = 0;
constexpr long long k_backoff_min_ns = 50'000'000, k_backoff_max_ns = 1'000'000'000;
long long g_backoff_ns = k_backoff_min_ns;
constexpr long long k_slice_ns = 500'000;  // less is a sleeping thread's wake-up, not contention
std::atomic<long long> g_preempted_calls{0}, g_avoided_calls{0};

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

long long thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<long long>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void worker(Slot* s, int job) {
  pthread_setname_np(pthread_self(), "hetnn-blas");  // what top and /proc/<pid>/task/*/comm show
  uint64_t seen = 0;
  g_spinning.fetch_add(1);
  uint64_t q = g_quiet.load(), t0 = ticks();
  for (;;) {
    uint64_t g;
    const uint64_t limit = spin_ticks(g_spin_exponent.load(std::memory_order_relaxed));
    while ((g = s->gen.load(std::memory_order_acquire)) == seen && g_quiet.load(std::memory_order_relaxed) == q &&
           ticks() - t0 < limit)
      cpu_relax();
    g_spinning.fetch_sub(1);
    if (g == seen) {
      std::unique_lock<std::mutex> lk(shared().sleep);
      g_sleepers.fetch_add(1);  // seq_cst with the caller's gen store then sleepers load: no lost wake-up
      shared().wake.wait(lk, [&] { return (g = s->gen.load()) != seen; });
      g_sleepers.fetch_sub(1);
    }
    seen = g;
    const Task t = s->task;
    t.dojob(job, t.data + static_cast<size_t>(job) * t.elsize, t.dd);
    // Spinning again before the job is reported done: a hetnn op that starts once the call has returned then
    // always finds this worker counted, and its quiet() reaches it.
    g_spinning.fetch_add(1);
    q = g_quiet.load();
    t0 = ticks();
    g_remaining.fetch_sub(1, std::memory_order_acq_rel);
  }
}

[[noreturn]] void cannot_start_threads(int n, const char* why) {
  std::fprintf(stderr,
               "hetnn: cannot start a thread for a threaded OpenBLAS call (NumPy, SciPy), whose %d jobs must run at "
               "once: %s. Limit NumPy's threads (OPENBLAS_NUM_THREADS=1, or threadpoolctl), raise the process's "
               "thread limit (ulimit -u), or leave OpenBLAS its own threads (HETNN_SHARE_BLAS=0)\n",
               n, why);
  std::abort();  // the jobs wait for each other: without their threads the call can never end
}

// A forked child has none of the parent's workers: its jobs run on threads of their own, joined at the end.
void run_fresh(DoJob dojob, int n, size_t elsize, char* data, int dd) {
  std::lock_guard<std::mutex> lk(shared().child);
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n - 1));
  try {
    for (int j = 1; j < n; ++j) threads.emplace_back(dojob, j, data + static_cast<size_t>(j) * elsize, dd);
  } catch (const std::system_error& e) {
    cannot_start_threads(n, e.what());
  }
  dojob(0, data, dd);
  for (auto& t : threads) t.join();
}

extern "C" void hetnn_blas_callback(int sync, DoJob dojob, int n, size_t elsize, void* jobdata, int dd) {
  run(sync, dojob, n, elsize, jobdata, dd);
}

int collect(dl_phdr_info* info, size_t, void* out) {
  const char* name = info->dlpi_name;
  if (name && *name) {
    const char* base = std::strrchr(name, '/');
    if (std::strstr(base ? base + 1 : name, "openblas")) static_cast<std::vector<std::string>*>(out)->push_back(name);
  }
  return 0;
}

std::mutex g_share;
std::vector<Library> g_libraries;

std::atomic<bool> g_refuse_threads{false};  // the unit tests' stand-in for a process at its thread limit
std::atomic<long long> g_thread_failures{0};

bool start_worker(std::vector<Slot*>& pool) {
  if (g_refuse_threads.load(std::memory_order_relaxed)) return false;
  auto* s = new Slot();
  try {
    std::thread(worker, s, static_cast<int>(pool.size()) + 1).detach();
  } catch (const std::system_error&) {
    delete s;
    return false;
  }
  pool.push_back(s);
  return true;
}

// A call on hetnn's OpenMP team (threads libgomp keeps between regions); `now`: when the call began.
void run_on_team(DoJob dojob, int n, size_t elsize, char* data, int dd, long long now) {
  g_on_openmp.fetch_add(1, std::memory_order_relaxed);
  std::atomic<bool> held{false};
#pragma omp parallel num_threads(n)
  {
    const int t = omp_get_thread_num(), team = omp_get_num_threads();
    std::vector<std::thread> extra;  // a team smaller than asked for (OMP_THREAD_LIMIT): the rest run beside it
    if (t == 0) {
      try {
        for (int j = team; j < n; ++j) extra.emplace_back(dojob, j, data + static_cast<size_t>(j) * elsize, dd);
      } catch (const std::system_error& e) {
        cannot_start_threads(n, e.what());
      }
    }
    const long long cpu0 = thread_cpu_ns();
    dojob(t, data + static_cast<size_t>(t) * elsize, dd);
    // From the call's start: a thread that came late to the region lost that time too, while its partner's job
    // spun waiting for it. OpenBLAS's waits spin, so a thread that ran all along used as much CPU as wall time.
    const long long wall = now_ns() - now, lost = wall - (thread_cpu_ns() - cpu0);
    if (lost > k_slice_ns && 2 * lost > wall) held.store(true, std::memory_order_relaxed);
    for (auto& e : extra) e.join();
  }
  const long long end = now_ns();
  g_openmp_busy.store(end, std::memory_order_relaxed);
  if (!held.load()) {
    g_held_streak = 0;
    g_backoff_ns = k_backoff_min_ns;
  } else {
    g_preempted_calls.fetch_add(1, std::memory_order_relaxed);
    if (++g_held_streak >= 2) {
      g_team_held_until = end + g_backoff_ns;
      g_backoff_ns = std::min(2 * g_backoff_ns, k_backoff_max_ns);
    }
  }
}

}  // namespace

void run(int /*sync: always 1*/, DoJob dojob, int n, size_t elsize, void* jobdata, int dd) {
  if (n <= 0) return;
  char* data = static_cast<char*>(jobdata);
  g_calls.fetch_add(1, std::memory_order_relaxed);
  g_jobs.fetch_add(n, std::memory_order_relaxed);
  if (n == 1) return dojob(0, data, dd);
  if (forked_child()) return run_fresh(dojob, n, elsize, data, dd);
  Shared& sh = shared();
  std::lock_guard<std::mutex> lk(sh.call);
  // Workers spinning and not told to stop since their last call take it; otherwise hetnn's team, while warm. Told
  // to stop, a worker may still be on its way out of the spin: that must not decide (the choice would then depend
  // on how the threads are scheduled).
  const bool workers_hot = g_spinning.load() > 0 && g_quiet.load() == g_quiet_seen.load();
  const long long now = now_ns();
  if (!workers_hot && now - g_openmp_busy.load(std::memory_order_relaxed) < k_openmp_warm_ns && !omp_in_parallel()) {
    if (now >= g_team_held_until) return run_on_team(dojob, n, elsize, data, dd, now);
    g_avoided_calls.fetch_add(1, std::memory_order_relaxed);
  }
  auto& pool = sh.slots;
  while (static_cast<int>(pool.size()) < n - 1) {
    if (!start_worker(pool)) {
      // At the process's thread limit: hetnn's OpenMP team runs the jobs, on the threads libgomp keeps once a hetnn
      // op has run (where it cannot start them either, libgomp ends the process with its own message).
      g_thread_failures.fetch_add(1, std::memory_order_relaxed);
      run_on_team(dojob, n, elsize, data, dd, now);
      return;
    }
  }
  g_remaining.store(n - 1, std::memory_order_release);
  for (int j = 1; j < n; ++j) {
    Slot* s = pool[static_cast<size_t>(j - 1)];
    s->task = Task{dojob, data, elsize, dd};
    s->gen.fetch_add(1);
  }
  if (g_sleepers.load() > 0) {
    std::lock_guard<std::mutex> l(sh.sleep);
    g_wakeups.fetch_add(1, std::memory_order_relaxed);
    sh.wake.notify_all();
  }
  dojob(0, data, dd);
  while (g_remaining.load(std::memory_order_acquire) > 0) cpu_relax();
  g_quiet_seen.store(g_quiet.load());
}

std::vector<Library> share(bool on) {
  std::lock_guard<std::mutex> lk(g_share);
  spin_exponent(env_spin_exponent());
  std::vector<std::string> paths;
  dl_iterate_phdr(collect, &paths);
  std::vector<Library> out;
  // OpenBLAS's own names, SciPy's and NumPy's builds (scipy_openblas..., with "64_" for the 64-bit-integer one)
  static const std::pair<const char*, const char*> k_names[] = {
      {"", ""}, {"scipy_", "64_"}, {"scipy_", ""}, {"", "64_"}, {"", "_"}};
  for (const auto& path : paths) {
    Library lib;
    char* real = realpath(path.c_str(), nullptr);
    lib.path = real ? real : path;
    std::free(real);
    void* h = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);  // kept: the library stays as loaded as it was
    SetCallback set = nullptr;
    GetParallel parallel = nullptr;
    for (const auto& [pre, suf] : k_names) {
      if (!h) break;
      set = reinterpret_cast<SetCallback>(
          dlsym(h, (std::string(pre) + "openblas_set_threads_callback_function" + suf).c_str()));
      if (set) {
        parallel = reinterpret_cast<GetParallel>(dlsym(h, (std::string(pre) + "openblas_get_parallel" + suf).c_str()));
        lib.symbols = std::string(pre) + "openblas_..." + suf;
        break;
      }
    }
    const int mode = parallel ? parallel() : 1;
    if (!h)
      lib.why = "cannot be opened again (dlopen RTLD_NOLOAD)";
    else if (!set)
      lib.why = "no openblas_set_threads_callback_function (OpenBLAS before 0.3.27)";
    else if (mode == 0)
      lib.why = "a single-threaded build";
    else if (mode == 2)
      lib.why = "an OpenMP build (its threads are OpenMP's already)";
    else {
      set(on ? &hetnn_blas_callback : nullptr);
      lib.shared = on;
      if (!on) lib.why = "its own threads (sharing turned off)";
    }
    out.push_back(lib);
  }
  g_libraries = out;
  return out;
}

std::vector<Library> libraries() {
  std::lock_guard<std::mutex> lk(g_share);
  return g_libraries;
}

Stats stats() {
  Stats s;
  s.calls = g_calls.load();
  s.jobs = g_jobs.load();
  s.quieted = static_cast<long long>(g_quiet.load());
  s.wakeups = g_wakeups.load();
  s.on_openmp = g_on_openmp.load();
  s.openmp_preempted = g_preempted_calls.load();
  s.openmp_avoided = g_avoided_calls.load();
  s.thread_failures = g_thread_failures.load();
  s.spinning = g_spinning.load();
  std::lock_guard<std::mutex> lk(shared().call);
  s.workers = static_cast<int>(shared().slots.size());
  return s;
}

int spin_exponent(int e) {
  return e < 4 || e > 30 ? g_spin_exponent.load() : g_spin_exponent.exchange(e);
}

void refuse_threads_for_tests(bool on) { g_refuse_threads.store(on); }

void openmp_used() { g_openmp_busy.store(now_ns(), std::memory_order_relaxed); }

void quiet() {
  g_openmp_busy.store(now_ns(), std::memory_order_relaxed);
  if (g_spinning.load(std::memory_order_relaxed) > 0) {
    g_quiet.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace hetnn::blas_pool
