"""LeNet (or the AlexNet variant on 32x32) on Fashion-MNIST in float32 and in mixed precision (bfloat16, float16:
float32 master weights, the layers on 16-bit copies, float16 with loss scaling) on one device: the models start from
the same weights and see the same batches; their epochs run in interleaved rounds (one epoch of each dtype per round,
the order alternating), each timed from its start until its loss is on the host. Prints per dtype the median epoch
time, the per-round ratio to float32 (median and range) and the test accuracy after every round.

    python scripts/mixed_precision_lenet.py --device cpu --epochs 3 [--dtypes float32,bfloat16,float16]
        [--model lenet|alexnet32]
"""
import argparse
import time

import numpy as np

import hetnn
from hetnn import datasets, nn, optim
from hetnn.bench.cnn import MODELS, build

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
times = {dt: [] for dt in dtypes}
for r in range(args.epochs):
    order = dtypes if r % 2 == 0 else dtypes[::-1]
    line = []
    for dt in order:
        m = models[dt]
        t0 = time.perf_counter()
        hist = m.fit(data[dt][0], ytr, loss="cross_entropy", optimizer=opts[dt], epochs=1, batch_size=batch,
                     seed=100 + r)  # the same shuffled order for every dtype in a round
        times[dt].append(time.perf_counter() - t0)
        acc = float(np.mean(np.argmax(m.predict(data[dt][1]).astype(np.float64), axis=1) == yte))
        extra = f", loss scale {hist.params['loss_scale']:g}, {hist.params['skipped_steps']} skipped" \
            if dt == "float16" else ""
        line.append(f"{dt} {times[dt][-1]:.2f} s, loss {hist.history['loss'][-1]:.4f}, test acc {acc:.4f}{extra}")
    print(f"round {r + 1}: " + " | ".join(line), flush=True)
f32 = np.array(times.get("float32", [np.nan]))
for dt in dtypes:
    t = np.array(times[dt])
    ratio = f32 / t if "float32" in times else np.full_like(t, np.nan)
    print(f"{dt}: median epoch {np.median(t):.2f} s; float32 / {dt} per round: median {np.median(ratio):.2f}x "
          f"(range {ratio.min():.2f}-{ratio.max():.2f})")
