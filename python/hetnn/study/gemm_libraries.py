"""The ResNet-50 GEMM study across libraries: the 20 convolutions of ResNet-50 v1.5 as im2col GEMMs at batch 1 and
scaled to batch 128, timed in every library the study compared (NumPy, Numba ``@njit`` and parallel, JAX with and
without ``jit``, PyTorch) and in hetnn on every device; a 1000x1000x1000 product run first as the study's
"initialisation" and left out; the arithmetic mean of GFLOP/s as the aggregate (the study's), total FLOP over total
time beside it; NumPy's float16 (its slow, emulated path) as a row of its own."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from .._check import is_int
from .._table import format_table
from ..bench.matmul import RESNET50_BS1, ratios, run_matmul
from ..bench.suites import _parse_mnk
from ._base import Context, Rows, Study, positive

SUMMARY_COLUMNS = [("batch", "batch", "d"), ("dtype", "dtype", ""), ("library", "library", ""),
                   ("device", "device", ""), ("shapes_n", "shapes", "d"),
                   ("mean_gflops", "mean GFLOP/s (study)", ".1f"),
                   ("gflops", "total FLOP / total time", ".1f"), ("pct_peak", "% peak", ".0f")]
SHAPE_COLUMNS = [("shape", "shape", ""), ("library", "library", ""), ("device", "device", ""),
                 ("wall_ms", "ms", ".3f"), ("gflops", "GFLOP/s", ".1f"), ("repeats", "n", "d"),
                 ("max_rel_err", "max rel err", ".1e"), ("compute", "compute", ""), ("noise", "flags", "")]


def _shapes(cfg: Dict[str, Any], batch: int) -> List[Tuple[str, int, int, int]]:
    if cfg["shapes"] == ["resnet50"]:
        base = list(RESNET50_BS1)
    else:
        base = [t for s in cfg["shapes"] for t in _parse_mnk(s, ["resnet50"])]
    return [(f"{m * batch}x{n}x{k}", m * batch, n, k) for m, n, k in base]


def run(ctx: Context) -> Rows:
    cfg = ctx.cfg
    positive("gemm-libraries", cfg, "batches", "repeat", "max_duration")
    for d in cfg["dtypes"]:
        if d not in ("float32", "float64", "float16"):
            raise ValueError(f"study gemm-libraries: dtypes take float32, float64, float16, got {d!r}")
    _shapes(cfg, 1)  # bad MxNxK before anything runs
    init = _parse_mnk(cfg["init_shape"], []) if cfg["init_shape"] else []
    timing = {"n_warmup": cfg["warmup"], "n_repeat": cfg["repeat"], "max_duration": cfg["max_duration"]}
    peers = [p for p in cfg["peers"] if p != "hetnn"]
    rows: Rows = []
    if init:  # the study's first product, as its "initialisation": run, then left out of every figure
        ctx.step(f"initialisation {cfg['init_shape']}")
        for r in run_matmul([(f"init {cfg['init_shape']}", *init[0])], ctx.devices, compare=peers,
                            notes=ctx.notes, **timing):
            rows.append(ctx.keep({**r, "part": "initialisation (left out)"}))
    for batch in cfg["batches"]:
        for dt in cfg["dtypes"]:
            if dt == "float16" and batch not in cfg["float16_batches"]:
                continue
            shapes = _shapes(cfg, batch)
            ctx.step(f"batch {batch} {dt}: {len(shapes)} shapes")
            dt_peers = [p for p in peers if dt != "float16" or p in cfg["float16_peers"]]
            part = run_matmul(shapes, ctx.devices, dtype=dt, compare=dt_peers, notes=ctx.notes,
                              progress=ctx.progress, **timing)
            rows += ctx.keep_all([{**r, "part": "shapes", "batch": batch} for r in part])
    shape_rows = [r for r in rows if r.get("part") == "shapes"]
    agg = [dict(r, shapes_n=len(r["shapes"])) for r in shape_rows if str(r["shape"]).startswith("aggregate")]
    ctx.say("\nper shape (median of up to {repeat} synchronized repeats after {warmup} warm-up calls, at most "
            "{max_duration} s per row):".format(**cfg))
    ctx.say(format_table([r for r in shape_rows if not str(r["shape"]).startswith("aggregate")], SHAPE_COLUMNS))
    ctx.say("\naggregates: the study's arithmetic mean of the shapes' GFLOP/s, and total FLOP over total time (large "
            "shapes weigh most):")
    ctx.say(format_table(agg, SUMMARY_COLUMNS))
    for batch in cfg["batches"]:
        for dt in cfg["dtypes"]:
            sel = [r for r in shape_rows if r["batch"] == batch and r["dtype"] == dt]
            for line in ratios(sel) if sel else []:
                ctx.say(f"  [batch {batch} {dt}] {line}")
    if "float16" in cfg["dtypes"]:
        ctx.notes.append("numpy float16: no BLAS, element loops on one thread (the study's slow path); hetnn "
                         "float16 computes as the device's float16 column says")
    return rows


def plot(rows: Rows, env: Dict[str, Any]) -> Any:
    from ..bench.plots import _bad_cells, _bars, _figure, _footer, _legend, _styles

    sel = [r for r in rows if r.get("part") == "shapes" and "gflops" in r and not r.get("flagged")]
    groups = list(dict.fromkeys((r["batch"], r["dtype"]) for r in sel))
    if not groups:
        return None
    fig, ax = _figure(len(groups), 2, (16, 4.8 * len(groups)))
    styles = _styles([f"{r['library']} {r['device']}" for r in sel])  # one style per library in every panel
    for i, (batch, dt) in enumerate(groups):
        part = [r for r in sel if r["batch"] == batch and r["dtype"] == dt]
        shapes = [r for r in part if not str(r["shape"]).startswith("aggregate")]
        cats = list(dict.fromkeys(r["shape"] for r in shapes))
        series: Dict[str, Dict[str, float]] = {}
        for r in shapes:
            series.setdefault(f"{r['library']} {r['device']}", {})[r["shape"]] = r["gflops"]
        _bars(ax[i][0], cats, series, "GFLOP/s (median)", labels=".0f", styles=styles,
              bad=_bad_cells(shapes, lambda r: r["shape"]))
        ax[i][0].set_title(f"batch {batch}, {dt}: GFLOP/s per shape", fontsize=9)
        aggs = [r for r in part if str(r["shape"]).startswith("aggregate")]
        cats2 = ["mean GFLOP/s (study)", "total FLOP / total time"]
        series2 = {f"{r['library']} {r['device']}": {cats2[0]: r["mean_gflops"], cats2[1]: r["gflops"]}
                   for r in aggs}
        _bars(ax[i][1], cats2, series2, "GFLOP/s", labels=".0f", styles=styles)
        cover = aggs[0]["shape"].replace("aggregate ", "") if aggs else "none: too few clean shapes"
        ax[i][1].set_title(f"batch {batch}, {dt}: both aggregates, over the shapes every library measured cleanly "
                           f"{cover}", fontsize=9)
    _legend(fig, [a for row in ax for a in row])
    _footer(fig, env, "python -m hetnn study gemm-libraries; operands on the device, synchronised, median of repeats")
    return fig


def memory(cfg: Dict[str, Any]) -> List[Tuple[str, float]]:
    """Per shape at the largest batch: float32 operands and result, and the float64 reference of the result."""
    batch = max([int(b) for b in cfg["batches"] if is_int(b)] or [1])
    try:
        shapes = _shapes(cfg, max(batch, 1))
    except ValueError:  # a malformed shape: the run says so
        return []
    need = max(((m * k + k * n) * 4 + m * n * 12 for _, m, n, k in shapes), default=0)
    out = [(f"batches {cfg['batches']} with shapes {cfg['shapes'] if len(cfg['shapes']) < 4 else '...'}", need)]
    try:
        init = _parse_mnk(cfg["init_shape"], []) if cfg["init_shape"] else []
    except ValueError:
        init = []
    return out + [(f"init_shape {cfg['init_shape']}", (m * k + k * n) * 4 + m * n * 12) for m, n, k in init]

STUDY = Study(
    in_processes=True,
    name="gemm-libraries",
    title="ResNet-50's convolutions as GEMMs across libraries (batch 1 and 128)",
    setup="Published: the 20 ResNet-50 v1.5 convolution GEMMs (im2col: M = output pixels x batch, N = output "
          "channels, K = input channels x kernel area) at batch 1 and 128 in NumPy, Numba (@njit around np.dot, and "
          "parallel), JAX without jit, and others; a 1000x1000x1000 product first as initialisation, left out; "
          "1000-2000 repeats per shape; NumPy float16 shown (slow); the aggregate is the arithmetic mean of the "
          "shapes' GFLOP/s; bars with value labels. hetnn: the same, with hetnn on every device, PyTorch and jitted "
          "JAX and oneDNN's own C++ loop as further peers where installed (a missing peer is a note); repeats stop "
          "at max_duration seconds per row; every result checked against float64 NumPy.",
    defaults={"batches": [1, 128], "dtypes": ["float32", "float16"], "float16_batches": [1],
              "float16_peers": ["numpy", "torch"], "shapes": ["resnet50"], "init_shape": "1000x1000x1000",
              "peers": ["numpy", "numba", "jax-nojit", "jax", "torch", "onednn"], "repeat": 2000, "warmup": 3,
              "max_duration": 2.0},
    doc={"batches": "batch sizes (M scales with them)", "dtypes": "float32, float64, float16",
         "float16_batches": "batches that also run float16 (NumPy's float16 is slow)",
         "float16_peers": "peers run at float16", "shapes": "'resnet50' or your own MxNxK list",
         "init_shape": "the product run first and left out ('' for none)",
         "peers": "numpy, numba, jax-nojit, jax, torch, cupy, onednn, clblast",
         "repeat": "timed repeats per row at most", "warmup": "untimed calls per row",
         "max_duration": "seconds of timing per row at most (stops the repeats)"},
    quick={"batches": [1], "dtypes": ["float32"], "shapes": ["784x128x1152", "196x256x2304", "49x512x4608"],
           "init_shape": "256x256x256", "repeat": 3, "warmup": 1, "max_duration": 0.1},
    run=run,
    paper={"batches": [1, 128], "shapes": ["resnet50"], "init_shape": "1000x1000x1000"},
    paper_source="the GEMM libraries comparison: the 20 ResNet-50 v1.5 convolution GEMMs at batch 1 and 128, a "
                 "1000x1000x1000 product first, left out; 1000-2000 repeats per shape",
    differs={"max_duration": "the paper ran every repeat; hetnn stops a row after max_duration seconds (2000 repeats "
                             "of the batch-128 shapes take minutes each on 2 vCPUs) and says how many it took",
             "peers": "the paper's NumPy, Numba and JAX without jit, and others; hetnn adds itself on every device, "
                      "jitted JAX, PyTorch and oneDNN's C++ loop where installed"},
    memory=memory,
    plot=plot,
    full_run="17 min on 2 vCPUs of an AMD EPYC (Zen 4), CPU device, PoCL and five peers, in one process; 31.6 min in "
             "3 processes with six (docs/studies.md)",
)
