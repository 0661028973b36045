#include "core/os_load.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace hetnn {

namespace {

double tick() {
  static const double t = [] {
    const long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? 1.0 / static_cast<double>(hz) : 0.01;
  }();
  return t;
}

int cpu_count() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

}  // namespace

LoadSample load_sample() {
  LoadSample s;
  s.wall = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) == 0)
    s.own = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
            1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  if (FILE* f = std::fopen("/proc/stat", "r")) {
    // cpu user nice system idle iowait irq softirq steal guest guest_nice (guest is already in user and nice)
    unsigned long long v[10] = {};
    const int n = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                              &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
    std::fclose(f);
    if (n >= 4) {
      unsigned long long total = 0;
      for (int i = 0; i < n && i < 8; ++i) total += v[i];
      const unsigned long long idle = v[3] + (n > 4 ? v[4] : 0), steal = n > 7 ? v[7] : 0;
      s.busy = static_cast<double>(total - idle - steal) * tick();
      s.steal = static_cast<double>(steal) * tick();
      s.available = true;
    }
  }
  return s;
}

bool LoadSpan::quiet() const { return judged() && others_pct < 5.0 && steal_pct < 1.0; }

LoadSpan load_since(const LoadSample& start) {
  const LoadSample end = load_sample();
  LoadSpan s;
  s.wall = end.wall - start.wall;
  if (!start.available || !end.available || s.wall < kQuietSpanS) return s;
  const double own = end.own - start.own, others = std::max(0.0, (end.busy - start.busy) - own);
  const double steal = end.steal - start.steal, cpus = s.wall * cpu_count();
  if (s.wall < kJudgedSpanS) {  // whole ticks less our exact CPU time: a tick per CPU is rounding
    if (others <= tick() * cpu_count() && steal <= 0) s.others_pct = s.steal_pct = 0;
    return s;
  }
  s.others_pct = 100 * others / cpus;
  s.steal_pct = 100 * steal / cpus;
  return s;
}

}  // namespace hetnn
