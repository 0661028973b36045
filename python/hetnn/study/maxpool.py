"""The max-pooling parallelisation study, as published: single-channel n x n images of integers 0-9 (n = 4 .. 2048),
2x2 windows with stride 2, and the overlapping (stride 1, padding 1) and zero-padded variants; per size the serial
version (hetnn's CPU kernel on one thread) against the parallel ones (hetnn on every device with all its workers),
the speedup with its interval and Amdahl's serial fraction, OpenCL with and without its transfers. hetnn's own extra
part: the AlexNet variant's three pooling layers at batch 256, max and average pooling."""
from __future__ import annotations

import math
import re
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

from .._array import asarray, empty
from .._check import is_int
from .._device import Device
from .._ops import avg_pool2d, max_pool2d
from .._table import format_table
from .._threads import get_num_threads, num_threads
from .._timing import Case, interleave
from ..bench.matmul import settle
from ..bench.stats import paired, ratio, ratio_interval
from ._base import Context, Rows, Study, positive

SWEEP_COLUMNS = [("size", "n", "d"), ("variant", "variant", ""), ("library", "library", ""), ("device", "device", ""),
                 ("workers", "workers", "d"), ("ms", "ms (median)", ".4f"), ("spread_pct", "IQR %", ".0f"),
                 ("speedup", "speedup vs serial", ".2f"), ("speedup_ci", "95% CI", ""),
                 ("amdahl_serial", "Amdahl serial fraction", ".3f"), ("noise", "flags", "")]
VARIANT = re.compile(r"k(\d+)s(\d+)(?:p(\d+)|z(\d+))?$")


def parse_variant(text: str) -> Tuple[int, int, int, int]:
    """(kernel, stride, padding, zero padding) of a variant: "k2s2"; "k2s1p1" (padding as PyTorch's, -inf);
    "k2s2z2" (the image padded with 2 rows and columns of zeros on every side, then pooled without padding)."""
    m = VARIANT.match(text) if isinstance(text, str) else None
    if not m:
        raise ValueError(f"study maxpool: a variant is kKsS, kKsSpP (padding, -inf as PyTorch) or kKsSzZ (zero "
                         f"padding), e.g. k2s2, k2s1p1, k2s2z2; got {text!r}")
    k, st, p, z = (int(g) if g else 0 for g in m.groups())
    if k < 1 or st < 1 or p > k // 2:
        raise ValueError(f"study maxpool: variant {text!r}: kernel and stride >= 1, padding at most half the kernel")
    return k, st, p, z


COLUMNS = [("layer", "layer", ""), ("op", "op", ""), ("dtype", "dtype", ""), ("library", "library", ""),
           ("device", "device", ""), ("workers", "workers", "d"), ("ms", "ms (median)", ".3f"),
           ("spread_pct", "IQR %", ".0f"), ("gbps", "GB/s", ".1f"), ("speedup", "speedup vs serial", ".2f"),
           ("speedup_ci", "95% CI", ""), ("amdahl_serial", "Amdahl serial fraction", ".3f"),
           ("amdahl_max", "Amdahl max speedup", ".1f"), ("noise", "flags", "")]


def amdahl(speedup: float, workers: int) -> Tuple[float, float]:
    """Amdahl's serial fraction f from a speedup S on p workers (S = 1 / (f + (1 - f) / p)), and the largest
    speedup it allows (1/f); NaN where the law does not apply (p = 1, S outside [1, p])."""
    if workers <= 1 or not 1.0 <= speedup <= workers:
        return math.nan, math.nan
    f = (workers / speedup - 1.0) / (workers - 1.0)
    return f, (1.0 / f if f > 0 else math.inf)


def _numpy_pool(x: np.ndarray, op: str) -> np.ndarray:
    n, c, h, w = x.shape
    v = x[:, :, :h // 2 * 2, :w // 2 * 2].reshape(n, c, h // 2, 2, w // 2, 2)
    return v.max(axis=(3, 5)) if op == "max" else v.mean(axis=(3, 5), dtype=np.float64).astype(x.dtype)


def _numpy_max(x: np.ndarray, k: int, s: int, p: int) -> np.ndarray:
    """NumPy's max pooling as users write it (a strided window view), padded with the dtype's lowest value."""
    if p:
        low = np.iinfo(x.dtype).min if x.dtype.kind in "iu" else -np.inf
        x = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=low)
    return np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(2, 3))[:, :, ::s, ::s].max(axis=(4, 5))


def _cases(x: np.ndarray, op: str, k: int, s: int, devices: List[Device], ref: np.ndarray, p: int = 0,
           transfers: bool = False, z: int = 0) -> List[Tuple[Case, Dict[str, Any], Callable[[], np.ndarray]]]:
    """(case, row base, result getter) for the serial version, NumPy and hetnn on every device (with ``transfers``,
    also each OpenCL device with the input's upload and the result's download inside the timing). ``z``: max
    pooling with z rows and columns of zero padding (padding_mode="zeros"; NumPy pads inside its timed call)."""
    if z:
        def fn(X: Any, k: int, s: int, p: int, **kw: Any) -> Any:
            return max_pool2d(X, k, s, z, padding_mode="zeros", **kw)
    else:
        fn = max_pool2d if op == "max" else avg_pool2d  # type: ignore[assignment]
    out: List[Tuple[Case, Dict[str, Any], Callable[[], np.ndarray]]] = []
    for dev in devices:
        X = asarray(x, device=dev)
        Y = empty(ref.shape, dtype=str(x.dtype), device=dev)
        workers = get_num_threads() if dev.kind == "cpu" else dev.compute_units
        out.append((Case(f"hetnn {dev.id}", lambda X=X, Y=Y: fn(X, k, s, p, out=Y), devices=[dev]),  # type: ignore
                    {"library": "hetnn", "device": dev.id, "workers": workers}, Y.numpy))
        if dev.kind == "cpu":
            Y1 = empty(ref.shape, dtype=str(x.dtype), device=dev)

            def serial(X: Any = X, Y1: Any = Y1) -> None:
                with num_threads(1):
                    fn(X, k, s, p, out=Y1)
            out.append((Case("serial", serial, devices=[dev]),
                        {"library": "hetnn (serial)", "device": dev.id, "workers": 1}, Y1.numpy))
        elif transfers:
            got: List[np.ndarray] = [np.empty(0)]

            def moved(dev: Device = dev, got: List[np.ndarray] = got) -> None:
                got[0] = fn(asarray(x, device=dev), k, s, p).numpy()
            out.append((Case(f"hetnn {dev.id} + transfers", moved, devices=[dev]),
                        {"library": "hetnn (with transfers)", "device": dev.id, "workers": workers},
                        lambda got=got: got[0]))  # type: ignore[misc]
    res: List[np.ndarray] = [np.empty(0)]

    def numpy_call() -> None:
        xz = np.pad(x, ((0, 0), (0, 0), (z, z), (z, z))) if z else x
        res[0] = _numpy_pool(xz, op) if (k, s, p) == (2, 2, 0) else _numpy_max(xz, k, s, p)
    out.append((Case("numpy", numpy_call), {"library": "numpy", "device": "host", "workers": 1}, lambda: res[0]))
    return out


def _speedup(row: Dict[str, Any], r: Any, serial: Any) -> None:
    """The row's speedup over the serial version (paired rounds, 95 % interval) and Amdahl's serial fraction, from
    clean rows only."""
    pair = paired(list(r.wall_times), list(serial.wall_times), list(r.rounds), list(serial.rounds))
    ci = ratio_interval([pair])
    if ci is None:  # re-runs of preempted repeats left the two fewer than two common rounds: said, not left blank
        row["speedup_ci"] = f"no interval: {len(pair[0])} paired repeat(s)"
        row["amdahl"] = "not enough clean points"
        return
    row["speedup"], row["speedup_ci"] = ci.value, f"{ci.low:.2f}-{ci.high:.2f}"
    row["speedup_low"], row["speedup_high"] = ci.low, ci.high
    if r.unreliable or serial.unreliable or row.get("wrong"):  # a fit from clean points only
        row["amdahl"] = "not enough clean points"
    else:
        row["amdahl_serial"], row["amdahl_max"] = amdahl(ci.value, row["workers"])


def _timed_rows(ctx: Context, x: np.ndarray, op: str, k: int, s: int, p: int, ref: np.ndarray, base: Dict[str, Any],
                tol: float, transfers: bool = False, z: int = 0) -> Rows:
    """Every case of one input timed in interleaved rounds, checked against ``ref``, as rows."""
    cfg = ctx.cfg
    settle()
    items = _cases(x, op, k, s, ctx.devices, ref, p, transfers, z)
    results = interleave([it[0] for it in items], n_warmup=cfg["warmup"], n_repeat=cfg["repeat"],
                         max_duration=cfg["max_duration"])
    nbytes = x.nbytes + ref.nbytes
    serial = next((r for (case, _, _), r in zip(items, results) if case.name == "serial"), None)
    rows: Rows = []
    for (case, who, get), r in zip(items, results):
        got = get()
        err = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64)))) if got.size else 0.0
        if got.shape != ref.shape:
            err = math.inf
        med = float(np.median(r.wall_times))
        row = {**base, **who, "ms": med * 1e3, "times_ms": [t * 1e3 for t in r.wall_times],
               "spread_pct": 100 * float(np.subtract(*np.percentile(r.wall_times, [75, 25]))) / med,
               "gbps": nbytes / med / 1e9, "max_abs_err": err, **r.flags}
        if not err <= tol:
            row["wrong"] = True
            row["noise"] = "; ".join(t for t in (row.get("noise"), f"WRONG: error {err:.1e}") if t)
        if serial is not None and case.name != "serial":
            _speedup(row, r, serial)
        rows.append(ctx.keep(row))
    return rows


def run_sweep(ctx: Context) -> Rows:
    """The paper's sweep: per size and variant, every case timed interleaved."""
    from ..bench.maxpool import reference_max_pool

    cfg = ctx.cfg
    lo, hi = cfg["values"]
    variants = [(v, *parse_variant(v)) for v in cfg["variants"]]
    rng = np.random.default_rng(cfg["seed"])
    rows: Rows = []
    for n in cfg["sizes"]:
        img = rng.integers(lo, hi + 1, size=(1, 1, n, n)).astype(cfg["dtype"])
        for name, k, st, p, z in variants:
            if n + 2 * (p + z) < k:
                continue
            ctx.step(f"{n}x{n} {name}")
            ref = reference_max_pool(np.pad(img, ((0, 0), (0, 0), (z, z), (z, z))) if z else img, k, st, p)
            rows += _timed_rows(ctx, img, "max", k, st, p, ref, {"part": "sweep", "size": n, "variant": name}, 0.0,
                                transfers=True, z=z)
    ctx.say(f"\nthe published sweep: single-channel n x n images of integers {lo}-{hi} ({cfg['dtype']}, seeded), max "
            f"pooling per variant (kKsS: k x k windows, stride S; pP: padding P as PyTorch's, -inf; zZ: Z rows and "
            f"columns of zero padding, hetnn's padding_mode='zeros', inside the timed call; NumPy pads with np.pad "
            f"inside its own); "
            f"serial version: hetnn's CPU kernel on one thread; speedup: its time over each row's (interleaved "
            f"rounds, 95 % interval); OpenCL timed with the input on the device, and 'with transfers' with its upload "
            f"and download inside the timing:")
    ctx.say(format_table(rows, SWEEP_COLUMNS))
    for line in _sweep_ratios(rows):
        ctx.say("  " + line)
    return rows


def _sweep_ratios(rows: Rows) -> List[str]:
    """Per size and variant: each OpenCL device against the CPU device, kernel alone and with its transfers."""
    out = []
    for r in rows:
        if r["library"] != "hetnn" or r["device"] != "cpu":
            continue
        same = [q for q in rows if (q["size"], q["variant"]) == (r["size"], r["variant"]) and q["device"] != "cpu"
                and q["library"] in ("hetnn", "hetnn (with transfers)")]
        for q in same:
            what = "kernel alone" if q["library"] == "hetnn" else "with its transfers"
            out.append(ratio(f"{r['size']}x{r['size']} {r['variant']}: {q['device']} ({what}) / cpu (speed)", q, r))
    return out


def run(ctx: Context) -> Rows:
    cfg = ctx.cfg
    positive("maxpool", cfg, "sizes", "batch", "kernel", "stride", "repeat", "max_duration")
    for v in cfg["variants"]:
        parse_variant(v)
    rows = run_sweep(ctx) if cfg["sweep"] else []
    if cfg["alexnet"]:
        rows += run_layers(ctx)
    return rows


def run_layers(ctx: Context) -> Rows:
    """hetnn's extra part: the AlexNet variant's pooling layers at a batch, max (and average) pooling."""
    cfg = ctx.cfg
    if cfg["dtype"] not in ("int8", "uint8", "int32", "int64", "float32", "float64"):
        raise ValueError(f"study maxpool: dtype takes int8, uint8, int32, int64, float32, float64, got "
                         f"{cfg['dtype']!r}")
    if len(cfg["values"]) != 2 or cfg["values"][0] > cfg["values"][1]:
        raise ValueError(f"study maxpool: values is [lowest, highest], got {cfg['values']!r}")
    lo, hi = cfg["values"]
    layers = [tuple(int(v) for v in layer) for layer in cfg["layers"]]
    if any(len(layer) != 3 or min(layer) < 1 for layer in layers):
        raise ValueError(f"study maxpool: layers are [C, H, W] triples >= 1, got {cfg['layers']!r}")
    rng = np.random.default_rng(cfg["seed"])
    k, s = cfg["kernel"], cfg["stride"]
    if k != 2 or s != 2:
        raise ValueError("study maxpool: the serial NumPy version pools 2x2 windows with stride 2 (kernel 2, stride "
                         "2)")
    ops = [("max", cfg["dtype"])] + ([("max", "float32"), ("avg", "float32")] if cfg["avg"] else [])
    rows: Rows = []
    for c, h, w in layers:
        img = rng.integers(lo, hi + 1, size=(cfg["batch"], c, h, w))
        for op, dt in dict.fromkeys(ops):
            label = f"{c}x{h}x{w}"
            ctx.step(f"{op} {dt} {label}")
            x = img.astype(dt)
            ref = _numpy_pool(x, op)
            tol = 0.0 if op == "max" else 1e-6 * max(1.0, float(hi))
            rows += _timed_rows(ctx, x, op, k, s, 0, ref, {"part": "pooling", "layer": label, "batch": cfg["batch"],
                                                           "op": op, "dtype": dt}, tol)
    ctx.say(f"\nhetnn's extra part (not in the paper): the AlexNet variant's pooling layers, max (and average) "
            f"pooling, {k}x{k} windows, stride {s}, batch {cfg['batch']}, images of integers "
            f"{lo}-{hi} ({cfg['dtype']}; the float32 rows pool the same values as float32). Serial version: hetnn's "
            f"CPU kernel on one thread; speedup: its time over each row's, interleaved rounds, 95 % bootstrap "
            f"interval; "
            f"Amdahl: the serial fraction f that the speedup S on p workers implies (S = 1/(f + (1-f)/p)) and the "
            f"largest speedup it allows (1/f); '-' where S is outside [1, p]:")
    ctx.say(format_table(rows, COLUMNS))
    for line in _max_vs_avg(rows):
        ctx.say("  " + line)
    return rows


def _max_vs_avg(rows: Rows) -> List[str]:
    """Average over max pooling time per layer and device (float32, same images)."""
    out = []
    rows = [r for r in rows if r.get("part") == "pooling"]
    for r in rows:
        if r["op"] != "max" or r["dtype"] != "float32":
            continue
        a = next((q for q in rows if q["op"] == "avg" and q["layer"] == r["layer"] and q["library"] == r["library"]
                  and q["device"] == r["device"]), None)
        if a is not None:  # timed in separate runs: the interval is over each side's repeats
            out.append(ratio(f"{r['layer']} {r['library']} {r['device']}: max / average pooling (speed; average takes "
                             f"{a['ms'] / r['ms']:.2f} of max's time)", r, a))
    return out


def plot(rows: Rows, env: Dict[str, Any]) -> Any:
    from ..bench.plots import _bad, _bad_cells, _bars, _figure, _footer, _legend, _mark, _styles

    sel = [r for r in rows if r.get("part") == "pooling"]
    sweep = [r for r in rows if r.get("part") == "sweep" and isinstance(r.get("ms"), (int, float))]
    if not sel and not sweep:
        return None
    fig, ax = _figure(1, 3 if sel and sweep else 1 if sweep else 2, (20 if sel and sweep else 7 if sweep else 15, 5))
    if sweep:
        a = ax[0][0]
        first = sweep[0]["variant"]
        styles = _styles([f"{r['library']} {r['device']}" for r in sweep])
        for name in dict.fromkeys(f"{r['library']} {r['device']}" for r in sweep):
            pts = sorted((r["size"] ** 2, r["ms"], r) for r in sweep
                         if f"{r['library']} {r['device']}" == name and r["variant"] == first)
            color, _, marker = styles[name]
            a.plot([q[0] for q in pts], [q[1] for q in pts], color=color, marker=marker, ms=4, label=name)
            _mark(a, [q[0] for q in pts if _bad(q[2])], [q[1] for q in pts if _bad(q[2])])
        a.set(xscale="log", yscale="log", xlabel="pixels (n x n, one channel)", ylabel="ms (median)",
              title=f"the published sweep, {first}")
        a.grid(alpha=0.3, which="both")
        if not sel:
            _legend(fig, [a])
            _footer(fig, env, "python -m hetnn study maxpool; synchronised, median of interleaved repeats")
            return fig
        ax = [ax[0][1:]]
    first = sel[0]["dtype"]
    cats = list(dict.fromkeys(f"{r['layer']} {r['op']} {r['dtype']}" for r in sel))
    styles = _styles([f"{r['library']} {r['device']}" for r in sel])
    t: Dict[str, Dict[str, float]] = {}
    sp: Dict[str, Dict[str, float]] = {}
    ci: Dict[str, Dict[str, Tuple[float, float]]] = {}
    for r in sel:
        name = f"{r['library']} {r['device']}"
        t.setdefault(name, {})[f"{r['layer']} {r['op']} {r['dtype']}"] = r["ms"]
        if r["dtype"] == first and r["op"] == "max" and "speedup" in r:
            sp.setdefault(name, {})[r["layer"]] = r["speedup"]
            if "speedup_low" in r:
                ci.setdefault(name, {})[r["layer"]] = (r["speedup_low"], r["speedup_high"])
    _bars(ax[0][0], cats, t, "ms per batch (median)", log=True, labels=".2f", styles=styles,
          bad=_bad_cells(sel, lambda r: f"{r['layer']} {r['op']} {r['dtype']}"))
    ax[0][0].set_title("pooling time per layer, op and dtype", fontsize=9)
    _bars(ax[0][1], list(dict.fromkeys(r["layer"] for r in sel)), sp,
          f"speedup over the serial version (max, {first}; 95 % CI)", labels=".2f", styles=styles, spread=ci,
          bad=_bad_cells([r for r in sel if r["dtype"] == first and r["op"] == "max"], lambda r: r["layer"]))
    ax[0][1].axhline(1.0, ls="--", lw=1, color="dimgray")
    ax[0][1].set_title("parallel speedup", fontsize=9)
    _legend(fig, [ax[0][0], ax[0][1]])
    _footer(fig, env, "python -m hetnn study maxpool; inputs on the device, synchronised, median of repeats")
    return fig


def memory(cfg: Dict[str, Any]) -> List[Tuple[str, float]]:
    """The largest layer's batch of input and the largest sweep image (its float64 reference too), in the study's
    dtype."""
    size = {"int8": 1, "uint8": 1, "int32": 4, "float32": 4}.get(cfg["dtype"], 8)
    biggest = max((math.prod(abs(int(v)) for v in layer) for layer in cfg["layers"]
                   if all(is_int(v) for v in layer)), default=0)
    side = max([abs(int(n)) for n in cfg["sizes"] if is_int(n)] or [0])
    return [(f"batch {cfg['batch']} of layers {cfg['layers']}", abs(int(cfg["batch"])) * biggest * size),
            (f"sizes up to {side}", side * side * (size + 8))]

STUDY = Study(
    in_processes=True,
    name="maxpool",
    title="max pooling, serial against parallel: the published sweep of n x n integer images, and AlexNet's pools",
    setup="Published: max pooling of single-channel n x n images of integers 0-9 (n = 4, 8, ..., 1024, 2048), "
          "2x2 windows with stride 2, and the overlapping (stride 1, padding 1) and zero-padded variants, a serial "
          "CPU version against parallel ones per size (the speed-up table), with an Amdahl estimate. hetnn: the "
          "same sweep; the serial version is its CPU kernel on one thread (NumPy's window view beside it), parallel: "
          "hetnn on every device with all its workers (CPU threads, OpenCL compute units), OpenCL timed with its "
          "input on the device and again with the upload and download inside the timing; padding pP is PyTorch's "
          "(-inf), zZ is Z rows and columns of zero padding (max_pool2d's padding_mode='zeros', on the device, timed); "
          "integer images are pooled "
          "exactly in their own dtype and every result checked against a float64 reference. hetnn's extra part, not "
          "the paper's: the AlexNet variant's three pooling layers at batch 256, max and average pooling.",
    defaults={"sizes": [4 << i for i in range(10)], "variants": ["k2s2", "k2s1p1", "k2s2z2"], "sweep": True,
              "alexnet": True, "layers": [[64, 16, 16], [192, 8, 8], [256, 4, 4]], "batch": 256, "kernel": 2,
              "stride": 2, "values": [0, 9], "dtype": "int64", "avg": True, "repeat": 200, "warmup": 5,
              "max_duration": 2.0},
    doc={"sizes": "n of the n x n images of the sweep", "variants": "the sweep's windows: kKsS, kKsSpP (-inf padding) "
         "or kKsSzZ (zero padding)", "sweep": "run the published sweep", "alexnet": "run hetnn's extra part",
         "layers": "[C, H, W] of each pooled input of the extra part", "batch": "images per batch (extra part)",
         "kernel": "window size (extra part)", "stride": "window stride (extra part)",
         "values": "[lowest, highest] integer of the images",
         "dtype": "the images' dtype (int8, uint8, int32, int64, float32, float64)",
         "avg": "also average pooling (and max pooling on float32) of the same images (extra part)",
         "repeat": "timed repeats per row at most", "warmup": "untimed calls per row",
         "max_duration": "seconds of timing per row at most"},
    quick={"sizes": [4, 16, 64, 256], "batch": 32, "repeat": 5, "warmup": 1, "max_duration": 0.1},
    run=run,
    paper={"sizes": [4 << i for i in range(10)], "variants": ["k2s2", "k2s1p1", "k2s2z2"], "values": [0, 9],
           "sweep": True},
    paper_source="the max-pooling parallelisation paper: single-channel n x n images of integers 0-9, n = 4 .. 2048 "
                 "(2048 on its T4), 2x2 windows with stride 2, the overlapping (stride 1, padding 1) and zero-padded "
                 "variants; its speed-up table per size (figure 44)",
    differs={"devices": "the paper's serial CPU version against its GPU (a T4); here hetnn's CPU kernel "
                        "on one thread against the CPU device on all threads and every OpenCL device (this machine "
                        "kind: PoCL on the same 2 vCPUs)",
             "alexnet": "hetnn's extra part (the AlexNet variant's pooling layers at batch 256), not the paper's; "
                        "labelled so in the report"},
    memory=memory,
    plot=plot,
    full_run="6 min 46 s on 2 vCPUs of an AMD EPYC (Zen 4), in 3 processes, both devices, the sweep and the extra "
             "part; 0.7 GB of memory at its peak (docs/studies.md)",
)
