// Whether other processes or the hypervisor took this process's CPUs over a span of time: the rule of the Python
// timing core (python/hetnn/_oscounters.py, span_noise and machine_was_quiet) for measurements made inside the
// library, such as the per-layer choice of a convolution algorithm ("benchmark"). /proc/stat counts in 10 ms ticks,
// so a span under 0.1 s cannot be judged, and under 0.5 s only "no tick beyond rounding" reads as quiet.
#pragma once

namespace hetnn {

struct LoadSample {
  double wall = 0;   // seconds (steady clock)
  double busy = 0;   // CPU seconds of the whole machine since boot, idle and steal excluded
  double steal = 0;  // steal seconds of the whole machine since boot
  double own = 0;    // CPU seconds of this process (every thread)
  bool available = false;  // /proc/stat was read
};

struct LoadSpan {
  double wall = 0;
  double others_pct = -1;  // CPU used outside this process, percent of the CPUs x wall; -1: cannot tell
  double steal_pct = -1;
  bool judged() const { return others_pct >= 0 && steal_pct >= 0; }
  bool quiet() const;  // judged, others under 5 % and steal under 1 % (as machine_was_quiet)
};

LoadSample load_sample();
LoadSpan load_since(const LoadSample& start);

constexpr double kQuietSpanS = 0.1;   // the shortest span the ticks can call quiet
constexpr double kJudgedSpanS = 0.5;  // the shortest span given in percent

}  // namespace hetnn
