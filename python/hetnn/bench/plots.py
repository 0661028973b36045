"""PNG plots of benchmark rows (matplotlib, imported only here): GFLOP/s bars per shape and library with the
measured ceilings, % of peak, log-log time against size, training time by topology and device, transfer bandwidth
and latency against size. Figures are built without pyplot (no global state, no display needed); a figure above
its ceiling (a flagged row) is left out of the plot, never drawn as a result."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

Rows = List[Dict[str, Any]]


def notebook_display() -> bool:
    """Makes matplotlib figures display as PNG images in a running IPython kernel (Jupyter), as %matplotlib inline
    does: a pyplot-free Figure is otherwise shown as its text repr ("<Figure size 1000x450 with 2 Axes>"). Returns
    whether there was a kernel to set up."""
    try:
        from IPython import get_ipython
        from IPython.core.pylabtools import select_figure_formats
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return False
    select_figure_formats(shell, {"png"})
    return True


PLOTS_NEED = "plots need matplotlib: pip install 'hetnn[bench]' (or pip install matplotlib)"


def require_matplotlib() -> None:
    """ModuleNotFoundError naming the extra that brings matplotlib, where it is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ModuleNotFoundError(PLOTS_NEED, name="matplotlib") from None


def _figure(nrows: int = 1, ncols: int = 1, size: Tuple[float, float] = (10, 4.5)) -> Tuple[Any, Any]:
    require_matplotlib()
    from matplotlib.figure import Figure

    notebook_display()
    fig = Figure(figsize=size, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def _ok(r: Dict[str, Any], key: str) -> bool:
    v = r.get(key)
    return isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)) and \
        key not in str(r.get("flagged") or "").split(",")


def _series(r: Dict[str, Any]) -> str:
    return f"{r.get('library')} {r.get('device')}"


def _footer(fig: Any, env: Dict[str, Any], what: str) -> None:
    devs = "; ".join(f"{d['id']}: {d['name']}" for d in env.get("devices", []))
    fig.text(0.0, -0.02, f"hetnn {env.get('hetnn', '?')}, {env.get('date', '')}; {devs}. {what}", fontsize=7,
             ha="left", va="top", wrap=True)


def _bars(ax: Any, categories: Sequence[str], series: Dict[str, Dict[str, float]], ylabel: str,
          log: bool = False) -> None:
    n = max(1, len(series))
    width = 0.8 / n
    for i, (name, vals) in enumerate(series.items()):
        xs = [c + (i - (n - 1) / 2) * width for c in range(len(categories))]
        ys = [vals.get(cat, math.nan) for cat in categories]
        ax.bar(xs, ys, width, label=name)
    ax.set_xticks(range(len(categories)))
    ax.set_xticklabels(categories, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)


def plot_peak(rows: Rows, env: Dict[str, Any]) -> Optional[Any]:
    if not rows:
        return None
    fig, ax = _figure(1, 2, (10, 4))
    devs = [r["device"] for r in rows]
    ax[0][0].bar(devs, [r.get("fp32_gflops") or math.nan for r in rows], color="tab:blue")
    ax[0][0].set_ylabel("FP32 GFLOP/s")
    ax[0][0].set_title("measured FP32 FMA ceiling")
    mem = {"memory (triad)": {r["device"]: r.get("mem_gbps") or math.nan for r in rows},
           "H2D 64 MiB": {r["device"]: r.get("h2d_gbps") or math.nan for r in rows},
           "D2H 64 MiB": {r["device"]: r.get("d2h_gbps") or math.nan for r in rows}}
    _bars(ax[0][1], devs, mem, "GB/s")
    ax[0][1].set_title("measured bandwidth ceilings")
    ax[0][1].legend(fontsize=8)
    _footer(fig, env, "python -m hetnn bench peak")
    return fig


def plot_matmul(rows: Rows, env: Dict[str, Any]) -> Optional[Any]:
    rows = [r for r in rows if "gflops" in r and not str(r.get("shape", "")).startswith("aggregate")]
    if not rows:
        return None
    dtypes = list(dict.fromkeys(r["dtype"] for r in rows))
    fig, ax = _figure(2, len(dtypes), (max(10, 5 * len(dtypes)), 8))
    for j, dt in enumerate(dtypes):
        sel = [r for r in rows if r["dtype"] == dt]
        shapes = list(dict.fromkeys(r["shape"] for r in sel))
        g: Dict[str, Dict[str, float]] = {}
        pct: Dict[str, Dict[str, float]] = {}
        for r in sel:
            if _ok(r, "gflops"):
                g.setdefault(_series(r), {})[r["shape"]] = r["gflops"]
            if _ok(r, "pct_peak"):
                pct.setdefault(_series(r), {})[r["shape"]] = r["pct_peak"]
        _bars(ax[0][j], shapes, g, "GFLOP/s (median)")
        peaks = sorted({(r["device"], r["peak_gflops"]) for r in sel if r.get("peak_gflops")
                        and r["library"] == "hetnn"}, key=lambda x: x[1])
        for dev, pk in peaks:
            ax[0][j].axhline(pk, ls="--", lw=1, color="gray")
            ax[0][j].annotate(f"{dev} ceiling {pk:.0f}", (len(shapes) - 0.5, pk), fontsize=7, ha="right",
                              va="bottom", color="gray")
        ax[0][j].set_title(f"matmul {dt}: GFLOP/s per shape and library")
        ax[0][j].legend(fontsize=7, ncol=2)
        _bars(ax[1][j], shapes, pct, "% of the device's measured FP32 peak")
        ax[1][j].axhline(100, ls="--", lw=1, color="gray")
        ax[1][j].set_title("share of peak")
    _footer(fig, env, "python -m hetnn bench matmul; operands on the device, synchronised, median of repeats")
    return fig


def plot_maxpool(rows: Rows, env: Dict[str, Any]) -> Optional[Any]:
    sweep = [r for r in rows if r.get("part") == "sweep" and _ok(r, "fwd_ms")]
    layers = [r for r in rows if r.get("part") != "sweep" and "fwd_ms" in r]
    if not sweep and not layers:
        return None
    fig, ax = _figure(1, 2, (13, 4.8))
    for name in dict.fromkeys(_series(r) for r in sweep):
        sel = [r for r in sweep if _series(r) == name]
        px = [r["windows"] * 4 for r in sel]  # input pixels of a 2x2 stride-2 sweep image
        line, = ax[0][0].plot(px, [r["fwd_ms"] for r in sel], marker="o", ms=3, label=name)
        tot = [(p, r["total_ms"]) for p, r in zip(px, sel) if _ok(r, "total_ms")]
        if tot:
            ax[0][0].plot(*zip(*tot), ls="--", color=line.get_color(), label=f"{name} + transfers")
    ax[0][0].set_xscale("log")
    ax[0][0].set_yscale("log")
    ax[0][0].set_xlabel("image pixels (square, 1 channel; 2x2 windows, stride 2)")
    ax[0][0].set_ylabel("forward time, ms (median)")
    ax[0][0].set_title("max-pool sweep: time against size")
    ax[0][0].legend(fontsize=7)
    ax[0][0].grid(alpha=0.3, which="both")
    cases = list(dict.fromkeys(r["case"] for r in layers))
    g: Dict[str, Dict[str, float]] = {}
    for r in layers:
        if _ok(r, "fwd_gbps"):
            g.setdefault(_series(r), {})[r["case"]] = r["fwd_gbps"]
    _bars(ax[0][1], cases, g, "forward GB/s (input + output bytes)")
    for ceiling in sorted({float(r["mem_peak_gbps"]) for r in layers if r.get("mem_peak_gbps")}):
        ax[0][1].axhline(ceiling, ls="--", lw=1, color="gray")
        ax[0][1].annotate(f"memory ceiling {ceiling:.0f} GB/s", (len(cases) - 0.5, ceiling), fontsize=7,
                          ha="right", va="bottom", color="gray")
    ax[0][1].set_title("max-pool layers: forward bandwidth")
    ax[0][1].legend(fontsize=7, ncol=2)
    _footer(fig, env, "python -m hetnn bench maxpool")
    return fig


def plot_mlp(rows: Rows, env: Dict[str, Any]) -> Optional[Any]:
    topo = [r for r in rows if r.get("part") == "topology" and _ok(r, "train_s")]
    mnist = [r for r in rows if r.get("part") == "fashion-mnist" and _ok(r, "epoch_s")]
    if not topo and not mnist:
        return None
    batches = sorted({r["batch"] for r in topo})
    ncols = len(batches) + (1 if mnist else 0)
    fig, ax = _figure(1, ncols, (4.6 * ncols, 4.5))
    for j, bs in enumerate(batches):
        sel = [r for r in topo if r["batch"] == bs]
        for dev in dict.fromkeys(r["device"] for r in sel):
            for depth in sorted({r["layers"] for r in sel}):
                pts = sorted((r["params"], r["train_s"]) for r in sel if r["device"] == dev and r["layers"] == depth)
                ax[0][j].plot(*zip(*pts), marker="o", ms=3, label=f"{dev}, {depth} hidden")
        ax[0][j].set_xscale("log")
        ax[0][j].set_yscale("log")
        ax[0][j].set_xlabel("parameters")
        ax[0][j].set_ylabel("training time, s/epoch")
        ax[0][j].set_title(f"topology study, batch {bs}")
        ax[0][j].grid(alpha=0.3, which="both")
        ax[0][j].legend(fontsize=6)
    if mnist:
        widths = list(dict.fromkeys(r["widths"] for r in mnist))
        s: Dict[str, Dict[str, float]] = {}
        for r in mnist:
            s.setdefault(_series(r), {})[r["widths"]] = r["epoch_s"]
        a = ax[0][ncols - 1]
        _bars(a, [f"784-{w}-10" for w in widths], {k: {f"784-{w}-10": v for w, v in d.items()} for k, d in s.items()},
              "s/epoch (median)")
        a.set_title("Fashion-MNIST training, batch 64")
        a.legend(fontsize=7)
    _footer(fig, env, "python -m hetnn bench mlp")
    return fig


def plot_transfer(rows: Rows, env: Dict[str, Any]) -> Optional[Any]:
    rows = [r for r in rows if "bytes" in r]
    if not rows:
        return None
    fig, ax = _figure(1, 2, (12, 4.5))
    for name in dict.fromkeys(f"{r['device']} {r['direction']}" for r in rows):
        sel = [r for r in rows if f"{r['device']} {r['direction']}" == name]
        bw = [(r["bytes"], r["gbps"]) for r in sel if _ok(r, "gbps")]
        if bw:
            ax[0][0].plot(*zip(*bw), marker="o", ms=3, label=name)
        ax[0][1].plot([r["bytes"] for r in sel], [r["wall_ms"] * 1e3 for r in sel], marker="o", ms=3, label=name)
    for a, ylabel, title in ((ax[0][0], "GB/s", "bandwidth against size"),
                             (ax[0][1], "wall time per copy, us", "latency against size")):
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.set_xlabel("bytes")
        a.set_ylabel(ylabel)
        a.set_title(title)
        a.grid(alpha=0.3, which="both")
        a.legend(fontsize=7)
    _footer(fig, env, "python -m hetnn bench transfer")
    return fig


def plot_compare(rows: Rows, env: Dict[str, Any]) -> Optional[Any]:
    if not rows:
        return None
    fig, ax = _figure(1, 1, (7, 4))
    names = [_series(r) for r in rows]
    ax[0][0].bar(names, [r["median_ms"] for r in rows], color="tab:blue")
    ax[0][0].set_ylabel("median ms")
    ax[0][0].set_title(f"{rows[0].get('op')} {rows[0].get('shape')} {rows[0].get('dtype')}")
    ax[0][0].tick_params(axis="x", rotation=30, labelsize=8)
    _footer(fig, env, "hetnn.bench.compare")
    return fig


_PLOTS = {"peak": plot_peak, "matmul": plot_matmul, "maxpool": plot_maxpool, "mlp": plot_mlp,
          "transfer": plot_transfer, "compare": plot_compare}


def make_figures(rows: Rows, env: Dict[str, Any]) -> Dict[str, Any]:
    """{suite: Figure} for every suite present in ``rows`` (rows carry ``suite``)."""
    out = {}
    for suite, fn in _PLOTS.items():
        sel = [r for r in rows if r.get("suite") == suite]
        if sel:
            fig = fn(sel, env)
            if fig is not None:
                out[suite] = fig
    return out
