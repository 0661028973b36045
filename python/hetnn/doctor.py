"""``python -m hetnn doctor``: is this machine fit to measure on right now? (in the manner of pyperf's system check)

Checks other busy processes, load, steal time, CPU frequency scaling, transparent huge pages and every thread pool
of the process, each with advice. ``bench`` prints the warnings at the top of its report.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import List, Optional

from . import _cpus


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
    text = _cpus._read(path)
    return None if text is None else text.strip()


def check(seconds: float = 0.5, plan: Optional[_cpus.CpuPlan] = None) -> List[Finding]:
    """Every check, each a :class:`Finding` ("warn" where measurements would suffer); ``plan``: a sample of the
    machine already taken (:func:`hetnn._cpus.plan`), else one of ``seconds``."""
    from ._threads import thread_pools

    out: List[Finding] = []
    if plan is None or plan.fixed is not None:
        plan = _cpus.plan(seconds)
    cpus = len(plan.allowed)
    if plan.busy:
        names = ", ".join(f"{n} (pid {p}, {pct:.0f} %)" for n, p, pct in plan.busy[:5])
        out.append(Finding("warn", "other processes", f"busy over {seconds} s: {names}",
                           f"the bench and the studies run on the CPUs left free ({plan.header()}); for figures "
                           f"with every CPU, stop them"))
    else:
        out.append(Finding("ok", "other processes", "none used more than 10 % of a CPU"))
    steal = 100 * plan.steal / max(cpus, 1)
    if steal > 2:
        out.append(Finding("warn", "steal", f"{steal:.1f} % of the CPUs went to other guests of the host",
                           "a shared VM: preempted repeats are run again and flagged; compare only figures "
                           "measured interleaved in one run"))
    else:
        out.append(Finding("ok", "steal", f"{steal:.1f} %"))
    if plan.quota is not None and plan.quota < cpus:
        out.append(Finding("info", "cgroup quota", f"{plan.quota:g} CPUs' worth of time for {cpus} CPUs",
                           "the bench runs as many threads as the quota allows"))
    try:
        load1 = os.getloadavg()[0]
    except OSError:
        load1 = float("nan")
    out.append(Finding("info" if load1 > 0.5 * cpus else "ok", "load", f"1-minute load {load1:.2f} on {cpus} CPUs",
                       "a past average: the busy processes above are what holds the CPUs now"
                       if load1 > 0.5 * cpus else ""))
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
    known = {os.path.realpath(lib["path"]): lib for lib in pools["blas_sharing"]["libraries"]}
    for p in others:  # an OpenBLAS never handed over (HETNN_SHARE_BLAS=0, or loaded after hetnn) runs its own threads
        path = os.path.realpath(p.get("filepath") or "")
        if p.get("internal_api") == "openblas" and path not in known:
            known[path] = {"path": path, "shared": False, "why": "not handed to hetnn: HETNN_SHARE_BLAS=0, or loaded "
                           "after hetnn"}
    for lib in known.values():
        name = os.path.basename(lib["path"])
        if lib["shared"]:
            out.append(Finding("info", "OpenBLAS", f"{name} runs its threads on hetnn's pool (share_blas_threads)"))
        elif cpus <= 4:
            out.append(Finding("info", "OpenBLAS",  # the benchmarks wait for idle pools: a user's own loops pay
                               f"{name} runs its own threads ({lib['why']}): they spin about 0.1 s after each "
                               "NumPy call, taking the CPUs the next hetnn op needs",
                               "hetnn.share_blas_threads(True), or threadpoolctl.threadpool_limits(1, 'blas') around "
                               "hetnn-heavy loops"))
    if pools.get("threadpoolctl") == "not installed":
        out.append(Finding("info", "threadpoolctl", "not installed: other libraries' pools are not listed"))
    env = pools.get("environment", {})
    if env:
        out.append(Finding("info", "environment", ", ".join(f"{k}={v}" for k, v in env.items())))
    return out


def warnings(seconds: float = 0.3, plan: Optional[_cpus.CpuPlan] = None) -> List[str]:
    """The "warn" findings as lines, for the top of a benchmark report."""
    return [f.line() for f in check(seconds, plan) if f.level == "warn"]


def main() -> int:
    findings = check()
    for f in findings:
        print(f.line())
    n = sum(f.level == "warn" for f in findings)
    print(f"\n{n} warning(s)" if n else "\nno warnings: fit to measure")
    return 0
