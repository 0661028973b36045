"""LeNet on Fashion-MNIST, Adam lr 1e-3, batch 64, 5 epochs, on one hetnn device and in PyTorch (CPU, same thread
count), two seeds each: test accuracy after 5 epochs and seconds per epoch. Usage:
    .venv/bin/python scripts/lenet_fmnist.py [device]     (default: cpu; PyTorch must be installed)
`python -m hetnn bench conv` runs the same recipe from shared initial weights, interleaved, on every device."""
import sys
import time

import numpy as np
import torch

import hetnn
from hetnn import datasets, nn, optim

(xt, yt), (xe, ye) = datasets.fashion_mnist(images=True)
yt, ye = yt.astype(np.int64), ye.astype(np.int64)
torch.set_num_threads(hetnn.get_num_threads())
dev = sys.argv[1] if len(sys.argv) > 1 else "cpu"


def lenet(seed):
    return nn.Sequential([nn.Conv2d(1, 6, 5, padding=2, activation="relu", seed=seed), nn.MaxPool2d(2),
                          nn.Conv2d(6, 16, 5, activation="relu", seed=seed + 1), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Dense(400, 120, "relu", seed=seed + 2), nn.Dense(120, 84, "relu", seed=seed + 3),
                          nn.Dense(84, 10, seed=seed + 4)], device=dev)


for seed in (0, 1):
    m = lenet(seed * 10)
    opt = optim.Adam(m.parameters(), lr=1e-3)
    times = []
    for e in range(5):
        t0 = time.perf_counter()
        m.fit(xt, yt, loss="cross_entropy", optimizer=opt, epochs=1, batch_size=64, seed=seed * 100 + e)
        times.append(time.perf_counter() - t0)
    acc = m.evaluate(xe, ye, metrics=["accuracy"])["accuracy"]
    print(f"hetnn {dev} seed {seed}: test accuracy {acc:.4f}, s/epoch {[round(t, 2) for t in times]}", flush=True)
    torch.manual_seed(seed)
    tm = torch.nn.Sequential(torch.nn.Conv2d(1, 6, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                             torch.nn.Conv2d(6, 16, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                             torch.nn.Linear(400, 120), torch.nn.ReLU(), torch.nn.Linear(120, 84), torch.nn.ReLU(),
                             torch.nn.Linear(84, 10))
    topt = torch.optim.Adam(tm.parameters(), lr=1e-3)
    X, Y = torch.from_numpy(xt), torch.from_numpy(yt)
    g = torch.Generator().manual_seed(seed)
    times = []
    for e in range(5):
        t0 = time.perf_counter()
        perm = torch.randperm(len(xt), generator=g)
        for s in range(0, len(xt), 64):
            i = perm[s:s + 64]
            topt.zero_grad()
            torch.nn.functional.cross_entropy(tm(X[i]), Y[i]).backward()
            topt.step()
        times.append(time.perf_counter() - t0)
    with torch.no_grad():
        tacc = float((tm(torch.from_numpy(xe)).argmax(1).numpy() == ye).mean())
    print(f"torch {torch.__version__} seed {seed}: test accuracy {tacc:.4f}, s/epoch {[round(t, 2) for t in times]}",
          flush=True)
