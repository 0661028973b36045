"""The CNN studies: (a) the Keras CNN on 50x50 radiation maps, one epoch per device at batch sizes 2 to 1024 and
inference latency at 2, 64, 512 and 1024 maps; (b) the AlexNet variant on 32x32 inputs trained with Adam at batch
256, test accuracy after 25 and 50 epochs. The networks are hetnn.bench.cnn's declarations (built in hetnn on
every device and, for (a), in PyTorch when installed, from the same initial weights)."""
from __future__ import annotations

import time
from typing import Any, Dict, List, Tuple

import numpy as np

from .. import datasets, optim
from .._check import is_int
from .._table import format_table
from .._oscounters import Watch
from ..bench import cnn
from ..bench.mlp import _peaks, _with_peak
from ..bench.stats import ratio, ratio_interval
from ._base import Context, Rows, Study, positive

ALEX_COLUMNS = [("device", "device", ""), ("epoch", "epoch", "d"), ("samples", "samples", ","),
                ("epoch_s", "s/epoch (median so far)", ".2f"), ("gflops", "GFLOP/s", ".1f"),
                ("pct_peak", "% peak", ".0f"), ("test_accuracy", "test acc", ".4f"),
                ("train_loss", "train loss", ".4f")]


MULTI_COLUMNS = [("devices", "devices", ""), ("strategy", "strategy", ""), ("rows_per_device", "rows per device", ""),
                 ("epoch_s", "s/epoch", ".3f"), ("samples_per_s", "samples/s", ",.0f")]

PUBLISHED_ACCURACY = {25: 0.879, 50: 0.950}  # the AlexNet variant's test accuracy by epoch, on the study's MRI set


def run_keras(ctx: Context) -> Rows:
    cfg = ctx.cfg
    (mx, my), _ = datasets.radiation_maps(n_samples=cfg["maps"], size=50, seed=cfg["seed"])
    rows: Rows = []
    for b in cfg["keras_batches"]:
        ctx.step(f"keras-cnn batch {b}")
        rows += ctx.keep_all([{"part": "keras-cnn", **r} for r in cnn.run_training(
            "keras-cnn", ctx.devices, (mx, my), batch=b, epochs=cfg["keras_epochs"], loss="mse",
            compare=cfg["peers"], seed=cfg["seed"], notes=ctx.notes)])
    ctx.step("keras-cnn inference")
    infer = ctx.keep_all([{"part": "keras-cnn inference", **r} for r in cnn.run_inference(
        "keras-cnn", ctx.devices, mx, cfg["infer_sizes"], compare=cfg["peers"], seed=cfg["seed"], notes=ctx.notes)])
    ctx.say(f"\n(a) Keras-style CNN (4,352,641 parameters) on {len(mx):,} radiation maps 50x50 "
            f"(hetnn.datasets.radiation_maps, the study's maps are not available), Adam lr 1e-3, MSE; s/epoch: median "
            f"of {cfg['keras_epochs']} interleaved epoch(s) per batch size:")
    ctx.say(format_table(rows, cnn.CNN_COLUMNS))
    for line in cnn.ratios(rows):
        ctx.say("  " + line)
    ctx.say("inference latency (predict, NumPy in and out):")
    ctx.say(format_table(infer, cnn.INFER_COLUMNS))
    return rows + infer


def run_alexnet(ctx: Context) -> Rows:
    """Epochs of the AlexNet variant on every device in turn (epoch e on each, then e + 1), from the same initial
    weights; the test accuracy at each checkpoint epoch."""
    cfg = ctx.cfg
    xt, yt, xe, ye = cnn.fashion_images(32, cfg["alexnet_samples"] or None)
    xe, ye = xe[:cfg["test_samples"] or None], ye[:cfg["test_samples"] or None]
    spec, sample = cnn.MODELS["alexnet32"]
    flops = cnn.train_flops(spec, sample, len(xt))
    peaks = _peaks(ctx.devices)
    bs, seed = cfg["alexnet_batch"], cfg["seed"]
    state: List[Tuple[Any, Any, Any, List[float]]] = []
    devices = ctx.devices if cfg["alexnet_devices"] == "all" else ctx.devices[:1]
    for dev in devices:  # first use (kernels, primitives) on a throw-away copy, untimed
        warm = cnn.build(spec, dev, seed)
        warm.fit(xt[:2 * bs], yt[:2 * bs], loss="cross_entropy", optimizer=optim.Adam(warm.parameters()), epochs=1,
                 batch_size=bs)
        model = cnn.build(spec, dev, seed)
        state.append((dev, model, optim.Adam(model.parameters(), lr=cfg["lr"]), []))
    rows: Rows = []
    last = max(cfg["alexnet_checkpoints"])
    for e in range(1, last + 1):
        for dev, model, opt, times in state:
            ctx.step(f"alexnet32 epoch {e}/{last} on {dev.id}")
            t0 = time.perf_counter()
            hist = model.fit(xt, yt, loss="cross_entropy", optimizer=opt, epochs=1, batch_size=bs, seed=seed + e)
            times.append(time.perf_counter() - t0)
            if e in cfg["alexnet_checkpoints"]:
                acc = float(np.mean(np.argmax(model.predict(xe), axis=1) == ye))
                med = float(np.median(times))
                row = {"part": "alexnet32", "model": "alexnet32", "library": "hetnn", "device": dev.id, "epoch": e,
                       "batch": bs, "samples": len(xt), "epoch_s": med, "times_s": list(times),
                       "test_accuracy": acc, "train_loss": float(hist.history["loss"][-1])}
                rows.append(ctx.keep(_with_peak(row, flops, med, peaks[dev.id])))
    ctx.say(f"\n(b) AlexNet variant on 32x32 inputs (Fashion-MNIST zero-padded from 28x28, one input channel: the "
            f"study's MRI set is not available), Adam lr {cfg['lr']}, batch {bs}, cross-entropy, dropout 0.5, "
            f"{len(xt):,} training images; test accuracy on {len(xe):,} test images at each checkpoint:")
    ctx.say(format_table(rows, ALEX_COLUMNS))
    return rows


def run_multi(ctx: Context) -> Rows:
    """(c) One epoch of (a)'s CNN at the global batch ``multi_batch`` on each device alone, then on the first 2 (and
    3) devices together under each strategy (fit(devices=..., strategy=...)), every configuration from the same
    initial weights, interleaved over ``multi_epochs`` rounds; the speed-up over the first device alone."""
    cfg = ctx.cfg
    if len(ctx.devices) < 2:
        ctx.notes.append("part (c) needs two devices; one was selected")
        return []
    (mx, my), _ = datasets.radiation_maps(n_samples=cfg["maps"], size=50, seed=cfg["seed"])
    spec, _sample = cnn.MODELS["keras-cnn"]
    bs, seed = cfg["multi_batch"], cfg["seed"]
    configs: List[Tuple[List[Any], str]] = [([d], "one device") for d in ctx.devices]
    for k in range(2, min(3, len(ctx.devices)) + 1):
        configs += [(ctx.devices[:k], s) for s in ("central", "mirrored")]
    runs: List[Tuple[Any, Any, Dict[str, Any], Watch, Dict[str, Any]]] = []
    for devs, strategy in configs:
        model = cnn.build(spec, devs[0], seed)
        kw: Dict[str, Any] = {} if len(devs) == 1 else {"devices": devs, "strategy": strategy,
                                                         "device_split": cfg["multi_split"]}
        runs.append((model, optim.Adam(model.parameters(), lr=1e-3), kw, Watch(), {}))
    # round r runs every configuration once, in turn (reversed every other round), after an untimed first epoch
    # each (kernels built, memory touched); a row's repeats are its fit's epoch times, with the OS's counters
    for r in range(cfg["multi_epochs"] + 1):
        order = list(enumerate(runs)) if r % 2 else list(enumerate(runs))[::-1]
        for i, (model, opt, kw, watch, info) in order:
            ctx.step(f"(c) round {r}/{cfg['multi_epochs']}: {' + '.join(d.id for d in configs[i][0])}")
            h = model.fit(mx, my, loss="mse", optimizer=opt, epochs=1, batch_size=bs, seed=seed + r,
                          callbacks=[watch.epochs()] if r else None, **kw)
            info.update(h.params)
    rows: Rows = []
    for (devs, strategy), (_, _, _, watch, info) in zip(configs, runs):
        watch.close()
        t = [float(v) for v in watch.walls]
        row = {"part": "devices", "model": "keras-cnn", "library": "hetnn", "device": devs[0].id,
               "devices": " + ".join(d.id for d in devs), "strategy": strategy, "batch": bs, "samples": len(mx),
               "rows_per_device": "/".join(str(v) for v in info.get("rows_per_device", [bs])),
               "epoch_s": float(np.median(t)), "times_s": t, "samples_per_s": len(mx) / float(np.median(t)),
               **watch.flags()}
        rows.append(row)
    base = rows[0]
    lines = []
    for row in rows[1:]:  # each configuration's speed over the first device alone, with its interval and flags
        lines.append(ratio(f"  {row['devices']} ({row['strategy']}) / {base['devices']} alone (speed)", row, base))
        ci = ratio_interval([(row["times_s"], base["times_s"])])
        if ci is not None:
            row.update(speedup=ci.value, speedup_low=ci.low, speedup_high=ci.high)
    ctx.keep_all(rows)
    three = "" if len(ctx.devices) >= 3 else (" (the paper's third device: this run selected two; a third appears "
                                              "with a third device)")
    ctx.say(f"\n(c) the CNN of (a) on 1, 2 and 3 devices{three}: Adam, MSE, global batch {bs} split "
            f"{cfg['multi_split']} across the devices, {len(mx):,} maps; s/epoch: median of {cfg['multi_epochs']} "
            f"interleaved epoch(s) after an untimed one (the epoch alone, without building replicas or uploading "
            f"data); below, the speed "
            f"over {base['devices']} alone with its 95 % interval over the rounds. 'central': the variables on the "
            f"first device, which alone updates them, the others copying its weights every step; 'mirrored': a copy "
            f"of the variables and of the optimizer on every device, each updating its own:")
    ctx.say(format_table(rows, MULTI_COLUMNS))
    for line in lines:
        ctx.say(line)
    return rows


def run(ctx: Context) -> Rows:
    cfg = ctx.cfg
    positive("cnn", cfg, "keras_batches", "keras_epochs", "maps", "infer_sizes", "alexnet_checkpoints",
             "alexnet_batch", "lr", "multi_batch", "multi_epochs")
    if cfg["multi_split"] not in ("even", "measured"):
        raise ValueError(f"study cnn: multi_split takes 'even' or 'measured', got {cfg['multi_split']!r}")
    unknown = [p for p in cfg["peers"] if p not in ("torch", "keras", "none")]
    if unknown:
        raise ValueError(f"study cnn: peers take torch, keras (or none), got {unknown}")
    if cfg["alexnet_devices"] not in ("first", "all"):
        raise ValueError(f"study cnn: alexnet_devices takes 'first' or 'all', got {cfg['alexnet_devices']!r}")
    for key in ("alexnet_samples", "test_samples"):
        if cfg[key] < 0:
            raise ValueError(f"study cnn: {key} must be >= 0 (0: all of them), got {cfg[key]}")
    rows = run_keras(ctx) if cfg["keras"] else []
    if cfg["alexnet"]:
        try:
            rows += run_alexnet(ctx)
        except FileNotFoundError as exc:
            ctx.notes.append(str(exc))
    if cfg["multi"]:
        rows += run_multi(ctx)
    return rows


def plot(rows: Rows, env: Dict[str, Any]) -> Any:
    from ..bench.plots import _bad, _bad_cells, _bars, _figure, _footer, _legend, _mark

    keras = [r for r in rows if r.get("part") == "keras-cnn" and r.get("samples_per_s")]
    infer = [r for r in rows if r.get("part") == "keras-cnn inference"]
    alex = [r for r in rows if r.get("part") == "alexnet32"]
    multi = [r for r in rows if r.get("part") == "devices"]
    if not (keras or alex or multi):
        return None
    fig, ax = _figure(1, 4, (21, 4.5))
    for key in dict.fromkeys((r["library"], r["device"]) for r in keras):
        pts = sorted((r["batch"], r["epoch_s"]) for r in keras if (r["library"], r["device"]) == key)
        ax[0][0].plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=" ".join(key))
        bad = [(r["batch"], r["epoch_s"]) for r in keras if (r["library"], r["device"]) == key and _bad(r)]
        _mark(ax[0][0], [p[0] for p in bad], [p[1] for p in bad])
    ax[0][0].set(xscale="log", yscale="log", xlabel="batch size", ylabel="s per epoch")
    ax[0][0].set_title("Keras-style CNN: one epoch", fontsize=9)
    cats = [str(n) for n in dict.fromkeys(r["samples"] for r in infer)]
    series: Dict[str, Dict[str, float]] = {}
    for r in infer:
        series.setdefault(f"{r['library']} {r['device']}", {})[str(r["samples"])] = r["latency_ms"]
    if series:
        _bars(ax[0][1], cats, series, "latency ms", log=True, labels=".1f",
              bad=_bad_cells(infer, lambda r: str(r["samples"])))
    ax[0][1].set_title("Keras-style CNN: inference latency by samples", fontsize=9)
    for dev in dict.fromkeys(r["device"] for r in alex):
        pts = [(r["epoch"], r["test_accuracy"]) for r in alex if r["device"] == dev]
        ax[0][2].plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"hetnn {dev}")
        bad = [(r["epoch"], r["test_accuracy"]) for r in alex if r["device"] == dev and _bad(r)]
        _mark(ax[0][2], [p[0] for p in bad], [p[1] for p in bad])
    if alex:  # the published figures, for scale: another data set (MRI), other hardware
        ax[0][2].plot(list(PUBLISHED_ACCURACY), list(PUBLISHED_ACCURACY.values()), marker="s", linestyle=":",
                      color="gray", label="published (MRI set)")
        low = min([r["test_accuracy"] for r in alex] + list(PUBLISHED_ACCURACY.values()))
        ax[0][2].set_ylim(max(0.0, low - 0.1), 1.0)
    ax[0][2].set(xlabel="epoch", ylabel="test accuracy")
    ax[0][2].set_title("AlexNet variant, 32x32", fontsize=9)
    if multi:
        cats = [r["devices"].replace(" + ", "\n+ ") for r in multi]
        per: Dict[str, Dict[str, float]] = {}
        worse: Dict[str, set] = {}
        for r, c in zip(multi, cats):
            per.setdefault(r["strategy"], {})[c] = r["epoch_s"]
            if _bad(r):
                worse.setdefault(r["strategy"], set()).add(c)
        _bars(ax[0][3], list(dict.fromkeys(cats)), per, "s per epoch", labels=".2f", bad=worse)
        ax[0][3].set_title(f"(a)'s CNN on several devices, global batch {multi[0]['batch']}", fontsize=9)
    _legend(fig, [ax[0][0], ax[0][1], ax[0][2], ax[0][3]])
    _footer(fig, env, "python -m hetnn study cnn")
    return fig


def memory(cfg: Dict[str, Any]) -> List[Tuple[str, float]]:
    """The radiation maps (50x50 float32), and the input and first two convolutions' outputs of the Keras-style
    CNN for the largest batch (float32)."""
    per_sample = (50 * 50 + 48 * 48 * 32 + 46 * 46 * 64) * 4
    batch = max([abs(int(b)) for b in [*cfg["keras_batches"], *cfg["infer_sizes"]] if is_int(b)] or [0])
    multi = abs(int(cfg["multi_batch"])) if is_int(cfg["multi_batch"]) and cfg["multi"] else 0
    return [(f"maps {cfg['maps']}", abs(cfg["maps"]) * 50 * 50 * 4),
            (f"multi_batch {cfg['multi_batch']}", multi * per_sample),
            (f"keras_batches / infer_sizes up to {batch}", batch * per_sample if cfg["keras"] else 0),
            (f"alexnet_batch {cfg['alexnet_batch']}", abs(cfg["alexnet_batch"]) * 16 * 16 * 64 * 4)]

STUDY = Study(
    name="cnn",
    title="the Keras CNN on 50x50 maps (batch 2..1024, inference) and the AlexNet variant on 32x32 (25, 50 epochs)",
    setup="Published: a Keras CNN on 50x50x1 solar-radiation maps (Conv 32@3x3 relu, Conv 64@3x3 relu, max pool 2, "
          "Dropout 0.25, Dense 128 relu, Dropout 0.5, Dense 1; 4,352,641 parameters; Adam), one epoch per device at "
          "batch 2, 8, 32, 64, 128, 256, 512, 1024, inference latency at 2, 64, 512, 1024 maps; an AlexNet variant "
          "on 32x32 inputs in PyTorch, Adam lr 1e-3, cross-entropy, batch 256, test accuracy after 25 and 50 epochs "
          "(on a small MRI set). hetnn: the same networks; the maps are hetnn.datasets.radiation_maps (seeded, with "
          "a learnable target), the AlexNet variant trains on Fashion-MNIST zero-padded to 32x32 with one input "
          "channel, on the first selected device (alexnet_devices); PyTorch and Keras 3 (any backend) as peers of "
          "(a) when installed, from the same initial weights. Published too: the CNN trained on 1, 2 and 3 devices "
          "with TensorFlow's mirrored and central-storage strategies; hetnn's part (c) runs (a)'s CNN on each "
          "selected device alone and on the first 2 (and 3) together with fit(devices=, strategy='central' | "
          "'mirrored') (this machine kind: the CPU device and PoCL; with a GPU: the GPU and the CPU).",
    defaults={"keras": True, "maps": 4096, "keras_batches": [2, 8, 32, 64, 128, 256, 512, 1024], "keras_epochs": 1,
              "infer_sizes": [2, 64, 512, 1024], "alexnet": True, "alexnet_checkpoints": [25, 50],
              "alexnet_samples": 0, "test_samples": 0, "alexnet_devices": "first",
              "alexnet_batch": 256, "lr": 1e-3, "peers": ["torch", "keras"], "multi": True, "multi_batch": 1024,
              "multi_epochs": 3, "multi_split": "measured"},
    doc={"keras": "run part (a)", "maps": "radiation maps generated (80 % train)",
         "keras_batches": "batch sizes of (a)", "keras_epochs": "interleaved epochs per batch size",
         "infer_sizes": "maps per inference call", "alexnet": "run part (b)",
         "alexnet_checkpoints": "epochs after which the test accuracy is taken (the last: epochs trained)",
         "alexnet_samples": "training images of (b) (0: all 60,000)",
         "alexnet_devices": "devices of (b): 'first' of the selected ones (the CPU device under 'all'; the study "
                            "trained on one GPU), or 'all' (each device from the same weights)",
         "test_samples": "test images of (b) (0: all 10,000)", "alexnet_batch": "batch size of (b)",
         "lr": "Adam learning rate of (b)", "peers": "peers of (a): torch, keras (each when installed), or none",
         "multi": "run part (c): (a)'s CNN on 1, 2 and 3 devices, central storage and mirrored",
         "multi_batch": "global batch of (c)", "multi_epochs": "interleaved epochs per configuration of (c)",
         "multi_split": "how (c) splits each batch: 'even' or 'measured' (by each device's speed)"},
    # (under a minute with the peers installed: Keras's cold import and first compilations alone took 13-26 s, so
    # the short form compares with PyTorch only)
    quick={"maps": 96, "keras_batches": [32], "infer_sizes": [2, 64], "alexnet_checkpoints": [1], "multi_batch": 32,
           "multi_epochs": 2, "peers": ["torch"],
           "alexnet_devices": "all", "alexnet_samples": 128, "test_samples": 256},
    run=run,
    paper={"keras_batches": [2, 8, 32, 64, 128, 256, 512, 1024], "keras_epochs": 1, "infer_sizes": [2, 64, 512, 1024],
           "alexnet_checkpoints": [25, 50], "alexnet_batch": 256, "lr": 1e-3, "multi": True},
    paper_source="the CNN studies: the Keras CNN one epoch per device at batch 2..1024, inference at 2, 64, 512 and "
                 "1024 maps, on 1, 2 and 3 GPUs with TensorFlow's strategies; the AlexNet variant (PyTorch, Adam lr "
                 "1e-3, batch 256), test accuracy after 25 and 50 epochs",
    differs={"maps": "the solar-radiation maps are not available: hetnn.datasets.radiation_maps, seeded, with a "
                     "learnable target; the count is hetnn's choice",
             "alexnet data": "the MRI set is not available: Fashion-MNIST zero-padded to 32x32, one channel",
             "devices": "the paper's GPUs (a GTX 1080; 1-3 devices in part (c)); this machine kind: the CPU device "
                        "and PoCL, so part (c)'s second device takes cores from the first"},
    memory=memory,
    published=[{"model": "Keras CNN", "what": "one epoch, batch 1024, GTX 1080", "figure": "21.9 s"},
               *[{"model": "AlexNet variant", "what": f"test accuracy after {e} epochs (MRI set)",
                  "figure": f"{100 * a:.1f} %"} for e, a in PUBLISHED_ACCURACY.items()]],
    published_columns=[("model", "model", ""), ("what", "what", ""), ("figure", "figure", "")],
    published_source="the CNN studies (a GTX 1080; the MRI set and the radiation maps are not available here)",
    plot=plot,
    full_run="1 h 43 min on 2 vCPUs of an AMD EPYC (Zen 4): part (a) on both devices and in Keras about 19 min, "
             "part (b) 50 epochs on the CPU device, 99 s each; 14.3 GB of memory at its peak; part (c), measured "
             "alone: 9 min 26 s, 9.9 GB (docs/studies.md)",
)
