"""Measured ceilings used to print "% of peak": FP32 FMA throughput of the host CPU from a register-only native loop
(it bounds the CPU device and OpenCL CPU devices on the same processor), the host's STREAM bandwidth, and, with
`python -m hetnn bench peak`, every OpenCL device's own FMA and triad ceilings from kernels/peak.cl (stored in the
cache directory for the other suites)."""
from __future__ import annotations

import json
import math
import os
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from .._device import Device
from .._loader import _core
from .._oscounters import Probe, quiesce, span_noise
from .progress import expect
from .copies import copy_seconds, measure_copies

_cache: Dict[str, Any] = {}
_warned: set = set()


def cpu_fma_peak_gflops(trials: int = 6, seconds: float = 0.05) -> float:
    """FP32 GFLOP/s of all OpenMP threads running independent vector FMAs, measured once per process: the best of
    ``trials`` short runs (each the best of 3). A ceiling is a maximum: a busy neighbour on a shared machine only
    lowers a run (seen here: single runs from 209 to 348 GFLOP/s a second apart), so many short tries find it."""
    key = f"cpu:{_core.get_num_threads()}"  # per thread count (--threads, hetnn.set_num_threads)
    if key not in _cache:
        best, isa = 0.0, "?"
        for _ in range(max(1, trials)):
            g, isa = _core._cpu_fma_peak(0, seconds)
            best = max(best, float(g))
        _cache[key], _cache["cpu_isa"] = best, isa
    return float(_cache[key])


def _host_cpu_peaks(field: str = "fp32_gflops") -> List[float]:
    """Ceilings (``field``) stored for the host's processor: the CPU device's and CPU-type OpenCL devices' (the
    same cores and memory, measured by another route)."""
    out = []
    for v in stored_peaks().values():
        if v.get(field) and (v.get("device") == "cpu" or v.get("type") == "cpu"):
            out.append(float(v[field]))
    return out


def on_host(device: Device) -> bool:
    """Whether ``device`` computes on the host's processor (the CPU device, a CPU-type OpenCL device such as PoCL):
    the host's ceilings bound it; an accelerator has ceilings of its own."""
    return device.kind == "cpu" or device.type == "cpu"


def fp32_peak_gflops(device: Device) -> Optional[float]:
    """The measured FP32 ceiling of ``device``: for a GPU what `bench peak` stored for it (None before that); for
    the CPU device and CPU-type OpenCL devices the best of the host's native FMA loop and what `bench peak` stored
    for the same processor (a ceiling is the best rate measured: noise only lowers a measurement)."""
    if on_host(device):
        return max([cpu_fma_peak_gflops(), *_host_cpu_peaks()])
    stored = stored_peaks().get(_key(device))
    return float(stored["fp32_gflops"]) if stored and stored.get("fp32_gflops") else None


def share(gflops: float, peak: Optional[float]) -> float:
    """gflops / peak, NaN when either is unknown. A share above 1 is a measurement error and is reported as such."""
    if not peak or gflops is None or math.isnan(gflops):
        return math.nan
    return gflops / peak


def mem_peak_gbps(device: Device) -> Optional[float]:
    """The measured memory ceiling of ``device`` (GB/s): for a GPU the triad `bench peak` stored (None before that);
    for the CPU device and CPU-type OpenCL devices the best of the host's STREAM triad and the triads stored for the
    same processor (PoCL's triad kernel alone read 27 GB/s where STREAM read 32, and a pooling backward at 33 was
    flagged as an error)."""
    if on_host(device):
        return max([stream_gbps(), *_host_cpu_peaks("mem_gbps")])
    stored = stored_peaks().get(_key(device))
    return float(stored["mem_gbps"]) if stored and stored.get("mem_gbps") else None


def host_cache_size() -> int:
    """Bytes of the host's last-level cache: the CPU device's figure, else sysconf (0 when unknown)."""
    from .. import devices

    cpu = next((d for d in devices() if d.kind == "cpu"), None)
    if cpu is not None and cpu.cache_size:
        return cpu.cache_size
    try:
        return int(os.sysconf("SC_LEVEL3_CACHE_SIZE")) or int(os.sysconf("SC_LEVEL2_CACHE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 0


# A figure more than this factor above its measured ceiling is a measurement error (an unsynchronised timer, work
# skipped, a wrong FLOP or byte count), not a result: the ceilings themselves vary by a few percent between runs.
CEILING_TOLERANCE = 1.10


def _under_load(ceiling: float) -> bool:
    """Whether the stored ceiling of this value was measured while the machine was busy (``<field>_under_load``)."""
    return any(v.get(f) == ceiling and v.get(f"{f}_under_load") for v in stored_peaks().values()
               for f in CEILING_FIELDS)


def check_ceiling(row: Dict[str, Any], key: str, ceiling: Optional[float], what: str) -> bool:
    """Flags ``row[key]`` when it exceeds ``ceiling`` by more than CEILING_TOLERANCE: the row gets ``flagged``
    (the keys, comma-separated; tables print them as "ERR>peak", or "CEIL@load" when the ceiling itself was
    measured under load) and ``ceiling_error`` (why). True when flagged."""
    v = row.get(key)
    if v is None or ceiling is None or not ceiling or isinstance(v, str) or math.isnan(v) or \
            v <= CEILING_TOLERANCE * ceiling:
        return False
    keys = [k for k in str(row.get("flagged") or "").split(",") if k] + [key]
    row["flagged"] = ",".join(dict.fromkeys(keys))
    if _under_load(ceiling):
        row["ceiling_under_load"] = True
        msg = (f"{key} {v:.4g} is {v / ceiling:.2f}x the {what} ({ceiling:.4g}), but that ceiling was measured "
               f"under load: run `python -m hetnn bench peak` on a quiet machine")
    else:
        msg = (f"{key} {v:.4g} is {v / ceiling:.2f}x the measured {what} ({ceiling:.4g}): timing above the "
               f"ceiling, check synchronisation")
    row["ceiling_error"] = "; ".join(x for x in (row.get("ceiling_error"), msg) if x)
    return True


def stream_gbps(mib_per_array: int = 128) -> float:
    """The host's STREAM triad bandwidth (GB/s, STREAM's byte count) with all threads, measured once per process
    over three float64 arrays of ``mib_per_array`` MiB (well beyond the caches). Memory-bound suites report their
    figures as a share of it."""
    if "stream_triad" not in _cache:
        copy, triad = _core._stream(mib_per_array << 20, 5)
        _cache["stream_copy"], _cache["stream_triad"] = copy, triad
    return float(_cache["stream_triad"])


PEAK_COLUMNS = [
    ("device", "device", ""), ("fp32_gflops", "FP32 GFLOP/s", ".1f"), ("fp32_method", "measured by", ""),
    ("mem_gbps", "memory GB/s", ".1f"), ("mem_method", "measured by", ""), ("h2d_gbps", "H2D GB/s", ".1f"),
    ("d2h_gbps", "D2H GB/s", ".1f"),
]


def _store_path() -> Optional[str]:
    from .._cache import cache_dir

    d = cache_dir()
    return None if d is None else os.path.join(d, "peaks.json")


def _key(device: Device) -> str:
    return f"{device.id}|{device.identity}"


def stored_peaks() -> Dict[str, Dict[str, Any]]:
    """The ceilings `bench peak` stored in the cache directory, by device id|name|driver (empty when none)."""
    path = _store_path()
    if not path or not os.path.exists(path):
        return {}
    try:
        if not os.path.isfile(path):  # a FIFO would block open() for ever
            raise ValueError("not a regular file")
        with open(path) as f:
            data = json.load(f)
        if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
            raise ValueError("not a mapping of device ceilings")
        return data
    except (OSError, ValueError) as exc:
        if path not in _warned:
            _warned.add(path)
            import warnings

            warnings.warn(f"hetnn: ignoring the stored ceilings {path} ({exc}); `python -m hetnn bench peak` "
                          f"measures them again", RuntimeWarning, stacklevel=2)
        return {}


def measure_device(device: Device, triad_mib: int = 64, repeats: int = 5) -> Dict[str, Any]:
    """The measured ceilings of one device: FP32 FMA throughput, memory bandwidth (STREAM triad) and, for OpenCL
    devices, host<->device transfer bandwidth at 64 MiB."""
    row: Dict[str, Any] = {"device": device.id, "type": device.type, "name": device.name,
                           "driver": device.driver_version}
    probe = Probe()
    start = probe.read()
    try:
        _measure_into(row, device, triad_mib, repeats)
    finally:
        load = span_noise(Probe.delta(start, probe.read()))
        probe.close()
    # Other processes' CPU or steal during the measurement: the figures are lower bounds, not ceilings.
    row["others_pct"], row["steal_pct"] = load["others_pct"], load["steal_pct"]
    row["under_load"] = bool(load["others_pct"] > LOAD_PCT or load["steal_pct"] > LOAD_PCT)
    return row


LOAD_PCT = 10.0  # other processes' CPU or steal (percent of the CPUs) above which a ceiling was measured under load


def _measure_into(row: Dict[str, Any], device: Device, triad_mib: int, repeats: int) -> None:
    if device.kind == "cpu":
        row.update(fp32_gflops=cpu_fma_peak_gflops(), fp32_method=f"native FMA loop ({_cache.get('cpu_isa', '?')})",
                   mem_gbps=stream_gbps(), mem_method="STREAM triad, float64, all threads")
        return
    fma, triad = _core._opencl_peak(device._dev, triad_mib << 20, repeats)
    n = 64 << 20
    tr = {d: n / copy_seconds(r)[0] / 1e9 for d, r in
          measure_copies(device, n, n_warmup=1, n_repeat=repeats, max_duration=1.0).items()}
    row.update(fp32_gflops=fma, fp32_method="peak.cl fma_peak (events)", mem_gbps=triad,
               mem_method=f"peak.cl triad, float32, {triad_mib} MiB x 3", h2d_gbps=tr.get("h2d"),
               d2h_gbps=tr.get("d2h"))


CEILING_FIELDS = ("fp32_gflops", "mem_gbps", "h2d_gbps", "d2h_gbps")


def _keep_best(old: Dict[str, Any], new: Dict[str, Any]) -> Dict[str, Any]:
    """The stored entry after a new measurement: each ceiling is the best measured (a busy neighbour only lowers a
    run, so a lower figure never replaces a higher one), with the date it was measured (``<field>_date``)."""
    out = dict(new)
    for f in CEILING_FIELDS:
        before, after = old.get(f), new.get(f)
        # a measurement under load replaces nothing measured quietly, even a lower figure
        quiet_before = isinstance(before, (int, float)) and not old.get(f"{f}_under_load")
        if isinstance(before, (int, float)) and (not isinstance(after, (int, float)) or before > after or
                                                 (quiet_before and new.get("under_load"))):
            out[f] = before
            out[f"{f}_date"] = old.get(f"{f}_date", old.get("date"))
            out[f"{f}_under_load"] = bool(old.get(f"{f}_under_load"))
        elif after is not None:
            out[f"{f}_date"] = new.get("date")
            out[f"{f}_under_load"] = bool(new.get("under_load"))
    return out


def measure_missing(devices: Sequence[Device], say: Optional[Callable[[str], None]] = None) -> List[Device]:
    """Measures and stores the ceilings of the accelerators (OpenCL devices that are not CPUs) among ``devices``
    that have none stored, so that a suite's "% peak" columns and summaries have their own device's ceiling to
    compare with rather than none (the host's ceilings are measured wherever they are needed). Returns them."""
    stored = stored_peaks()
    todo = [d for d in devices if not on_host(d) and not stored.get(_key(d), {}).get("mem_gbps")]
    if todo and _store_path():
        if say:
            say(f"measuring the ceilings of {', '.join(d.id for d in todo)} (none stored; `python -m hetnn bench "
                f"peak` measures them again)")
        run_peak(todo)
    return todo


def run_peak(devices: Sequence[Device], store: bool = True,
             progress: Optional[Callable[[str], None]] = None) -> List[Dict[str, Any]]:
    """Measures every device's ceilings and stores them in the cache directory (peaks.json), where the other
    suites find them for their "% of peak" columns."""
    rows = []
    expect(progress, len(devices))
    for dev in devices:
        if progress:
            progress(f"ceilings of {dev.id}")
        # the previous measurement's OpenMP workers keep spinning for a while after it: on a small machine they
        # take a core from the next one (seen here: PoCL's FMA kernel at exactly 0.50x the native loop when run
        # right after it, 0.99x after a pause)
        quiesce(max_wait=0.5)
        rows.append(measure_device(dev))
    path = _store_path()
    if store and path:
        data = stored_peaks()
        now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        for dev, r in zip(devices, rows):
            data[_key(dev)] = _keep_best(data.get(_key(dev), {}), {**r, "date": now})
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _core.write_file_atomic(path, json.dumps(data, indent=1).encode())  # readers see the old or the new file
    return rows
