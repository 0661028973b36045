"""LeNet (or the AlexNet variant on 32x32) on Fashion-MNIST in float32 and in mixed precision (bfloat16, float16:
float32 master weights, the layers on 16-bit copies, float16 with loss scaling) on one device: the models start from
the same weights and see the same batches; their epochs run in interleaved rounds (one epoch of each dtype per round,
the order alternating, hetnn.interleave), each timed from its start until its loss is on the host. Prints the test
accuracy after every round, and per dtype the median epoch time with the OS's flags and its speed against float32
with the 95 % bootstrap interval over the rounds.

    python scripts/mixed_precision_lenet.py --device cpu --epochs 3 [--dtypes float32,bfloat16,float16]
        [--model lenet|alexnet32]
"""
import argparse
import contextlib

import numpy as np

import hetnn
from hetnn import Case, datasets, interleave, nn, optim
from hetnn.bench import ratio
from hetnn import _cpus
from hetnn.bench.cnn import MODELS, build
from hetnn.bench.suites import Options, cpu_plan

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="cpu")
ap.add_argument("--epochs", type=int, default=3)
ap.add_argument("--dtypes", default="float32,bfloat16,float16")
ap.add_argument("--train", type=int, default=60000, help="training samples (the first N)")
ap.add_argument("--model", default="lenet", choices=["lenet", "alexnet32"])
args = ap.parse_args()

dev = hetnn.device(args.device)
dtypes = args.dtypes.split(",")
(xtr, ytr), (xte, yte) = datasets.fashion_mnist(images=True)
xtr, ytr = xtr[:args.train], ytr[:args.train].astype(np.int64)
spec, sample = MODELS[args.model]
if sample[1] == 32:  # the AlexNet variant: the 28x28 images padded to 32x32 with zeros
    xtr, xte = (np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2))) for x in (xtr, xte))
batch = 256 if args.model == "alexnet32" else 64
yte = yte.astype(np.int64)
print(f"device: {dev.id} ({dev.name}); float16 {dev.float16_mode}; bfloat16 {dev.bfloat16_mode}")
print(f"{args.model}, Adam lr 1e-3, batch {batch}, {len(xtr)} training and {len(xte)} test images, "
      f"{args.epochs} epoch(s)")
models, opts = {}, {}
data = {dt: (xtr.astype(dt), xte.astype(dt)) for dt in dtypes}  # converted once, outside the timings
for dt in dtypes:
    base = build(spec, dev, seed=7)  # float32, PyTorch's initialisation: the same start for every dtype
    models[dt] = nn.Sequential(base.layers, device=dev, dtype=dt)
    opts[dt] = optim.Adam(models[dt].parameters(), lr=1e-3)
epoch = {dt: 0 for dt in dtypes}
log = {dt: [] for dt in dtypes}


def one_epoch(dt):
    def run():
        m = models[dt]
        hist = m.fit(data[dt][0], ytr, loss="cross_entropy", optimizer=opts[dt], epochs=1, batch_size=batch,
                     seed=100 + epoch[dt])  # the same shuffled order for every dtype in an epoch
        epoch[dt] += 1
        extra = f", loss scale {hist.params['loss_scale']:g}, {hist.params['skipped_steps']} skipped" \
            if dt == "float16" else ""
        log[dt].append(f"loss {hist.history['loss'][-1]:.4f}{extra}")
    return run


def accuracy(dt):
    return float(np.mean(np.argmax(models[dt].predict(data[dt][1]).astype(np.float64), axis=1) == yte))


def report_round(r, n):  # before round r: the test accuracy each model reached, outside the timed epochs
    if r > 0:
        print(f"after round {r}: " + " | ".join(f"{dt} test acc {accuracy(dt):.4f}, {log[dt][-1]}" for dt in dtypes),
              flush=True)


# One warm-up epoch each (its kernel builds are first-use cost, kept apart), then args.epochs rounds of one epoch
# each, the order alternating; every epoch is kept (rerun=False: a preempted epoch is flagged, not trained again).
# The CPUs found free now, and that many threads, pinned to them (as the bench and the studies run).
plan = cpu_plan(Options(device=args.device), None)
if plan is not None:
    print(plan.header())
cases = [Case(dt, one_epoch(dt), devices=[dev]) for dt in dtypes]
with _cpus.use(plan) if plan is not None else contextlib.nullcontext():
    res = {r.name: r for r in interleave(cases, n_warmup=1, n_repeat=args.epochs, rerun=False,
                                         on_round=report_round)}
report_round(args.epochs, args.epochs)
for dt in dtypes:
    r = res[dt]
    print(f"{dt}: median epoch {np.median(r.wall_times):.2f} s (of {len(r.wall_times)}; first use "
          f"{r.first_use_text}); flags: {r.noise.get('noise') or 'none'}")
    if dt != "float32" and "float32" in res:
        print("   ", ratio(f"{dt} / float32 (speed)", res[dt], res["float32"]))
