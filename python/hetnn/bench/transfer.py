"""Transfer benchmark: host -> device (H2D), device -> host (D2H) and device -> device (D2D) copies against size, per
device. Each copy is timed with hetnn.benchmark (synchronised, warmed up, repeated); H2D and D2H are blocking
copies between a NumPy array and a device array, D2D copies one device array into another (on the CPU device all
three are memory copies in host RAM). Bandwidth uses the device's own timing of the copy (OpenCL events; the CPU
device times each command); latency is the wall time of the smallest copy (call, copy and synchronisation: what a
program waits), next to the copy's device time.

GB/s counts the bytes moved once (a D2D copy reads and writes them: the memory traffic is twice that)."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence


from .._device import Device
from .progress import expect
from .copies import copy_seconds, measure_copies
from .peak import _key, check_ceiling, host_cache_size, mem_peak_gbps, on_host, stored_peaks, stream_gbps
from .stats import ratio

TRANSFER_COLUMNS = [
    ("device", "device", ""), ("direction", "direction", ""), ("size", "size", ""), ("bytes", "bytes", ",", "detail"),
    ("wall_ms", "wall ms", ".4f"), ("wall_gbps", "wall GB/s", ".2f"), ("ms", "device ms", ".4f"),
    ("gbps", "device GB/s", ".2f"), ("pct_peak", "% peak", ".0f"), ("in_cache", "fits cache", ""),
    ("noise", "flags", ""),
]


def transfer_sizes(max_bytes: int, min_bytes: int = 4) -> List[int]:
    """Powers of 4 from min_bytes to max_bytes (4 B, 16 B, ..., 256 MiB)."""
    out, n = [], min_bytes
    while n <= max_bytes:
        out.append(n)
        n *= 4
    return out


def _human(n: int) -> str:
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f:
            return f"{n / f:g} {unit}"
    return f"{n} B"


def run_transfer(devices: Sequence[Device], sizes: Sequence[int], *, n_warmup: int = 3, n_repeat: int = 20,
                 max_duration: Optional[float] = 1.0, pinned: bool = True,
                 progress: Optional[Callable[[str], None]] = None) -> List[Dict[str, Any]]:
    """One row per (device, direction, size): median device-side time where the device times its copies (OpenCL
    events; the CPU device times each command too), else the wall time. With ``pinned``, devices with page-locked
    staging memory (OpenCL) also get "h2d pinned" / "d2h pinned" rows, timed in the same rounds as the pageable
    copies."""
    host_cache = host_cache_size()
    rows = []
    expect(progress, len(devices) * len(sizes))
    for dev in devices:
        # ceilings: a device-to-device copy cannot beat the device's memory, a host copy the host's (each counted
        # once here, while the memory moves the bytes twice: loose bounds), beyond the last-level caches
        ceil = {"d2d": (mem_peak_gbps(dev), dev.cache_size)}
        ceil["h2d"] = ceil["d2h"] = ceil["h2d pinned"] = ceil["d2h pinned"] = (stream_gbps(),
                                                                              host_cache or dev.cache_size)
        # "% of peak": the device's memory ceiling for D2D; for H2D/D2H the 64 MiB copy rate `bench peak` stored
        # (OpenCL devices), else the host's memory ceiling (the CPU device's copies are host memcpys)
        stored = stored_peaks().get(_key(dev), {}) if dev.kind == "opencl" else {}
        pct_ref = {"d2d": ceil["d2d"][0], "h2d": stored.get("h2d_gbps") or stream_gbps(),
                   "d2h": stored.get("d2h_gbps") or stream_gbps()}
        pct_ref["h2d pinned"], pct_ref["d2h pinned"] = pct_ref["h2d"], pct_ref["d2h"]
        for n in sizes:
            if progress:
                progress(f"transfers of {_human(n)} on {dev.id}")
            results = measure_copies(dev, n, n_warmup=n_warmup, n_repeat=n_repeat, max_duration=max_duration,
                                     pinned=pinned)
            for direction, r in results.items():
                t, timed_by = copy_seconds(r)
                row = {"device": dev.id, "direction": direction, "size": _human(n), "bytes": n,
                       "ms": t * 1e3, "wall_ms": r.median * 1e3, "gbps": n / t / 1e9 if t > 0 else float("nan"),
                       "wall_gbps": n / r.median / 1e9 if r.median > 0 else float("nan"),
                       "timing": timed_by, "repeats": r.n_repeat,
                       "times_s": [float(v) for v in r.wall_times], "rounds": [int(i) for i in r.rounds],
                       **r.flags}
                ref = pct_ref[direction]
                row["pct_peak"] = 100 * row["gbps"] / ref if ref else float("nan")
                ceiling, cache = ceil[direction]
                # a copy within one memory whose bytes fit its last-level cache may pass "% peak"; one across a bus
                # (an accelerator's H2D/D2H) is bound by the bus whatever its size
                within = direction == "d2d" or on_host(dev)
                row["in_cache"] = "yes" if within and cache and n <= cache else ""
                if cache and n > cache:
                    check_ceiling(row, "gbps", ceiling, "memory ceiling", "pct_peak",
                                  host_memory=direction != "d2d" or on_host(dev))
                rows.append(row)
    return rows


def summary(rows: List[Dict[str, Any]]) -> List[str]:
    """Per device and direction: the latency (smallest copy) and the best bandwidth; where pinned rows were timed,
    the pinned / pageable speed ratio of the largest copy, with its interval over the paired rounds."""
    out = []
    for dev in dict.fromkeys(r["device"] for r in rows):
        for direction in ("h2d", "d2h"):
            pin = [r for r in rows if r["device"] == dev and r["direction"] == f"{direction} pinned"]
            if pin:
                big = max(pin, key=lambda r: r["bytes"])
                plain = [r for r in rows if r["device"] == dev and r["direction"] == direction
                         and r["bytes"] == big["bytes"]]
                if plain:
                    out.append(ratio(f"{dev} {direction} {big['size']}: pinned / pageable (speed)", big, plain[0]))
        for direction in ("h2d", "d2h", "h2d pinned", "d2h pinned", "d2d"):
            sel = [r for r in rows if r["device"] == dev and r["direction"] == direction and not r.get("flagged")
                   and not r.get("unreliable")]
            if not sel:
                continue
            small = min(sel, key=lambda r: r["bytes"])
            best = max(sel, key=lambda r: r["gbps"])
            out.append(f"{dev} {direction}: latency {small['wall_ms'] * 1e3:.1f} us wall for {small['size']} (the copy "
                       f"itself {small['ms'] * 1e3:.2f} us on the device), best {best['gbps']:.2f} GB/s at "
                       f"{best['size']}")
    return out
