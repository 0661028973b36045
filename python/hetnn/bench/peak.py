"""Measured ceilings used to print "% of peak". v0.1: FP32 FMA throughput of the host CPU from a register-only
native loop, which bounds both the CPU device and OpenCL CPU devices (PoCL) on the same processor. GPU ceilings come
with the peak suite."""
from __future__ import annotations

import math
from typing import Dict, Optional

from .._device import Device
from .._loader import _core

_cache: Dict[str, float] = {}


def cpu_fma_peak_gflops(seconds: float = 0.3) -> float:
    """FP32 GFLOP/s of all OpenMP threads running independent vector FMAs (measured once per process)."""
    if "cpu" not in _cache:
        _cache["cpu"], _cache["cpu_isa"] = _core._cpu_fma_peak(0, seconds)  # type: ignore[assignment]
    return float(_cache["cpu"])


def fp32_peak_gflops(device: Device) -> Optional[float]:
    """The measured FP32 ceiling of ``device``, or None where hetnn cannot measure one yet."""
    if device.kind == "cpu" or device.type == "cpu":
        return cpu_fma_peak_gflops()
    return None


def share(gflops: float, peak: Optional[float]) -> float:
    """gflops / peak, NaN when either is unknown. A share above 1 is a measurement error and is reported as such."""
    if not peak or gflops is None or math.isnan(gflops):
        return math.nan
    return gflops / peak


def stream_gbps(mib_per_array: int = 128) -> float:
    """The host's STREAM triad bandwidth (GB/s, STREAM's byte count) with all threads, measured once per process
    over three float64 arrays of ``mib_per_array`` MiB (well beyond the caches). Memory-bound suites report their
    figures as a share of it."""
    if "stream_triad" not in _cache:
        copy, triad = _core._stream(mib_per_array << 20, 5)
        _cache["stream_copy"], _cache["stream_triad"] = copy, triad
    return float(_cache["stream_triad"])
