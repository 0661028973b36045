"""No plot shows an unflagged number: every suite's and every study's plot, given one unreliable row, draws it
marked (red crosses, or bars hatched with a red edge) and says so in its legend."""
import pytest

pytest.importorskip("matplotlib")

from hetnn import study  # noqa: E402
from hetnn.bench.plots import UNRELIABLE, make_figures  # noqa: E402

ENV = {"hetnn": "test", "date": "today", "devices": [{"id": "cpu", "name": "CPU"}]}
BAD = {"unreliable": True, "noise": "unreliable: preempted in 9 of 10 repeats"}
T = [0.9, 1.0, 1.0, 1.1, 1.2]


def _suite_rows(suite):
    """Two rows of what ``suite`` plots; the second unreliable."""
    if suite == "peak":
        return [{"device": "cpu", "fp32_gflops": 200.0, "mem_gbps": 30.0},
                {"device": "opencl:0:0", "fp32_gflops": 150.0, "mem_gbps": 20.0, "under_load": True}]
    if suite == "matmul":
        return [{"library": lib, "device": dev, "dtype": "float32", "shape": "64^3", "gflops": 100.0,
                 "pct_peak": 50.0, "peak_gflops": 200.0, "times_ms": T} for lib, dev in (("hetnn", "cpu"),
                                                                                         ("numpy", "host"))]
    if suite == "maxpool":
        return [{"part": part, "case": "c", "windows": 64, "library": "hetnn", "device": "cpu", "fwd_ms": 1.0,
                 "fwd_gbps": 10.0, "total_ms": 2.0, "times_ms": T} for part in ("layers", "sweep")]
    if suite == "mlp":
        return [{"part": "topology", "batch": 100, "device": "cpu", "layers": 1, "params": p, "train_s": 0.1,
                 "times_s": T} for p in (100, 1000)] + \
               [{"part": "fashion-mnist", "library": "hetnn", "device": "cpu", "widths": "128", "epoch_s": 0.3,
                 "times_s": T}]
    if suite == "transfer":
        return [{"device": "cpu", "direction": "h2d", "bytes": n, "wall_ms": 0.1, "wall_gbps": 1.0, "gbps": 2.0,
                 "timing": "device"} for n in (1024, 4096)]
    if suite == "conv":
        return [{"part": "layers", "batch": 1, "layer": "conv1", "library": "hetnn", "device": "cpu",
                 "gflops": 50.0},
                {"part": "keras-cnn", "batch": 32, "library": "hetnn", "device": "cpu", "samples_per_s": 100.0},
                {"part": "studies", "model": "lenet", "library": "hetnn", "device": "cpu", "epoch_s": 1.0,
                 "times_s": T}]
    if suite == "compare":
        return [{"op": "matmul", "shape": "s", "dtype": "float32", "library": lib, "device": "cpu",
                 "median_ms": 1.0} for lib in ("hetnn", "numpy")]
    if suite == "scaling":
        return [{"workload": "mlp", "mode": "strong", "ranks": k, "speedup": 0.9 * k, "efficiency": 0.9,
                 "threads": 1} for k in (1, 2)]
    raise AssertionError(suite)


def _marked(fig):
    """Whether the figure draws a marked artist and names the mark in a legend."""
    texts = [t.get_text() for lg in fig.legends for t in lg.texts]
    texts += [t.get_text() for a in fig.axes if a.get_legend() for t in a.get_legend().texts]
    named = any(UNRELIABLE in t or "under load" in t for t in texts)
    crosses = any(ln.get_marker() == "x" and ln.get_color() == "red" and len(ln.get_xdata())
                  for a in fig.axes for ln in a.get_lines())
    hatched = any("x" in (p.get_hatch() or "") for a in fig.axes for p in a.patches)
    return named and (crosses or hatched)


@pytest.mark.parametrize("suite", ["peak", "matmul", "maxpool", "mlp", "transfer", "conv", "compare", "scaling"])
def test_every_suite_plot_marks_an_unreliable_row(suite):
    rows = [{"suite": suite, **r} for r in _suite_rows(suite)]
    clean = [{k: v for k, v in r.items() if k != "under_load"} for r in rows]
    assert not _marked(make_figures(clean, ENV)[suite]), "a clean run must not look flagged"
    flagged = rows if suite == "peak" else [{**r, **BAD} for r in rows]  # peak: a ceiling measured under load
    assert _marked(make_figures(flagged, ENV)[suite]), suite


def _study_rows(name):
    if name == "gemm-libraries":
        rows = [{"part": "shapes", "batch": 1, "dtype": "float32", "shape": s, "library": lib, "device": dev,
                 "gflops": 10.0} for s in ("a", "b") for lib, dev in (("hetnn", "cpu"), ("numpy", "host"))]
        return rows + [{"part": "shapes", "batch": 1, "dtype": "float32", "shape": "aggregate (1 of 2 shapes)",
                        "library": "hetnn", "device": "cpu", "gflops": 10.0, "mean_gflops": 10.0}]
    if name == "maxpool":
        return [{"part": "pooling", "layer": "64x16x16", "op": "max", "dtype": "int64", "library": lib,
                 "device": "cpu", "ms": 1.0, "speedup": 1.5, "speedup_low": 1.4, "speedup_high": 1.6}
                for lib in ("hetnn", "numpy")]
    if name == "maxpool-sweep":  # the published sweep alone
        return [{"part": "sweep", "size": n, "variant": "k2s2", "library": "hetnn", "device": "cpu", "ms": 0.1 * n,
                 "workers": 2} for n in (4, 8)]
    if name == "mlp-topology":
        return [{"part": "training", "library": "hetnn", "device": "cpu", "batch": 32, "params": p,
                 "train_s": 0.1, "test_mse": 0.01} for p in (100, 1000)] + \
               [{"part": "inference", "device": "cpu", "samples": 1, "params": p, "latency_ms": 0.1}
                for p in (100, 1000)]
    if name == "cnn":
        return [{"part": "keras-cnn", "library": "hetnn", "device": "cpu", "batch": b, "epoch_s": 1.0,
                 "samples_per_s": 100.0} for b in (2, 8)] + \
               [{"part": "keras-cnn inference", "library": "hetnn", "device": "cpu", "samples": 2,
                 "latency_ms": 1.0}, {"part": "alexnet32", "device": "cpu", "epoch": 1, "test_accuracy": 0.8}]
    if name == "cnn-devices":  # part (c) alone
        return [{"part": "devices", "devices": d, "strategy": st, "batch": 64, "epoch_s": 1.0}
                for d, st in (("cpu", "one device"), ("cpu + opencl:0:0", "central"),
                              ("cpu + opencl:0:0", "mirrored"))]
    if name == "nn-library":
        return [{"part": "xor", "recipe": "published", "library": "hetnn", "device": "cpu", "s_per_run": 0.1},
                {"part": "topologies", "widths": "16", "library": "hetnn", "device": "cpu", "train_s": 1.0,
                 "accuracy": 0.8, "train_s_sd": 0.1}]
    raise AssertionError(name)


@pytest.mark.parametrize("name", ["gemm-libraries", "maxpool", "maxpool-sweep", "mlp-topology", "cnn", "cnn-devices",
                                  "nn-library"])
def test_every_study_plot_marks_an_unreliable_row(name):
    plot = study.get(name.replace("-sweep", "").replace("-devices", "")).plot
    rows = _study_rows(name)
    assert not _marked(plot(rows, ENV))
    fig = plot([{**r, **BAD} for r in rows], ENV)
    assert _marked(fig), name


def test_a_plot_of_ones_own_marks_unreliable_points_as_hetnn_does():
    """``hetnn.bench.mark_unreliable`` (what the notebooks' own plots use) crosses exactly the unreliable or wrong
    points, from rows or from BenchmarkResults."""
    import numpy as np
    from matplotlib.figure import Figure

    import hetnn
    from hetnn.bench import mark_unreliable

    clean = hetnn.benchmark(lambda: None, n_warmup=0, n_repeat=3, rerun=False)
    shaky = hetnn.benchmark(lambda: None, n_warmup=0, n_repeat=3, rerun=False)
    shaky.noise = {**shaky.noise, "unreliable": True}
    xs = list(np.random.default_rng().uniform(1, 2, 4))
    rows = [{"noise": ""}, {**BAD}, {"wrong": True}, {}]
    fig = Figure()
    ax = fig.subplots()
    mark_unreliable(ax, xs, [1.0, 2.0, 3.0, 4.0], rows)
    mark_unreliable(ax, [5.0, 6.0], [5.0, 6.0], [clean, shaky])
    crosses = [ln for ln in ax.get_lines() if ln.get_marker() == "x" and ln.get_color() == "red"]
    assert [list(ln.get_xdata()) for ln in crosses] == [[xs[1], xs[2]], [6.0]]
    assert all(ln.get_label() == UNRELIABLE for ln in crosses)
    mark_unreliable(ax, [7.0], [7.0], [{}])  # nothing to mark: nothing drawn
    assert len(ax.get_lines()) == 2
