"""Worker processes for one measurement, as pyperf runs its benchmarks: the same suite runs in several processes one
after another, each timing its share of the rounds, and every row holds the repeats of all of them.

Why: a machine's state moves between runs, not only within one (which CPU was free, a neighbour's load over minutes,
where a process's memory landed). Repeats from one process give an interval for that process: beside a busy neighbour
two runs of ``bench matmul --shapes resnet50 --compare numpy`` read hetnn cpu / NumPy 1.13x (1.11-1.14) and 1.09x
(1.08-1.10). With the repeats of several processes, :func:`hetnn.bench.stats.ratio_interval` resamples processes
first and rounds within them, so that the interval covers what a rerun would see.

How: every :func:`hetnn.interleave` call of a worker (``python -m hetnn.bench.worker``) is recorded (its cases'
names and results); the last process (the one that reports) merges the workers' results of the same call into its
own, call by call, per suite. The suites build the same cases in the same order in every process (same seeds,
devices, peers); a call whose case names differ is not merged and the report says so. Process ``p``'s round ``r``
becomes round ``p * ROUND_STRIDE + r``, so that ratios still pair repeats of the same round of the same process.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

ROUND_STRIDE = 1_000_000  # merged round = process index * ROUND_STRIDE + the round within that process

_recorder: Optional["_Recorder"] = None
_merger: Optional["_Merger"] = None


def process_of(rounds: Sequence[int]) -> np.ndarray:
    """The process index of each merged round."""
    return np.asarray(rounds, dtype=np.int64) // ROUND_STRIDE


def _result_dict(r: Any) -> Dict[str, Any]:
    return {"name": r.name, "wall": [float(t) for t in r.wall_times],
            "device": [None if math.isnan(t) else float(t) for t in r.device_times],
            "rounds": [int(v) for v in r.rounds], "counters": [c.as_dict() for c in r.counters],
            "noise": {k: v for k, v in r.noise.items() if isinstance(v, (int, float, str, bool)) or v is None},
            "quiet": bool(r.quiet_machine), "first_use": dict(r.first_use)}


class _Recorder:
    """In a worker: the results of every interleave call, per suite, written to ``path`` at the end."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.calls: Dict[str, List[Dict[str, Any]]] = {}
        self.key = ""

    def add(self, cases: Sequence[Any], results: Sequence[Any]) -> None:
        self.calls.setdefault(self.key, []).append({"names": [c.name for c in cases],
                                                   "results": [_result_dict(r) for r in results]})

    def write(self) -> None:
        tmp = self.path + ".part"
        with open(tmp, "w") as f:
            json.dump(self.calls, f)
        os.replace(tmp, self.path)


class _Merger:
    """In the reporting process: the workers' recordings, merged into each interleave call's results in turn."""

    def __init__(self, recordings: List[Dict[str, List[Dict[str, Any]]]]) -> None:
        self.recordings = recordings
        self.key = ""
        self.at: Dict[str, int] = {}
        self.unmatched = 0

    def merge(self, cases: Sequence[Any], results: List[Any]) -> List[Any]:
        k = self.at.get(self.key, 0)
        self.at[self.key] = k + 1
        names = [c.name for c in cases]
        calls = []
        for rec in self.recordings:
            got = rec.get(self.key, [])
            if k >= len(got) or got[k]["names"] != names:
                self.unmatched += 1
                return results  # a process built other cases: this call stays its own
            calls.append(got[k]["results"])
        return [_merged(r, [c[j] for c in calls]) for j, r in enumerate(results)]


def _merged(own: Any, others: List[Dict[str, Any]]) -> Any:
    """``own`` (this process's result, the last process) with the repeats of ``others`` (earlier processes)."""
    from ._measurement import BenchmarkResult
    from ._oscounters import Counters, summarize

    n = len(others)
    wall = [t for o in others for t in o["wall"]] + [float(t) for t in own.wall_times]
    dev = [math.nan if t is None else t for o in others for t in o["device"]] + [float(t) for t in own.device_times]
    rounds = [p * ROUND_STRIDE + r for p, o in enumerate(others) for r in o["rounds"]] + \
        [n * ROUND_STRIDE + int(r) for r in own.rounds]
    counters = [Counters(**c) for o in others for c in o["counters"]] + list(own.counters)
    out = BenchmarkResult(own.name, np.array(wall), np.array(dev), own.devices, own.flops, own.nbytes, own.n_warmup,
                          own.commands_per_call, counters, own.first_use, rounds=np.array(rounds, dtype=np.int64))
    quiet = bool(own.quiet_machine) and all(o["quiet"] for o in others)
    out.quiet_machine = quiet
    noise = {**own.noise, **summarize(counters, quiet), "quiet_machine": quiet,
             "rerun": int(own.noise.get("rerun", 0)) + sum(int(o["noise"].get("rerun", 0)) for o in others),
             "processes": n + 1}
    for key in ("others_pct", "steal_pct"):  # the busiest process's load
        vals = [v for v in [own.noise.get(key)] + [o["noise"].get(key) for o in others]
                if isinstance(v, float) and not math.isnan(v)]
        if vals:
            noise[key] = max(vals)
    if noise["rerun"] and not noise["noise"]:
        noise["noise"] = f"re-ran {noise['rerun']} preempted"
    out.noise = noise
    return out


def after_interleave(cases: Sequence[Any], results: List[Any]) -> List[Any]:
    """Called by :func:`hetnn.interleave` with its results: recorded in a worker, merged in the reporting process,
    returned as they are otherwise."""
    if _recorder is not None:
        _recorder.add(cases, results)
    if _merger is not None:
        return _merger.merge(cases, results)
    return results


def set_key(key: str) -> None:
    """The part of the run that follows (a suite at a thread count): calls are matched within it."""
    for obj in (_recorder, _merger):
        if obj is not None:
            obj.key = key


def split(total: int, processes: int) -> int:
    """Each process's share of ``total`` repeats (at least one)."""
    return max(1, -(-int(total) // int(processes)))


def work(spec_path: str, out_path: str, body: Callable[[Dict[str, Any]], None]) -> int:
    """A worker process's main: ``body(spec)`` (the spec run_workers wrote) runs with every interleave call
    recorded, and the recording is written to ``out_path``."""
    global _recorder
    with open(spec_path) as f:
        spec = json.load(f)
    _recorder = _Recorder(out_path)
    try:
        body(spec)
        _recorder.write()
    finally:
        _recorder = None
    return 0


def run_workers(spec: Dict[str, Any], count: int,
                module: str = "hetnn.bench.worker") -> Tuple[List[Dict[str, List[Dict[str, Any]]]], List[str]]:
    """Runs ``count`` workers one after another, ``python -m MODULE SPEC.json OUT.json`` with ``spec`` (what to run:
    JSON-ready); returns their recordings and a note per worker that failed (its repeats are then missing, said
    so)."""
    recordings: List[Dict[str, List[Dict[str, Any]]]] = []
    notes: List[str] = []
    with tempfile.TemporaryDirectory(prefix="hetnn-workers-") as tmp:
        spec_path = os.path.join(tmp, "spec.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        for w in range(count):
            out = os.path.join(tmp, f"worker-{w}.json")
            try:
                p = subprocess.run([sys.executable, "-m", module, spec_path, out], capture_output=True, text=True)
            except BaseException:  # Ctrl-C, SIGTERM: the worker is stopped (subprocess kills it) and said so
                print(f"hetnn: interrupted while worker process {w + 1} of {count} ran: the repeats the workers "
                      f"measured are not kept (they join the rows only in the last process)", file=sys.stderr,
                      flush=True)
                raise
            if p.returncode != 0 or not os.path.exists(out):
                tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]
                notes.append(f"worker process {w + 1} failed (exit {p.returncode}: {tail[0]}): its repeats are "
                             f"missing")
                continue
            with open(out) as f:
                recordings.append(json.load(f))
    return recordings, notes
