"""Max-pooling benchmark: GB/s of hetnn.max_pool2d (forward with and without indices, backward) per device, with
the host's STREAM bandwidth as the ceiling, host<->device transfer times shown separately, and peers run in the
same process (NumPy, a raw oneDNN C++ loop in NCHW and NHWC, PyTorch/CuPy where importable).

Bytes counted per call: forward = input + output (+ int64 indices when returned); backward = grad_output +
indices + grad_input. Transfers are never part of a kernel figure; the sweep lists them in their own columns.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._array import asarray
from .._check import check_records
from .._device import Device
from .._loader import _core
from .._ops import max_pool2d, max_pool2d_backward
from .._threads import get_num_threads
from .._timing import Case, benchmark, interleave
from .grouping import by_bytes
from .progress import expect
from .matmul import settle
from .peak import check_ceiling, host_cache_size, mem_peak_gbps, on_host, stream_gbps
from .peers import find_peers
from .stats import flags_text, ratio_interval, row_pair

# (label, C, H, W, kernel, stride, padding): pooling layers of the classic CNNs, plus the two inputs the README's
# targets are stated on.
LAYERS: List[Tuple[str, int, int, int, int, int, int]] = [
    ("AlexNet pool1", 96, 55, 55, 3, 2, 0),
    ("AlexNet pool2", 256, 27, 27, 3, 2, 0),
    ("AlexNet pool5", 256, 13, 13, 3, 2, 0),
    ("VGG pool1", 64, 224, 224, 2, 2, 0),
    ("ResNet pool1", 64, 112, 112, 3, 2, 1),
]
TARGETS: List[Tuple[str, int, int, int, int, int, int, int]] = [  # label, N, C, H, W, k, s, p
    ("large k2s2", 32, 64, 112, 112, 2, 2, 0),
    ("large k3s2", 32, 64, 112, 112, 3, 2, 0),
    ("1x64x224x224", 1, 64, 224, 224, 2, 2, 0),
]
POOL_PEERS = ("numpy", "onednn", "torch", "cupy", "jax")


def out_size(n: int, k: int, s: int, p: int) -> int:
    return (n + 2 * p - k) // s + 1


def numpy_max_pool(x: np.ndarray, k: int, s: int, p: int) -> np.ndarray:
    """The NumPy way users write it: a reshape-max for k == s without padding, else a strided window view."""
    n, c, h, w = x.shape
    if k == s and p == 0 and h % k == 0 and w % k == 0:
        return x.reshape(n, c, h // k, k, w // k, k).max(axis=(3, 5))
    if p:
        x = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=-np.inf)
    win = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(2, 3))[:, :, ::s, ::s]
    return win.max(axis=(4, 5))


def reference_max_pool(x: np.ndarray, k: int, s: int, p: int) -> np.ndarray:
    """The float64 reference every row is checked against, computed apart from :func:`numpy_max_pool` (the NumPy
    peer's code): the maximum over the k x k strided slices of the -inf-padded input."""
    n, c, h, w = x.shape
    oh, ow = out_size(h, k, s, p), out_size(w, k, s, p)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (p, p), (p, p)), constant_values=-np.inf)
    out = np.full((n, c, oh, ow), -np.inf)
    for i in range(k):
        for j in range(k):
            np.maximum(out, xp[:, :, i:i + s * (oh - 1) + 1:s, j:j + s * (ow - 1) + 1:s], out=out)
    return out


def _gbps(nbytes: float, seconds: float) -> float:
    return nbytes / seconds / 1e9 if seconds > 0 else math.nan


def _median(times: Sequence[float]) -> float:
    return float(np.median(times))


def _ceilings(devices: Sequence[Device], stream: float) -> Dict[str, Tuple[Optional[float], int, str]]:
    """Memory ceiling, last-level cache and the ceiling's name per row device; peers on the host ("host", torch
    "cpu") use the host's."""
    host_cache = host_cache_size()
    ceilings = {d.id: (mem_peak_gbps(d), d.cache_size, "STREAM triad" if on_host(d) else "its own triad (bench peak)")
                for d in devices}
    ceilings.setdefault("cpu", (stream, host_cache, "STREAM triad"))
    ceilings["host"] = (stream, host_cache, "STREAM triad")
    return ceilings


def _derive(row: Dict[str, Any], ceilings: Dict[str, Tuple[Optional[float], int, str]], stream: float, in_b: int,
            out_b: int, idx_b: int) -> None:
    """Throughputs and shares of the ceilings; a figure above the DRAM ceiling is flagged only for a working set
    that does not fit in the last-level cache."""
    ceiling, cache, what = ceilings.get(row["device"], (None, 0, ""))
    if "fwd_ms" in row:
        row["fwd_gbps"] = _gbps(in_b + out_b, row["fwd_ms"] / 1e3)
        row["pct_stream"] = 100 * row["fwd_gbps"] / stream if stream else math.nan
        row["mem_peak_gbps"], row["mem_peak_what"] = ceiling, what
        row["pct_peak"] = 100 * row["fwd_gbps"] / ceiling if ceiling else math.nan
        row["in_cache"] = "yes" if cache and in_b + out_b <= cache else ""  # the memory ceiling does not bound it
        if cache and in_b + out_b > cache:
            check_ceiling(row, "fwd_gbps", ceiling, "memory ceiling", "pct_peak", host_memory=what == "STREAM triad")
    if "bwd_ms" in row:
        row["bwd_gbps"] = _gbps(out_b + idx_b + in_b, row["bwd_ms"] / 1e3)
        row["bwd_over_fwd"] = row["bwd_ms"] / row["fwd_ms"]
        if cache and out_b + idx_b + in_b > cache:
            check_ceiling(row, "bwd_gbps", ceiling, "memory ceiling", host_memory=what == "STREAM triad")


def _forward_cases(x: np.ndarray, k: int, s: int, p: int, ref: np.ndarray, base: Dict[str, Any],
                   devices: Sequence[Device], compare: Sequence[str], peer_targets: Sequence[Any],
                   arrays: Dict[str, Any]) -> Tuple[List[Case], List[Callable[[Any], Dict[str, Any]]]]:
    """The forwards of hetnn on every device and of every peer, as cases of one interleaved run, each with the
    function that makes its row from its result (the error of the timed call's own output)."""
    n, c, h, w = x.shape
    oh, ow = ref.shape[2], ref.shape[3]
    cases: List[Case] = []
    finish: List[Callable[[Any], Dict[str, Any]]] = []
    for dev in devices:
        X = arrays[dev.id] = asarray(x, device=dev)
        timed: List[Any] = [None]

        def fwd(X: Any = X, timed: List[Any] = timed) -> None:
            timed[0] = max_pool2d(X, k, s, p)
        cases.append(Case(f"hetnn {dev.id}", fwd, devices=[dev]))
        finish.append(lambda r, dev=dev, timed=timed: _fwd_row(  # type: ignore[misc]  # default-argument lambda (late binding)
            base, "hetnn", dev.id, r, timed[0].numpy(), ref, threads=get_num_threads() if dev.kind == "cpu" else None))
    if "onednn" in compare and p <= k // 2:
        for layout in ("nchw", "nhwc"):
            xl = np.ascontiguousarray(x if layout == "nchw" else x.transpose(0, 2, 3, 1))
            yl = np.full((n, c, oh, ow) if layout == "nchw" else (n, oh, ow, c), np.nan, dtype=np.float32)
            raw = _core._OnednnRawMaxPool(xl, yl, k, s, p, layout)
            cases.append(Case(f"onednn-c++ {layout}", raw.run))
            finish.append(lambda r, layout=layout, yl=yl: _fwd_row(  # type: ignore[misc]  # default-argument lambda (late binding)
                base, f"onednn-c++ {layout}", "cpu", r, yl if layout == "nchw" else yl.transpose(0, 3, 1, 2),
                ref, threads=get_num_threads()))
    if "numpy" in compare:
        nres: List[Any] = [None]

        def npool(nres: List[Any] = nres) -> None:
            nres[0] = numpy_max_pool(x, k, s, p)
        cases.append(Case("numpy", npool))
        finish.append(lambda r, nres=nres: _fwd_row(base, "numpy", "host", r, nres[0], ref))  # type: ignore[misc]  # default-argument lambda (late binding)
    for pt in peer_targets:
        if pt.max_pool2d is None:
            continue
        for layout, px in _peer_layouts(pt, x):
            res: List[Any] = [None]

            def call(px: Any = px, res: List[Any] = res, pt: Any = pt) -> None:
                res[0] = pt.max_pool2d(px, k, s, p, 1, False)
            cases.append(Case(f"{pt.library}{layout}", call, sync=pt.sync))
            finish.append(lambda r, pt=pt, layout=layout, res=res: _fwd_row(  # type: ignore[misc]  # default-argument lambda (late binding)
                base, pt.library + layout, pt.device, r, pt.get(res[0]), ref, threads=pt.threads(),
                note="allocates its output per call"))
    return cases, finish


def _training_figures(row: Dict[str, Any], dev: Device, X: Any, x: np.ndarray, k: int, s: int, p: int,
                      backward: bool, transfers: bool, rng: np.random.Generator, timing: Dict[str, Any]) -> None:
    """hetnn's training forward (with indices), backward and transfers on one device: no peer does the same, so
    each is timed on its own."""
    settle()
    ri = benchmark(max_pool2d, (X, k, s, p), {"return_indices": True}, name="max_pool2d+indices", device=dev,
                   **timing)
    row["fwd_idx_ms"] = ri.median * 1e3
    Y, I = max_pool2d(X, k, s, p, return_indices=True)
    if backward:
        G = asarray(rng.standard_normal(Y.shape, dtype=np.float32), device=dev)
        rb = benchmark(max_pool2d_backward, (G, I, x.shape, k, s, p), name="max_pool2d_backward", device=dev,
                       **timing)
        row["bwd_ms"] = rb.median * 1e3
    if transfers and dev.kind != "cpu":
        host_out = np.empty(Y.shape, np.float32)
        rh = benchmark(asarray, (x,), {"device": dev}, name="h2d", device=dev, **timing)
        rd = benchmark(Y._a.read_into, (host_out,), name="d2h", device=dev, **timing)
        row["h2d_ms"], row["d2h_ms"] = rh.median * 1e3, rd.median * 1e3
        row["total_ms"] = row["fwd_ms"] + row["h2d_ms"] + row["d2h_ms"]


def run_maxpool(cases: Sequence[Tuple[str, int, int, int, int, int, int, int]], devices: Sequence[Device], *,
                compare: Sequence[str] = ("numpy",), backward: bool = True, transfers: bool = False,
                n_warmup: int = 3, n_repeat: int = 20, max_duration: Optional[float] = 2.0, seed: int = 0,
                progress: Optional[Callable[[str], None]] = None,
                notes: Optional[List[str]] = None, processes: int = 1) -> List[Dict[str, Any]]:
    """One row per (case, device or peer). cases: (label, N, C, H, W, kernel, stride, padding), float32.
    ``processes``: the repeats spread over that many processes run one after another (hetnn._workers), so that an
    interval covers what a rerun sees; ``n_repeat`` and ``max_duration`` are over all of them.

    Row keys: fwd_ms / fwd_gbps (inference forward), fwd_idx_ms (forward returning indices, the training forward),
    bwd_ms / bwd_gbps, bwd_over_fwd (backward time / inference forward time), pct_stream (forward GB/s over the
    host's STREAM triad), pct_peak (over the row device's measured memory ceiling; a figure above that
    ceiling on a working set larger than the last-level cache is flagged as a measurement error), h2d_ms / d2h_ms
    (transfers of the input and output, OpenCL devices, with ``transfers``), max_abs_err of the forward against
    NumPy in float64.
    """
    unknown = [c for c in compare if c not in POOL_PEERS]
    if unknown:
        raise ValueError(f"unknown peer(s) {unknown}; available for maxpool: {', '.join(POOL_PEERS)}")
    check_records("run_maxpool", "cases", cases, ("label", "N", "C", "H", "W", "kernel", "stride", "padding"),
                  (1, 1, 1, 1, 1, 1, 0))
    if processes != 1:
        from .._workers import spread_call

        args = dict(cases=cases, devices=devices, compare=compare, backward=backward, transfers=transfers,
                    n_warmup=n_warmup, n_repeat=n_repeat, max_duration=max_duration, seed=seed, progress=progress,
                    notes=notes)
        return spread_call("hetnn.bench.maxpool:run_maxpool", args, processes)
    rng = np.random.default_rng(seed)
    stream = stream_gbps()
    peer_targets, peer_notes = find_peers([c for c in compare if c in ("torch", "cupy", "jax")])
    if notes is not None:
        notes.extend(peer_notes)
    timing: Dict[str, Any] = dict(n_warmup=n_warmup, n_repeat=n_repeat, max_duration=max_duration)
    ceilings = _ceilings(devices, stream)
    rows: List[Dict[str, Any]] = []
    sides = len(devices) + len(compare) + 2  # every side's input (the output is smaller); the float64 reference
    groups = by_bytes(cases, lambda cs: cs[1] * cs[2] * cs[3] * cs[4] * 4 * sides)
    expect(progress, len(groups) * n_repeat + len(cases))
    for group in groups:  # each group's forwards in one interleaved run (hetnn.bench.grouping says why)
        made, fwd_cases, finish = [], [], []
        for label, n, c, h, w, k, s, p in group:
            x = rng.standard_normal((n, c, h, w), dtype=np.float32)
            try:  # the window against the image, as the op checks it, before the reference is computed
                max_pool2d(asarray(x[:1, :1], device="cpu"), k, s, p)
            except ValueError as exc:
                raise ValueError(f"run_maxpool: case {label!r}: {exc}") from None
            ref = reference_max_pool(x, k, s, p)
            base = {"case": label, "shape": f"{n}x{c}x{h}x{w}", "kernel": k, "stride": s, "padding": p,
                    "windows": ref.size, "stream_gbps": stream}
            arrays: Dict[str, Any] = {}
            cs, fs = _forward_cases(x, k, s, p, ref, base, devices, compare, peer_targets, arrays)
            made.append((label, x, ref.size, k, s, p, arrays, len(cs)))
            fwd_cases += cs
            finish += fs
        settle()
        name = group[0][0] if len(group) == 1 else f"{len(group)} cases"
        results = interleave(fwd_cases, **timing,
                             on_round=(lambda r, t, name=name: progress(f"{name}: round {r + 1}"))  # type: ignore[misc]
                             if progress else None)
        at = 0
        for label, x, windows, k, s, p, arrays, count in made:
            if progress:
                progress(label)
            fwd_rows = [f(r) for f, r in zip(finish[at:at + count], results[at:at + count])]
            at += count
            for dev, row in zip(devices, fwd_rows):
                _training_figures(row, dev, arrays[dev.id], x, k, s, p, backward, transfers, rng, timing)
            arrays.clear()
            for row in fwd_rows:
                _derive(row, ceilings, stream, x.nbytes, windows * 4, windows * 8)
                rows.append(row)
    return rows


def sweep_cases(max_size: int = 8192, min_size: int = 4) -> List[Tuple[str, int, int, int, int, int, int, int]]:
    """The classic sweep: one square single-channel image per power of two, 2x2 windows, stride 2."""
    out = []
    size = min_size
    while size <= max_size:
        out.append((f"{size}x{size}", 1, 1, size, size, 2, 2, 0))
        size *= 2
    return out


def layer_cases(batches: Sequence[int] = (1, 32)) -> List[Tuple[str, int, int, int, int, int, int, int]]:
    return [(f"{name} bs{b}", b, c, h, w, k, s, p) for b in batches for name, c, h, w, k, s, p in LAYERS]


def target_cases() -> List[Tuple[str, int, int, int, int, int, int, int]]:
    return list(TARGETS)


def _fwd_row(base: Dict[str, Any], library: str, device: str, r: Any, result: np.ndarray, ref: np.ndarray,
             **extra: Any) -> Dict[str, Any]:
    """A forward row from its interleaved timing and the timed call's own output, checked against float64."""
    err = float(np.max(np.abs(np.asarray(result, dtype=np.float64) - ref))) if ref.size else 0.0
    row = {**base, "library": library, "device": device, "fwd_ms": r.median * 1e3, "max_abs_err": err,
           "spread_pct": r.spread_pct, "repeats": r.n_repeat, "times_ms": [t * 1e3 for t in r.wall_times],
           "rounds": [int(i) for i in r.rounds], "first_use": r.first_use_text, **r.flags,
           **{k: v for k, v in extra.items() if v is not None}}
    if not err == 0.0:  # max pooling selects, it does not round: any difference is a wrong result
        row["wrong"] = True
        row["noise"] = "; ".join(x for x in (row["noise"], f"WRONG: error {err:.1e}") if x)
    return row


def _peer_layouts(pt: Any, x: np.ndarray) -> List[Tuple[str, Any]]:
    """The peer's input in every layout it pools in: PyTorch's CPU pooling is fastest on channels_last, so both
    NCHW and channels_last are shown (the same values; hetnn reads NCHW)."""
    px = pt.put(x, "float32")
    out = [("", px)]
    if pt.library == "torch":
        import torch

        out = [(" nchw", px), (" channels_last", px.contiguous(memory_format=torch.channels_last))]
    return out


def _against_memory(r: Dict[str, Any]) -> str:
    """A forward row against its device's own memory: the host's STREAM triad for CPUs, the device's triad else."""
    if r.get("mem_peak_what") == "STREAM triad":
        return f"{r['pct_stream'] / 100:.2f}x STREAM triad ({r['stream_gbps']:.1f} GB/s)"
    if r.get("mem_peak_gbps"):
        return f"{r['pct_peak'] / 100:.2f}x {r['mem_peak_what']} ({r['mem_peak_gbps']:.1f} GB/s)"
    return "(no measured memory ceiling for this device: `python -m hetnn bench peak`)"


def ratios(rows: List[Dict[str, Any]]) -> List[str]:
    """The comparisons the README reports (one run): per hetnn row, its forward against STREAM and each CPU peer's
    forward time over hetnn's, with the 95 % bootstrap interval over the interleaved rounds."""
    out = []
    by = {(r["case"], r["library"], r["device"]): r for r in rows}
    for r in rows:
        if r["library"] != "hetnn" or r["case"] not in ("large k2s2", "large k3s2", "1x64x224x224"):
            continue
        if r.get("flagged") or r.get("unreliable") or r.get("wrong"):
            out.append(f"{r['case']} on {r['device']}: left out ({r.get('noise') or 'above the ceiling'})")
            continue
        line = f"{r['case']} on {r['device']}: forward {r['fwd_gbps']:.1f} GB/s = {_against_memory(r)}"
        if "bwd_ms" in r:
            line += f"; backward/forward {r['bwd_over_fwd']:.2f}x (backward/indexed forward " \
                    f"{r['bwd_ms'] / r['fwd_idx_ms']:.2f}x; medians, no interval)"
        used = [r]
        for peer in ("torch nchw", "torch channels_last", "onednn-c++ nchw", "onednn-c++ nhwc", "numpy"):
            pr = by.get((r["case"], peer, "cpu")) or by.get((r["case"], peer, "host"))
            if pr and r["device"] == "cpu" and not (pr.get("unreliable") or pr.get("wrong")):
                ci = ratio_interval([row_pair(r, pr)]) if "times_ms" in pr else None
                line += f"; vs {peer} " + (f"{ci.value:.2f}x ({ci.low:.2f}-{ci.high:.2f}, 95% CI)" if ci else
                                           f"{pr['fwd_ms'] / r['fwd_ms']:.2f}x (no interval)")
                used.append(pr)
        out.append(f"{line}; flags: {flags_text(used)}")
    return out


MAXPOOL_COLUMNS = [("case", "case", ""), ("shape", "N x C x H x W", ""), ("kernel", "k", "d"), ("stride", "s", "d"),
                   ("padding", "p", "d"), ("library", "library", ""), ("device", "device", ""),
                   ("fwd_ms", "fwd ms", ".3f"), ("fwd_gbps", "GB/s", ".1f"), ("pct_peak", "% mem peak", ".0f"),
                   ("in_cache", "fits cache", ""), ("fwd_idx_ms", "fwd+idx ms", ".3f"), ("bwd_ms", "bwd ms", ".3f"),
                   ("bwd_over_fwd", "bwd/fwd", ".2f"), ("max_abs_err", "max err", ".1e"),
                   ("first_use", "first use", ""),
                   ("noise", "flags", ""), ("spread_pct", "IQR %", ".0f")]
SWEEP_COLUMNS = [("case", "image", ""), ("windows", "windows", "d"), ("library", "library", ""),
                 ("device", "device", ""), ("fwd_ms", "fwd ms", ".4f"), ("fwd_gbps", "GB/s", ".2f"),
                 ("pct_peak", "% mem peak", ".0f"), ("in_cache", "fits cache", ""),
                 ("h2d_ms", "h2d ms", ".3f"), ("d2h_ms", "d2h ms", ".3f"),
                 ("total_ms", "with transfers ms", ".3f")]
