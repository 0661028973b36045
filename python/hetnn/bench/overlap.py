"""Overlap of a copy with a kernel (the transfer study's last table): an upload from page-locked memory on one
hetnn.Stream beside a kernel of about the same length on another, against the two one after the other on one stream.
"hidden" is the share of the shorter of the two that the two streams hid: (copy + kernel - two streams) / the shorter,
from the medians; 100 % is perfect overlap, 0 % none. The four cases are timed in interleaved rounds, so that the
two-streams / serial ratio pairs repeats taken together. On a CPU OpenCL device (PoCL) the copy is a memcpy by the
same cores that run the kernel, so little can overlap; a GPU copies by DMA beside its compute units. The CPU device's
streams are synchronous and it has no row."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from .._device import Device
from .._timing import Case, interleave

OVERLAP_COLUMNS = [
    ("device", "device", ""), ("size", "copy", ""), ("copy_ms", "copy ms", ".3f"), ("kernel_ms", "kernel ms", ".3f"),
    ("serial_ms", "serial ms", ".3f"), ("streams_ms", "two streams ms", ".3f"),
    ("streams_over_serial", "two streams / serial", ".2f"), ("hidden_pct", "hidden %", ".0f"), ("noise", "flags", ""),
]

_SPIN_ELEMENTS = 1 << 16


def _spin_kernel() -> Any:
    import hetnn
    # y = x after `reps` dependent steps (v/2 + x/2 stays x): a kernel whose length `reps` sets, its result checkable
    return hetnn.ElementwiseKernel("float32 x, int32 reps", "float32 y",
                                   "float v = x; for (int j = 0; j < reps; ++j) { v = v * 0.5f + x * 0.5f; } y = v;",
                                   "overlap_spin")


def _median_seconds(fn: Callable[[], Any], dev: Device, n: int = 3) -> float:
    import time

    import hetnn
    times = []
    for _ in range(n):
        hetnn.synchronize(dev)
        t = time.perf_counter()
        fn()
        hetnn.synchronize(dev)
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def measure_overlap(dev: Device, nbytes: int, *, n_warmup: int = 2, n_repeat: int = 10,
                    max_duration: Optional[float] = None) -> Dict[str, Any]:
    """One row: an ``nbytes`` upload from page-locked memory and a kernel calibrated to last about as long, alone,
    one after the other on one stream, and on two streams."""
    import hetnn

    spin = _spin_kernel()
    rng = np.random.default_rng(nbytes)
    host = hetnn.pinned_empty((nbytes // 4,), "float32", device=dev)
    host[...] = rng.uniform(1, 2, host.shape).astype(np.float32)
    xs = rng.uniform(1, 2, _SPIN_ELEMENTS).astype(np.float32)
    x = hetnn.asarray(xs, device=dev)
    s1, s2 = hetnn.Stream(dev), hetnn.Stream(dev)
    dst: List[Any] = [None]
    out: List[Any] = [None]

    def copy() -> None:
        dst[0] = hetnn.asarray(host, device=dev, stream=s1)

    def kernel(reps: int) -> Callable[[], None]:
        def run() -> None:
            with s2:
                out[0] = spin(x, reps)
        return run

    # calibrate: the kernel's steps scaled until it takes about the copy's time
    copy()
    t_copy = _median_seconds(copy, dev)
    reps = 64
    t_kernel = _median_seconds(kernel(reps), dev)
    for _ in range(4):
        reps = int(min(max(reps * t_copy / max(t_kernel, 1e-6), 1), 1 << 24))
        t_kernel = _median_seconds(kernel(reps), dev)
        if 0.8 <= t_kernel / t_copy <= 1.25:
            break
    run_kernel = kernel(reps)

    def serial() -> None:
        with s1:
            dst[0] = hetnn.asarray(host, device=dev, stream=s1)
            out[0] = spin(x, reps)

    def streams() -> None:
        copy()
        run_kernel()

    cases = [Case("copy", copy, devices=[dev], nbytes=nbytes), Case("kernel", run_kernel, devices=[dev]),
             Case("serial", serial, devices=[dev], nbytes=nbytes),
             Case("two streams", streams, devices=[dev], nbytes=nbytes)]
    res = {c.name: r for c, r in zip(cases, interleave(cases, n_warmup=n_warmup, n_repeat=n_repeat,
                                                         max_duration=max_duration))}
    # the work was done, not only timed
    if not np.array_equal(dst[0].numpy(), host) or not np.array_equal(out[0].numpy(), xs):
        raise RuntimeError(f"overlap benchmark: the copy or the kernel computed a wrong result on {dev.id}")
    med = {k: r.median for k, r in res.items()}
    shorter = min(med["copy"], med["kernel"])
    hidden = (med["copy"] + med["kernel"] - med["two streams"]) / shorter if shorter > 0 else float("nan")
    flags = [r.flags for r in res.values()]
    noise = "; ".join(dict.fromkeys(f"{k}: {r.flags['noise']}" for k, r in res.items() if r.flags.get("noise")))
    return {"device": dev.id, "size": _size(nbytes), "bytes": nbytes, "kernel_reps": reps,
            "copy_ms": med["copy"] * 1e3, "kernel_ms": med["kernel"] * 1e3, "serial_ms": med["serial"] * 1e3,
            "streams_ms": med["two streams"] * 1e3,
            "streams_over_serial": med["two streams"] / med["serial"] if med["serial"] > 0 else float("nan"),
            "hidden_pct": 100 * hidden, "noise": noise,
            "unreliable": any(f.get("unreliable") for f in flags),
            "preempted": sum(int(f.get("preempted") or 0) for f in flags),
            "times_s": [float(v) for v in res["two streams"].wall_times],
            "rounds": [int(v) for v in res["two streams"].rounds],
            "serial_times_s": [float(v) for v in res["serial"].wall_times],
            "serial_rounds": [int(v) for v in res["serial"].rounds]}


def run_overlap(devices: Sequence[Device], nbytes: int, *, n_warmup: int = 2, n_repeat: int = 10,
                max_duration: Optional[float] = None,
                progress: Optional[Callable[[str], None]] = None) -> List[Dict[str, Any]]:
    """A row per device with queues of its own (OpenCL); the CPU device's streams are synchronous."""
    from .progress import expect

    rows = []
    queues = [d for d in devices if d.kind == "opencl"]
    expect(progress, len(queues))
    for dev in queues:
        if progress:
            progress(f"overlap of a {_size(nbytes)} copy and a kernel on {dev.id}")
        rows.append(measure_overlap(dev, nbytes, n_warmup=n_warmup, n_repeat=n_repeat, max_duration=max_duration))
    return rows


def overlap_summary(rows: List[Dict[str, Any]]) -> List[str]:
    """Per row: the two-streams / serial time ratio (below 1: the streams overlapped) with its interval over the
    paired rounds."""
    from .stats import ratio

    out = []
    for r in rows:
        serial = {"times_s": r["serial_times_s"], "rounds": r["serial_rounds"]}
        two = {"times_s": r["times_s"], "rounds": r["rounds"], "noise": r["noise"], "unreliable": r["unreliable"]}
        out.append(ratio(f"{r['device']} a {r['size']} copy and a kernel: two streams / one (time)", serial, two)
                   + f"; {r['hidden_pct']:.0f} % of the shorter hidden")
    return out


def _size(n: int) -> str:
    from .transfer import _human
    return _human(n)
