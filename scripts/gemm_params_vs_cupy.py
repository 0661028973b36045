# ResNet-50 bs=1 GEMMs on a GPU: hetnn with the database's h100 small-class entry (OLD) and with the
# geometric-mean tuner's winner (NEW) against CuPy (TF32 off), interleaved per shape in one run.
import os
import numpy as np
import cupy as cp
import hetnn
from hetnn import Case, interleave, _core
from hetnn.bench.matmul import resnet50_shapes

os.environ["CUPY_TF32"] = "0"
OLD = "family=tiled ts_m=32 ts_n=64 ts_k=32 wpt_m=4 wpt_n=2"
NEW = "family=tiled ts_m=32 ts_n=64 ts_k=32 wpt_m=2 wpt_n=2"
dev = hetnn.device("gpu")
print("device:", dev.id, dev.name)
rng = np.random.default_rng(0)
rows = []
for name, m, n, k in resnet50_shapes(1):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    A, B, C = hetnn.asarray(a, device=dev), hetnn.asarray(b, device=dev), hetnn.empty((m, n), device=dev)
    ca, cb = cp.asarray(a), cp.asarray(b)
    ref = a.astype(np.float64) @ b.astype(np.float64)

    def run(params):
        _core.set_gemm_params(dev._dev, "float32", params)
        return hetnn.matmul(A, B, out=C)

    for p in (OLD, NEW):
        got = run(p).numpy()
        assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-5, (name, p)
    fl = 2.0 * m * n * k
    res = interleave([Case("old", lambda: run(OLD), devices=[dev], flops=fl),
                      Case("new", lambda: run(NEW), devices=[dev], flops=fl),
                      Case("cupy", lambda: ca @ cb, sync=cp.cuda.Device().synchronize, flops=fl)],
                     n_warmup=5, n_repeat=30)
    t = [np.median(r.wall_times) for r in res]
    rows.append(t)
    print(f"{name}: old {fl/t[0]/1e9:.0f}, new {fl/t[1]/1e9:.0f}, cupy {fl/t[2]/1e9:.0f} GFLOP/s; "
          f"old/cupy {t[2]/t[0]:.2f}x new/cupy {t[2]/t[1]:.2f}x", flush=True)
_core.set_gemm_params(dev._dev, "float32", "")
r = np.array(rows)
g = lambda v: float(np.exp(np.mean(np.log(v))))  # noqa: E731
print(f"geometric mean over {len(r)} shapes: old/cupy {g(r[:, 2] / r[:, 0]):.2f}x (min {min(r[:, 2] / r[:, 0]):.2f},"
      f" max {max(r[:, 2] / r[:, 0]):.2f}); new/cupy {g(r[:, 2] / r[:, 1]):.2f}x (min {min(r[:, 2] / r[:, 1]):.2f},"
      f" max {max(r[:, 2] / r[:, 1]):.2f}); new/old {g(r[:, 0] / r[:, 1]):.2f}x")
