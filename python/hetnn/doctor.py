"""``python -m hetnn doctor``: is this machine fit to measure on right now? (in the manner of pyperf's system check)

Checks other busy processes, load, steal time, CPU frequency scaling, transparent huge pages and every thread pool
of the process, each with advice. ``bench`` prints the warnings at the top of its report.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple


@dataclass
class Finding:
    level: str     # "ok", "info" or "warn"
    topic: str
    message: str
    advice: str = ""

    def line(self) -> str:
        s = f"[{self.level}] {self.topic}: {self.message}"
        return s + (f" -> {self.advice}" if self.advice else "")


def _read(path: str) -> Optional[str]:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _process_times() -> Dict[int, Tuple[str, float]]:
    """CPU seconds per process (utime + stime from /proc/PID/stat), with its command name."""
    tick = os.sysconf("SC_CLK_TCK")
    out: Dict[int, Tuple[str, float]] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        st = _read(f"/proc/{pid}/stat")
        if not st:
            continue
        name = st[st.find("(") + 1:st.rfind(")")]
        fields = st[st.rfind(")") + 2:].split()
        out[int(pid)] = (name, (int(fields[11]) + int(fields[12])) / tick)
    return out


def _stat_cpu() -> List[int]:
    line = (_read("/proc/stat") or "cpu 0 0 0 0").splitlines()[0]
    return [int(x) for x in line.split()[1:]]


def busy_and_steal(seconds: float = 0.5) -> Tuple[List[Tuple[str, int, float]], float]:
    """Processes other than this one that used more than 10 % of a CPU over ``seconds`` (name, pid, percent),
    and the machine's steal time over the same window (percent of all CPUs)."""
    if not os.path.isdir("/proc/self"):
        return [], 0.0
    p0, s0 = _process_times(), _stat_cpu()
    time.sleep(seconds)
    p1, s1 = _process_times(), _stat_cpu()
    me = os.getpid()
    busy = []
    for pid, (name, t) in p1.items():
        if pid != me and pid in p0:
            pct = 100 * (t - p0[pid][1]) / seconds
            if pct > 10:
                busy.append((name, pid, pct))
    total = sum(s1) - sum(s0)
    steal = 100 * (s1[7] - s0[7]) / total if len(s1) > 7 and total > 0 else 0.0
    return sorted(busy, key=lambda x: -x[2]), steal


def check(seconds: float = 0.5) -> List[Finding]:
    """Every check, each a :class:`Finding` ("warn" where measurements would suffer)."""
    from ._threads import thread_pools

    out: List[Finding] = []
    cpus = _cpus()
    busy, steal = busy_and_steal(seconds)
    if busy:
        names = ", ".join(f"{n} (pid {p}, {pct:.0f} %)" for n, p, pct in busy[:5])
        out.append(Finding("warn", "other processes", f"busy over {seconds} s: {names}",
                           "stop them, or expect rows flagged 'preempted'"))
    else:
        out.append(Finding("ok", "other processes", "none used more than 10 % of a CPU"))
    if steal > 2:
        out.append(Finding("warn", "steal", f"{steal:.1f} % of the CPUs went to other guests of the host",
                           "a shared VM: compare only figures measured interleaved in one run"))
    else:
        out.append(Finding("ok", "steal", f"{steal:.1f} %"))
    try:
        load1 = os.getloadavg()[0]
    except OSError:
        load1 = float("nan")
    out.append(Finding("warn" if load1 > 0.5 * cpus else "ok", "load", f"1-minute load {load1:.2f} on {cpus} CPUs",
                       "wait for the load to drop" if load1 > 0.5 * cpus else ""))
    gov = _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    if gov is None:
        out.append(Finding("info", "frequency scaling", "not visible here (usual in VMs): the host decides"))
    else:
        out.append(Finding("ok" if gov == "performance" else "info", "frequency scaling", f"governor {gov}",
                           "" if gov == "performance" else "the clock may ramp up during a run: warm-up absorbs it"))
    thp = _read("/sys/kernel/mm/transparent_hugepage/enabled")
    if thp:
        mode = thp[thp.find("[") + 1:thp.find("]")] if "[" in thp else thp
        out.append(Finding("info", "transparent huge pages", mode,
                           "first touches of large arrays vary with it: first-use time is reported apart"))
    pools = thread_pools()
    hetnn_threads = pools["hetnn"]["threads"]
    out.append(Finding("info", "hetnn threads", f"{hetnn_threads} OpenMP threads; {pools['hetnn']['spin_policy']}"))
    if pools["hetnn"]["spin_policy"].startswith("libgomp default"):
        out.append(Finding("warn", "OpenMP spinning", "libgomp was loaded before hetnn with its default spin "
                           "(about 10 ms of CPU per call)", "set GOMP_SPINCOUNT=10000 before starting Python"))
    others = [p for p in pools.get("pools", []) if p.get("user_api") == "blas"]
    for p in others:
        out.append(Finding("info", "thread pool", f"{p.get('internal_api')} {p.get('version') or ''} "
                           f"({p.get('prefix')}): {p.get('num_threads')} threads".replace("  ", " ")))
    if others and any(p.get("internal_api") == "openblas" for p in others) and cpus <= 4:
        out.append(Finding("info", "OpenBLAS", "its workers spin about 0.1 s after each NumPy call, taking CPUs "
                           "from whatever runs next", "the bench waits for them between libraries; in your own "
                           "code, threadpoolctl.threadpool_limits(1, 'blas') around hetnn-heavy loops"))
    if pools.get("threadpoolctl") == "not installed":
        out.append(Finding("info", "threadpoolctl", "not installed: other libraries' pools are not listed"))
    env = pools.get("environment", {})
    if env:
        out.append(Finding("info", "environment", ", ".join(f"{k}={v}" for k, v in env.items())))
    return out


def warnings(seconds: float = 0.3) -> List[str]:
    """The "warn" findings as lines, for the top of a benchmark report."""
    return [f.line() for f in check(seconds) if f.level == "warn"]


def main() -> int:
    findings = check()
    for f in findings:
        print(f.line())
    n = sum(f.level == "warn" for f in findings)
    print(f"\n{n} warning(s)" if n else "\nno warnings: fit to measure")
    return 0
