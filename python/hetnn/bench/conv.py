"""Convolution layers benchmark: the 20 ResNet-50 v1.5 convolutions whose im2col views are the matmul suite's GEMM
shapes, forward (inference), float32, at batch 1 and 32, per device.

Rows per layer: hetnn.conv2d on each device (NCHW arrays on the device, output written into a preallocated array);
the same layer as an im2col GEMM through hetnn.matmul on the CPU device (NumPy im2col, the GEMM, and the copy back to
NCHW, all timed); oneDNN's own convolution in a C++ loop on the layouts it picks (input and weights reordered once,
outside the timing: the fastest loop a oneDNN user writes), and the same loop on NCHW arrays ("onednn-c++ nchw": each
call reorders x and w in and the result out, as a call on plain arrays must); PyTorch's conv2d on the CPU and on
every CUDA device (cuDNN, TF32 off) when installed; CLBlast's convgemm on each OpenCL device when hetnn was built
with CLBlast (timed in its own loop, clFinish per call). Every row's output is checked against hetnn's CPU result.
The hetnn, im2col, oneDNN and PyTorch rows run in interleaved rounds.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._device import Device
from .._loader import _core
from .._timing import Case, interleave
from .matmul import RESNET50_BS1, max_rel_error, settle
from .mlp import _peaks, _with_peak
from .peers import torch_devices
from .grouping import by_bytes
from .progress import expect
from .stats import flags_text, no_interval, ratio_interval, row_pair

# (C, H, O, k, stride, padding) of each ResNet-50 v1.5 convolution, in the order of matmul.RESNET50_BS1 (its im2col
# GEMM: M = OH * OW, N = O, K = C * k * k).
RESNET50_CONVS: List[Tuple[int, int, int, int, int, int]] = [
    (3, 224, 64, 7, 2, 3), (64, 56, 64, 1, 1, 0), (64, 56, 64, 3, 1, 1), (64, 56, 256, 1, 1, 0),
    (256, 56, 64, 1, 1, 0), (256, 56, 128, 1, 1, 0), (128, 56, 128, 3, 2, 1), (128, 28, 512, 1, 1, 0),
    (256, 56, 512, 1, 2, 0), (512, 28, 128, 1, 1, 0), (512, 28, 256, 1, 1, 0), (256, 28, 256, 3, 2, 1),
    (256, 14, 1024, 1, 1, 0), (512, 28, 1024, 1, 2, 0), (1024, 14, 256, 1, 1, 0), (1024, 14, 512, 1, 1, 0),
    (512, 14, 512, 3, 2, 1), (512, 7, 2048, 1, 1, 0), (1024, 14, 2048, 1, 2, 0), (2048, 7, 512, 1, 1, 0),
]
QUICK_LAYERS = (2, 6, 11, 16)  # a 3x3 of each stage

CONV_COLUMNS = [
    ("layer", "layer", ""), ("batch", "batch", ""), ("library", "library", ""), ("device", "device", ""),
    ("ms", "ms", ".3f"), ("gflops", "GFLOP/s", ".1f"), ("pct_peak", "% peak", ".0f"), ("max_rel_err", "rel err", ".1e"),
    ("noise", "flags", ""),
]


def conv_gemm_sizes() -> List[Tuple[int, int, int]]:
    """(M, N, K) of the products the OpenCL convolution runs for each layer at batch 1: W (O, C*k*k) @ columns
    (C*k*k, OH*OW), i.e. M = O, N = OH*OW, K = C*k*k (the im2col view transposed); distinct shapes only."""
    return list(dict.fromkeys((o, out_size(h, k, s, p) ** 2, c * k * k) for c, h, o, k, s, p in RESNET50_CONVS))


def out_size(h: int, k: int, s: int, p: int) -> int:
    return (h + 2 * p - k) // s + 1


def layer_label(c: int, h: int, o: int, k: int, s: int, p: int) -> str:
    return f"{c}x{h}x{h} -> {o} k{k}" + (f" s{s}" if s > 1 else "")


def _check_table() -> None:
    for (c, h, o, k, s, p), (m, n, kk) in zip(RESNET50_CONVS, RESNET50_BS1):
        assert out_size(h, k, s, p) ** 2 == m and o == n and c * k * k == kk, (c, h, o, k, s, p)


def im2col(x: np.ndarray, k: int, s: int, p: int) -> np.ndarray:
    """(N*OH*OW, C*k*k) columns of x (N, C, H, W), as a GEMM-based convolution builds them."""
    n, c = x.shape[:2]
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p))) if p else x
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))[:, :, ::s, ::s]  # N, C, OH, OW, k, k
    oh, ow = win.shape[2:4]
    return np.ascontiguousarray(win.transpose(0, 2, 3, 1, 4, 5)).reshape(n * oh * ow, c * k * k)


def run_layers(devices: Sequence[Device], *, batches: Sequence[int] = (1, 32), layers: Optional[Sequence[int]] = None,
               compare: Sequence[str] = ("im2col", "onednn", "torch", "clblast"), n_warmup: int = 2,
               n_repeat: int = 5, max_duration: Optional[float] = 2.0, seed: int = 0,
               progress: Optional[Callable[[str], None]] = None,
               notes: Optional[List[str]] = None) -> List[Dict[str, Any]]:
    from .. import asarray, conv2d, empty, matmul

    _check_table()
    peaks = _peaks(devices)
    torch: Any = None
    torch_devs: List[Tuple[str, Callable[[], None]]] = []
    if "torch" in compare:
        try:
            import torch as torch_module
            torch = torch_module
            torch_devs = torch_devices(torch)
        except ImportError as exc:
            if notes is not None:
                notes.append(f"torch: not used ({type(exc).__name__}: {exc})")
    rng = np.random.default_rng(seed)
    idx = list(layers) if layers is not None else list(range(len(RESNET50_CONVS)))
    expect(progress, len(batches) * n_repeat)
    cpu = next((d for d in devices if d.kind == "cpu"), None)
    rows: List[Dict[str, Any]] = []
    def layer(batch: int, i: int) -> Tuple[List[Case], List[Callable[[Any], Dict[str, Any]]], Callable[[], None]]:
        """One layer's cases (hetnn on every device, every peer), the functions making their rows, and the
        CLBlast rows it adds after the rounds (CLBlast times itself)."""
        c, h, o, k, s, p = RESNET50_CONVS[i]
        label = layer_label(c, h, o, k, s, p)
        oh = out_size(h, k, s, p)
        flops = 2.0 * batch * o * oh * oh * c * k * k
        x = rng.standard_normal((batch, c, h, h), dtype=np.float32)
        w = (rng.standard_normal((o, c, k, k), dtype=np.float32) / np.sqrt(c * k * k)).astype(np.float32)
        ref = np.asarray(conv2d(x, w, stride=s, padding=p, device="cpu"), dtype=np.float64)
        base = {"layer": label, "batch": batch, "flops": flops}
        cases: List[Case] = []
        finish: List[Callable[[Any], Dict[str, Any]]] = []

        def add(case: Case, row: Dict[str, Any], result: Callable[[], np.ndarray], peak: Optional[float]) -> None:
            cases.append(case)
            finish.append(lambda r: _row({**base, **row}, r.wall_times, result(), ref, peak, r.flags,
                                         rounds=[int(v) for v in r.rounds]))
        for dev in devices:
            X, W = asarray(x, device=dev), asarray(w, device=dev)
            Y = empty(ref.shape, dtype="float32", device=dev)

            def run(X: Any = X, W: Any = W, Y: Any = Y) -> None:
                conv2d(X, W, stride=s, padding=p, out=Y)
            add(Case(f"hetnn {dev.id}", run, devices=[dev]), {"library": "hetnn", "device": dev.id}, Y.numpy,
                peaks[dev.id])
        if cpu is not None:  # the same layer inside a network, its input already in the layout it reads
            resident = _core._ResidentConv(asarray(x, device=cpu)._a, asarray(w, device=cpu)._a, s, p)

            def resident_out(r: Any = resident) -> np.ndarray:
                return np.asarray(r.fetch().to_numpy())
            add(Case("hetnn cpu layouts", resident.run, devices=[cpu]),
                {"library": "hetnn layouts", "device": "cpu"}, resident_out, peaks[cpu.id])
        if "im2col" in compare and cpu is not None:
            wm = np.ascontiguousarray(w.reshape(o, -1).T)
            g = np.empty((batch * oh * oh, o), np.float32)
            y_i2c = np.empty(ref.shape, np.float32)

            def gemm(g: np.ndarray = g, wm: np.ndarray = wm, y: np.ndarray = y_i2c) -> None:
                matmul(im2col(x, k, s, p), wm, out=g, device=cpu)
                y[...] = g.reshape(batch, oh, oh, o).transpose(0, 3, 1, 2)
            add(Case("im2col+matmul", gemm, devices=[cpu]), {"library": "hetnn im2col+matmul", "device": "cpu"},
                lambda: y_i2c, peaks[cpu.id])
        if "onednn" in compare:
            y_raw = np.full(ref.shape, np.nan, np.float32)
            raw = _core._OnednnRawConv(x, w, y_raw, s, p)

            def fetched(raw: Any = raw, y: np.ndarray = y_raw) -> np.ndarray:
                raw.fetch()
                return y
            add(Case("onednn-c++", raw.run), {"library": "onednn-c++", "device": "cpu"}, fetched, peaks[None])
            y_io = np.full(ref.shape, np.nan, np.float32)
            raw_io = _core._OnednnRawConv(x, w, y_io, s, p, nchw_io=True)
            add(Case("onednn-c++ nchw", raw_io.run), {"library": "onednn-c++ nchw", "device": "cpu"},
                lambda: y_io, peaks[None])
        for tdev, tsync in torch_devs:
            tx, tw = torch.from_numpy(x).to(tdev), torch.from_numpy(w).to(tdev)
            res: List[Any] = [None]

            def tconv(tx: Any = tx, tw: Any = tw, res: List[Any] = res) -> None:
                with torch.no_grad():
                    res[0] = torch.nn.functional.conv2d(tx, tw, stride=s, padding=p)
            add(Case(f"torch {tdev}", tconv, sync=tsync), {"library": f"torch {torch.__version__}",
                                                           "device": tdev},
                functools.partial(_fetch_torch, res), peaks[None] if tdev == "cpu" else None)

        def clblast() -> None:
            if "clblast" not in compare or not _core.have_clblast:
                return
            for dev in devices:
                if dev.kind != "opencl":
                    continue
                X, W = asarray(x, device=dev), asarray(w, device=dev)
                Y = empty(ref.shape, dtype="float32", device=dev)
                t = _core._clblast_convgemm(X._a, W._a, Y._a, k, s, p, min(n_warmup, 1), n_repeat)
                rows.append(_row({**base, "library": "clblast convgemm", "device": dev.id}, t, Y.numpy(), ref,
                                 peaks[dev.id], {}))
        return cases, finish, clblast

    sides = len(devices) + len(compare) + 4  # every side's input and output, the im2col columns, the reference
    for batch in batches:
        def size(i: int, batch: int = batch) -> int:
            c, h, o, k, s, p = RESNET50_CONVS[i]
            return batch * (c * h * h + o * out_size(h, k, s, p) ** 2 * (1 + c * k * k // o)) * 4 * sides
        for group in by_bytes(idx, size):  # one interleaved run each (hetnn.bench.grouping says why)
            cases, finish, after = [], [], []
            for i in group:
                cs, fs, cl = layer(batch, i)
                cases += cs
                finish += fs
                after.append(cl)
            name = f"conv batch {batch}: {len(group)} layer(s)"
            settle()
            results = interleave(cases, n_warmup=n_warmup, n_repeat=n_repeat, max_duration=max_duration,
                                 on_round=(lambda r, t, name=name: progress(f"{name}, round {r + 1}"))  # type: ignore[misc]
                                 if progress else None)
            rows.extend(f(r) for f, r in zip(finish, results))
            for cl in after:
                cl()
    order = [layer_label(*RESNET50_CONVS[i]) for i in idx]  # the table's order: by batch, then layer, as listed
    rows.sort(key=lambda r: (list(batches).index(r["batch"]), order.index(r["layer"])))
    return rows


def _fetch_torch(res: List[Any]) -> np.ndarray:
    return np.asarray(res[0].cpu().numpy())


def _row(row: Dict[str, Any], times: Sequence[float], got: np.ndarray, ref: np.ndarray, peak: Optional[float],
         flags: Dict[str, Any], rounds: Optional[List[int]] = None) -> Dict[str, Any]:
    ts = [float(t) for t in times]
    med = float(np.median(ts))
    row.update(ms=med * 1e3, times_s=ts, max_rel_err=max_rel_error(np.asarray(got, np.float64), ref), **flags)
    if rounds is not None:
        row["rounds"] = rounds  # which interleaved round each repeat ran in: ratios pair by it
    return _with_peak(row, row.pop("flops"), med, peak)


def summary(rows: List[Dict[str, Any]]) -> List[str]:
    """Per batch, aggregate speed ratios over all layers (total time of the same layers): hetnn cpu against each
    CPU peer and against each OpenCL device's hetnn, and each OpenCL device's hetnn against CLBlast, with a 95 %
    bootstrap interval over the rounds where both sides are interleaved."""
    out: List[str] = []
    for batch in sorted({r["batch"] for r in rows}):
        sel = [r for r in rows if r["batch"] == batch]
        layers = list(dict.fromkeys(r["layer"] for r in sel))

        def rows_of(lib: str, dev: str) -> Optional[Dict[str, Dict[str, Any]]]:
            got = {r["layer"]: r for r in sel if r["device"] == dev and
                   (r["library"] == lib or (lib == "torch" and r["library"].startswith("torch ")))}
            return got if all(lay in got for lay in layers) else None

        def ratio(name: str, a: Optional[Dict[str, Dict[str, Any]]], b: Optional[Dict[str, Dict[str, Any]]],
                  interleaved: bool) -> None:
            if a is None or b is None:
                return
            # a layer where either side is unreliable, above its ceiling or wrong enters neither total
            ok = [lay for lay in layers if not any(r.get("unreliable") or r.get("flagged") or
                                                   not r.get("max_rel_err", 0) < 1e-3 for r in (a[lay], b[lay]))]
            if not ok:
                out.append(f"batch {batch}: {name}: left out (no layer measured reliably on both sides)")
                return
            ta = sum(float(np.median(a[lay]["times_s"])) for lay in ok)
            tb = sum(float(np.median(b[lay]["times_s"])) for lay in ok)
            left = f"; {len(layers) - len(ok)} of {len(layers)} layers left out as unreliable" if len(ok) < len(
                layers) else ""
            ci = ratio_interval([row_pair(a[lay], b[lay], "times_s") for lay in ok]) if interleaved else None
            flags = flags_text([a[lay] for lay in ok] + [b[lay] for lay in ok])
            text = ci.text(name, flags) if ci is not None else no_interval(name, tb / ta, "timed apart", flags)
            out.append(f"batch {batch}: {text} ({ta * 1e3:.1f} ms vs {tb * 1e3:.1f} ms in all{left})")
        cpu = rows_of("hetnn", "cpu")
        for lib in ("onednn-c++", "onednn-c++ nchw", "hetnn im2col+matmul", "torch"):
            ratio(f"hetnn cpu / {lib} (speed)", cpu, rows_of(lib, "cpu"), True)
        # inside a network (activations in the layouts the layers read and write): against the resident raw loop
        ratio("hetnn cpu in a network (device layouts) / onednn-c++ (speed)", rows_of("hetnn layouts", "cpu"),
              rows_of("onednn-c++", "cpu"), True)
        cuda = [d for d in dict.fromkeys(r["device"] for r in sel) if d.startswith("cuda")]
        for dev in dict.fromkeys(r["device"] for r in sel if r["device"].startswith("opencl")):
            ratio(f"hetnn {dev} / hetnn cpu (speed)", rows_of("hetnn", dev), cpu, True)
            for cdev in cuda:
                ratio(f"hetnn {dev} / torch {cdev} (speed)", rows_of("hetnn", dev), rows_of("torch", cdev), True)
            ratio(f"hetnn {dev} / clblast convgemm (speed)", rows_of("hetnn", dev), rows_of("clblast convgemm", dev),
                  False)
    return out
