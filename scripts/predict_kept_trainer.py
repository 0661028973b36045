"""predict and evaluate on the model's kept trainer against a trainer built for each call (as before it was kept),
interleaved, on each device: an 8-row MLP (784-128-10) predict and evaluate, and an 8-image LeNet-5 predict. Prints
each side's time per call and the ratio with its interval.

Usage: .venv/bin/python scripts/predict_kept_trainer.py [--repeat 15] [--calls 200]
"""
import argparse
from contextlib import contextmanager

import numpy as np

import hetnn
from hetnn import nn
from hetnn.bench import ratio


def _fresh(m):
    """m with a trainer built for each call, as predict and evaluate ran before the trainer was kept."""
    @contextmanager
    def build_each_call():
        yield m._trainer_layers()
    m._kept_trainer = build_each_call
    return m


def _models(dev):
    def mlp():
        return nn.Sequential([nn.Flatten(), nn.Dense(784, 128, "relu", seed=0), nn.Dense(128, 10, seed=1)],
                             device=dev)

    def lenet():
        return nn.Sequential([nn.Conv2d(1, 6, 5, padding=2, activation="relu", seed=0), nn.MaxPool2d(2),
                              nn.Conv2d(6, 16, 5, activation="relu", seed=1), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Dense(400, 120, "relu", seed=2), nn.Dense(120, 84, "relu", seed=3),
                              nn.Dense(84, 10, seed=4)], device=dev)
    return mlp, lenet


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--calls", type=int, default=200)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    x = rng.random((8, 1, 28, 28), dtype=np.float32)
    y = rng.integers(0, 10, 8)
    k = a.calls

    def loop(f):
        def run():
            for _ in range(k):
                f()
        return run

    for d in hetnn.devices():
        mlp, lenet = _models(d.id)
        kept_m, fresh_m, kept_l, fresh_l = mlp(), _fresh(mlp()), lenet(), _fresh(lenet())
        pairs = [("MLP predict, 8 rows", lambda m: m.predict(x), kept_m, fresh_m),
                 ("MLP evaluate, 8 rows", lambda m: m.evaluate(x, y, loss="cross_entropy"), kept_m, fresh_m),
                 ("LeNet-5 predict, 8 images", lambda m: m.predict(x), kept_l, fresh_l)]
        for name, call, kept, fresh in pairs:
            res = hetnn.interleave([hetnn.Case("kept", loop(lambda: call(kept))),
                                    hetnn.Case("built each call", loop(lambda: call(fresh)))],
                                   n_warmup=2, n_repeat=a.repeat)
            per = ", ".join(f"{r.name} {r.median / k * 1e6:.1f} us (flags: {r.noise.get('noise') or 'none'})"
                            for r in res)
            print(f"{d.id} {name}: {per}")
            print("  " + ratio(f"{d.id} {name}, built each call / kept (speed)", res[0], res[1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
