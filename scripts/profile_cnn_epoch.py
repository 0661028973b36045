"""Per-op device time of one training epoch of the Keras-style CNN (batches 256 and 32) and of LeNet (random data,
batch 64) on one device, with hetnn.profile (docs/gpu.md). Usage: python scripts/profile_cnn_epoch.py [device]"""
import sys
import time

import numpy as np

import hetnn
from hetnn import optim
from hetnn.bench import cnn

dev = hetnn.device(sys.argv[1] if len(sys.argv) > 1 else "gpu")
rng = np.random.default_rng(0)
(mx, my), _ = hetnn.datasets.radiation_maps(n_samples=2048, size=50, seed=0)
lx, ly = rng.random((4096, 1, 28, 28), np.float32), rng.integers(0, 10, 4096)
for name, x, y, batch, loss in [("keras-cnn", mx, my, 256, "mse"), ("keras-cnn", mx, my, 32, "mse"),
                                ("lenet", lx, ly, 64, "cross_entropy")]:
    model = cnn.build(cnn.MODELS[name][0], dev, 0)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    model.fit(x, y, loss=loss, optimizer=opt, epochs=1, batch_size=batch)  # warm-up: kernels built, buffers made
    hetnn.synchronize(dev)
    t0 = time.perf_counter()
    with hetnn.profile(dev) as prof:
        model.fit(x, y, loss=loss, optimizer=opt, epochs=1, batch_size=batch)
    print(f"\n== {name} batch {batch}: {len(x)} samples, wall {time.perf_counter() - t0:.3f} s, "
          f"device {prof.device_time:.3f} s")
    print(prof.table(by_detail=True))
