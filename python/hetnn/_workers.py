"""Worker processes for one measurement, as pyperf runs its benchmarks: the same suite runs in several processes one
after another, each timing its share of the rounds, and every row holds the repeats of all of them.

Why: a machine's state moves between runs, not only within one (which CPU was free, a neighbour's load over minutes,
where a process's memory landed). Repeats from one process give an interval for that process: beside a busy neighbour
two runs of ``bench matmul --shapes resnet50 --compare numpy`` read hetnn cpu / NumPy 1.13x (1.11-1.14) and 1.09x
(1.08-1.10). With the repeats of several processes, :func:`hetnn.bench.stats.ratio_interval` resamples processes
first and rounds within them, so that the interval covers what a rerun would see.

How: every :func:`hetnn.interleave` call of a worker (``python -m hetnn.bench.worker``) is recorded (its cases'
names and results, a line appended after each call); the last process (the one that reports) merges the
workers' results of the same call into its own, call by call, per suite. The suites build the same cases in the same
order in every process (same seeds, devices, peers); a call whose case names differ is not merged and the report says
so. Process ``p``'s round ``r`` becomes round ``p * ROUND_STRIDE + r``, so that ratios still pair repeats of the same
round of the same process.

An interrupt (Ctrl-C, SIGTERM) while the workers run keeps what they measured: the reporting process runs the suite
again in replay, where each interleave call returns the recorded results of that call instead of timing (the cases
are called once, for the checks that read their output) and the first call no worker finished raises
:class:`ReplayEnd`, which the caller turns back into the interrupt, with the rows made so far.
"""
from __future__ import annotations

import contextlib
import importlib
import json
import math
import os
import subprocess
import sys
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ._loader import _core

ROUND_STRIDE = 1_000_000  # merged round = process index * ROUND_STRIDE + the round within that process

_recorder: Optional["_Recorder"] = None
_merger: Optional["_Merger"] = None


def process_of(rounds: Sequence[int]) -> np.ndarray:
    """The process index of each merged round."""
    return np.asarray(rounds, dtype=np.int64) // ROUND_STRIDE


class ReplayEnd(BaseException):
    """A replay reached an interleave call that no worker had finished: the run stopped there."""


def _result_dict(r: Any) -> Dict[str, Any]:
    return {"name": r.name, "commands": int(r.commands_per_call), "wall": [float(t) for t in r.wall_times],
            "device": [None if math.isnan(t) else float(t) for t in r.device_times],
            "rounds": [int(v) for v in r.rounds], "counters": [c.as_dict() for c in r.counters],
            "noise": {k: v for k, v in r.noise.items() if isinstance(v, (int, float, str, bool)) or v is None},
            "quiet": bool(r.quiet_machine), "first_use": dict(r.first_use)}


class _Recorder:
    """In a worker: the results of every interleave call, a JSON line each appended to ``path`` as the call ends
    (so that an interrupt keeps the calls finished; a line cut by the kill is skipped on reading)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.key = ""
        open(path, "w").close()  # a worker that timed nothing still leaves its (empty) recording

    def add(self, cases: Sequence[Any], results: Sequence[Any]) -> None:
        line = json.dumps({"key": self.key, "names": [c.name for c in cases],
                           "results": [_result_dict(r) for r in results]})
        with open(self.path, "a") as f:
            f.write(line + "\n")


def read_recording(path: str) -> Dict[str, List[Dict[str, Any]]]:
    """A worker's recording: its calls per key, in order (a last line cut short by a kill left out)."""
    calls: Dict[str, List[Dict[str, Any]]] = {}
    with open(path) as f:
        for line in f:
            try:
                call = json.loads(line)
            except ValueError:
                break
            calls.setdefault(call.pop("key"), []).append(call)
    return calls


class _Merger:
    """In the reporting process: the workers' recordings, merged into each interleave call's results in turn; with
    ``replay``, the recorded results stand for the call (:func:`replayed`)."""

    def __init__(self, recordings: List[Dict[str, List[Dict[str, Any]]]], replay: bool = False) -> None:
        self.recordings = recordings
        self.replay = replay
        self.key = ""
        self.at: Dict[str, int] = {}
        self.unmatched = 0
        self.active = True  # set_key: whether the workers ran the current part

    def _next(self, cases: Sequence[Any]) -> Tuple[List[List[Dict[str, Any]]], int]:
        """The recorded results of this call (the next one of the current key) with the same case names, and how
        many recordings lack it."""
        k = self.at.get(self.key, 0)
        self.at[self.key] = k + 1
        names = [c.name for c in cases]
        calls = []
        for rec in self.recordings:
            got = rec.get(self.key, [])
            if k < len(got) and got[k]["names"] == names:
                calls.append(got[k]["results"])
        return calls, len(self.recordings) - len(calls)

    def merge(self, cases: Sequence[Any], results: List[Any]) -> List[Any]:
        if not self.active:
            return results
        calls, missing = self._next(cases)
        if missing:
            self.unmatched += 1
            return results  # a process built other cases: this call stays its own
        return [_merged(r, [c[j] for c in calls]) for j, r in enumerate(results)]


def _merged(own: Any, others: List[Dict[str, Any]]) -> Any:
    """``own`` (this process's result, the last process) with the repeats of ``others`` (earlier processes)."""
    return _combined(own.name, own.devices, own.flops, own.nbytes, own.n_warmup, own.commands_per_call,
                     own.first_use, others + [_result_dict(own)], own.noise)


def _combined(name: str, devices: Any, flops: Any, nbytes: Any, n_warmup: int, commands: int,
              first_use: Dict[str, Any], parts: List[Dict[str, Any]], noise0: Dict[str, Any]) -> Any:
    """One result holding the repeats of ``parts`` (recorded results, in process order); ``noise0``: the noise
    entries of the last one, which the merged counters' summary updates."""
    from ._measurement import BenchmarkResult, rerun_text
    from ._oscounters import Counters, preempted, summarize

    wall = [t for o in parts for t in o["wall"]]
    dev = [math.nan if t is None else t for o in parts for t in o["device"]]
    rounds = [p * ROUND_STRIDE + r for p, o in enumerate(parts) for r in o["rounds"]]
    counters = [Counters(**c) for o in parts for c in o["counters"]]
    # each process's repeats judged by its own run: one process beside a busy neighbour made every process's
    # self-inflicted waits (PoCL's threads queued behind the caller) count as preemptions, the row unreliable
    each = [bool(o["quiet"]) for o in parts for _ in o["counters"]]
    clean = [i for i, m in enumerate(preempted(counters, each)) if not m]
    asked = sum(int(o["noise"].get("asked", len(o["wall"]))) for o in parts)
    dropped = 0
    if clean and len(clean) < len(wall) and 2 * len(clean) >= asked:
        # as interleave does within a process: enough clean repeats over all processes are the measurement (a
        # process that kept its preempted repeats, too few of its own clean, no longer makes the row unreliable)
        dropped = len(wall) - len(clean)
        wall, dev, rounds = [wall[i] for i in clean], [dev[i] for i in clean], [rounds[i] for i in clean]
        counters, each = [counters[i] for i in clean], [each[i] for i in clean]
    out = BenchmarkResult(name, np.array(wall), np.array(dev), devices, flops, nbytes, n_warmup, commands, counters,
                          first_use, rounds=np.array(rounds, dtype=np.int64))
    quiet = all(o["quiet"] for o in parts)
    out.quiet_machine = quiet
    noise = {**noise0, **summarize(counters, each), "quiet_machine": quiet, "asked": asked,
             "rerun": sum(int(o["noise"].get("rerun", 0)) for o in parts) + dropped, "processes": len(parts)}
    for key in ("others_pct", "steal_pct"):  # the busiest process's load
        vals = [v for v in [o["noise"].get(key) for o in parts] if isinstance(v, float) and not math.isnan(v)]
        if vals:
            noise[key] = max(vals)
    peaks = [int(o["noise"]["peak_bytes"]) for o in parts if o["noise"].get("peak_bytes") is not None]
    if peaks:  # the largest working set any process saw
        noise["peak_bytes"] = max(peaks)
    if noise["rerun"] and not noise["noise"]:
        noise["noise"] = rerun_text(noise["rerun"], len(wall), asked)
    out.noise = noise
    return out


def replayed(cases: Sequence[Any], n_warmup: int) -> Optional[List[Any]]:
    """In a replay (the workers were interrupted): the recorded results of this interleave call, each case called
    once for the checks that read its output; ReplayEnd when no worker finished the call. None outside a replay."""
    m = _merger
    if m is None or not m.replay:
        return None
    calls, _ = m._next(cases)
    if not calls:
        raise ReplayEnd
    for c in cases:
        c.fn()
        c.wait()
    out = []
    for j, c in enumerate(cases):
        parts = [call[j] for call in calls]
        out.append(_combined(c.name, c.devices, c.flops, c.nbytes, n_warmup, int(parts[-1].get("commands", 0)),
                             dict(parts[0]["first_use"]), parts, dict(parts[-1]["noise"])))
    return out


def after_interleave(cases: Sequence[Any], results: List[Any]) -> List[Any]:
    """Called by :func:`hetnn.interleave` with its results: recorded in a worker, merged in the reporting process,
    returned as they are otherwise."""
    if _recorder is not None:
        _recorder.add(cases, results)
    if _merger is not None:
        return _merger.merge(cases, results)
    return results


def in_worker() -> bool:
    """Whether this process is a worker (its rows are not reported: work beyond the interleaved timings is wasted)."""
    return _recorder is not None


def set_key(key: str, merged: bool = True) -> None:
    """The part of the run that follows (a suite at a thread count): calls are matched within it. ``merged`` False:
    a part the workers do not run (a suite timed in this process alone), whose calls are not matched."""
    for obj in (_recorder, _merger):
        if obj is not None:
            obj.key = key
    if _merger is not None:
        _merger.active = merged


def split(total: int, processes: int) -> int:
    """Each process's share of ``total`` repeats (at least one)."""
    return max(1, -(-int(total) // int(processes)))


def shares(n_repeat: int, max_duration: Optional[float], processes: int) -> Tuple[int, Optional[float]]:
    """Each process's share of a row's repeats and of its seconds of timing (warm-up calls in every one)."""
    return split(n_repeat, processes), None if max_duration is None else float(max_duration) / int(processes)


def start(spec: Dict[str, Any], count: int, module: str, note: Callable[[str], None]) -> Optional[BaseException]:
    """Runs ``count`` workers (:func:`run_workers`) and sets up this process's merging of their recordings, ``note``
    getting a line per worker that failed. Returns the interrupt that stopped the workers once some timed run had
    finished: the recordings are then replayed (the caller runs its work again, which ends in ReplayEnd or after the
    last recorded call, and raises the interrupt); an interrupt before that is raised here."""
    global _merger
    recordings, notes, stopped = run_workers(spec, count, module)
    for line in notes:
        note(line)
    _merger = _Merger(recordings, replay=stopped is not None) if recordings else None
    return stopped


def work(spec_path: str, out_path: str, body: Callable[[Dict[str, Any]], None]) -> int:
    """A worker process's main: ``body(spec)`` (the spec run_workers wrote) runs with every interleave call
    recorded in ``out_path``."""
    global _recorder
    with open(spec_path) as f:
        spec = json.load(f)
    if "matmul_precision" in spec:
        _core.set_matmul_precision(spec["matmul_precision"])
    _recorder = _Recorder(out_path)
    try:
        body(spec)
    finally:
        _recorder = None
    return 0


def _encode(v: Any) -> Any:
    """A call's arguments as JSON: devices by id, tuples as lists, NumPy scalars as Python numbers."""
    from ._device import Device

    if isinstance(v, Device):
        return {"__device__": v.id}
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [_encode(x) for x in v]
    if isinstance(v, dict):
        return {k: _encode(x) for k, x in v.items()}
    return v


def _decode(v: Any) -> Any:
    from ._device import device

    if isinstance(v, dict):
        return device(v["__device__"]) if set(v) == {"__device__"} else {k: _decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_decode(x) for x in v]
    return v


def call(spec: Dict[str, Any]) -> Any:
    """A worker's side of :func:`spread_call`: the function of ``spec`` with its share of the repeats, on the thread
    count of the process it works for (its CPU mask it inherited)."""
    from ._cpus import SHORT_SPINS, thread_limit
    from ._openblas import short_spins

    module, name = spec["call"].split(":")
    set_key(f"call {name}")
    threads = spec.get("threads")
    with thread_limit(threads), short_spins(SHORT_SPINS["OPENBLAS_THREAD_TIMEOUT"]) if threads and threads > 1 \
            else contextlib.nullcontext():
        return getattr(importlib.import_module(module), name)(**_decode(spec["kwargs"]))


def spread_call(target: str, kwargs: Dict[str, Any], processes: int, repeats: str = "n_repeat") -> Any:
    """``target`` ("module:function", a function whose timings all go through interleave, with a ``repeats``
    argument (its repeats per row) and ``max_duration``) run in ``processes`` processes one after another, each
    with its share of the repeats: the workers first (``python -m hetnn.bench.worker``), then this process, whose
    result it returns with the workers' repeats merged into its rows. Callables (progress) stay in this process;
    ``notes`` gets a line per worker that failed. An interrupt while the workers run is raised as it is (a function
    keeps no partial rows)."""
    global _merger
    from ._check import is_int
    from ._threads import get_num_threads

    module, name = target.split(":")
    if not is_int(processes) or not 1 <= processes <= 64:
        raise ValueError(f"{name}: processes must be an integer from 1 to 64, got {processes!r}")
    fn = getattr(importlib.import_module(module), name)
    n_repeat, max_duration = shares(kwargs[repeats], kwargs.get("max_duration"), processes)
    share = dict(kwargs, max_duration=max_duration, **{repeats: n_repeat})
    if processes == 1:
        return fn(**share)
    if _recorder is not None or _merger is not None:
        raise ValueError(f"{name}: processes > 1 inside a run already spread over processes")
    notes = kwargs.get("notes")
    sent = {k: v for k, v in share.items() if not callable(v) and k != "notes"}
    stopped = start({"call": target, "kwargs": _encode(sent), "threads": get_num_threads()}, processes - 1,
                    "hetnn.bench.worker", notes.append if isinstance(notes, list) else lambda line: None)
    if stopped is not None:
        _merger = None
        raise stopped  # a function keeps no partial rows
    set_key(f"call {name}")
    try:
        out = fn(**share)
        if _merger is not None and _merger.unmatched and isinstance(notes, list):
            notes.append(f"{_merger.unmatched} timed run(s) differed between the processes and hold this "
                         f"process's repeats alone")
        return out
    finally:
        _merger = None


def run_workers(spec: Dict[str, Any], count: int, module: str = "hetnn.bench.worker") -> Tuple[
        List[Dict[str, List[Dict[str, Any]]]], List[str], Optional[BaseException]]:
    """Runs ``count`` workers one after another, ``python -m MODULE SPEC.json OUT.json`` with ``spec`` (what to run:
    JSON-ready); returns their recordings, a note per worker that failed (its repeats are then missing, said so),
    and the interrupt (Ctrl-C, SIGTERM) that stopped them once a timed run had finished (None otherwise; an
    interrupt before that is raised)."""
    recordings: List[Dict[str, List[Dict[str, Any]]]] = []
    notes: List[str] = []
    spec = dict(spec, matmul_precision=_core.matmul_precision_in_force())  # the workers compute as this thread does
    with tempfile.TemporaryDirectory(prefix="hetnn-workers-") as tmp:
        spec_path = os.path.join(tmp, "spec.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        for w in range(count):
            out = os.path.join(tmp, f"worker-{w}.json")
            try:
                p = subprocess.run([sys.executable, "-m", module, spec_path, out], capture_output=True, text=True)
            except BaseException as exc:  # the worker is stopped (subprocess kills it): what it finished stays
                if os.path.exists(out):
                    recordings.append(read_recording(out))
                calls = max((sum(len(v) for v in rec.values()) for rec in recordings), default=0)
                print(f"hetnn: interrupted while worker process {w + 1} of {count} ran: "
                      + (f"making rows of the {calls} timed run(s) the workers finished" if calls else
                         "no timed run had finished"), file=sys.stderr, flush=True)
                if not calls:
                    raise
                return recordings, notes, exc
            if p.returncode != 0 or not os.path.exists(out):
                tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]
                notes.append(f"worker process {w + 1} failed (exit {p.returncode}: {tail[0]}): its repeats are "
                             f"missing")
                continue
            recordings.append(read_recording(out))
    return recordings, notes, None
