"""A 100,000-element float32 allreduce through hetnn.distributed (a CPU-device Array, a NumPy array) against
mpi4py's own Allreduce on NumPy buffers, interleaved, 30 rounds of 50 calls (docs/api.md, Distributed). Usage:
OMP_NUM_THREADS=1 .venv/bin/mpirun --oversubscribe -np 2 .venv/bin/python scripts/allreduce_vs_mpi4py.py"""
import time

import numpy as np
from mpi4py import MPI

import hetnn
from hetnn import distributed as dist

dist.init()
comm = MPI.COMM_WORLD
x = np.random.default_rng(dist.rank()).standard_normal(100_000).astype(np.float32)
X = hetnn.asarray(x, device="cpu")
out = np.empty_like(x)
cases = {"mpi4py": lambda: comm.Allreduce(x, out, op=MPI.SUM), "hetnn Array": lambda: dist.allreduce(X),
         "hetnn numpy": lambda: dist.allreduce(x)}
res = {k: [] for k in cases}
for _ in range(30):
    for name, f in cases.items():
        comm.Barrier()
        t = time.perf_counter()
        for _ in range(50):
            f()
        res[name].append((time.perf_counter() - t) / 50 * 1e6)
if dist.rank() == 0:
    for k, v in res.items():
        r = np.array(v) / np.array(res["mpi4py"])
        print(f"{k}: median {np.median(v):.1f} us; / mpi4py {np.median(r):.2f}x "
              f"({np.percentile(r, 5):.2f}-{np.percentile(r, 95):.2f}, 5-95 %)")
