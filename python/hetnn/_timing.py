"""Synchronized timing: every measurement waits for the devices before reading the clock, so asynchronous device
work is never mis-timed. Device times come from the devices themselves (OpenCL profiling events; the CPU device
times each primitive) and are summed over *every* command a call issued (kernels and transfers)."""
from __future__ import annotations

import math
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Union

import numpy as np

from ._device import Device, DeviceLike, device as _resolve_device, devices as _all_devices, get_default_device

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
    return [_resolve_device(spec)]


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


class _Capture:
    """Records the commands the devices run between open() and close()."""

    def __init__(self, devs: Iterable[Device]) -> None:
        self.devs = list(dict.fromkeys(devs))
        self.tokens: Dict[Device, int] = {}

    def open(self) -> None:
        self.tokens = {d: d._dev.capture_begin() for d in self.devs}

    def close(self) -> List[Dict[str, Any]]:
        out = []
        for d, tok in self.tokens.items():
            for name, host, start, end, nbytes, detail in d._dev.capture_end(tok):
                out.append({"name": name, "device": d.id, "host_enqueue": host, "start": start, "end": end,
                            "duration": max(end - start, 0.0), "bytes": nbytes, "detail": detail})
        self.tokens = {}
        return out


class Timer:
    """One synchronized measurement::

        with hetnn.Timer() as t:
            c = hetnn.matmul(a, b)
        print(t.elapsed, t.device_time)

    On entry and exit the devices are synchronized. ``elapsed`` is host wall-clock seconds, ``device_time`` the
    summed duration of the device commands issued inside (devices: ``device``, else the default device and every
    device already in use), ``records`` the commands themselves.
    """

    def __init__(self, device: DevicesLike = None) -> None:
        if device is not None:
            _device_list(device)  # an unknown device spec fails here, where it was written, not on entry
        self._spec = device
        self.elapsed = math.nan
        self.device_time = math.nan
        self.records: List[Dict[str, Any]] = []

    def __enter__(self) -> "Timer":
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
        return f"Timer(elapsed={self.elapsed * 1e3:.3f} ms, device_time={self.device_time * 1e3:.3f} ms)"


def _stats(x: np.ndarray) -> Dict[str, float]:
    if x.size == 0 or np.all(np.isnan(x)):
        return {"min": math.nan, "median": math.nan, "mean": math.nan, "std": math.nan, "max": math.nan,
                "iqr": math.nan}
    q1, q3 = np.nanpercentile(x, [25, 75])
    return {"min": float(np.nanmin(x)), "median": float(np.nanmedian(x)), "mean": float(np.nanmean(x)),
            "std": float(np.nanstd(x)), "max": float(np.nanmax(x)), "iqr": float(q3 - q1)}


def spread_pct(times: Any) -> float:
    """Interquartile range of repeat times over their median, in percent: how noisy a measurement was (a robust
    spread: one outlier repeat does not move it). NaN for fewer than 4 repeats."""
    x = np.asarray(times, dtype=np.float64)
    x = x[~np.isnan(x)]
    if x.size < 4:
        return math.nan
    q1, med, q3 = np.percentile(x, [25, 50, 75])
    return float(100 * (q3 - q1) / med) if med > 0 else math.nan


class BenchmarkResult:
    """Per-repeat times of :func:`benchmark` (seconds) and their statistics.

    ``wall_times``: host clock around each call plus synchronize. ``device_times``: summed device durations of
    every command each call issued (NaN when the call ran nothing on a hetnn device, e.g. a NumPy function).
    """

    def __init__(self, name: str, wall_times: np.ndarray, device_times: np.ndarray, devices: List[Device],
                 flops: Optional[float], nbytes: Optional[float], n_warmup: int, commands: int) -> None:
        self.name = name
        self.wall_times = wall_times
        self.device_times = device_times
        self.devices = devices
        self.flops = flops
        self.nbytes = nbytes
        self.n_warmup = n_warmup
        self.commands_per_call = commands
        self.wall = _stats(wall_times)
        self.device = _stats(device_times)

    @property
    def n_repeat(self) -> int:
        return int(self.wall_times.size)

    # statistics of the wall time, the figure a user experiences
    @property
    def min(self) -> float:
        return self.wall["min"]

    @property
    def median(self) -> float:
        return self.wall["median"]

    @property
    def mean(self) -> float:
        return self.wall["mean"]

    @property
    def std(self) -> float:
        return self.wall["std"]

    @property
    def spread_pct(self) -> float:
        """Interquartile range of the wall times over their median, in percent (NaN below 4 repeats): how noisy
        the measurement was; compare two figures only when their difference clearly exceeds it."""
        return spread_pct(self.wall_times)

    def _rate(self, amount: Optional[float], t: float) -> float:
        return amount / t / 1e9 if amount and t and not math.isnan(t) else math.nan

    @property
    def gflops(self) -> float:
        """GFLOP/s from the median wall time (NaN without ``flops``)."""
        return self._rate(self.flops, self.median)

    @property
    def gflops_device(self) -> float:
        """GFLOP/s from the median device time."""
        return self._rate(self.flops, self.device["median"])

    @property
    def gbps(self) -> float:
        """GB/s (1e9 bytes) from the median wall time (NaN without ``nbytes``)."""
        return self._rate(self.nbytes, self.median)

    @property
    def gbps_device(self) -> float:
        return self._rate(self.nbytes, self.device["median"])

    def as_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "n_repeat": self.n_repeat, "n_warmup": self.n_warmup,
                "devices": [d.id for d in self.devices],
                **{f"wall_{k}": v for k, v in self.wall.items()},
                **{f"device_{k}": v for k, v in self.device.items()},
                "gflops": self.gflops, "gflops_device": self.gflops_device, "gbps": self.gbps,
                "gbps_device": self.gbps_device, "spread_pct": self.spread_pct,
                "commands_per_call": self.commands_per_call}

    def __repr__(self) -> str:
        def us(v: float) -> str:
            return f"{v * 1e6:12.3f}"

        w, d = self.wall, self.device
        s = (f"{self.name:<20s}:    wall:{us(w['median'])} us   +/- {w['std'] * 1e6:.3f} "
             f"(min:{us(w['min'])} / max:{us(w['max'])}) us")
        if not math.isnan(d["median"]):
            where = ",".join(x.id for x in self.devices)
            s += (f"     device ({where}):{us(d['median'])} us   +/- {d['std'] * 1e6:.3f} "
                  f"(min:{us(d['min'])} / max:{us(d['max'])}) us")
        if self.flops:
            s += f"   {self.gflops:.2f} GFLOP/s"
        if self.nbytes:
            s += f"   {self.gbps:.2f} GB/s"
        if not math.isnan(self.spread_pct):
            s += f"   IQR {self.spread_pct:.0f}%"
        return s + f"   [n={self.n_repeat}, median]"


def benchmark(fn: Callable[..., Any], args: Sequence[Any] = (), kwargs: Optional[Dict[str, Any]] = None, *,
              n_warmup: int = 10, n_repeat: int = 100, max_duration: Optional[float] = None,
              flops: Optional[float] = None, nbytes: Optional[float] = None, device: DevicesLike = None,
              name: Optional[str] = None) -> BenchmarkResult:
    """Times ``fn(*args, **kwargs)`` honestly: ``n_warmup`` untimed calls, then up to ``n_repeat`` timed calls,
    each preceded and followed by a device synchronize; stops early once ``max_duration`` seconds were spent
    timing (at least one call is timed). ``device``: the device(s) to synchronize and read device times from
    (default: every device in use after the warm-up). ``flops``/``nbytes`` per call give GFLOP/s and GB/s.
    """
    if not callable(fn):
        raise TypeError(f"benchmark: fn must be callable, got {type(fn).__name__}")
    kwargs = {} if kwargs is None else dict(kwargs)
    for nm, v in (("n_warmup", n_warmup), ("n_repeat", n_repeat)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"benchmark: {nm} must be an int, got {type(v).__name__}")
    if n_warmup < 0:
        raise ValueError(f"benchmark: n_warmup must be >= 0, got {n_warmup}")
    if n_repeat < 1:
        raise ValueError(f"benchmark: n_repeat must be >= 1, got {n_repeat}")
    if max_duration is not None and not (isinstance(max_duration, (int, float)) and max_duration > 0):
        raise ValueError(f"benchmark: max_duration must be a positive number of seconds, got {max_duration!r}")
    for nm, v in (("flops", flops), ("nbytes", nbytes)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0):
            raise ValueError(f"benchmark: {nm} must be a non-negative number, got {v!r}")

    for _ in range(n_warmup):
        fn(*args, **kwargs)
    devs = _device_list(device)
    cap = _Capture(devs)
    synchronize(devs)
    walls: List[float] = []
    dev_times: List[float] = []
    commands = 0
    spent = 0.0
    for _ in range(n_repeat):
        cap.open()
        t0 = time.perf_counter()
        fn(*args, **kwargs)
        synchronize(devs)
        t1 = time.perf_counter()
        recs = cap.close()
        walls.append(t1 - t0)
        dev_times.append(sum(r["duration"] for r in recs) if recs else math.nan)
        commands = len(recs)
        spent += t1 - t0
        if max_duration is not None and spent >= max_duration:
            break
    label = name or getattr(fn, "__name__", type(fn).__name__)
    return BenchmarkResult(label, np.array(walls), np.array(dev_times), devs, flops, nbytes, n_warmup, commands)
