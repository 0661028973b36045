"""Training, inference and transfer speed of this build against an earlier one, interleaved: RUNS rounds, each running
a timing process of each build one after the other (the order alternating round by round); every process times the
same workloads (epochs of the MLP 784-128-10, LeNet and the Keras-style CNN, the XOR 2-2-1 full-batch epoch, a
predict and an evaluate over 4096 rows; on devices with memory of their own, blocking copies from and into ordinary
NumPy memory of 4 KiB, 1 MiB and 64 MiB) on every device it finds. Per workload: the ratio of the two builds' medians
(earlier / this: above 1 means this build is faster), paired by round, with its 95 % interval over the rounds
(hetnn.bench.stats.ratio_interval).

Usage: .venv/bin/python scripts/training_vs_build.py --baseline DIR [--runs 6]
DIR holds the earlier build's `hetnn` package (e.g. `cp -a .venv/lib/python3.11/site-packages/hetnn DIR/` before
rebuilding); this build: the package this interpreter imports.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# run from a neutral folder, argv[1]: a folder to import hetnn from ("" for the installed one)
PROBE = r"""
import json, sys, time
if sys.argv[1]:
    sys.path.insert(0, sys.argv[1])
import numpy as np
import hetnn
from hetnn import nn, optim
from hetnn.bench.cnn import KERAS_CNN, LENET, build

rng = np.random.default_rng(0)
out = {"hetnn": hetnn.__file__}


def median_time(fn, repeat):
    fn()  # warm-up: buffers, kernels, trainer state
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


for dev in hetnn.devices():
    x_mlp = rng.standard_normal((2048, 784), dtype=np.float32)
    y_mlp = rng.integers(0, 10, 2048)
    mlp = nn.Sequential([nn.Dense(784, 128, "relu", seed=0), nn.Dense(128, 10, seed=1)], device=dev)
    x_img = rng.standard_normal((256, 1, 28, 28), dtype=np.float32)
    y_img = rng.integers(0, 10, 256)
    lenet = build(LENET, dev, 0)
    x_k = rng.standard_normal((128, 1, 50, 50), dtype=np.float32)
    y_k = rng.integers(0, 2, 128).astype(np.float32).reshape(-1, 1)
    keras = build(KERAS_CNN, dev, 0)
    x_xor = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], np.float32)
    y_xor = np.array([[0], [1], [1], [0]], np.float32)
    xor = nn.Sequential([nn.Dense(2, 2, "sigmoid", seed=0), nn.Dense(2, 1, "sigmoid", seed=1)], device=dev)
    x_pred = rng.standard_normal((4096, 784), dtype=np.float32)
    y_pred = rng.integers(0, 10, 4096)

    def fit(model, x, y, loss, batch, epochs=1):
        opt = optim.SGD(model.parameters(), lr=0.01)
        return lambda: model.fit(x, y, loss=loss, optimizer=opt, epochs=epochs, batch_size=batch, shuffle=True,
                                 seed=0)

    work = {
        "mlp 784-128-10 epoch, batch 64": (fit(mlp, x_mlp, y_mlp, "cross_entropy", 64), 7),
        "lenet epoch, batch 64": (fit(lenet, x_img, y_img, "cross_entropy", 64), 5),
        "keras-cnn epoch, batch 32": (fit(keras, x_k, y_k, "mse", 32), 3),
        "xor 2-2-1, 200 full-batch epochs": (fit(xor, x_xor, y_xor, "mse", 4, 200), 5),
        "predict 4096 rows (mlp)": (lambda: mlp.predict(x_pred), 9),
        "evaluate 4096 rows (mlp)": (lambda: mlp.evaluate(x_pred, y_pred, loss="cross_entropy"), 9),
    }
    if dev.kind == "opencl":
        for n, label in ((4096, "4 KiB"), (1 << 20, "1 MiB"), (64 << 20, "64 MiB")):
            host = rng.integers(0, 255, n, dtype=np.uint8)
            back = np.empty_like(host)
            arr = hetnn.asarray(host, device=dev)
            work[f"h2d {label}"] = (lambda a=arr, h=host: a._a.write_from(h), 15)
            work[f"d2h {label}"] = (lambda a=arr, b=back: a._a.read_into(b), 15)
    for name, (fn, repeat) in work.items():
        out[f"{name} [{dev.id}]"] = median_time(fn, repeat)
print(json.dumps(out))
"""


def probe(baseline: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run([sys.executable, "-c", PROBE, baseline], capture_output=True, text=True, cwd=tmp,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    if p.returncode != 0:
        raise SystemExit(f"exit {p.returncode}\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> int:
    from hetnn.bench.stats import ratio_interval

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="a folder holding the earlier build's hetnn package")
    ap.add_argument("--runs", type=int, default=6)
    a = ap.parse_args()
    if not os.path.isfile(os.path.join(a.baseline, "hetnn", "__init__.py")):
        raise SystemExit(f"--baseline {a.baseline!r}: no hetnn package in that folder")
    sides = {"earlier": os.path.abspath(a.baseline), "this": ""}
    results = {name: [] for name in sides}
    for r in range(a.runs):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        for name in order:
            results[name].append(probe(sides[name]))
        print(f"round {r + 1}/{a.runs} done", file=sys.stderr, flush=True)
    for name in sides:
        print(f"{name}: {results[name][0]['hetnn']}")
    keys = [k for k in results["this"][0] if k != "hetnn"]
    print(f"{'workload':52s} {'earlier s':>10s} {'this s':>10s}  earlier / this (95% CI over {a.runs} rounds)")
    for k in keys:
        old = [res[k] for res in results["earlier"]]
        new = [res[k] for res in results["this"]]
        iv = ratio_interval([(new, old)])  # the speed of this build over the earlier one
        old_med, new_med = sorted(old)[len(old) // 2], sorted(new)[len(new) // 2]
        ratio = "no interval" if iv is None else iv.text("")[2:]
        print(f"{k:52s} {old_med:10.5f} {new_med:10.5f}  {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
