"""The OpenMP spin study of docs/threads.md: for each setting, a fresh process alternates hetnn and NumPy matmuls
(3136x256x64 float32, out=, 40 rounds after 5 warm-ups) and trains the 784-128-10 Fashion-MNIST model for 3 epochs
on the CPU device. Usage: .venv/bin/python scripts/spin_study.py [SETTING ...], a SETTING being "default" (hetnn's
spin bound) or VAR=VALUE (default: the settings of the table; GOMP_SPINCOUNT=300000 is libgomp's own default)."""
import json
import os
import subprocess
import sys

CHILD = r'''
import json, sys, time
import numpy as np
import hetnn
from hetnn import datasets, nn, optim
cpu = hetnn.device("cpu")
rng = np.random.default_rng(0)
a = rng.standard_normal((3136, 64), dtype=np.float32)
b = rng.standard_normal((64, 256), dtype=np.float32)
A, B, C = hetnn.asarray(a, device=cpu), hetnn.asarray(b, device=cpu), hetnn.empty((3136, 256), "float32", device=cpu)
out = np.empty((3136, 256), np.float32)
def h(): hetnn.matmul(A, B, out=C)
def n(): np.matmul(a, b, out=out)
for _ in range(5):
    h(); n()
def timed(f):
    t0 = time.perf_counter(); f(); hetnn.synchronize(cpu); return time.perf_counter() - t0
th, tn = [], []
for _ in range(40):
    th.append(timed(h)); tn.append(timed(n))
(xt, yt), _ = datasets.fashion_mnist()
xt = (xt.reshape(len(xt), -1) / 255).astype(np.float32)
m = nn.Sequential([nn.Dense(784, 128, "relu", seed=0), nn.Dense(128, 10, seed=1)], device=cpu)
hist = m.fit(xt, yt.astype(np.int64), loss=nn.CrossEntropyLoss(),
             optimizer=optim.SGD(m.parameters(), lr=0.1, momentum=0.9), epochs=3, batch_size=64, seed=0)
print(json.dumps({"hetnn_ms": float(np.median(th)) * 1e3, "numpy_ms": float(np.median(tn)) * 1e3,
                  "hetnn_slow": sum(t > 2e-3 for t in th), "numpy_slow": sum(t > 2e-3 for t in tn),
                  "epochs_s": [round(e, 3) for e in hist.history["epoch_time"]]}))
'''

# "default" is hetnn's own (GOMP_SPINCOUNT=10000, set when hetnn loads libgomp); libgomp's default is 300000.
SETTINGS = ["default", "GOMP_SPINCOUNT=300000", "OMP_WAIT_POLICY=passive", "GOMP_SPINCOUNT=1000",
            "GOMP_SPINCOUNT=100000", "OPENBLAS_NUM_THREADS=1"]


def main(settings):
    print("setting | hetnn ms | NumPy ms | calls > 2 ms (hetnn / NumPy) | epoch s")
    for setting in settings:
        env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
        if setting != "default":
            key, value = setting.split("=", 1)
            env[key] = value
        res = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
        r = json.loads(res.stdout.strip().splitlines()[-1])
        print(f"{setting} | {r['hetnn_ms']:.2f} | {r['numpy_ms']:.2f} | {r['hetnn_slow']} / {r['numpy_slow']} | "
              f"{', '.join(map(str, r['epochs_s']))}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or SETTINGS)
