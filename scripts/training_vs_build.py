"""Training, inference and transfer speed of this build against an earlier one, interleaved: RUNS rounds, each running
a timing process of each build one after the other (the order alternating round by round); every process times the
same workloads (epochs of the MLP 784-128-10, LeNet and the Keras-style CNN, the XOR 2-2-1 full-batch epoch, a
predict and an evaluate over 4096 rows; on devices with memory of their own, blocking copies from and into ordinary
NumPy memory of 4 KiB, 1 MiB and 64 MiB) on every device it finds. Per workload: the ratio of the two builds' medians
(earlier / this: above 1 means this build is faster), paired by round, with its 95 % interval over the rounds
(hetnn.bench.stats.ratio_interval).
"""
import os
import sys

from build_ab import main

# after build_ab.HEAD: np, hetnn, rng and out are defined
PROBE = r"""
from hetnn import nn, optim
from hetnn.bench.cnn import KERAS_CNN, LENET, build


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


if __name__ == "__main__":
    sys.exit(main(PROBE, __doc__, os.path.basename(__file__)))
