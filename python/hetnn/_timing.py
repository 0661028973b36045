"""Synchronized timing: every measurement waits for the devices before reading the clock, so asynchronous device
work is never mis-timed. Device times come from the devices themselves (OpenCL profiling events; the CPU device
times each primitive) and are summed over *every* command a call issued (kernels and transfers)."""
from __future__ import annotations

import math
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union, cast

import numpy as np

from . import _workers
from ._device import Device, DeviceLike, device as _resolve_device, devices as _all_devices, get_default_device
from ._check import is_int, is_real
from ._measurement import BenchmarkResult, rerun_text
from ._oscounters import (Counters, Probe, machine_was_quiet, preempted, quiesce, quiet_since, span_noise,
                          summarize)

PRECALL_BELOW_S = 0.02  # interleaved cases faster than this get untimed calls right before each timed one ...
PRECALL_S = 0.002       # ... for this long at least, ...
PRECALL_NEAR = 1.15     # ... and until one runs within this factor of the case's best call ...
PRECALL_MAX_S = 0.012   # ... for this long at most

DevicesLike = Union[DeviceLike, Sequence[DeviceLike]]


def _started() -> List[Device]:
    return [d for d in _all_devices() if d._dev.started]


def _device_list(spec: DevicesLike) -> List[Device]:
    if spec is None:
        return _started()
    if isinstance(spec, (list, tuple)):
        return [_resolve_device(s) for s in spec]
    if spec == "all":
        return _all_devices()
    return [_resolve_device(cast(DeviceLike, spec))]


def synchronize(device: DevicesLike = None) -> None:
    """Waits until all work issued to ``device`` (a device, a list of them, or None: every device in use) has
    finished."""
    for d in _device_list(device):
        d._dev.synchronize()


def empty_cache(device: DevicesLike = None) -> int:
    """Frees the memory blocks hetnn keeps for reuse after their arrays went away (each device keeps up to 1/8 of
    its memory so that new outputs of a size seen before need no fresh, page-faulting allocation). ``device``: a
    device, a list of them, or None for every device in use. Returns the number of bytes freed."""
    synchronize(device)
    return sum(d._dev.release_cached_memory() for d in _device_list(device))


def memory_stats(device: DeviceLike = None) -> Dict[str, int]:
    """What hetnn's allocator holds on ``device`` (None: the default device): ``bytes_in_use`` by live arrays and
    work buffers (as allocated: blocks of 1 MiB and more are rounded to 2 MiB), ``peak_bytes_in_use`` since the
    last :func:`reset_peak_memory_stats`, ``bytes_cached`` (freed blocks kept for reuse; :func:`empty_cache` frees
    them), ``buffers_in_use``, ``buffers_created`` and ``buffers_reused`` (served from the cache). Arrays sharing
    NumPy's memory on the CPU device (``asarray(..., copy=False)``) allocate nothing and count nowhere."""
    dev = get_default_device() if device is None else _resolve_device(device)
    return {k: int(v) for k, v in dev._dev.memory_stats().items()}


def reset_peak_memory_stats(device: DeviceLike = None) -> None:
    """Restarts ``device``'s ``peak_bytes_in_use`` (None: the default device) from what is in use now. Timing with
    :func:`interleave` or :func:`benchmark` restarts it before each timed call (each row's ``peak_bytes``)."""
    dev = get_default_device() if device is None else _resolve_device(device)
    dev._dev.reset_peak_memory_stats()


class _Capture:
    """Records the commands the devices run between open() and close()."""

    def __init__(self, devs: Iterable[Device]) -> None:
        self.devs = list(dict.fromkeys(devs))
        self.tokens: Dict[Device, int] = {}
        self.details = True

    def open(self, details: bool = True) -> None:
        """details=False: only the totals per command name will be read (close_totals); the devices then fold
        each name's records into one and the ops build no operand strings (a fit of 2,000 tiny epochs spent half
        its time recording)."""
        self.details = details
        self.tokens = {d: d._dev.capture_begin(details) for d in self.devs}

    def reset_peaks(self) -> None:
        """Restarts the devices' peak of memory in use (a timed call's working set; not done by open(), so that a
        Stopwatch or a profile leaves the user's peak alone)."""
        for d in self.devs:
            d._dev.reset_peak_memory_stats()

    def peak_bytes(self) -> Optional[int]:
        """The most bytes hetnn's allocators held on the devices since reset_peaks() (summed over them); None
        without devices."""
        return sum(int(d._dev.memory_stats()["peak_bytes_in_use"]) for d in self.devs) if self.devs else None

    def close(self) -> List[Dict[str, Any]]:
        out = []
        for d, tok in self.tokens.items():
            for name, host, start, end, nbytes, detail in d._dev.capture_end(tok, self.details):
                out.append({"name": name, "device": d.id, "host_enqueue": host, "start": start, "end": end,
                            "duration": max(end - start, 0.0), "bytes": nbytes, "detail": detail})
        self.tokens = {}
        return out

    def close_totals(self) -> Dict[str, float]:
        """close(), summed: seconds of device time per command name over every device (a long fit's records are
        summed in C++, not made into thousands of Python dicts)."""
        out: Dict[str, float] = {}
        for d, tok in self.tokens.items():
            for name, seconds in d._dev.capture_totals(tok, self.details).items():
                out[name] = out.get(name, 0.0) + seconds
        self.tokens = {}
        return out


class Stopwatch:
    """One synchronized measurement::

        with hetnn.Stopwatch() as t:
            c = hetnn.matmul(a, b)
        print(t.elapsed, t.device_time)

    On entry and exit the devices are synchronized. ``elapsed`` is host wall-clock seconds, ``device_time`` the
    summed duration of the device commands issued inside (devices: ``device``, else the default device and every
    device already in use), ``records`` the commands themselves. (Repeated measurement with warm-up and spread, what
    ``torch.utils.benchmark.Timer`` does, is :func:`hetnn.benchmark`.)
    """

    def __init__(self, device: DevicesLike = None) -> None:
        if device is not None:
            _device_list(device)  # an unknown device spec fails here, where it was written, not on entry
        self._spec = device
        self.elapsed = math.nan
        self.device_time = math.nan
        self.records: List[Dict[str, Any]] = []

    def __enter__(self) -> "Stopwatch":
        devs = _device_list(self._spec) if self._spec is not None else [get_default_device(), *_started()]
        for d in devs:
            d._dev.start()
        self._cap = _Capture(devs)
        synchronize(self._cap.devs)
        self._cap.open()
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        synchronize(self._cap.devs)
        t1 = time.perf_counter()
        self.records = self._cap.close()
        self.elapsed = t1 - self._t0
        self.device_time = sum(r["duration"] for r in self.records) if self.records else math.nan

    def __repr__(self) -> str:
        return f"Stopwatch(elapsed={self.elapsed * 1e3:.3f} ms, device_time={self.device_time * 1e3:.3f} ms)"


class Case:
    """One thing to time in :func:`interleave`: ``fn()`` with ``sync()`` after it (a peer library's device wait;
    hetnn devices in ``devices`` are synchronized and their command times captured)."""

    def __init__(self, name: str, fn: Callable[[], Any], *, sync: Optional[Callable[[], None]] = None,
                 devices: Sequence[Device] = (), flops: Optional[float] = None,
                 nbytes: Optional[float] = None) -> None:
        if not callable(fn):
            raise TypeError(f"Case {name!r}: fn must be callable, got {type(fn).__name__}")
        self.name, self.fn, self.sync, self.devices = name, fn, sync, list(devices)
        self.flops, self.nbytes = flops, nbytes

    def wait(self) -> None:
        synchronize(self.devices)
        if self.sync is not None:
            self.sync()


def _first_use_totals() -> Dict[str, float]:
    """Sums over every device (one not started reads as zeros): a case's own devices may start in its warm-up."""
    tot = {"built": 0.0, "disk_hits": 0.0, "seconds": 0.0}
    for d in _all_devices():
        st = d._dev.first_use_stats()
        for k in tot:
            tot[k] += st[k]
    return tot


def _warm_up(c: Case, n_warmup: int, max_duration: Optional[float] = None) -> Dict[str, Any]:
    """``n_warmup`` untimed calls of ``c``; their cost (first call, all of them, programs or primitives built and
    read from the disk cache on any device meanwhile). A first call that, less its builds, took ``max_duration``
    or more ends the warm-up there: its first use is paid, and a second call would cost more than the row's timed
    budget (NumPy's sliding-window pooling of a large layer: 0.5 s a call)."""
    before = _first_use_totals()
    t0 = time.perf_counter()
    first_call = best = math.nan
    first_build = 0.0
    calls = 0
    for i in range(n_warmup):
        t1 = time.perf_counter()
        c.fn()
        c.wait()
        t2 = time.perf_counter()
        calls += 1
        if i == 0:
            first_call = t2 - t0
            first_build = _first_use_totals()["seconds"] - before["seconds"]
            if max_duration is not None and first_call - first_build >= max_duration:
                break
        if i == 1 or (i > 1 and t2 - t1 < best):  # the first call pays for first use: not an estimate of a call
            best = t2 - t1
    after = _first_use_totals()
    # One warm-up call: the estimate of a call is that call less the kernel builds it paid for (a cold program
    # cache's compile planned one round where max_duration allowed many)
    return {"call_s": first_call, "best_call_s": max(first_call - first_build, 0.0) if calls == 1 else best,
            "warmup_s": time.perf_counter() - t0, "warmup_calls": calls,
            "built": int(after["built"] - before["built"]),
            "disk_hits": int(after["disk_hits"] - before["disk_hits"]),
            "build_s": after["seconds"] - before["seconds"]}


SETTLE_S = 0.012        # a settled turn's wait for the other pools (quiesce's window): a turn's cost beyond its call


def _precall(c: Case, cap: _Capture, best: float = math.nan) -> None:
    """Untimed calls of ``c`` right before its timed one, recorded as the timed one is and the records dropped: at
    least one, for PRECALL_S at least, then until one runs within PRECALL_NEAR of ``best`` (the case's best call
    so far), at most 10 calls and PRECALL_MAX_S. A timed call whose recording path had not run since the last turn
    (the ops' operand strings, the records) cost about 10 us more than in a loop (a 12 us max pooling timed at 25),
    which peers, timed without a recorder, did not pay; and a memory-bound call after the settling found its data
    gone from the last-level cache for two or three calls (NumPy's float32 tanh of 4 Mi elements: 2.7-3.1 ms,
    then 1.5 as in a loop; 2 ms of calls left it timed at 2.8 and hetnn's compute-bound tanh 1.0x its speed
    instead of the loop's 0.6x)."""
    t_pre, k = time.perf_counter(), 0
    cap.open()
    try:
        while k < 10:
            t0 = time.perf_counter()
            c.fn()
            c.wait()
            now = time.perf_counter()
            k += 1
            if now - t_pre >= PRECALL_MAX_S or (now - t_pre >= PRECALL_S and
                                                 not (now - t0 > PRECALL_NEAR * best)):
                break
    finally:
        cap.close()


def _timed_call(c: Case, cap: _Capture, probe: Probe) -> Tuple[float, float, Counters, List[Dict[str, Any]]]:
    """One timed call of ``c``: (wall seconds, its devices' command seconds (NaN: none), OS counters, records)."""
    c.wait()
    cap.reset_peaks()
    cap.open()
    s0 = probe.read()
    t0 = time.perf_counter()
    c.fn()
    c.wait()
    t1 = time.perf_counter()
    s1 = probe.read()
    recs = cap.close()  # (cap.peak_bytes() still reads this call's peak)
    return t1 - t0, sum(r["duration"] for r in recs) if recs else math.nan, Probe.delta(s0, s1, wall=t1 - t0), recs


def spread_order(n: int) -> List[int]:
    """The rounds 0..n-1 in van der Corput order (bit-reversed counting): the first p of them are spread evenly over
    the n rounds for every p, and they are nested, the first p among the first p + 1. A case that can afford p
    repeats takes the first p, so its repeats sample the whole run, and two cases with different budgets share the
    rounds of the smaller one (their ratio pairs by round)."""
    if n <= 0:
        return []
    bits = max(1, (n - 1).bit_length())
    rev = [int(format(i, f"0{bits}b")[::-1], 2) for i in range(1 << bits)]
    return [r for r in rev if r < n]


RERUN_BUDGET = 2.0  # a case may spend this many times max_duration when its preempted repeats are re-run ...
RERUN_ROUNDS = 3    # ... and run this many times n_repeat rounds at most


def interleave(cases: Sequence[Case], *, n_warmup: int = 3, n_repeat: int = 20,
               max_duration: Optional[float] = None, settle: bool = True, rerun: bool = True,
               on_round: Optional[Callable[[int, int], None]] = None) -> List[BenchmarkResult]:
    """Times several cases in rounds instead of one block each: round 1 runs A B C, round 2 C B A, and so on, so
    that a drift of the machine (a neighbour starting, the clock changing) reaches every case alike and their
    ratio per round stays comparable (:func:`hetnn.bench.stats.ratio_interval` bootstraps over rounds). Each case
    first gets ``n_warmup`` untimed calls (first use: compilation, JIT, page faults; its cost is kept apart in
    ``first_use``); with ``settle``, before each timed call the other thread pools of the process are left to go
    idle (:func:`hetnn._oscounters.quiesce`) so that no library pays for another's spinning workers.

    Stops after ``n_repeat`` rounds. A case whose ``max_duration`` affords fewer turns (estimated from its warm-up
    calls) takes that many rounds spread over the whole run (:func:`spread_order`), not the first ones: the machine
    drifts over seconds, and repeats bunched in one stretch of the run gave intervals that the next run's excluded.
    For the same reason many things to compare (shapes, layers) are best one call's cases rather than one call each.
    A case whose turns took ``max_duration`` seconds sits out the remaining rounds all the same (each case is timed
    at least once). A turn is the timed call and what precedes it (the settling, a short case's
    untimed calls): the budget bounds the run's wall time, which settling (12 ms or more a turn) would otherwise
    multiply for fast calls and many repeats. ``on_round(r, n_repeat)`` is called before each of the first rounds
    (a progress bar). With ``rerun``, a repeat the OS shows preempted
    (:mod:`hetnn._oscounters`) is run again in a further round rather than kept, within RERUN_BUDGET x
    ``max_duration`` and RERUN_ROUNDS x ``n_repeat`` rounds per case; the cases still within their budget join
    those rounds, so that every clean repeat has partners in its round. The results hold the clean repeats (their
    rounds in ``rounds``, the dropped ones counted in ``noise["rerun"]``); a case left with fewer than half of its
    repeats clean keeps them all and is flagged as before (``preempted``, ``unreliable``).
    Every repeat records the OS counters of :mod:`hetnn._oscounters`."""
    cases = list(cases)
    if not cases:
        raise ValueError("interleave: no cases")
    bad = [type(c).__name__ for c in cases if not isinstance(c, Case)]
    if bad:
        raise TypeError(f"interleave: cases must be hetnn.Case objects, got {', '.join(bad)}")
    _check_counts(n_warmup, n_repeat, max_duration, where="interleave")
    for nm, v in (("settle", settle), ("rerun", rerun)):
        if not isinstance(v, (bool, np.bool_)):
            raise TypeError(f"interleave: {nm} must be a bool, got {v!r}")
    if on_round is not None and not callable(on_round):
        raise TypeError(f"interleave: on_round must be callable, got {type(on_round).__name__}")
    replay = _workers.replayed(cases, n_warmup)  # the workers' recorded results, after an interrupt
    if replay is not None:
        return replay
    probe = Probe()
    first = [_warm_up(c, n_warmup, max_duration) for c in cases]
    probe.refresh()  # the warm-ups may have started thread pools
    span0 = probe.read()
    caps = [_Capture(c.devices) for c in cases]
    n = len(cases)
    walls: List[List[float]] = [[] for _ in cases]
    devt: List[List[float]] = [[] for _ in cases]
    counters: List[List[Counters]] = [[] for _ in cases]
    rounds: List[List[int]] = [[] for _ in cases]
    commands = [0] * n
    peaks: List[Optional[int]] = [None] * n  # the most device memory in use during a case's timed calls
    spent = [0.0] * n
    target = [0] * n  # repeats each case had by the end of the first n_repeat rounds: what re-runs restore
    quiet = False

    def clean(j: int) -> int:
        return len(counters[j]) - sum(preempted(counters[j], quiet))

    def within_budget(j: int) -> bool:
        if len(walls[j]) >= RERUN_ROUNDS * n_repeat:
            return False
        return max_duration is None or spent[j] < RERUN_BUDGET * max_duration

    # the rounds each case can afford within max_duration, taken spread over the run
    rank = {r: i for i, r in enumerate(spread_order(n_repeat))}
    planned = [n_repeat] * n
    if max_duration is not None:
        for j, f in enumerate(first):
            best = f.get("best_call_s", math.nan)
            if math.isfinite(best):
                pre = min(PRECALL_MAX_S, max(PRECALL_S, 2 * best)) if best < PRECALL_BELOW_S else 0.0  # 1-3 calls
                turn = best + (SETTLE_S if settle and n > 1 else 0.0) + pre
                planned[j] = max(1, min(n_repeat, int(max_duration / max(turn, 1e-9))))

    def affordable(j: int) -> bool:
        return max_duration is None or not walls[j] or spent[j] < max_duration

    rnd = 0
    first_rounds = True
    while True:
        order = range(n) if rnd % 2 == 0 else range(n - 1, -1, -1)
        active: List[int] = []
        if first_rounds and rnd < n_repeat:
            # a case that spent its max_duration drops out; the others go on (ratios pair the common rounds)
            active = [j for j in order if rank[rnd] < planned[j] and affordable(j)]
            later = not active and any(affordable(j) and any(rank[r] < planned[j] for r in range(rnd + 1, n_repeat))
                                       for j in range(n))
            if (active or later) and on_round is not None:
                on_round(rnd, n_repeat)
            if later:
                rnd += 1  # a round none of the cases planned: the later rounds still hold some
                continue
        if not active and first_rounds:
            first_rounds = False
            target = [len(w) for w in walls]
            # whether waiting for a CPU was someone else's doing: the run so far says (a short one extended)
            quiet = quiet_since(probe, span0)
        if not first_rounds and rerun and any(clean(j) < target[j] and within_budget(j) for j in range(n)):
            # re-runs of preempted repeats: every case within its budget, so that the re-run ones have partners
            active = [j for j in order if within_budget(j)]
        if not active:
            break
        for j in active:
            c, cap = cases[j], caps[j]
            turn0 = time.perf_counter()
            settled = settle and len(active) > 1
            # Waking from idle costs: on a 2-vCPU VM the first call after 12 ms of sleep waited ~1.2 ms for a
            # CPU, and one untimed call did not always bring the pool back (12544x64x147: 1.41 ms after one,
            # 1.09 after 2 ms of calls, 1.06 in a loop). A short case is timed after 2 ms of its own untimed
            # calls (at least one, at most 10), as it would be in a loop; a long one is not (a training epoch
            # would cost a whole epoch more). Short: its last turn, else its best warm-up call; with neither, the
            # first turn is timed and, if short, timed again after the untimed calls.
            last = walls[j][-1] if walls[j] else first[j]["best_call_s"] if n_warmup >= 2 else math.nan
            best = min([first[j].get("best_call_s", math.nan), *walls[j]], key=lambda v: v if v == v else math.inf)
            if settled:
                quiesce()
                if last < PRECALL_BELOW_S:
                    _precall(c, cap, best)
            wall, dev_s, count, recs = _timed_call(c, cap, probe)
            if settled and math.isnan(last) and wall < PRECALL_BELOW_S:
                _precall(c, cap, best)
                wall, dev_s, count, recs = _timed_call(c, cap, probe)
            peak = cap.peak_bytes()
            if peak is not None:
                peaks[j] = max(peaks[j] or 0, peak)
            walls[j].append(wall)
            devt[j].append(dev_s)
            counters[j].append(count)
            rounds[j].append(rnd)
            commands[j] = len(recs)
            spent[j] += time.perf_counter() - turn0
        rnd += 1
        if not first_rounds:
            quiet = machine_was_quiet(span_noise(Probe.delta(span0, probe.read())))
    span = Probe.delta(span0, probe.read())
    probe.close()
    load = span_noise(span)
    quiet = machine_was_quiet(load)
    out = []
    for j, c in enumerate(cases):
        keep = list(range(len(walls[j])))
        dropped = 0
        if rerun:
            marks = preempted(counters[j], quiet)
            ok = [i for i, m in enumerate(marks) if not m]
            # enough clean repeats: those are the measurement; else all of them, flagged as before
            if ok and 2 * len(ok) >= (target[j] or len(walls[j])):
                # as many as the first rounds gave (a repeat judged preempted while the run was short may read
                # clean once the whole run shows a quiet machine)
                keep = ok[:target[j] or len(ok)]
                dropped = len(walls[j]) - len(ok)
        r = BenchmarkResult(c.name, np.array([walls[j][i] for i in keep]), np.array([devt[j][i] for i in keep]),
                            c.devices, c.flops, c.nbytes, n_warmup, commands[j], [counters[j][i] for i in keep],
                            first[j], rounds=np.array([rounds[j][i] for i in keep], dtype=np.int64))
        r.quiet_machine = quiet
        r.noise = {**summarize(r.counters, quiet), **load, "quiet_machine": quiet, "rerun": dropped,
                   "asked": target[j] or len(walls[j])}  # the repeats asked for (merging over processes reads it)
        if peaks[j] is not None:
            r.noise["peak_bytes"] = peaks[j]
        if dropped and not r.noise["noise"]:
            r.noise["noise"] = rerun_text(dropped, len(keep), r.noise["asked"])
        elif rerun and r.noise["unreliable"] and len(walls[j]) > (target[j] or len(walls[j])):
            # what was missing, said plainly: the re-runs did not find enough clean repeats within the budget
            clean_n = len(walls[j]) - r.noise["preempted"]
            r.noise["noise"] += (f"; re-run budget spent ({clean_n} clean of the {target[j]} asked for; "
                                 f"--max-duration sets it)")
        out.append(r)
    return _workers.after_interleave(cases, out)  # a worker process records them, the reporting one merges


def _check_counts(n_warmup: Any, n_repeat: Any, max_duration: Any, where: str = "benchmark") -> None:
    for nm, v in (("n_warmup", n_warmup), ("n_repeat", n_repeat)):
        if not is_int(v):
            raise TypeError(f"{where}: {nm} must be an int, got {type(v).__name__}")
    if n_warmup < 0:
        raise ValueError(f"{where}: n_warmup must be >= 0, got {n_warmup}")
    if n_repeat < 1:
        raise ValueError(f"{where}: n_repeat must be >= 1, got {n_repeat}")
    if max_duration is not None and (not is_real(max_duration)
                                     or not max_duration > 0):
        raise ValueError(f"{where}: max_duration must be a positive number of seconds, got {max_duration!r}")


def benchmark(fn: Callable[..., Any], args: Sequence[Any] = (), kwargs: Optional[Dict[str, Any]] = None, *,
              n_warmup: int = 10, n_repeat: int = 100, max_duration: Optional[float] = None,
              flops: Optional[float] = None, nbytes: Optional[float] = None, device: DevicesLike = None,
              name: Optional[str] = None, rerun: bool = True) -> BenchmarkResult:
    """Times ``fn(*args, **kwargs)`` honestly: ``n_warmup`` untimed calls, then up to ``n_repeat`` timed calls,
    each preceded and followed by a device synchronize; stops early once ``max_duration`` seconds were spent
    timing (at least one call is timed). ``device``: the device(s) to synchronize and read device times from
    (default: every device in use after the warm-up). ``flops``/``nbytes`` per call give GFLOP/s and GB/s.
    The result also carries the OS's view of every repeat (``noise``, ``preempted``, ``unreliable``) and the
    warm-up's cost (``first_use``); with ``rerun``, repeats the OS shows preempted are run again (more calls than
    ``n_repeat``, within twice ``max_duration``) and the result holds the clean ones (see :func:`interleave`).
    :func:`interleave` times several functions against each other.
    """
    if not callable(fn):
        raise TypeError(f"benchmark: fn must be callable, got {type(fn).__name__}")
    kwargs = {} if kwargs is None else dict(kwargs)
    _check_counts(n_warmup, n_repeat, max_duration)
    if not isinstance(rerun, (bool, np.bool_)):
        raise TypeError(f"benchmark: rerun must be a bool, got {rerun!r}")
    for nm, v in (("flops", flops), ("nbytes", nbytes)):
        if v is not None and (not is_real(v) or v < 0):
            raise ValueError(f"benchmark: {nm} must be a non-negative number, got {v!r}")
    label = str(name or getattr(fn, "__name__", type(fn).__name__))
    if device is None:  # the devices in use once fn has run: warm up first, then resolve
        case = Case(label, lambda: fn(*args, **kwargs), flops=flops, nbytes=nbytes)
        first = _warm_up(case, n_warmup, max_duration) if n_warmup else {}
        case.devices = _device_list(None)
        r = interleave([case], n_warmup=0, n_repeat=n_repeat, max_duration=max_duration, rerun=rerun)[0]
        r.first_use, r.n_warmup = first, n_warmup
        return r
    case = Case(label, lambda: fn(*args, **kwargs), devices=_device_list(device), flops=flops, nbytes=nbytes)
    return interleave([case], n_warmup=n_warmup, n_repeat=n_repeat, max_duration=max_duration, rerun=rerun)[0]
