"""Where a data-parallel step's reduction time goes, timed inside training: the MLP of `bench scaling` (784-128-10,
SGD with momentum, global batch 256, Fashion-MNIST) on every rank, the reducer's barrier before the pass (it waits for
the slower rank), the pass, and the barrier after it, per step; and the same training with the reduction left out
(the most data parallelism can give on the machine: the ranks computing side by side). Epoch medians over --runs
models, each one warm-up and one timed epoch. Usage (one rank for the 1-rank step):
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 .venv/bin/mpirun -np 2 --bind-to core \\
    .venv/bin/python scripts/reduction_in_training.py [--runs 6]"""
import argparse
import time

import numpy as np
from mpi4py import MPI

import hetnn
from hetnn import _shared_reduce
from hetnn import distributed as dist
from hetnn._loader import _core
from hetnn.bench.scaling import WORKLOADS, _data, _mlp

ap = argparse.ArgumentParser()
ap.add_argument("--runs", type=int, default=6)
args = ap.parse_args()
dist.init()
comm = MPI.COMM_WORLD
parts = {"wait": 0.0, "pass": 0.0, "after": 0.0}


def timed(self, weights):
    """GradientReducer.reduce's shared-memory path (one node) with timers between its three parts."""
    local_w = [weights[r] for r in self.node_ranks]
    t0 = time.perf_counter()
    self._fence()
    t1 = time.perf_counter()
    _core._reduce_slices(self.segments, local_w, self.lo, self.hi, self.segments)
    t2 = time.perf_counter()
    self._fence()
    t3 = time.perf_counter()
    parts["wait"] += t1 - t0
    parts["pass"] += t2 - t1
    parts["after"] += t3 - t2


x, y = _data(False, 60000)
dev = hetnn.device("cpu")
batch = WORKLOADS["mlp"][3] // comm.Get_size()
steps = -(-len(x) // WORKLOADS["mlp"][3])
original = _shared_reduce.GradientReducer.reduce
rows = {}
for mode in ("reduction timed", "reduction left out") if comm.Get_size() > 1 else ("one rank",):
    _shared_reduce.GradientReducer.reduce = timed if mode == "reduction timed" else (lambda self, weights: None)
    epochs, shares = [], {k: [] for k in parts}
    for r in range(args.runs):
        model = _mlp(1 + r, dev)
        for k in parts:
            parts[k] = 0.0
        h = model.fit(x, y, loss="cross_entropy", optimizer=WORKLOADS["mlp"][2](model), epochs=2, batch_size=batch,
                      seed=1 + r, distributed=comm.Get_size() > 1, verbose=0)
        epochs.append(h.history["epoch_time"][1])
        for k in parts:
            shares[k].append(parts[k] / 2 / steps)  # two epochs' worth of steps were timed
    rows[mode] = (epochs, shares)
_shared_reduce.GradientReducer.reduce = original
if comm.Get_rank() == 0:
    print(f"{comm.Get_size()} rank(s), batch {batch} per rank, {steps} steps an epoch, medians over {args.runs} runs")
    for mode, (epochs, shares) in rows.items():
        line = f"  {mode}: step {np.median(epochs) / steps * 1e6:.0f} us"
        if mode == "reduction timed":
            line += "; " + ", ".join(f"{k} {np.median(v) * 1e6:.1f} us" for k, v in shares.items())
        print(line)
