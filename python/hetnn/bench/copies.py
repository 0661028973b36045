"""Timed copies of one size on one device (H2D, D2H, D2D), checked to have moved the data: the measurement that
`bench transfer` sweeps over sizes and `bench peak` takes at 64 MiB for each OpenCL device's ceilings."""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np

from .._device import Device
from .._loader import _core
from .._measurement import BenchmarkResult
from .._timing import Case, benchmark, interleave


def measure_copies(dev: Device, n: int, *, n_warmup: int, n_repeat: int, max_duration: Optional[float],
                   pinned: bool = False) -> Dict[str, BenchmarkResult]:
    """{"h2d", "d2h", "d2d"} -> the BenchmarkResult of an n-byte copy in that direction, the host side ordinary
    (pageable) NumPy memory. With ``pinned``, on a device with page-locked staging memory (OpenCL), also
    "h2d pinned" and "d2h pinned" from and into such memory (:func:`hetnn.pinned_empty`), the four host copies timed
    in interleaved rounds so that the pinned / pageable ratios pair repeats taken together."""
    host = np.random.default_rng(n).integers(0, 255, n, dtype=np.uint8)
    back = np.empty_like(host)
    a = _core.Array.empty(dev._dev, [n], "uint8")
    b = _core.Array.empty(dev._dev, [n], "uint8")
    timing: Dict[str, Any] = dict(n_warmup=n_warmup, n_repeat=n_repeat, max_duration=max_duration, device=dev,
                                  nbytes=n)
    locked = _core.pinned_bytes(dev._dev, n) if pinned else None
    locked_back = _core.pinned_bytes(dev._dev, n) if locked is not None else None
    if locked is None or locked_back is None:
        results = {
            "h2d": benchmark(a.write_from, (host,), name="h2d", **timing),
            "d2h": benchmark(a.read_into, (back,), name="d2h", **timing),
        }
    else:
        locked[:] = host
        cases = [Case("h2d", lambda: a.write_from(host), devices=[dev], nbytes=n),
                 Case("h2d pinned", lambda: a.write_from(locked), devices=[dev], nbytes=n),
                 Case("d2h", lambda: a.read_into(back), devices=[dev], nbytes=n),
                 Case("d2h pinned", lambda: a.read_into(locked_back), devices=[dev], nbytes=n)]
        timed = interleave(cases, n_warmup=n_warmup, n_repeat=n_repeat, max_duration=max_duration)
        results = {c.name: r for c, r in zip(cases, timed)}
        if not np.array_equal(locked_back, host):
            raise RuntimeError(f"transfer benchmark: the data did not survive H2D + D2H through pinned memory on "
                               f"{dev.id}")
    results["d2d"] = benchmark(b.copy_from, (a,), name="d2d", **timing)
    b.read_into(back)
    if not np.array_equal(back, host):  # the copies must have moved the data, not just taken time
        raise RuntimeError(f"transfer benchmark: the data did not survive H2D + D2D + D2H on {dev.id}")
    return results


def copy_seconds(r: BenchmarkResult) -> Tuple[float, str]:
    """The copy's own time and where it comes from: the device's timing where it has one ("device"), else the wall
    time ("wall")."""
    dev_t = r.device["median"]
    return (dev_t, "device") if np.isfinite(dev_t) and dev_t > 0 else (r.median, "wall")
