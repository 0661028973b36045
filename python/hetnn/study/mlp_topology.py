"""The MLP topology study: 30 pyramids on the solar-sensor regression (50 inputs, 1 output, MSE, Adam), hidden
layers of widths 50*2^k, 25*2^k and 13*2^k (k = 0..9; one, two or three of them), trained per device and batch
size; inference latency at 2, 64, 512 and 1024 samples; the test error against the batch size."""
from __future__ import annotations

import gc
from typing import Any, Dict, List, Tuple

import numpy as np

from .. import datasets, optim
from .._check import is_int
from .._oscounters import Watch
from .._timing import Case, empty_cache, interleave
from .._table import format_table
from ..bench.keras_peer import KerasTrainer
from ..bench.matmul import settle
from ..bench.mlp import _mlp, _peaks, _with_peak, train_flops
from ..bench.stats import ratio
from ._base import Context, Rows, Study, keras_peer, positive

BASE_WIDTHS = (50, 25, 13)  # k-th pyramid: 50*2^k, 25*2^k, 13*2^k
TRAIN_COLUMNS = [("widths", "hidden", ""), ("params", "params", ","), ("library", "library", ""),
                 ("device", "device", ""),
                 ("batch", "batch", "d"), ("train_s", "train s/epoch", ".3f"),
                 ("train_samples_per_s", "samples/s", ",.0f"), ("gflops", "GFLOP/s", ".1f"),
                 ("pct_peak", "% peak", ".0f"), ("test_mse", "test MSE", ".5f"), ("test_r2", "test R2", ".3f")]
INFER_COLUMNS = [("widths", "hidden", ""), ("device", "device", ""), ("samples", "samples", "d"),
                 ("latency_ms", "latency ms (median)", ".3f"), ("samples_per_s", "samples/s", ",.0f")]


MAX_K = 40  # 50*2^40 units: far beyond any machine; larger k_max would only build huge integers


def pyramids(k_max: int = 9, depths: List[int] = [1, 2, 3], k_min: int = 0) -> List[List[int]]:  # noqa: B006
    """The hidden widths of every model: for k = k_min..k_max and each depth, the first `depth` of 50*2^k, 25*2^k,
    13*2^k (30 models for k 0..9 and depths 1, 2, 3)."""
    return [[w << k for w in BASE_WIDTHS[:d]] for k in range(k_min, k_max + 1) for d in depths]


def param_count(hidden: List[int], inputs: int = 50, outputs: int = 1) -> int:
    sizes = [inputs, *hidden, outputs]
    return sum(a * b + b for a, b in zip(sizes, sizes[1:]))


def run(ctx: Context) -> Rows:
    cfg = ctx.cfg
    positive("mlp-topology", cfg, "batches", "depths", "infer_sizes", "samples", "epochs", "lr", "compare_rounds")
    if cfg["compare_epochs"] < 0:
        raise ValueError(f"study mlp-topology: compare_epochs must be >= 0 (0: no comparison), got "
                         f"{cfg['compare_epochs']!r}")
    if not 0 <= cfg["k_min"] <= cfg["k_max"] or any(d > 3 for d in cfg["depths"]):
        raise ValueError(f"study mlp-topology: 0 <= k_min <= k_max and depths 1..3, got k_min {cfg['k_min']!r}, "
                         f"k_max {cfg['k_max']!r}, depths {cfg['depths']!r}")
    (x, y), (xe, ye) = datasets.solar_irradiance(n_samples=cfg["samples"], seed=cfg["seed"], test_fraction=0.2)
    whole = len(x) // max(cfg["batches"]) * max(cfg["batches"]) or len(x)  # whole batches: one shape per step
    x, y = x[:whole], y[:whole]
    var = float(np.var(ye))
    peaks = _peaks(ctx.devices)
    models = pyramids(cfg["k_max"], cfg["depths"], cfg["k_min"])
    keras = keras_peer("mlp-topology", ctx)
    rows: Rows = []
    for hidden in models:
        label = "-".join(map(str, hidden))
        params = param_count(hidden)
        init = [p.numpy() for p in _mlp(50, hidden, 1, ctx.devices[0], cfg["seed"]).parameters()] if keras else []
        for dev in ctx.devices:
            for bs in cfg["batches"]:
                ctx.step(f"{label} on {dev.id}, batch {bs}")
                _release(ctx.devices)  # the model before this one and its cached blocks: the sweep's sizes all differ
                settle(0.1)
                warm = _mlp(50, hidden, 1, dev, cfg["seed"])  # kernels built and memory touched, untimed
                warm.fit(x[:2 * bs], y[:2 * bs], loss="mse", optimizer=optim.Adam(warm.parameters()), epochs=1,
                         batch_size=bs)
                del warm
                model = _mlp(50, hidden, 1, dev, cfg["seed"])
                opt = optim.Adam(model.parameters(), lr=cfg["lr"])
                watch = Watch()
                hist = model.fit(x, y, loss="mse", optimizer=opt, epochs=cfg["epochs"], batch_size=bs,
                                 seed=cfg["seed"], callbacks=[watch.epochs()])
                watch.close()
                times = [float(t) for t in hist.history["epoch_time"]]
                train = float(np.median(times))
                mse = float(model.evaluate(xe, ye, loss="mse", metrics=())["loss"])
                rows.append(ctx.keep(_with_peak(
                    {"part": "training", "widths": label, "layers": len(hidden), "params": params, "library": "hetnn",
                     "device": dev.id, "batch": bs, "samples": len(x), "epochs": cfg["epochs"], "train_s": train,
                     "times_s": times, "train_samples_per_s": len(x) / train if train > 0 else float("nan"),
                     "test_mse": mse, "test_r2": 1 - mse / var if var > 0 else float("nan"), **watch.flags()},
                    train_flops([50, *hidden, 1], len(x)), train, peaks[dev.id])))
                if bs == cfg["batches"][-1]:
                    rows += ctx.keep_all(_latency(model, xe, cfg["infer_sizes"], label, params, dev.id,
                                                   cfg["infer_repeat"]))
                del model, opt
        if keras is not None:  # from the same initial weights, with hetnn's models gone (the largest needs 13 GB)
            for bs in cfg["batches"]:
                ctx.step(f"{label} in keras, batch {bs}")
                _release(ctx.devices)
                rows.append(ctx.keep(_keras_row(keras, hidden, init, x, y, xe, ye, bs, cfg, var, peaks[None], label,
                                                params)))
    _release(ctx.devices)
    train_rows = [r for r in rows if r["part"] == "training"]
    published = {p["widths"]: p["params"] for p in STUDY.published}
    for hidden in models:
        label = "-".join(map(str, hidden))
        if label in published:
            ok = "the published count" if param_count(hidden) == published[label] else "NOT the published count"
            ctx.say(f"  {label}: {param_count(hidden):,} parameters ({ok}, {published[label]:,})")
    ctx.say(f"\ntraining: {len(models)} models, 50 inputs (synthetic solar sensors), ReLU hidden layers, 1 output, "
            f"MSE, Adam lr {cfg['lr']}, {len(x):,} samples; s/epoch: median of {cfg['epochs']} epoch(s) after a "
            f"warm-up on a throw-away copy; test MSE and R2 on the {len(xe):,} later samples after training:")
    ctx.say(format_table(train_rows, TRAIN_COLUMNS))
    ctx.say(f"\ninference latency (predict on the first n test samples, NumPy in and out, median of "
            f"{cfg['infer_repeat']}; models trained at batch {cfg['batches'][-1]}):")
    ctx.say(format_table([r for r in rows if r["part"] == "inference"], INFER_COLUMNS))
    if cfg["compare_epochs"] and len(ctx.devices) > 1:
        rows += _two_epochs(ctx, models, x, y)
    return rows


def _two_epochs(ctx: Context, models: List[List[int]], x: np.ndarray, y: np.ndarray) -> Rows:
    """Table 4.3: ``compare_epochs`` epochs at the comparison batch on every device, from the same initial weights,
    interleaved over ``compare_rounds`` rounds; the first device's time over each other's."""
    from .._loader import _core

    cfg = ctx.cfg
    bs, n_ep, first = cfg["batches"][-1], cfg["compare_epochs"], ctx.devices[0]
    rows: Rows = []
    lines: List[str] = []
    for hidden in models:
        label = "-".join(map(str, hidden))
        # weights, gradients and Adam's two moments on every device at once, and room to spare
        need = 4 * param_count(hidden) * 4 * len(ctx.devices)
        if need > (_core.available_memory() or 2**62) / 2:
            lines.append(f"  {label}: not compared ({need / 2**30:.1f} GiB on {len(ctx.devices)} devices at once is "
                         f"more than half the memory available)")
            continue
        ctx.step(f"table 4.3: {label}, {n_ep} epochs at batch {bs} on every device")
        _release(ctx.devices)
        cases = []
        for dev in ctx.devices:
            model = _mlp(50, hidden, 1, dev, cfg["seed"])
            opt = optim.Adam(model.parameters(), lr=cfg["lr"])

            def fit(model: Any = model, opt: Any = opt) -> None:
                model.fit(x, y, loss="mse", optimizer=opt, epochs=n_ep, batch_size=bs, seed=cfg["seed"])
            cases.append(Case(dev.id, fit, devices=[dev]))
        results = interleave(cases, n_warmup=1, n_repeat=cfg["compare_rounds"], rerun=False)
        mine = []
        for dev, r in zip(ctx.devices, results):
            times = [float(t) for t in r.wall_times]
            mine.append({"part": "two epochs", "widths": label, "params": param_count(hidden), "library": "hetnn",
                         "device": dev.id, "batch": bs, "epochs": n_ep, "samples": len(x),
                         "train_s": float(np.median(times)), "times_s": times, **r.flags})
        rows += ctx.keep_all(mine)
        for other in mine[1:]:  # an unreliable side is not compared, as everywhere
            lines.append(ratio(f"  {label}: {first.id} time / {other['device']} time", other, mine[0]))
    ctx.say(f"\ntable 4.3: {n_ep} epochs at batch {bs}, each device from the same initial weights, "
            f"{cfg['compare_rounds']} interleaved rounds (a ratio above 1: {first.id} took longer; the interval "
            f"spans the rounds):")
    for line in lines:
        ctx.say(line)
    return rows


def _release(devices: List[Any]) -> None:
    """Frees what earlier models left: their reference cycles (Keras models have them) and the blocks each device
    keeps for reuse (up to 1/8 of its memory, of sizes the next model does not use). Without it the full form ran
    out of memory on a 24 GiB machine at the 329-million-parameter model."""
    gc.collect()
    empty_cache(devices)


def _keras_row(keras: Any, hidden: List[int], weights: List[np.ndarray], x: np.ndarray, y: np.ndarray,
               xe: np.ndarray, ye: np.ndarray, bs: int, cfg: Dict[str, Any], var: float, peak: Any, label: str,
               params: int) -> Dict[str, Any]:
    """The same model, weights, optimizer and data in Keras 3: the median of its epochs after a warm-up."""
    sizes = [50, *hidden]
    spec = [("dense", a, b, "relu") for a, b in zip(sizes, sizes[1:])] + [("dense", sizes[-1], 1, None)]
    kt = KerasTrainer(keras, spec, (50,), weights, "mse", cfg["lr"], bs, cfg["seed"])
    kt.warm_up(x, y)
    watch = Watch()
    for _ in range(cfg["epochs"]):
        with watch.block():
            kt.epoch(x, y)
    watch.close()
    times = list(watch.walls)
    train = float(np.median(times))
    mse = float(np.mean((kt.predict(xe) - ye) ** 2))
    return _with_peak({"part": "training", "widths": label, "layers": len(hidden), "params": params,
                       "library": f"keras {kt.version}", "device": "cpu", "batch": bs, "samples": len(x),
                       "epochs": cfg["epochs"], "train_s": train, "times_s": times,
                       "train_samples_per_s": len(x) / train if train > 0 else float("nan"), "test_mse": mse,
                       "test_r2": 1 - mse / var if var > 0 else float("nan"), **watch.flags()},
                      train_flops([50, *hidden, 1], len(x)), train, peak)


def _latency(model: Any, x: np.ndarray, sizes: List[int], label: str, params: int, device: str,
             repeat: int) -> Rows:
    out = []
    for n in sizes:
        xs = np.ascontiguousarray(x[:n])
        model.predict(xs, batch_size=max(1, len(xs)))  # first use of this shape
        watch = Watch()
        for _ in range(repeat):
            with watch.block():
                model.predict(xs, batch_size=max(1, len(xs)))
        watch.close()
        ts = list(watch.walls)
        med = float(np.median(ts))
        out.append({"part": "inference", "widths": label, "params": params, "library": "hetnn", "device": device,
                    "samples": len(xs), "latency_ms": med * 1e3, "times_ms": [t * 1e3 for t in ts],
                    "samples_per_s": len(xs) / med if med > 0 else float("nan"), **watch.flags()})
    return out


def plot(rows: Rows, env: Dict[str, Any]) -> Any:
    from ..bench.plots import _bad, _figure, _footer, _legend, _mark, _styles

    train = [r for r in rows if r.get("part") == "training"]
    infer = [r for r in rows if r.get("part") == "inference"]
    if not train:
        return None
    fig, ax = _figure(1, 3, (16, 4.5))
    # colour: library and device; line style: batch size; the models of every depth along one line by size
    who = [f"{r['library'].split(' (')[0]} {r['device']}" for r in train]
    styles = _styles(who)
    batches = sorted({r["batch"] for r in train})
    for name, bs in [(n, b) for n in dict.fromkeys(who) for b in batches]:
        pts = sorted((r["params"], r["train_s"]) for r, n in zip(train, who) if n == name and r["batch"] == bs)
        if pts:
            color, _, marker = styles[name]
            ax[0][0].plot([p[0] for p in pts], [p[1] for p in pts], marker=marker, ms=3, color=color, lw=1,
                          ls=("-", "--", ":", "-.")[batches.index(bs) % 4], label=f"{name} batch {bs}")
            bad = [(r["params"], r["train_s"]) for r, n in zip(train, who)
                   if n == name and r["batch"] == bs and _bad(r)]
            _mark(ax[0][0], [p[0] for p in bad], [p[1] for p in bad])
    ax[0][0].set(xscale="log", yscale="log", xlabel="parameters", ylabel="s per epoch")
    ax[0][0].set_title("training time by model size", fontsize=9)
    for lib, dev in dict.fromkeys((r["library"], r["device"]) for r in train):
        by_batch: Dict[int, List[float]] = {}
        for r in train:
            if (r["library"], r["device"]) == (lib, dev):
                by_batch.setdefault(r["batch"], []).append(r["test_mse"])
        bs = sorted(by_batch)
        ax[0][1].plot(bs, [float(np.median(by_batch[b])) for b in bs], marker="o",
                      label=f"{lib.split(' (')[0]} {dev} (median of models)")
    ax[0][1].set(xscale="log", xlabel="batch size", ylabel="test MSE")
    ax[0][1].set_title("test error against batch size", fontsize=9)
    for key in dict.fromkeys((r["device"], r["samples"]) for r in infer):
        lat = sorted((r["params"], r["latency_ms"]) for r in infer if (r["device"], r["samples"]) == key)
        ax[0][2].plot([p[0] for p in lat], [p[1] for p in lat], marker=".", label=f"{key[0]}, {key[1]} samples")
        bad = [(r["params"], r["latency_ms"]) for r in infer if (r["device"], r["samples"]) == key and _bad(r)]
        _mark(ax[0][2], [p[0] for p in bad], [p[1] for p in bad])
    ax[0][2].set(xscale="log", yscale="log", xlabel="parameters", ylabel="inference latency ms")
    ax[0][2].set_title("inference latency", fontsize=9)
    _legend(fig, [ax[0][0], ax[0][1], ax[0][2]])
    _footer(fig, env, "python -m hetnn study mlp-topology")
    return fig


def memory(cfg: Dict[str, Any]) -> List[Tuple[str, float]]:
    """The series (50 float32 features a sample) and the widest model's weights and gradients."""
    if not is_int(cfg["k_max"]) or cfg["k_max"] > MAX_K:
        raise ValueError(f"study mlp-topology: k_max must be at most {MAX_K} (the widest layer is 50*2^k_max), "
                         f"got {cfg['k_max']!r}")
    widest = param_count([w << max(int(cfg["k_max"]), 0) for w in BASE_WIDTHS])
    return [(f"samples {cfg['samples']}", abs(cfg["samples"]) * 51 * 4), (f"k_max {cfg['k_max']}", widest * 8)]

STUDY = Study(
    name="mlp-topology",
    title="30 MLP pyramids (widths 50*2^k, 25*2^k, 13*2^k) trained with Adam, inference at 2-1024 samples",
    setup="Published: MLPs on 50 solar sensors predicting one, hidden layers 50*2^k, 25*2^k and 13*2^k wide (k = "
          "0..9; one, two or three layers: 30 models, 444,817 / 1,696,033 / 6,617,665 parameters among them), Adam, "
          "MSE, one epoch timed per device at batch sizes 1000, 500 and 100; inference timed at 2, 64, 512 and 1024 "
          "samples; accuracy against "
          "batch size. hetnn: the same models on hetnn.datasets.solar_irradiance (a seeded synthetic stand-in for "
          "the sensor series), ReLU hidden layers, Adam lr 1e-3; 'accuracy' of this regression is the test MSE and "
          "R2 on the later 20 % of the series; batch sizes 100, 500 and 1000 as published (devices and inference "
          "compared on the models trained at 1000; table 4.3's two epochs at batch 1000 per device, interleaved); "
          "the sample count is hetnn's choice; Keras 3 "
          "trains the same models from the same weights when installed (timed after hetnn, not interleaved).",
    defaults={"k_min": 0, "k_max": 9, "depths": [1, 2, 3], "batches": [100, 500, 1000], "samples": 5000, "epochs": 1,
              "lr": 1e-3, "infer_sizes": [2, 64, 512, 1024], "infer_repeat": 5, "peers": ["keras"],
              "compare_epochs": 2, "compare_rounds": 2},
    doc={"k_min": "smallest k of the widths 50*2^k, 25*2^k, 13*2^k", "k_max": "largest k",
         "depths": "hidden layers (1..3)",
         "batches": "training batch sizes (the last: the models inference and the devices are compared on)",
         "samples": "samples in the series (80 % train, 20 % test)",
         "epochs": "timed epochs per model, device and batch", "lr": "Adam learning rate",
         "infer_sizes": "samples per inference call", "infer_repeat": "inference calls timed per size",
         "peers": "keras (Keras 3 on any installed backend, when installed), or none",
         "compare_epochs": "epochs of table 4.3's device comparison at the last batch size (0: no comparison)",
         "compare_rounds": "interleaved rounds of table 4.3's comparison"},
    quick={"k_max": 1, "batches": [64, 256], "samples": 1500, "infer_sizes": [2, 64], "infer_repeat": 3},
    # table 4.3 at its published two epochs even in the short form: its models are the quick ones
    run=run,
    paper={"k_min": 0, "k_max": 9, "depths": [1, 2, 3], "batches": [100, 500, 1000], "epochs": 1,
           "compare_epochs": 2, "infer_sizes": [2, 64, 512, 1024]},
    paper_source="the MLP topology study: widths 50*2^k, 25*2^k, 13*2^k (k = 0..9) in 1-3 layers, batch sizes 1000, "
                 "500 and 100, one epoch per device (two in its table 4.3, at batch 1000), inference at 2, 64, 512 "
                 "and 1024 samples",
    differs={"data": "the 50 solar sensors' series is not available: hetnn.datasets.solar_irradiance, a seeded "
                     "synthetic stand-in of the same shape ('accuracy' is this regression's test MSE and R2)",
             "samples": "not stated by the paper: hetnn's choice",
             "devices": "the paper's CPU and GPU; this machine kind: the CPU device and PoCL on the same 2 vCPUs"},
    memory=memory,
    published=[{"widths": "800-400-208", "params": 444_817}, {"widths": "1600-800-416", "params": 1_696_033},
               {"widths": "3200-1600-832", "params": 6_617_665}],
    published_columns=[("widths", "hidden", ""), ("params", "params", ",")],
    published_source="the MLP topology study's parameter counts (the models with k = 4, 5, 6 and three layers)",
    plot=plot,
    full_run="42 min 16 s on 2 vCPUs of an AMD EPYC (Zen 4), both devices, without Keras (which trains every model "
             "again after them); 10.6 GB of memory at its peak (docs/studies.md)",
)
