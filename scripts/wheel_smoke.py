"""Smoke checks of an installed hetnn wheel (scripts/test_wheel.sh runs it in a fresh virtual environment): the
import time, the module coming from site-packages, one OpenMP runtime in the process whose threads
hetnn.set_num_threads governs, every device found, matmul, max pooling and conv2d on every device against float64
NumPy, and a short fit. ``--cpu-only``: the CPU device alone must be listed, and the device table says why.
``--bundled-loader``: the machine has no ICD loader of its own (test_wheel.sh hides it), so the OpenCL devices must
come through the wheel's own, hetnn/_opencl/libOpenCL.so.1, the only libOpenCL mapped into the process."""
from __future__ import annotations

import subprocess
import sys
import time


def main() -> int:
    cpu_only = "--cpu-only" in sys.argv
    bundled = "--bundled-loader" in sys.argv
    t0 = time.perf_counter()
    import hetnn

    took = time.perf_counter() - t0
    import numpy as np
    from threadpoolctl import threadpool_info

    from hetnn import nn, optim

    print(f"wheel_smoke: import hetnn {took:.2f} s from {hetnn.__file__}")
    assert "site-packages" in hetnn.__file__, hetnn.__file__
    ids = [d.id for d in hetnn.devices()]
    print(f"wheel_smoke: devices {ids}")
    if cpu_only:
        assert ids == ["cpu"], ids
        table = subprocess.run([sys.executable, "-m", "hetnn", "devices"], capture_output=True, text=True,
                               check=True).stdout
        assert "OpenCL not loaded" in table, table
    if bundled:
        assert any(i != "cpu" for i in ids), f"no OpenCL device through the bundled loader: {ids}"
        with open("/proc/self/maps") as f:
            mapped = {line.split()[-1] for line in f if "libOpenCL" in line}
        assert len(mapped) == 1 and next(iter(mapped)).endswith("/hetnn/_opencl/libOpenCL.so.1"), mapped
        print(f"wheel_smoke: OpenCL through the wheel's own loader {next(iter(mapped))}")
    omp = [p for p in threadpool_info() if p["user_api"] == "openmp"]
    assert len(omp) == 1, f"OpenMP runtimes in the process: {[p['filepath'] for p in omp]}"
    hetnn.set_num_threads(1)
    assert threadpool_info() and [p for p in threadpool_info() if p["user_api"] == "openmp"][0]["num_threads"] == 1
    rng = np.random.default_rng()
    for dev in hetnn.devices():
        a, b = rng.standard_normal((67, 45)), rng.standard_normal((45, 33))
        got = np.asarray(hetnn.matmul(a.astype(np.float32), b.astype(np.float32), device=dev), np.float64)
        want = a @ b
        assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max(), dev.id
        x = rng.standard_normal((2, 3, 8, 8))
        pooled = np.asarray(hetnn.max_pool2d(x.astype(np.float32), 2, device=dev), np.float64)
        assert np.allclose(pooled, x.reshape(2, 3, 4, 2, 4, 2).max(axis=(3, 5)), atol=1e-6), dev.id
        w = rng.standard_normal((4, 3, 3, 3))
        out = np.asarray(hetnn.conv2d(x.astype(np.float32), w.astype(np.float32), device=dev), np.float64)
        ref = np.einsum("nchwkl,ockl->nohw", np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3)), w)
        assert np.abs(out - ref).max() <= 1e-4 * np.abs(ref).max(), dev.id
        model = nn.Sequential([nn.Dense(8, 16, activation="relu", seed=1), nn.Dense(16, 3, seed=2)], device=dev)
        xs, ys = rng.standard_normal((256, 8)), rng.integers(0, 3, 256)
        h = model.fit(xs, ys, loss="cross_entropy", optimizer=optim.Adam(model.parameters(), lr=0.01),
                      epochs=5, batch_size=32)
        assert h.history["loss"][-1] < h.history["loss"][0], dev.id
        print(f"wheel_smoke: {dev.id}: matmul, max_pool2d, conv2d and fit checked")
    print("wheel_smoke: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
