"""What the operating system says about each timed call, and the rule that marks a call as preempted.

A repeat's wall time is only hetnn's (or a peer's) if the process had the CPUs it asked for. Linux tells, per
thread, how long it waited runnable for a CPU (``/proc/self/task/*/schedstat``, nanoseconds): on a quiet 2-vCPU
AMD EPYC Zen 4 that wait was 0 % of the wall time for oneDNN and NumPy matmuls (up to 37 % in a few PoCL repeats,
whose own worker threads take turns), and 58-100 % of it in every repeat beside a one-thread busy loop, including
NumPy rows that took exactly one scheduler quantum (7.9 ms instead of 0.53 ms) with an interquartile range of 0 %.
Steal time (``/proc/stat``: the hypervisor ran another guest on this vCPU) is the same thing one level down.

A repeat was *preempted* when its threads waited for a CPU for at least half its wall time while the process did
not have every CPU to itself (its threads ran for less than 90 % of CPUs x wall time: someone else had them), or
when steal time was accounted during it. Some libraries also wait on themselves: PoCL's thread polling in
clFinish and the worker it woke share one vCPU while the other idles (0.8 x wall of waiting, 1 x wall of CPU, in
every repeat of a 3136x64x64 matmul, alone on a quiet machine). No per-repeat counter tells an idle CPU from one
taken by someone else at sub-millisecond resolution, so the measurement as a whole decides: when other processes
used under 5 % of the CPUs and steal stayed under 1 % over the whole run (``/proc/stat``, at least 0.5 s; here
0-0.8 % quiet, 34-42 % beside one busy loop), waiting is the library's own and only steal marks a repeat.
A row is *unreliable* when at least half of its repeats were preempted: its median is then a
figure of the machine's load, and it enters no ratio or aggregate. Counters that Linux does not provide read as
zero, so elsewhere nothing is flagged (and the bench says that detection is unavailable).
"""
from __future__ import annotations

import math
import os
import resource
import time
from dataclasses import asdict, dataclass
from typing import Any, Collection, Dict, List, Optional, Sequence, Tuple, Union

PREEMPTED_WAIT_SHARE = 0.5   # run-queue wait / wall time at which a repeat counts as having waited
OWN_CPU_SHARE = 0.9          # ... while the process ran on less than this share of CPUs x wall time
UNRELIABLE_SHARE = 0.5       # share of preempted repeats at which a row is unreliable
# Steal over this share of the CPUs' time marks a repeat: /proc/stat counts in 10 ms ticks, so any steal marks a
# call shorter than 0.2 s, while one tick in a 2-second epoch is not a preemption.
STEAL_SHARE = 0.05
_TICK = 1.0 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


@dataclass
class Counters:
    """OS counters over one timed call (differences between its start and end)."""
    wall: float = 0.0        # seconds
    cpu: float = 0.0         # CPU seconds of this process, all threads
    runqueue: float = 0.0    # seconds this process's threads waited runnable for a CPU
    run: float = 0.0         # seconds this process's threads ran (schedstat; 0 where unavailable)
    invol: int = 0           # involuntary context switches of this process
    steal: float = 0.0       # steal seconds of the whole machine (/proc/stat, 10 ms resolution)
    others: float = 0.0      # CPU seconds used outside this process (/proc/stat busy - ours, 10 ms resolution)

    @property
    def preempted(self) -> bool:
        if self.wall <= 0:
            return False
        if self.steal > STEAL_SHARE * self.wall * _cpu_count():
            return True
        own = max(self.run, self.cpu)  # schedstat lags for running threads; getrusage counts this one precisely
        return self.runqueue >= PREEMPTED_WAIT_SHARE * self.wall and own < OWN_CPU_SHARE * _cpu_count() * self.wall

    def as_dict(self) -> Dict[str, Any]:
        return asdict(self)


def _cpu_line(fields: Sequence[bytes]) -> Tuple[int, int, int]:
    """(busy, steal, total) ticks of one ``/proc/stat`` cpu line's counters: idle and iowait are not busy, and guest
    time is already counted in user and nice."""
    v = [int(x) for x in fields]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    steal = v[7] if len(v) > 7 else 0
    total = sum(v) - (sum(v[8:10]) if len(v) > 9 else 0)
    return total - idle - steal, steal, total


def per_cpu_ticks(cpus: Optional[Collection[int]] = None) -> Dict[int, Tuple[int, int, int]]:
    """(busy, steal, total) ticks since boot of each CPU in ``cpus`` (every CPU when None), from ``/proc/stat``;
    raises OSError where it cannot be read."""
    out: Dict[int, Tuple[int, int, int]] = {}
    with open("/proc/stat", "rb") as f:
        f.readline()  # the all-CPU line
        for raw in f:
            if not raw.startswith(b"cpu"):
                break
            fields = raw.split()
            c = int(fields[0][3:])
            if cpus is None or c in cpus:
                out[c] = _cpu_line(fields[1:])
    return out


def _proc_stat(cpus: Optional[Sequence[int]] = None) -> Tuple[float, float]:
    """(busy, steal) seconds since boot of the whole machine, or of ``cpus`` alone (the CPUs this process may run
    on: a neighbour pinned elsewhere takes nothing from a run pinned here); zeros where /proc/stat does not
    exist."""
    try:
        if cpus is None:
            with open("/proc/stat", "rb") as f:
                busy, steal, _ = _cpu_line(f.readline().split()[1:])
        else:
            ticks = per_cpu_ticks(set(cpus)).values()
            busy, steal = sum(t[0] for t in ticks), sum(t[1] for t in ticks)
    except OSError:
        return 0.0, 0.0
    return busy * _TICK, steal * _TICK


class Probe:
    """Reads the counters around timed calls. The schedstat files of the process's threads stay open between
    reads (a read is one pread per thread); ``refresh()`` picks up threads started since (call it between rows)."""

    def __init__(self, machine: bool = False) -> None:
        self._fds: List[int] = []
        self._cpus: Optional[List[int]] = None
        self.machine = machine  # the whole machine's other load, even when this process is held to some CPUs
        self.available = os.path.exists("/proc/self/task")
        self.refresh()

    def refresh(self) -> None:
        self.close()
        try:  # machine-wide counters unless the process is held to some of the CPUs (hetnn._cpus.use)
            mine = sorted(os.sched_getaffinity(0))
            self._cpus = mine if len(mine) < (os.cpu_count() or len(mine)) and not self.machine else None
        except (AttributeError, OSError):
            self._cpus = None
        if not self.available:
            return
        for tid in os.listdir("/proc/self/task"):
            try:
                self._fds.append(os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY))
            except OSError:  # the thread ended, or schedstat is not compiled in
                pass
        self.available = bool(self._fds)

    def close(self) -> None:
        for fd in self._fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds = []

    def __del__(self) -> None:
        self.close()

    def _schedstat(self) -> Tuple[float, float]:
        run = wait = 0
        for fd in self._fds:
            try:
                f = os.pread(fd, 64, 0).split()
                run += int(f[0])
                wait += int(f[1])
            except (OSError, IndexError, ValueError):  # a thread that ended reads as nothing
                pass
        return run * 1e-9, wait * 1e-9

    def read(self) -> Tuple[float, ...]:
        ru = resource.getrusage(resource.RUSAGE_SELF)
        busy, steal = _proc_stat(self._cpus)
        run, wait = self._schedstat()
        return (time.perf_counter(), ru.ru_utime + ru.ru_stime, wait, ru.ru_nivcsw, steal, busy, run)

    @staticmethod
    def delta(start: Tuple[float, ...], end: Tuple[float, ...], wall: Optional[float] = None) -> Counters:
        cpu = end[1] - start[1]
        return Counters(wall=end[0] - start[0] if wall is None else wall, cpu=cpu, runqueue=end[2] - start[2],
                        invol=int(end[3] - start[3]), steal=end[4] - start[4],
                        others=max(0.0, (end[5] - start[5]) - cpu), run=end[6] - start[6])


QUIET_OTHERS_PCT = 5.0   # other processes' CPU (percent of the CPUs over a run) below which the machine was quiet
QUIET_STEAL_PCT = 1.0


def machine_was_quiet(span: Dict[str, float]) -> bool:
    """Whether a run's :func:`span_noise` shows a quiet machine (False when the run was too short to tell)."""
    o, st = span.get("others_pct", math.nan), span.get("steal_pct", math.nan)
    return o < QUIET_OTHERS_PCT and st < QUIET_STEAL_PCT  # NaN compares False


QUIET_SPAN_S = 0.1  # the shortest span /proc/stat's ticks can call quiet


def quiet_since(probe: "Probe", start: Tuple[float, ...]) -> bool:
    """Whether other processes and the hypervisor left this process's CPUs alone since ``start`` (a
    ``probe.read()``). A span shorter than QUIET_SPAN_S is too short to tell: it is extended to that by keeping the
    calling thread busy (an idle vCPU is slow to come back for the next timed call), during which a neighbour's use
    shows as before. Tiny parallel calls (a 64x64 product on two threads) wait for their own workers' wake-up for
    half their time: judged on a busy machine's rule they read as preempted in every repeat."""
    span = Probe.delta(start, probe.read())
    if span.wall < QUIET_SPAN_S:
        end = time.perf_counter() + QUIET_SPAN_S - span.wall
        while time.perf_counter() < end:
            pass
        span = Probe.delta(start, probe.read())
    return machine_was_quiet(span_noise(span))


def preempted(counters: Sequence[Counters], quiet: Union[bool, Sequence[bool]] = False) -> List[bool]:
    """Per repeat of one row: whether it was preempted (see the module doc); on a ``quiet`` machine only steal
    counts. ``quiet`` per repeat where the repeats come from several processes, each judged over its own run."""
    each = [bool(quiet)] * len(counters) if isinstance(quiet, bool) else [bool(q) for q in quiet]
    return [c.steal > STEAL_SHARE * c.wall * _cpu_count() if q else c.preempted for c, q in zip(counters, each)]


def summarize(counters: Sequence[Counters], quiet: Union[bool, Sequence[bool]] = False) -> Dict[str, Any]:
    """The noise fields of one row from its repeats: preempted repeats, whether the row is unreliable, the share
    of its wall time its threads waited for a CPU, and involuntary context switches (``quiet``: as
    :func:`preempted`)."""
    n = len(counters)
    k = sum(preempted(counters, quiet))
    wall = sum(c.wall for c in counters)
    return {"preempted": k, "unreliable": n > 0 and k >= UNRELIABLE_SHARE * n,
            "runqueue_pct": 100 * sum(c.runqueue for c in counters) / wall if wall else math.nan,
            "invol_switches": sum(c.invol for c in counters), "noise": noise_note(k, n)}


def span_noise(span: Counters) -> Dict[str, float]:
    """Steal time and other processes' CPU use, in percent of the CPUs over a whole measurement (``/proc/stat``
    counts in 10 ms ticks: NaN for spans under half a second, where a tick or two would read as tens of
    percent; but no more than a tick's rounding per CPU over at least 0.1 s reads as 0: a neighbour that held a CPU
    would have shown ten ticks, and a 0.2-second training run of PoCL's was otherwise judged on a busy machine's
    rule)."""
    if span.wall < 0.5:
        # "others" is whole ticks of the machine less this process's exact CPU time: a tick per CPU is rounding
        if span.wall >= 0.1 and span.others <= _TICK * _cpu_count() and span.steal <= 0:
            return {"steal_pct": 0.0, "others_pct": 0.0}
        return {"steal_pct": math.nan, "others_pct": math.nan}
    cpus = span.wall * _cpu_count()
    return {"steal_pct": 100 * span.steal / cpus, "others_pct": 100 * span.others / cpus}


def noise_note(preempted: int, repeats: int) -> str:
    if repeats and preempted >= UNRELIABLE_SHARE * repeats:
        return f"unreliable: preempted in {preempted} of {repeats} repeats"
    return f"preempted {preempted}/{repeats}" if preempted else ""


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def others_busy(probe: Optional[Probe] = None) -> float:
    """CPU seconds the process's threads other than the calling one have used since boot (schedstat run time)."""
    me = str(getattr(__import__("threading"), "get_native_id")())
    total = 0
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return 0.0
    for tid in tids:
        if tid == me:
            continue
        try:
            with open(f"/proc/self/task/{tid}/schedstat", "rb") as f:
                total += int(f.read().split()[0])
        except (OSError, IndexError, ValueError):
            pass
    return total * 1e-9


def quiesce(max_wait: float = 0.3, window: float = 0.012) -> float:
    """Waits until the process's other threads (thread pools of hetnn, OpenBLAS, PyTorch, ...) stop using CPU, at
    most ``max_wait`` seconds; returns the seconds waited. Pools spin after each call (OpenBLAS 0.1 s, GNU OpenMP's
    default 10 ms): timed next, another library would pay for them. ``window`` spans several scheduler ticks,
    since a spinning thread's run time is accounted at ticks. The wait is a busy one on purpose: a vCPU left idle
    is slow to come back (on a 2-vCPU VM the first hetnn matmul after 50 ms of sleep took 2 ms instead of 0.5, its
    threads queued on one CPU), so the calling thread keeps its CPU awake as a loop of calls would."""
    if not os.path.exists("/proc/self/task"):
        time.sleep(min(max_wait, 0.05))
        return min(max_wait, 0.05)
    t0 = time.perf_counter()
    last, t_last = others_busy(), t0
    while True:
        now_t = time.perf_counter()
        if now_t - t0 >= max_wait:
            break
        if now_t - t_last >= window:
            now = others_busy()
            if now - last < 0.1 * window:
                break
            last, t_last = now, now_t
    return time.perf_counter() - t0


class Watch:
    """The OS's view of work timed outside :func:`hetnn.interleave` (a training epoch, a study's pass), so that its
    rows carry the same flags as every other row: ``with w.block(): ...`` records one repeat (wall time and
    counters); ``w.epochs()`` is a ``fit`` callback that records one repeat per epoch; ``w.flags()`` gives the
    fields a row takes (``preempted``, ``unreliable``, ``noise``), judged as interleave judges: over the whole
    watch, whether other processes used this process's CPUs decides whether waiting was someone else's doing."""

    def __init__(self) -> None:
        self.probe = Probe()
        self.walls: List[float] = []
        self.counters: List[Counters] = []
        self._first: Optional[Tuple[float, ...]] = None
        self._last: Optional[Tuple[float, ...]] = None
        self._quiet: Optional[bool] = None

    def _read(self) -> Tuple[float, ...]:
        self._quiet = None
        now = self.probe.read()
        if self._first is None:
            self._first = now
        self._last = now
        return now

    def block(self) -> "_Block":
        """A context manager timing one repeat."""
        return _Block(self)

    def add(self, start: Tuple[float, ...], end: Tuple[float, ...]) -> Counters:
        c = Probe.delta(start, end)
        self.walls.append(c.wall)
        self.counters.append(c)
        return c

    def epochs(self) -> Any:
        """A ``Sequential.fit`` callback: one repeat per epoch."""
        return _EpochWatch(self)

    def quiet(self) -> bool:
        """Whether other processes left this process's CPUs alone over the watch (:func:`quiet_since`: a short
        watch is extended to be judged)."""
        if self._first is None or self._last is None:
            return False
        if self._quiet is None:
            self._quiet = quiet_since(self.probe, self._first)
        return self._quiet

    def flags(self, counters: Optional[Sequence[Counters]] = None) -> Dict[str, Any]:
        """``preempted``, ``unreliable`` and ``noise`` of the repeats recorded (or of ``counters``, a part of
        them)."""
        s = summarize(self.counters if counters is None else counters, self.quiet())
        return {k: s[k] for k in ("preempted", "unreliable", "noise")}

    def close(self) -> None:
        self.probe.close()


class _Block:
    def __init__(self, watch: Watch) -> None:
        self.watch = watch
        self.counters: Optional[Counters] = None

    def __enter__(self) -> "_Block":
        self.watch.probe.refresh()  # threads started since (a library's pool) are counted too
        self._start = self.watch._read()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.counters = self.watch.add(self._start, self.watch._read())


class _EpochWatch:
    def __init__(self, watch: Watch) -> None:
        self.watch = watch
        self._start: Optional[Tuple[float, ...]] = None

    def on_train_begin(self, keys: Sequence[str], model: Any) -> None:
        self.watch.probe.refresh()
        self._start = self.watch._read()

    def on_epoch_end(self, epoch: int, logs: Dict[str, float], model: Any) -> None:
        end = self.watch._read()
        if self._start is not None:
            self.watch.add(self._start, end)
        self._start = end
