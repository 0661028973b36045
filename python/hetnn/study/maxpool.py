"""The max-pooling parallelisation study: the AlexNet variant's three pooling layers (64x16x16, 192x8x8, 256x4x4;
2x2 windows, stride 2; batch 256) on images of integers 0-9, pooled by the serial version (hetnn's CPU kernel on
one thread, and NumPy's reshape-max) and in parallel (hetnn on every device with all its workers); the speedup over
the serial version with Amdahl's serial fraction, and average pooling beside max pooling on the same images."""
from __future__ import annotations

import math
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


def _cases(x: np.ndarray, op: str, k: int, s: int, devices: List[Device], ref: np.ndarray
           ) -> List[Tuple[Case, Dict[str, Any], Callable[[], np.ndarray]]]:
    """(case, row base, result getter) for the serial version, NumPy and hetnn on every device."""
    fn = max_pool2d if op == "max" else avg_pool2d
    out: List[Tuple[Case, Dict[str, Any], Callable[[], np.ndarray]]] = []
    for dev in devices:
        X = asarray(x, device=dev)
        Y = empty(ref.shape, dtype=str(x.dtype), device=dev)
        workers = get_num_threads() if dev.kind == "cpu" else dev.compute_units
        out.append((Case(f"hetnn {dev.id}", lambda X=X, Y=Y: fn(X, k, s, out=Y), devices=[dev]),  # type: ignore[misc]
                    {"library": "hetnn", "device": dev.id, "workers": workers}, Y.numpy))
        if dev.kind == "cpu":
            Y1 = empty(ref.shape, dtype=str(x.dtype), device=dev)

            def serial(X: Any = X, Y1: Any = Y1) -> None:
                with num_threads(1):
                    fn(X, k, s, out=Y1)
            out.append((Case("serial", serial, devices=[dev]),
                        {"library": "hetnn (serial)", "device": dev.id, "workers": 1}, Y1.numpy))
    res: List[np.ndarray] = [np.empty(0)]

    def numpy_call() -> None:
        res[0] = _numpy_pool(x, op)
    out.append((Case("numpy", numpy_call), {"library": "numpy", "device": "host", "workers": 1}, lambda: res[0]))
    return out


def run(ctx: Context) -> Rows:
    cfg = ctx.cfg
    positive("maxpool", cfg, "batch", "kernel", "stride", "repeat", "max_duration")
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
            settle()
            items = _cases(x, op, k, s, ctx.devices, ref)
            results = interleave([it[0] for it in items], n_warmup=cfg["warmup"], n_repeat=cfg["repeat"],
                                 max_duration=cfg["max_duration"])
            nbytes = x.nbytes + ref.nbytes
            serial = next((r for (case, _, _), r in zip(items, results) if case.name == "serial"), None)
            for (case, base, get), r in zip(items, results):
                got = get()
                err = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64)))) if got.size else 0.0
                med = float(np.median(r.wall_times))
                row = {"part": "pooling", "layer": label, "batch": cfg["batch"], "op": op, "dtype": dt, **base,
                       "ms": med * 1e3, "times_ms": [t * 1e3 for t in r.wall_times],
                       "spread_pct": 100 * float(np.subtract(*np.percentile(r.wall_times, [75, 25]))) / med,
                       "gbps": nbytes / med / 1e9, "max_abs_err": err, **r.flags}
                tol = 0.0 if op == "max" else 1e-6 * max(1.0, float(hi))
                if not err <= tol:
                    row["wrong"] = True
                    row["noise"] = "; ".join(x for x in (row.get("noise"), f"WRONG: error {err:.1e}") if x)
                if serial is not None and case.name != "serial":
                    ci = ratio_interval([paired(list(r.wall_times), list(serial.wall_times), list(r.rounds),
                                                    list(serial.rounds))])
                    if ci is not None:
                        row["speedup"] = ci.value
                        row["speedup_ci"] = f"{ci.low:.2f}-{ci.high:.2f}"
                        row["speedup_low"], row["speedup_high"] = ci.low, ci.high
                        if r.unreliable or serial.unreliable or row.get("wrong"):  # a fit from clean points only
                            row["amdahl"] = "not enough clean points"
                        else:
                            row["amdahl_serial"], row["amdahl_max"] = amdahl(ci.value, base["workers"])
                rows.append(ctx.keep(row))
    ctx.say(f"\nmax (and average) pooling, {k}x{k} windows, stride {s}, batch {cfg['batch']}, images of integers "
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
    from ..bench.plots import _bad_cells, _bars, _figure, _footer, _legend, _styles

    sel = [r for r in rows if r.get("part") == "pooling"]
    if not sel:
        return None
    fig, ax = _figure(1, 2, (15, 5))
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
    """The largest layer's batch of input, in the study's dtype."""
    size = {"int8": 1, "uint8": 1, "int32": 4, "float32": 4}.get(cfg["dtype"], 8)
    biggest = max((math.prod(abs(int(v)) for v in layer) for layer in cfg["layers"]
                   if all(is_int(v) for v in layer)), default=0)
    return [(f"batch {cfg['batch']} of layers {cfg['layers']}", abs(int(cfg["batch"])) * biggest * size)]

STUDY = Study(
    name="maxpool",
    title="max pooling, serial against parallel: the AlexNet variant's pools on integer images",
    setup="Published: the AlexNet variant's pooling layers on 32x32 inputs (64x16x16, 192x8x8, 256x4x4; 2x2 windows, "
          "stride 2; batch 256), images of integers 0-9, a serial version against parallel ones, with the speedup, "
          "an Amdahl estimate, and average pooling beside max pooling. hetnn: the serial version is its CPU kernel "
          "on one thread (NumPy's reshape-max beside it); parallel: hetnn on every device with all its workers (CPU "
          "threads, OpenCL compute units); integer images pooled exactly in their own dtype; every result checked "
          "against NumPy.",
    defaults={"layers": [[64, 16, 16], [192, 8, 8], [256, 4, 4]], "batch": 256, "kernel": 2, "stride": 2,
              "values": [0, 9], "dtype": "int64", "avg": True, "repeat": 200, "warmup": 5, "max_duration": 2.0},
    doc={"layers": "[C, H, W] of each pooled input", "batch": "images per batch", "kernel": "window size",
         "stride": "window stride", "values": "[lowest, highest] integer of the images",
         "dtype": "the images' dtype (int8, uint8, int32, int64, float32, float64)",
         "avg": "also average pooling (and max pooling on float32) of the same images",
         "repeat": "timed repeats per row at most", "warmup": "untimed calls per row",
         "max_duration": "seconds of timing per layer at most"},
    quick={"batch": 32, "repeat": 5, "warmup": 1, "max_duration": 0.1},
    run=run,
    memory=memory,
    plot=plot,
    full_run="1 min 19 s on 2 vCPUs of an AMD EPYC (Zen 4), both devices (docs/studies.md)",
)
