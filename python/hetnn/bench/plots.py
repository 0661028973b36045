"""PNG plots of benchmark rows (matplotlib, imported only here): GFLOP/s bars per shape and library with the
measured ceilings, % of peak, log-log time against size, training time by topology and device, transfer bandwidth
and latency against size. Figures are built without pyplot (no global state, no display needed); a figure above
its ceiling (a flagged row) is left out of the plot, never drawn as a result."""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

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


def _figure(nrows: int = 1, ncols: int = 1, size: Tuple[float, float] = (10, 4.5),
            mosaic: Optional[List[List[str]]] = None) -> Tuple[Any, Any]:
    """A constrained-layout figure and its axes: a (nrows, ncols) grid, or a dict by name for ``mosaic`` (an axes
    may span several cells)."""
    require_matplotlib()
    from matplotlib.figure import Figure

    notebook_display()
    fig = Figure(figsize=size, layout="constrained")
    layout: Any = mosaic  # matplotlib's stubs want its own list type
    axes = fig.subplot_mosaic(layout) if mosaic else fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def _ok(r: Dict[str, Any], key: str) -> bool:
    v = r.get(key)
    return isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)) and \
        key not in str(r.get("flagged") or "").split(",")


UNRELIABLE = "x / hatched: unreliable or wrong (see the flags column)"


def _bad(r: Dict[str, Any]) -> bool:
    """A row whose figure is not a result: most of its repeats preempted, or a wrong result."""
    return bool(r.get("unreliable") or r.get("wrong"))


def _mark(ax: Any, xs: Sequence[float], ys: Sequence[float]) -> None:
    """Red crosses over the points of unreliable or wrong rows, labelled for the legend."""
    pts = [(x, y) for x, y in zip(xs, ys) if isinstance(y, (int, float)) and not math.isnan(y)]
    if pts:
        ax.plot([p[0] for p in pts], [p[1] for p in pts], ls="none", marker="x", ms=9, mew=2, color="red",
                label=UNRELIABLE, zorder=5)


def mark_unreliable(ax: Any, xs: Sequence[float], ys: Sequence[float], rows: Sequence[Any]) -> None:
    """How every hetnn plot marks a figure that is not a result, for a plot of your own: red crosses, labelled for
    the legend, over the points (``xs[i]``, ``ys[i]``) whose row (a benchmark row, or a
    :class:`hetnn.BenchmarkResult`) is unreliable (most repeats preempted) or wrong."""
    bad = [_bad(r if isinstance(r, dict) else dict(getattr(r, "noise", {}) or {})) for r in rows]
    _mark(ax, [x for x, b in zip(xs, bad) if b], [y for y, b in zip(ys, bad) if b])


def _bad_cells(rows: Rows, category: Callable[[Dict[str, Any]], str]) -> Dict[str, set]:
    """{series: categories} of the unreliable or wrong rows, for :func:`_bars`."""
    out: Dict[str, set] = {}
    for r in rows:
        if _bad(r):
            out.setdefault(_series(r), set()).add(category(r))
    return out


def _series(r: Dict[str, Any]) -> str:
    return f"{r.get('library')} {r.get('device')}"


def _footer(fig: Any, env: Dict[str, Any], what: str) -> None:
    devs = "; ".join(f"{d['id']}: {d['name']}" for d in env.get("devices", []))
    fig.text(0.0, -0.02, f"hetnn {env.get('hetnn', '?')}, {env.get('date', '')}; {devs}. {what}", fontsize=7,
             ha="left", va="top", wrap=True)


_HATCHES = ("", "//", "..", "xx", "\\\\", "++", "oo", "--")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def _interval(r: Dict[str, Any], key: str) -> Optional[Tuple[float, float]]:
    """The interquartile range of ``r[key]`` over the row's repeats (its ``times_ms`` / ``times_s``): a rate scales
    as 1/time, a time as time. None without repeats."""
    times = r.get("times_ms") or r.get("times_s")
    v = r.get(key)
    if not isinstance(times, list) or len(times) < 3 or not isinstance(v, (int, float)):
        return None
    ts = sorted(float(t) for t in times)
    q = lambda f: ts[min(len(ts) - 1, int(round(f * (len(ts) - 1))))]  # noqa: E731
    med, lo, hi = q(0.5), q(0.25), q(0.75)
    if med <= 0 or lo <= 0:
        return None
    a, b = (v * lo / med, v * hi / med) if key.endswith(("_ms", "_s")) else (v * med / hi, v * med / lo)
    # the row's value is NumPy's median (even counts: the mean of the middle two), the quartiles are order
    # statistics: v * med / hi with med == hi came out a rounding below v, a negative error bar matplotlib refuses
    return min(a, v), max(b, v)


def _styles(names: Sequence[str]) -> Dict[str, Tuple[str, str, str]]:
    """(colour, hatch, marker) per series name, the same in every panel of a figure."""
    return {n: (f"C{i % 10}", _HATCHES[i % len(_HATCHES)], _MARKERS[i % len(_MARKERS)])
            for i, n in enumerate(dict.fromkeys(names))}


def _bars(ax: Any, categories: Sequence[str], series: Dict[str, Dict[str, float]], ylabel: str,
          log: bool = False, spread: Optional[Dict[str, Dict[str, Tuple[float, float]]]] = None,
          cached: Optional[Dict[str, set]] = None, styles: Optional[Dict[str, Tuple[str, str, str]]] = None,
          labels: str = "", bad: Optional[Dict[str, set]] = None) -> None:
    """Grouped bars: one colour and hatch per series, IQR error bars where ``spread`` has them, bars of rows whose
    working set fits the cache (``cached``) drawn hollow, bars of unreliable or wrong rows (``bad``) hatched with
    a red edge and labelled; ``labels``: a format for each bar's value written on it (the published studies label
    their bars; "" for none)."""
    n = max(1, len(series))
    width = 0.8 / n
    styles = styles or _styles(list(series))
    for i, (name, vals) in enumerate(series.items()):
        xs = [c + (i - (n - 1) / 2) * width for c in range(len(categories))]
        ys = [vals.get(cat, math.nan) for cat in categories]
        color, hatch, _ = styles[name]
        bars = ax.bar(xs, ys, width, label=name, color=color, hatch=hatch, edgecolor="white", lw=0)
        if labels:
            ax.bar_label(bars, labels=["" if math.isnan(y) else format(y, labels) for y in ys], fontsize=5,
                         rotation=90, padding=2)
        for cat, bar in zip(categories, bars):
            if cat in (cached or {}).get(name, set()):
                bar.set_facecolor("none")
                bar.set_edgecolor(bars.patches[0].get_facecolor() if bars.patches else "gray")
                bar.set_linewidth(1.2)
            if cat in (bad or {}).get(name, set()):
                bar.set_hatch("xxxx")
                bar.set_edgecolor("red")
                bar.set_linewidth(1.0)
        iv = (spread or {}).get(name, {})
        pts = [(x, y, iv[c]) for x, y, c in zip(xs, ys, categories) if c in iv and not math.isnan(y)]
        if pts:
            ax.errorbar([p[0] for p in pts], [p[1] for p in pts],
                        yerr=[[p[1] - p[2][0] for p in pts], [p[2][1] - p[1] for p in pts]],
                        fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
    if any(bad.get(name) for name in series) if bad else False:
        ax.bar([], [], color="none", hatch="xxxx", edgecolor="red", label=UNRELIABLE)
    ax.set_xticks(range(len(categories)))
    ax.set_xticklabels(categories, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)


def _ceilings(ax: Any, items: Sequence[Tuple[str, float]], unit: str) -> None:
    """Horizontal ceiling lines; ceilings within 5 % of each other share one line and one label, and labels sit at
    the left edge on a white box so that bars and legends do not hide them."""
    groups: List[Tuple[float, List[str]]] = []
    for name, v in sorted(set(items), key=lambda t: (t[1], t[0])):
        if groups and v <= groups[-1][0] * 1.05:
            groups[-1][1].append(name)
        else:
            groups.append((v, [name]))
    for v, names in groups:
        ax.axhline(v, ls="--", lw=1, color="dimgray")
        ax.annotate(f"{', '.join(names)}: {v:.0f} {unit}", (0.01, v), xycoords=("axes fraction", "data"),
                    fontsize=7, ha="left", va="bottom", color="dimgray",
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8})


def _legend(fig: Any, axes: Sequence[Any], note: str = "") -> None:
    """One legend for the whole figure, above the panels, from every panel's labelled artists."""
    seen: Dict[str, Any] = {}
    for a in axes:
        for h, label in zip(*a.get_legend_handles_labels()):
            seen.setdefault(label, h)
    if seen:
        fig.legend(list(seen.values()), list(seen.keys()), loc="outside upper center", fontsize=8,
                   ncol=min(4, len(seen)), title=note or None, title_fontsize=7)


def plot_peak(rows: Rows, env: Dict[str, Any]) -> Optional[Any]:
    if not rows:
        return None
    fig, ax = _figure(1, 2, (10, 4))
    devs = [r["device"] for r in rows]
    bars = ax[0][0].bar(devs, [r.get("fp32_gflops") or math.nan for r in rows], color="tab:blue")
    for r, bar in zip(rows, bars):
        if r.get("under_load"):  # a lower bound, not a ceiling (and not stored)
            bar.set_hatch("xxxx")
            bar.set_edgecolor("red")
            bar.set_label("x / hatched: measured under load (a lower bound, not stored)")
    if any(r.get("under_load") for r in rows):
        ax[0][0].legend(fontsize=7)
    ax[0][0].set_ylabel("FP32 GFLOP/s")
    ax[0][0].set_title("measured FP32 FMA ceiling")
    mem = {"memory (triad)": {r["device"]: r.get("mem_gbps") or math.nan for r in rows},
           "H2D 64 MiB": {r["device"]: r.get("h2d_gbps") or math.nan for r in rows},
           "D2H 64 MiB": {r["device"]: r.get("d2h_gbps") or math.nan for r in rows}}
    _bars(ax[0][1], devs, mem, "GB/s", bad={k: {r["device"] for r in rows if r.get("under_load")} for k in mem})
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
        iqr: Dict[str, Dict[str, Tuple[float, float]]] = {}
        iqr_pct: Dict[str, Dict[str, Tuple[float, float]]] = {}
        for r in sel:
            if _ok(r, "gflops"):
                g.setdefault(_series(r), {})[r["shape"]] = r["gflops"]
                iv = _interval(r, "gflops")
                if iv:
                    iqr.setdefault(_series(r), {})[r["shape"]] = iv
            if _ok(r, "pct_peak"):
                pct.setdefault(_series(r), {})[r["shape"]] = r["pct_peak"]
                iv = _interval(r, "pct_peak")
                if iv:
                    iqr_pct.setdefault(_series(r), {})[r["shape"]] = iv
        bad = _bad_cells(sel, lambda r: r["shape"])
        _bars(ax[0][j], shapes, g, "GFLOP/s (median, IQR bars)", spread=iqr, labels=".0f", bad=bad)
        peaks = {(r["device"], r["peak_gflops"]) for r in sel if r.get("peak_gflops") and r["library"] == "hetnn"}
        _ceilings(ax[0][j], [(f"{dev} ceiling", pk) for dev, pk in peaks], "GFLOP/s")
        ax[0][j].set_title(f"matmul {dt}: GFLOP/s per shape and library")
        _bars(ax[1][j], shapes, pct, "% of the device's measured FP32 peak", spread=iqr_pct, bad=bad)
        _ceilings(ax[1][j], [("measured ceiling", 100.0)], "%")
        ax[1][j].set_title("share of peak")
    _legend(fig, [a for row in ax for a in row])
    _footer(fig, env, "python -m hetnn bench matmul; operands on the device, synchronised, median of repeats, "
                      "error bars: interquartile range")
    return fig


def plot_maxpool(rows: Rows, env: Dict[str, Any]) -> Optional[Any]:
    sweep = [r for r in rows if r.get("part") == "sweep" and _ok(r, "fwd_ms")]
    layers = [r for r in rows if r.get("part") != "sweep" and "fwd_ms" in r]
    if not sweep and not layers:
        return None
    fig, ax = _figure(1, 2, (13, 4.8))
    styles = _styles([_series(r) for r in sweep + layers])
    for name in dict.fromkeys(_series(r) for r in sweep):
        sel = [r for r in sweep if _series(r) == name]
        color, _, marker = styles[name]
        px = [r["windows"] * 4 for r in sel]  # input pixels of a 2x2 stride-2 sweep image
        ys = [r["fwd_ms"] for r in sel]
        ivs = [_interval(r, "fwd_ms") or (y, y) for r, y in zip(sel, ys)]
        err = [[y - v[0] for y, v in zip(ys, ivs)], [v[1] - y for y, v in zip(ys, ivs)]]
        ax[0][0].errorbar(px, ys, yerr=err, color=color, marker=marker, ms=4, capsize=2, elinewidth=0.7, label=name)
        _mark(ax[0][0], [p for p, r in zip(px, sel) if _bad(r)], [y for y, r in zip(ys, sel) if _bad(r)])
        tot = [(p, r["total_ms"]) for p, r in zip(px, sel) if _ok(r, "total_ms")]
        if tot:
            ax[0][0].plot(*zip(*tot), ls="--", color=color, marker=marker, mfc="none", ms=4,
                          label=f"{name} + transfers")
    ax[0][0].set_xscale("log")
    ax[0][0].set_yscale("log")
    ax[0][0].set_xlabel("image pixels (square, 1 channel; 2x2 windows, stride 2)")
    ax[0][0].set_ylabel("forward time, ms (median)")
    ax[0][0].set_title("max-pool sweep: time against size")
    ax[0][0].grid(alpha=0.3, which="both")
    cases = list(dict.fromkeys(r["case"] for r in layers))
    g: Dict[str, Dict[str, float]] = {}
    iqr: Dict[str, Dict[str, Tuple[float, float]]] = {}
    cached: Dict[str, set] = {}
    for r in layers:
        if _ok(r, "fwd_gbps"):
            g.setdefault(_series(r), {})[r["case"]] = r["fwd_gbps"]
            iv = _interval(r, "fwd_gbps")
            if iv:
                iqr.setdefault(_series(r), {})[r["case"]] = iv
            if r.get("in_cache"):
                cached.setdefault(_series(r), set()).add(r["case"])
    _bars(ax[0][1], cases, g, "forward GB/s (input + output bytes)", spread=iqr, cached=cached, styles=styles,
          bad=_bad_cells(layers, lambda r: r["case"]))
    _ceilings(ax[0][1], [(f"{r['device']} memory ({r['mem_peak_what']})", float(r["mem_peak_gbps"]))
                         for r in layers if r.get("mem_peak_gbps") and r.get("library") == "hetnn"], "GB/s")
    ax[0][1].set_title("max-pool layers: forward bandwidth")
    _legend(fig, [ax[0][0], ax[0][1]], "hollow bars: the working set fits the last-level cache, so the memory "
                                       "ceiling does not bound them" if cached else "")
    _footer(fig, env, "python -m hetnn bench maxpool; error bars: interquartile range of the repeats")
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
        for di, dev in enumerate(dict.fromkeys(r["device"] for r in sel)):
            for k, depth in enumerate(sorted({r["layers"] for r in sel})):
                pts = sorted(((r["params"], r["train_s"], _interval(r, "train_s") or (r["train_s"],) * 2, _bad(r))
                              for r in sel if r["device"] == dev and r["layers"] == depth), key=lambda p: p[0])
                if pts:
                    ax[0][j].errorbar([p[0] for p in pts], [p[1] for p in pts],
                                      yerr=[[p[1] - p[2][0] for p in pts], [p[2][1] - p[1] for p in pts]],
                                      marker=_MARKERS[k % len(_MARKERS)], ms=4, capsize=2, elinewidth=0.7,
                                      ls=("-", "--", ":", "-.")[di % 4], label=f"{dev}, {depth} hidden")
                    _mark(ax[0][j], [p[0] for p in pts if p[3]], [p[1] for p in pts if p[3]])
        ax[0][j].set_xscale("log")
        ax[0][j].set_yscale("log")
        ax[0][j].set_xlabel("parameters")
        ax[0][j].set_ylabel("training time, s/epoch")
        ax[0][j].set_title(f"topology study, batch {bs}")
        ax[0][j].grid(alpha=0.3, which="both")
    if mnist:
        widths = list(dict.fromkeys(r["widths"] for r in mnist))
        s: Dict[str, Dict[str, float]] = {}
        iqr: Dict[str, Dict[str, Tuple[float, float]]] = {}
        for r in mnist:
            s.setdefault(_series(r), {})[f"784-{r['widths']}-10"] = r["epoch_s"]
            iv = _interval(r, "epoch_s")
            if iv:
                iqr.setdefault(_series(r), {})[f"784-{r['widths']}-10"] = iv
        a = ax[0][ncols - 1]
        _bars(a, [f"784-{w}-10" for w in widths], s, "s/epoch (median)", spread=iqr,
              bad=_bad_cells(mnist, lambda r: f"784-{r['widths']}-10"))
        a.set_title("Fashion-MNIST training, batch 64")
    _legend(fig, [a for row in ax for a in row])
    _footer(fig, env, "python -m hetnn bench mlp; topology points: median of the timed epochs, bars: their IQR")
    return fig


def plot_transfer(rows: Rows, env: Dict[str, Any]) -> Optional[Any]:
    rows = [r for r in rows if "bytes" in r and "direction" in r]  # the copies (not the overlap rows)
    if not rows:
        return None
    fig, ax = _figure(1, 2, (12, 4.8))
    for i, name in enumerate(dict.fromkeys(f"{r['device']} {r['direction']}" for r in rows)):
        sel = [r for r in rows if f"{r['device']} {r['direction']}" == name]
        mk = _MARKERS[i % len(_MARKERS)]
        wall = [(r["bytes"], r["wall_gbps"]) for r in sel if _ok(r, "wall_gbps")]
        line = None
        if wall:  # what the caller waits for: bandwidth from wall-clock time
            line, = ax[0][0].plot(*zip(*wall), marker=mk, ms=4, label=name)
        dev_bw = [(r["bytes"], r["gbps"]) for r in sel if _ok(r, "gbps") and r.get("timing") == "device"]
        if dev_bw:  # the copy alone, from the device's timer
            ax[0][0].plot(*zip(*dev_bw), marker=mk, mfc="none", ms=4, ls=":", lw=0.9,
                          color=line.get_color() if line is not None else None)
        ax[0][1].plot([r["bytes"] for r in sel], [r["wall_ms"] * 1e3 for r in sel], marker=mk, ms=4, label=name)
        bad = [r for r in sel if _bad(r)]
        _mark(ax[0][0], [r["bytes"] for r in bad if _ok(r, "wall_gbps")], [r["wall_gbps"] for r in bad
                                                                             if _ok(r, "wall_gbps")])
        _mark(ax[0][1], [r["bytes"] for r in bad], [r["wall_ms"] * 1e3 for r in bad])
    ax[0][0].plot([], [], "k:", marker="o", mfc="none", label="dotted, hollow: device time of the copy alone")
    for a, ylabel, title in ((ax[0][0], "GB/s (solid: from wall time)", "bandwidth against size"),
                             (ax[0][1], "wall time per copy, us", "latency against size")):
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.set_xlabel("bytes")
        a.set_ylabel(ylabel)
        a.set_title(title)
        a.grid(alpha=0.3, which="both")
    _legend(fig, [ax[0][0], ax[0][1]])
    _footer(fig, env, "python -m hetnn bench transfer; median of repeats")
    return fig


def plot_arrays(rows: Rows, env: Dict[str, Any]) -> Optional[Any]:
    rows = [r for r in rows if "op" in r and "us" in r]
    if not rows:
        return None
    fig, ax = _figure(1, 2, (12, 4.8))
    ops = list(dict.fromkeys(r["op"] for r in rows))
    # per op its largest and its smallest arrays (the transposed add's large arrays are smaller than the others')
    by_op = {op: sorted((r for r in rows if r["op"] == op), key=lambda r: r.get("bytes", 0)) for op in ops}
    large = {op: by_op[op][-1]["size"] for op in ops}
    small = {op: by_op[op][0]["size"] for op in ops}
    series = list(dict.fromkeys(f"{r['library']} {r['device']}" for r in rows))
    width = 0.8 / max(1, len(series))
    for panel, size, key, ylabel in ((ax[0][0], large, "gbps", "GB/s"), (ax[0][1], small, "us", "us per call")):
        for i, name in enumerate(series):
            sel = {r["op"]: r for r in rows if r["size"] == size[r["op"]] and f"{r['library']} {r['device']}" == name}
            xs = [j + (i - (len(series) - 1) / 2) * width for j, op in enumerate(ops) if _ok(sel.get(op, {}), key)]
            ys = [sel[op][key] for op in ops if _ok(sel.get(op, {}), key)]
            panel.bar(xs, ys, width, label=name)
            bad = [(x, sel[op][key]) for x, op in zip(xs, [o for o in ops if _ok(sel.get(o, {}), key)])
                   if _bad(sel[op])]
            _mark(panel, [b[0] for b in bad], [b[1] for b in bad])
        sizes = list(dict.fromkeys(size.values()))
        panel.set_xticks(range(len(ops)))
        panel.set_xticklabels([op if len(sizes) == 1 else f"{op}\n{size[op]}" for op in ops])
        panel.set_ylabel(ylabel)
        panel.set_title(f"{' / '.join(sizes)} per operand: "
                        f"{'bandwidth (higher is better)' if key == 'gbps' else 'time per call'}")
        panel.grid(alpha=0.3, axis="y")
    _legend(fig, [ax[0][0], ax[0][1]])
    _footer(fig, env, "python -m hetnn bench arrays; median of interleaved repeats")
    return fig


def plot_conv(rows: Rows, env: Dict[str, Any]) -> Optional[Any]:
    layers = [r for r in rows if r.get("part") == "layers"]
    keras = [r for r in rows if r.get("part") == "keras-cnn"]
    studies = [r for r in rows if r.get("part") == "studies"]
    if not (layers or keras or studies):
        return None
    # The 20 layers x up to 8 series take the whole top row; the networks share the bottom one.
    fig, ax = _figure(size=(16, 9), mosaic=[["layers", "layers"], ["keras", "studies"]])
    styles = _styles([_series(r) for r in layers + keras + studies])
    if layers:
        batch = max(r["batch"] for r in layers)
        sel = [r for r in layers if r["batch"] == batch]
        s: Dict[str, Dict[str, float]] = {}
        for r in sel:
            if _ok(r, "gflops"):
                s.setdefault(_series(r), {})[r["layer"]] = r["gflops"]
        _bars(ax["layers"], list(dict.fromkeys(r["layer"] for r in sel)), s, "GFLOP/s (median)", styles=styles,
              bad=_bad_cells(sel, lambda r: r["layer"]))
        ax["layers"].set_title(f"ResNet-50 conv layers, batch {batch}")
    for name in dict.fromkeys(_series(r) for r in keras):
        pts = sorted((r["batch"], r["samples_per_s"]) for r in keras if _series(r) == name)
        color, _, marker = styles[name]
        ax["keras"].plot(*zip(*pts), marker=marker, color=color, ms=4, label=name)
        bad = sorted((r["batch"], r["samples_per_s"]) for r in keras if _series(r) == name and _bad(r))
        _mark(ax["keras"], [b[0] for b in bad], [b[1] for b in bad])
    ax["keras"].set_xscale("log", base=2)
    ax["keras"].set_xlabel("batch size")
    ax["keras"].set_ylabel("training samples/s (one epoch)")
    ax["keras"].set_title("Keras-style CNN, 50x50 maps")
    ax["keras"].grid(alpha=0.3, which="both")
    if studies:
        st: Dict[str, Dict[str, float]] = {}
        iqr: Dict[str, Dict[str, Tuple[float, float]]] = {}
        for r in studies:
            st.setdefault(_series(r), {})[r["model"]] = r["epoch_s"]
            iv = _interval(r, "epoch_s")
            if iv:
                iqr.setdefault(_series(r), {})[r["model"]] = iv
        _bars(ax["studies"], list(dict.fromkeys(r["model"] for r in studies)), st, "s/epoch (median)", log=True,
              spread=iqr, styles=styles, bad=_bad_cells(studies, lambda r: r["model"]))
        ax["studies"].set_title("Fashion-MNIST CNN training")
    _legend(fig, list(ax.values()))
    _footer(fig, env, "python -m hetnn bench conv; bars: medians, error bars: IQR of the epochs")
    return fig


def plot_compare(rows: Rows, env: Dict[str, Any]) -> Optional[Any]:
    if not rows:
        return None
    fig, ax = _figure(1, 1, (7, 4))
    names = [_series(r) for r in rows]
    bars = ax[0][0].bar(names, [r["median_ms"] for r in rows], color="tab:blue")
    for r, bar in zip(rows, bars):
        if _bad(r):
            bar.set_hatch("xxxx")
            bar.set_edgecolor("red")
            bar.set_label(UNRELIABLE)
    if any(_bad(r) for r in rows):
        ax[0][0].legend(fontsize=7)
    ax[0][0].set_ylabel("median ms")
    ax[0][0].set_title(f"{rows[0].get('op')} {rows[0].get('shape')} {rows[0].get('dtype')}")
    ax[0][0].tick_params(axis="x", rotation=30, labelsize=8)
    _footer(fig, env, "hetnn.bench.compare")
    return fig


def plot_scaling(rows: Rows, env: Dict[str, Any]) -> Optional[Any]:
    """Strong scaling's speedup against ranks (ideal and Amdahl's fit drawn), and the efficiency of strong and weak
    scaling; error bars: the speedups' 95 % intervals."""
    import numpy as np

    from .scaling import amdahl

    sel = [r for r in rows if _ok(r, "speedup")]
    if not sel:
        return None
    fig, ax = _figure(1, 2, (10, 4.2))
    ks = sorted({r["ranks"] for r in sel})
    ax[0][0].plot(ks, ks, ls=":", color="gray", label="ideal")
    styles = _styles([r["workload"] for r in sel])
    for w in dict.fromkeys(r["workload"] for r in sel):
        color, _, marker = styles[w]
        for j, mode in enumerate(("strong", "weak")):
            pts = sorted((r for r in sel if r["workload"] == w and r["mode"] == mode), key=lambda r: r["ranks"])
            if not pts:
                continue
            # the interval's bounds as measured (the printed "1.70" may round below a speedup of 1.701)
            lo_hi = [(min(r.get("speedup_low", r["speedup"]), r["speedup"]),
                      max(r.get("speedup_high", r["speedup"]), r["speedup"])) for r in pts]
            if mode == "strong":
                ax[0][0].errorbar([r["ranks"] for r in pts], [r["speedup"] for r in pts],
                                  yerr=[[r["speedup"] - a for r, (a, _) in zip(pts, lo_hi)],
                                        [b - r["speedup"] for r, (_, b) in zip(pts, lo_hi)]],
                                  color=color, marker=marker, capsize=3, label=f"{w} (strong)")
                f = amdahl(pts)
                if f is not None and len(ks) > 1:
                    xs = np.linspace(1, max(ks), 50)
                    ax[0][0].plot(xs, 1 / (f + (1 - f) / xs), ls="--", color=color, lw=0.8,
                                  label=f"{w}: Amdahl f={f:.3f}")
            _mark(ax[0][0] if mode == "strong" else ax[0][1], [r["ranks"] for r in pts if _bad(r)],
                  [r["speedup" if mode == "strong" else "efficiency"] for r in pts if _bad(r)])
            ax[0][1].errorbar([r["ranks"] for r in pts], [r["efficiency"] for r in pts],
                              yerr=[[(r["speedup"] - a) / r["ranks"] for r, (a, _) in zip(pts, lo_hi)],
                                    [(b - r["speedup"]) / r["ranks"] for r, (_, b) in zip(pts, lo_hi)]],
                              color=color, marker=marker, ls=("-", "--")[j], capsize=3, label=f"{w} ({mode})")
    ax[0][0].set_xlabel("MPI ranks")
    ax[0][0].set_ylabel("speedup over 1 rank (samples/s)")
    ax[0][0].set_title("strong scaling (fixed global batch)")
    ax[0][1].set_xlabel("MPI ranks")
    ax[0][1].set_ylabel("efficiency")
    ax[0][1].set_ylim(0, 1.15)
    ax[0][1].axhline(1.0, ls=":", color="gray")
    ax[0][1].set_title("efficiency: strong (solid), weak (dashed)")
    for a in ax[0]:
        a.set_xticks(ks)
        a.grid(alpha=0.3)
    _legend(fig, ax[0])
    threads = sorted({int(r.get("threads") or 0) for r in sel})
    _footer(fig, env, f"python -m hetnn bench scaling; {threads[0] if len(threads) == 1 else threads} thread(s) per "
                      f"rank; medians over interleaved rounds")
    return fig


_PLOTS = {"peak": plot_peak, "matmul": plot_matmul, "maxpool": plot_maxpool, "mlp": plot_mlp,
          "conv": plot_conv, "transfer": plot_transfer, "arrays": plot_arrays, "compare": plot_compare,
          "scaling": plot_scaling}


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
