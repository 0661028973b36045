"""fit's per-epoch overhead on the smallest problem: XOR 2-2-1 (tanh, MSE, full batch, plain SGD), 2,000 epochs in
one fit on the CPU device against the same epochs in float64 NumPy (the nn-library study's transcription),
interleaved; prints each side's time per epoch and the ratio with its interval.

Usage: .venv/bin/python scripts/xor_overhead.py [--epochs 2000] [--repeat 15]
"""
import argparse

import numpy as np

import hetnn
from hetnn import nn, optim
from hetnn.bench import ratio
from hetnn.study.nn_library import numpy_xor


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=15)
    a = ap.parse_args()
    x = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], np.float32)
    y = np.array([[0], [1], [1], [0]], np.float32)
    m = nn.Sequential([nn.Dense(2, 2, "tanh", seed=0), nn.Dense(2, 1, "tanh", seed=1)], device="cpu")
    opt = optim.SGD(m.parameters(), lr=0.1)
    state = {k: np.array(v) for k, v in m.state_dict().items()}
    e = a.epochs
    res = hetnn.interleave([
        hetnn.Case("hetnn cpu", lambda: m.fit(x, y, loss="mse", optimizer=opt, epochs=e, batch_size=4)),
        hetnn.Case("numpy f64", lambda: numpy_xor(state, x, y, e, 0.1))], n_warmup=2, n_repeat=a.repeat)
    for r in res:
        print(f"{r.name}: {r.median / e * 1e6:.1f} us/epoch; flags: {r.noise.get('noise') or 'none'}")
    print(ratio("XOR epoch, NumPy / hetnn cpu (speed)", res[0], res[1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
