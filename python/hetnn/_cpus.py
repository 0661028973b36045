"""Which CPUs a measurement can have right now, and running on just those (in the manner of pyperf's CPU
isolation, decided per run instead of per boot).

On a shared 2-vCPU machine with one CPU kept busy by another program, a library that starts two threads gets one
CPU and a time slice of the other: every repeat waits for the neighbour (a 784-128-10 epoch at batch 16 took 9.5x
longer with two threads than with one, and the CPU-versus-OpenCL answer flipped). With one thread on the free CPU
the same run is clean. :func:`plan` samples the machine for a moment (per-CPU use outside this process, steal time,
the busy processes, the cgroup's CPU quota) and chooses the CPUs left free; :func:`use` runs a block with every
thread pool of the process limited to that many threads (hetnn's, the BLAS and OpenMP pools threadpoolctl finds,
PyTorch's) and every thread pinned to those CPUs, the same for hetnn and every peer in a comparison.
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple

# Other processes and the hypervisor may use this much of a CPU, summed over the machine, before one CPU fewer is
# planned: a neighbour at 30 % of a core preempts a thread now and then, one at a full core in every repeat.
FREE_SLACK = 0.3
SAMPLE_S = 0.5  # /proc/stat counts in 10 ms ticks: half a second reads a CPU's use to 2 %
last_plan: Optional["CpuPlan"] = None  # the plan of the latest bench or study run (its JSON records it)


def _read(path: str) -> Optional[str]:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def allowed_cpus() -> List[int]:
    """The CPUs this process may run on (all online CPUs where affinity is not supported)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def cgroup_quota() -> Optional[float]:
    """The CPUs' worth of time the process's cgroup may use (cgroup v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us``),
    None without a quota."""
    rel = ""
    text = _read("/proc/self/cgroup") or ""
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[0] == "0":
            rel = parts[2].strip()
    for base in (f"/sys/fs/cgroup{rel}", "/sys/fs/cgroup"):
        v2 = _read(os.path.join(base, "cpu.max"))
        if v2:
            quota, _, period = v2.strip().partition(" ")
            if quota != "max" and quota.isdigit() and period.strip().isdigit() and int(period) > 0:
                return int(quota) / int(period)
            return None
    q, p = _read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), _read("/sys/fs/cgroup/cpu/cpu.cfs_period_us")
    try:
        if q and p and int(q) > 0 and int(p) > 0:
            return int(q) / int(p)
    except ValueError:
        pass
    return None


def cpu_times(cpus: Optional[List[int]] = None) -> Dict[int, Tuple[float, float, float]]:
    """Per CPU (all when ``cpus`` is None): (busy, steal, total) seconds since boot from ``/proc/stat``."""
    from ._oscounters import per_cpu_ticks

    tick = 1.0 / os.sysconf("SC_CLK_TCK")
    try:
        return {c: (b * tick, st * tick, t * tick) for c, (b, st, t) in per_cpu_ticks(cpus).items()}
    except (OSError, ValueError, IndexError):
        return {}


def _proc_stat_fields(path: str) -> Optional[Tuple[str, List[str]]]:
    st = _read(path)
    if not st or ")" not in st:
        return None
    return st[st.find("(") + 1:st.rfind(")")], st[st.rfind(")") + 2:].split()


def _process_times() -> Dict[int, Tuple[str, float]]:
    """CPU seconds per process (utime + stime), with its command name."""
    tick = os.sysconf("SC_CLK_TCK")
    out: Dict[int, Tuple[str, float]] = {}
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return out
    for pid in pids:
        got = _proc_stat_fields(f"/proc/{pid}/stat")
        if got:
            name, fields = got
            try:
                out[int(pid)] = (name, (int(fields[11]) + int(fields[12])) / tick)
            except (IndexError, ValueError):
                pass
    return out


def _own_thread_times() -> Dict[int, Tuple[int, float]]:
    """This process's threads: tid -> (CPU it last ran on, CPU seconds)."""
    tick = os.sysconf("SC_CLK_TCK")
    out: Dict[int, Tuple[int, float]] = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        got = _proc_stat_fields(f"/proc/self/task/{tid}/stat")
        if got:
            try:
                out[int(tid)] = (int(got[1][36]), (int(got[1][11]) + int(got[1][12])) / tick)
            except (IndexError, ValueError):
                pass
    return out


@dataclass
class CpuPlan:
    """What a sample of the machine found and the CPUs a run takes (``cpus``, least used first)."""
    allowed: List[int]
    cpus: List[int]
    others: float                       # CPUs' worth used outside this process (steal included) over the sample
    used: Dict[int, float]              # per allowed CPU: share of it used outside this process (steal included)
    steal: float                        # CPUs' worth of steal
    quota: Optional[float] = None       # the cgroup's CPU quota, in CPUs
    busy: List[Tuple[str, int, float]] = field(default_factory=list)  # (name, pid, % of a CPU), most first
    seconds: float = 0.0
    fixed: Optional[int] = None         # a thread count the user set (then nothing was chosen)

    @property
    def threads(self) -> int:
        return self.fixed if self.fixed is not None else len(self.cpus)

    def header(self) -> str:
        """One line for a report's top: ``threads: 1 of 2 (cpu 0 busy: python pid 6956 99 %)``."""
        n = len(self.allowed)
        why = ["set by the user"] if self.fixed is not None else []
        left = [c for c in self.allowed if c not in self.cpus]
        busy = [c for c in left if self.used.get(c, 0.0) > 0.3] if self.fixed is not None else left
        if busy:
            who = ", ".join(f"{name} pid {pid} {pct:.0f} %" for name, pid, pct in self.busy[:3])
            cpus = ", ".join(str(c) for c in busy)
            why.append(f"cpu {cpus} busy: {who or f'{100 * self.others:.0f} % of a CPU used outside this process'}")
        if self.fixed is not None and self.fixed > n:
            why.append(f"more threads than the {n} CPUs this process may use")
        if self.steal >= 0.05:
            why.append(f"steal {100 * self.steal / max(n, 1):.0f} % of the CPUs")
        if self.quota is not None and self.quota < n:
            why.append(f"cgroup quota {self.quota:g} CPUs")
        pinned = f", pinned to cpu {','.join(map(str, self.cpus))}" if left and pin_supported() else ""
        return f"threads: {self.threads} of {n}{pinned}" + (f" ({'; '.join(why)})" if why else " (all free)")

    def as_dict(self) -> Dict[str, Any]:
        return {"threads": self.threads, "cpus": self.cpus, "allowed": self.allowed, "others_cpus": self.others,
                "steal_cpus": self.steal, "quota": self.quota, "busy": [list(b) for b in self.busy],
                "fixed": self.fixed, "header": self.header()}


def plan(seconds: float = SAMPLE_S, fixed: Optional[int] = None) -> CpuPlan:
    """Samples the machine for ``seconds`` and chooses the CPUs to run on: every allowed CPU less one for each
    (whole or partial, past FREE_SLACK) CPU's worth that other processes and the hypervisor used, at most the
    cgroup's quota, at least one; the least used CPUs. ``fixed``: the user's thread count, on as many of the least
    used CPUs (so that every library in a comparison, PoCL's own threads included, has that many CPUs)."""
    allowed = allowed_cpus()
    if not os.path.isdir("/proc/self/task"):
        n = len(allowed) if fixed is None else min(int(fixed), len(allowed))
        return CpuPlan(allowed, allowed[:n], 0.0, {}, 0.0, seconds=0.0, fixed=fixed)
    c0, p0, o0, t0 = cpu_times(allowed), _process_times(), _own_thread_times(), time.perf_counter()
    time.sleep(seconds)
    c1, p1, o1, t1 = cpu_times(allowed), _process_times(), _own_thread_times(), time.perf_counter()
    wall = max(t1 - t0, 1e-3)
    mine: Dict[int, float] = {}
    for tid, (cpu, t) in o1.items():
        if tid in o0:
            mine[cpu] = mine.get(cpu, 0.0) + t - o0[tid][1]
    used: Dict[int, float] = {}
    steal = 0.0
    for c in allowed:
        if c in c0 and c in c1:
            busy = c1[c][0] - c0[c][0] - mine.get(c, 0.0)
            st = c1[c][1] - c0[c][1]
            used[c] = min(1.0, max(0.0, (busy + st) / wall))
            steal += max(0.0, st / wall)
    others = sum(used.values())
    me = os.getpid()
    busy_procs = sorted(((name, pid, 100 * (t - p0[pid][1]) / wall) for pid, (name, t) in p1.items()
                         if pid != me and pid in p0 and (t - p0[pid][1]) / wall > 0.1), key=lambda b: -b[2])
    quota = cgroup_quota()
    n = len(allowed) - max(0, math.ceil(others - FREE_SLACK))
    if quota is not None:
        n = min(n, int(math.floor(quota + 1e-9)))
    n = max(1, min(n, len(allowed))) if fixed is None else min(int(fixed), len(allowed))
    cpus = sorted(sorted(allowed, key=lambda c: (used.get(c, 0.0), c))[:n])
    return CpuPlan(allowed, cpus, others, used, steal, quota, busy_procs, wall, fixed=fixed)


# OpenBLAS's threads spin for 2^28 cycles (about 0.1 s) after each call, and take another value only before the
# library loads. Interleaved rounds wait for a peer's pool to go quiet before the next case's turn (its spinning
# threads would take the CPUs the next case is timed on): on 2 vCPUs `bench matmul --shapes resnet50 --compare numpy`
# took 63 s, most of it waiting 0.11 s after each NumPy turn. The measuring commands therefore run in a fresh
# interpreter with 2^24 cycles (a few ms), unless the user set a value: 23 s, and the same answer (hetnn / NumPy
# 1.09x (1.06-1.12) with 2^28, 1.09x (1.06-1.13) and 1.10x (1.04-1.14) with 2^24, alternating runs on a quiet Zen 4);
# 2^20 cycles read NumPy slower (1.13x and 1.21x against 1.09x and 1.14x). The report's environment records it.
# In a process that loaded OpenBLAS already (a notebook), use() shortens the spin for the run (hetnn._openblas).
SHORT_SPINS = {"OPENBLAS_THREAD_TIMEOUT": "24"}


def spin_note(threads: int) -> Optional[str]:
    """A line for a report run in a process whose OpenBLAS keeps its own spin (a notebook, a script), where the
    interleaved rounds wait for it: what to do about it. None where it does not apply (one thread: no workers)."""
    if threads <= 1 or any(k in os.environ for k in SHORT_SPINS):
        return None
    from . import _openblas

    try:
        from threadpoolctl import threadpool_info
        openblas = any(p.get("internal_api") == "openblas" for p in threadpool_info())
    except Exception:  # threadpoolctl cannot read the pools here: say nothing rather than guess
        return None
    if not openblas or _openblas.can_shorten():  # use() shortens it for the run
        return None
    setting = " ".join(f"{k}={v}" for k, v in SHORT_SPINS.items())
    return (f"note: OpenBLAS's threads spin about 0.1 s after each call here, and each interleaved turn after a "
            f"BLAS one waits for them; {setting} set before NumPy is imported (or `python -m hetnn bench`, which "
            f"sets it) makes such runs about 3x shorter")


def pin_supported() -> bool:
    return hasattr(os, "sched_setaffinity") and os.path.isdir("/proc/self/task")


@contextlib.contextmanager
def pinned(cpus: List[int]) -> Iterator[bool]:
    """Every thread of the process (and every thread started inside the block, which inherits its creator's
    mask) runs on ``cpus`` inside the block; each thread's own mask is restored after it. Yields whether pinning
    took effect (False where the OS does not allow it)."""
    if not pin_supported() or not cpus:
        yield False
        return
    saved: Dict[int, Any] = {}
    target = set(cpus)
    caller = os.sched_getaffinity(0)  # for threads started inside the block
    try:
        for tid in (int(t) for t in _listdir("/proc/self/task")):
            try:
                before = os.sched_getaffinity(tid)
                if before != target:
                    os.sched_setaffinity(tid, target)
                    saved[tid] = before
            except OSError:  # the thread ended meanwhile, or the mask is not ours to set
                pass
        yield True
    finally:
        for tid in (int(t) for t in _listdir("/proc/self/task")):
            try:
                mask = saved.get(tid)
                if mask is None and os.sched_getaffinity(tid) == target and caller != target:
                    mask = caller
                if mask is not None:
                    os.sched_setaffinity(tid, mask)
            except OSError:
                pass


def _listdir(path: str) -> List[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


@contextlib.contextmanager
def thread_limit(n: Optional[int]) -> Iterator[None]:
    """Every CPU thread pool of the process limited to ``n`` threads (hetnn's, the BLAS and OpenMP pools
    threadpoolctl finds, PyTorch's when imported); nothing changes for None."""
    if n is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    from ._threads import num_threads

    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    with threadpool_limits(n), num_threads(n):
        if torch is not None:
            torch.set_num_threads(n)
        try:
            yield
        finally:
            if torch is not None and before is not None:
                torch.set_num_threads(before)


@contextlib.contextmanager
def use(p: CpuPlan, pin: bool = True) -> Iterator[CpuPlan]:
    """Runs the block on plan ``p``: every pool at ``p.threads`` threads, OpenBLAS's idle spin short (as in the
    measuring commands: :mod:`hetnn._openblas`) and, with ``pin``, every thread on ``p.cpus`` when they are fewer
    than the CPUs allowed."""
    from ._openblas import short_spins

    with contextlib.ExitStack() as stack:
        if pin and len(p.cpus) < len(p.allowed):
            stack.enter_context(pinned(p.cpus))
        stack.enter_context(thread_limit(p.threads))
        if p.threads > 1:  # one thread: no workers to spin
            stack.enter_context(short_spins(SHORT_SPINS["OPENBLAS_THREAD_TIMEOUT"]))
        yield p
