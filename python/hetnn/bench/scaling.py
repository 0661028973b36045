"""The scaling suite: data-parallel training (``fit(distributed=True)``) on 1..N MPI ranks, run under
``mpirun -np N python -m hetnn bench scaling --distributed`` (``python -m hetnn bench scaling`` launches that itself).

For each workload and rank count k the first k ranks train while the others wait asleep (a spinning MPI barrier
would take a core from them):

- strong scaling: a fixed global batch and epoch (the work of one rank shared by k): speedup T(1) / T(k),
  efficiency speedup / k;
- weak scaling: a fixed batch and share of samples per rank (the epoch grows with k): efficiency T(1) / T(k).

Rank counts, strong and weak runs are interleaved in rounds, so that a round's figures share the machine's state;
each figure is the median over rounds, each speedup the median of per-round ratios with a 95 % bootstrap interval
(hetnn.bench.stats). An epoch's time is the slowest rank's, from the start of the epoch until its loss is reduced;
the communication time is the ranks' mean time in the gradient reduction (the wait for the slowest rank included).
Every rank runs ``threads`` CPU threads (default: the cores of its machine shared by the ranks on it, so N ranks
fill the machine and one rank uses its share); Amdahl's serial fraction is fitted to the strong-scaling speedups.
"""
from __future__ import annotations

import os
import socket
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import distributed as dist
from .. import nn, optim
from .._oscounters import Watch, noise_note, preempted
from .stats import flags_text, ratio_interval

SCALING_COLUMNS = [
    ("workload", "workload", ""), ("mode", "mode", ""), ("ranks", "ranks", "d"), ("threads", "threads/rank", "d"),
    ("global_batch", "global batch", "d"), ("samples", "samples/epoch", ","), ("epoch_s", "s/epoch", ".3f"),
    ("samples_per_s", "samples/s", ",.0f"), ("speedup", "speedup", ".2f"), ("speedup_ci", "95% CI", ""),
    ("efficiency", "efficiency", ".2f"), ("comm_us", "comm us/step", ".0f"), ("comm_share", "comm share", ".1%"),
    ("reduction", "reduction", "")]


def _mlp(seed: int, device: Any) -> nn.Sequential:
    return nn.Sequential([nn.Dense(784, 128, activation="relu", seed=seed), nn.Dense(128, 10, seed=seed + 1)],
                         device=device)


def _lenet(seed: int, device: Any) -> nn.Sequential:
    from .cnn import LENET, build
    return build(LENET, device, seed)


Builder = Callable[[int, Any], nn.Sequential]
# name: (description, model builder, optimizer, strong global batch, samples (full, quick), images?)
WORKLOADS: Dict[str, Tuple[str, Builder, Callable[[Any], Any], int, Tuple[int, int], bool]] = {
    "mlp": ("784-128-10 MLP, ReLU, softmax cross-entropy, SGD lr 0.05 momentum 0.9", _mlp,
            lambda m: optim.SGD(m.parameters(), lr=0.05, momentum=0.9), 256, (60000, 15360), False),
    "lenet": ("LeNet (the conv suite's), Adam lr 1e-3", _lenet, lambda m: optim.Adam(m.parameters(), lr=1e-3), 64,
              (12288, 2048), True),
}


def rank_counts(world: int) -> List[int]:
    """1, 2, 4, ... up to the world size, and the world size itself."""
    out, k = [], 1
    while k < world:
        out.append(k)
        k *= 2
    return out + [world]


def default_threads(comm: Any) -> int:
    """The CPU cores of this rank's machine shared by the ranks on it (at least 1)."""
    from mpi4py import MPI
    node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, cores // node.Get_size())


def _data(images: bool, n: int) -> Tuple[np.ndarray, np.ndarray]:
    from ..datasets import fashion_mnist
    (x, y), _ = fashion_mnist(images=images)
    x = x[:n].astype(np.float32) / np.float32(255)
    return (x if images else x.reshape(len(x), -1)), y[:n].astype(np.int64)


def _one_run(world: Any, k: int, build: Builder, device: Any, make_opt: Callable[[Any], Any], x: np.ndarray,
             y: np.ndarray, batch_per_rank: int, seed: int) -> Optional[Dict[str, Any]]:
    """One warm-up epoch and one timed epoch of data-parallel training on ranks 0..k-1 (the others wait asleep);
    the timed epoch's figures on rank 0, None elsewhere."""
    from mpi4py import MPI
    rank = world.Get_rank()
    sub = world.Split(0 if rank < k else MPI.UNDEFINED, rank)
    out = None
    if rank < k:
        watch = Watch()
        with dist._within(sub):
            model = build(seed, device)
            h = model.fit(x, y, loss="cross_entropy", optimizer=make_opt(model), epochs=2, batch_size=batch_per_rank,
                          seed=seed, distributed=True, callbacks=[watch.epochs()])
        watch.close()
        # the timed epoch was preempted when any rank's was (the slowest rank sets the epoch's time)
        mine = bool(len(watch.counters) > 1 and preempted(watch.counters[1:2])[0])
        flags = sub.gather(mine, root=0)
        if rank == 0:
            out = {"epoch_s": h.history["epoch_time"][1], "comm_s": h.history["comm_time"][1],
                   "reduction": h.params.get("reduction") if k > 1 else "-", "preempted": any(flags or [])}
        sub.Free()
    dist._idle_barrier(world)
    return out


def run_scaling(world: Any, workloads: Sequence[str], device: Any, quick: bool, rounds: int, threads: int,
                progress: Optional[Callable[[str], None]] = None) -> List[Dict[str, Any]]:
    """Every rank calls this; rank 0 returns the rows (the others an empty list)."""
    ks = rank_counts(world.Get_size())
    rank = world.Get_rank()
    times: Dict[Tuple[str, str, int], List[Dict[str, Any]]] = {}
    data = {w: _data(WORKLOADS[w][5], WORKLOADS[w][4][1 if quick else 0]) for w in workloads}
    n_max = max(ks)
    for r in range(rounds):
        for w in workloads:
            _, build, make_opt, batch, _, _ = WORKLOADS[w]
            x, y = data[w]
            weak_share = len(x) // n_max  # samples per rank in weak scaling (the full set at k = N)
            for k in ks:
                if batch % k:
                    continue  # strong scaling needs the global batch split evenly
                for mode, bpr, n in (("strong", batch // k, len(x)), ("weak", batch, weak_share * k)):
                    if progress and rank == 0:
                        progress(f"round {r + 1}/{rounds}: {w} {mode} {k} rank(s)")
                    res = _one_run(world, k, build, device, make_opt, x[:n], y[:n], bpr, seed=1 + r)
                    if res is not None:
                        res.update(samples=n, steps=-(-n // (bpr * k)))
                        times.setdefault((w, mode, k), []).append(res)
    if rank != 0:
        return []
    return _rows(times, ks, threads, workloads)


def _rows(times: Dict[Tuple[str, str, int], List[Dict[str, Any]]], ks: Sequence[int], threads: int,
          workloads: Sequence[str]) -> List[Dict[str, Any]]:
    rows = []
    for w in workloads:
        batch = WORKLOADS[w][3]
        for mode in ("strong", "weak"):
            base = times.get((w, mode, 1))
            for k in ks:
                runs = times.get((w, mode, k))
                if not runs:
                    continue
                ts = [x["epoch_s"] for x in runs]
                med = float(np.median(ts))
                hit = sum(bool(x.get("preempted")) for x in runs)
                base_bad = bool(base) and 2 * sum(bool(x.get("preempted")) for x in base or []) >= len(base or [])
                comm = float(np.median([x["comm_s"] / x["steps"] for x in runs])) * 1e6
                row: Dict[str, Any] = {
                    "workload": w, "mode": mode, "ranks": k, "threads": threads,
                    "global_batch": batch if mode == "strong" else batch * k, "samples": runs[0]["samples"],
                    "epoch_s": med, "times_s": ts, "samples_per_s": runs[0]["samples"] / med,
                    "comm_us": comm if k > 1 else None,
                    "comm_share": float(np.median([x["comm_s"] / x["epoch_s"] for x in runs])) if k > 1 else None,
                    "reduction": runs[0]["reduction"], "host": socket.gethostname(), "preempted": hit,
                    "unreliable": 2 * hit >= len(runs) or (k > 1 and base_bad),
                    "noise": noise_note(hit, len(runs)) or ("1-rank baseline unreliable" if k > 1 and base_bad
                                                            else "")}
                if base:
                    # speed ratios per round (interleaved), weak scaling's on equal work per rank
                    bt = [x["epoch_s"] for x in base]
                    if mode == "weak":  # samples/s ratio = (k x work) / T(k) over work / T(1)
                        ci = ratio_interval([(ts, [t * k for t in bt])])
                    else:
                        ci = ratio_interval([(ts, bt)])
                    if ci is not None:
                        row["speedup"] = ci.value
                        row["speedup_ci"] = f"{ci.low:.2f}-{ci.high:.2f}"
                        row["speedup_low"], row["speedup_high"] = ci.low, ci.high
                        row["efficiency"] = ci.value / k
                rows.append(row)
    return rows


def amdahl(rows: Sequence[Dict[str, Any]]) -> Optional[float]:
    """Amdahl's serial fraction f fitted to strong-scaling speedups S(k) = 1 / (f + (1 - f) / k), by least squares
    on 1/S - 1/k = f (1 - 1/k), over the unflagged points only; None without a clean speedup at k > 1."""
    pts = [(r["ranks"], r["speedup"]) for r in rows if r.get("speedup") and r["ranks"] > 1 and
           not r.get("unreliable")]
    if not pts:
        return None
    a = np.array([1 - 1 / k for k, _ in pts])
    b = np.array([1 / s - 1 / k for k, s in pts])
    return float(np.clip(a @ b / (a @ a), 0.0, 1.0))


def summary(rows: Sequence[Dict[str, Any]]) -> List[str]:
    out = []
    for w in dict.fromkeys(r["workload"] for r in rows):
        strong = [r for r in rows if r["workload"] == w and r["mode"] == "strong"]
        weak = [r for r in rows if r["workload"] == w and r["mode"] == "weak"]
        top = max(strong, key=lambda r: r["ranks"], default=None)
        if top is not None and top.get("speedup"):
            f = amdahl(strong)
            over = ", ".join(str(r["ranks"]) for r in strong if r["ranks"] > 1 and r.get("speedup") and
                             not r.get("unreliable"))
            fit = (f"; Amdahl serial fraction {f:.3f}, fitted over {over} ranks" +
                   (f" (speedup bound {1 / f:.1f}x)" if f > 0 else "")) if f is not None else \
                "; Amdahl: not enough clean points"
            if top.get("unreliable"):
                fit += f" [{top.get('noise')}]"
            out.append(f"{w} strong scaling: {top['ranks']} ranks = {top['speedup']:.2f}x ({top['speedup_ci']}, "
                       f"95% CI; flags: {flags_text([top])}) the "
                       f"samples/s of 1 rank at global batch {top['global_batch']}, efficiency "
                       f"{top['efficiency']:.2f}; gradient reduction {top['comm_us']:.0f} us a step "
                       f"({top['comm_share']:.1%} of the epoch, {top['reduction']}){fit}")
        topw = max(weak, key=lambda r: r["ranks"], default=None)
        if topw is not None and topw.get("efficiency"):
            out.append(f"{w} weak scaling: {topw['ranks']} ranks at batch {topw['global_batch'] // topw['ranks']} "
                       f"each: efficiency {topw['efficiency']:.2f} ({topw['samples_per_s']:,.0f} samples/s)")
    return out


def describe(workloads: Sequence[str]) -> List[str]:
    return [f"{w}: {WORKLOADS[w][0]}; strong: global batch {WORKLOADS[w][3]}; weak: batch {WORKLOADS[w][3]} per rank"
            for w in workloads]


__all__ = ["run_scaling", "summary", "amdahl", "rank_counts", "SCALING_COLUMNS", "WORKLOADS", "default_threads",
           "describe"]
