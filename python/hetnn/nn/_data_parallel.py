"""fit(..., distributed=True): data-parallel training over MPI ranks, as in Horovod and PyTorch DDP. Each rank holds a
replica; rank 0's weights and optimizer state are broadcast at the start; each epoch a permutation from a seed every
rank shares is cut into global batches of ``batch_size * world_size`` rows, each rank taking its part; after every
step's backward pass (inside the C++ loop) the gradients are averaged across ranks, weighted by the rows each rank
had, so that a step equals one step of single-process training on the global batch."""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._loader import _core


def flat_size(params: Sequence[Any]) -> int:
    """Elements of a flat buffer holding every parameter's gradient, each starting on a 64-byte boundary."""
    from .._shared_reduce import ALIGN
    return sum(-(-int(np.prod(p.value.shape, dtype=np.int64)) // ALIGN) * ALIGN for p in params)


class FlatGradients:
    """Each parameter's gradient as a view of ``flat`` (flat_size elements). On a host-memory device (the CPU device)
    the gradient arrays the backward pass writes become those views (``zero_copy``), so a reduction reads and writes
    them in place; elsewhere ``gather`` and ``scatter`` copy them in and out."""

    def __init__(self, params: Sequence[Any], dev: Any, flat: np.ndarray) -> None:
        from .._shared_reduce import ALIGN
        self.params, self.flat, self.views = list(params), flat, []
        o = 0
        for p in self.params:
            n = int(np.prod(p.value.shape, dtype=np.int64))
            self.views.append(flat[o:o + n].reshape(p.value.shape))
            o += -(-n // ALIGN) * ALIGN
        wrapped = [_core.Array.wrap_numpy(dev, v) for v in self.views]
        self.zero_copy = all(w is not None for w in wrapped)
        if self.zero_copy:
            for p, w, v in zip(self.params, wrapped, self.views):
                v[...] = p.grad.to_numpy()
                p.grad = w

    def gather(self) -> None:
        """The gradients into the flat buffer (nothing to do when they live there)."""
        if not self.zero_copy:
            for v, p in zip(self.views, self.params):
                v[...] = p.grad.to_numpy()

    def scatter(self) -> None:
        """The flat buffer back into the gradients."""
        if not self.zero_copy:
            for v, p in zip(self.views, self.params):
                p.grad.write_from(v)


class DataParallel:
    """The rank's part of one distributed fit: checks the ranks agree, synchronises the replicas, plans each epoch's
    shards and reduces gradients (the Trainer's step hook) and the epoch's sums."""

    def __init__(self, model: Any, optimizer: Any, n: int, batch_size: int, shuffle: bool, seed: Optional[int],
                 fingerprint: Dict[str, Any]) -> None:
        from .. import distributed as dist

        if not dist.is_initialized():
            raise RuntimeError("fit(distributed=True): call hetnn.distributed.init() first (and launch the script "
                               "with mpirun -np N)")
        self.comm = dist._world()
        self.MPI = dist._mpi()
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.n, self.bs, self.shuffle = n, batch_size, shuffle
        self.params = list(model.parameters())
        fingerprint = dict(fingerprint, samples=n, batch_size=batch_size, shuffle=shuffle,
                           parameters=[(tuple(p.value.shape), str(p.value.dtype)) for p in self.params])
        self._agree(fingerprint)
        if n < self.size:
            raise ValueError(f"fit(distributed=True): {n} samples cannot be shared by {self.size} ranks")
        drawn = int(np.random.default_rng().integers(0, 2**63)) if seed is None else seed
        self.seed = int(self.comm.bcast(drawn, 0))  # rank 0's: the ranks shuffle alike
        self.reducer, self.grads = self._gradient_buffer(model)
        self.comm_time = 0.0
        self.steps_done = 0
        self.totals: List[int] = []
        self.last_rows: List[int] = []

    # -- set-up
    def _agree(self, mine: Dict[str, Any]) -> None:
        """Every rank must train the same model on as many samples with the same settings; a rank that differs
        would wait in a collective the others never enter (a hang) or reduce mismatched buffers."""
        every = self.comm.allgather(mine)
        for key in mine:
            vals = [e.get(key) for e in every]
            if any(v != vals[0] for v in vals):
                shown = ", ".join(f"rank {i}: {v!r}" for i, v in enumerate(vals))
                raise ValueError(f"fit(distributed=True): the ranks differ in {key} ({shown}); every rank must call "
                                 f"fit with the same model, data size and arguments")

    def _gradient_buffer(self, model: Any) -> Tuple[Any, FlatGradients]:
        """The reducer's flat buffer holding every gradient, so a step's reduction is one pass (hetnn._shared_reduce).
        """
        from .._shared_reduce import GradientReducer

        dt = np.dtype(str(self.params[0].value.dtype))
        if model.dtype == np.float16:
            raise TypeError("fit(distributed=True): a float16 model's loss scaling would skip steps on some ranks and "
                            "not others; use dtype='bfloat16' (no scaling) or 'float32'")
        if dt not in (np.float32, np.float64):
            raise TypeError(f"fit(distributed=True): the model's parameters are {dt}; data-parallel training "
                            f"reduces float32 or float64 gradients (build the model with dtype='float32')")
        total = flat_size(self.params)
        cached = getattr(model, "_dp_grads", None)
        if cached is not None and cached[0].comm is self.comm and cached[0].buffer.dtype == dt and \
                cached[0].size == total and all(p.grad is g for p, g in zip(self.params, cached[2])):
            return cached[0], cached[1]
        reducer = GradientReducer(self.comm, self.MPI, total, dt)
        grads = FlatGradients(self.params, model._device._dev, reducer.buffer)
        if grads.zero_copy:  # the window's memory lives as long as the model's gradients
            model._dp_grads = (reducer, grads, [p.grad for p in self.params])
        return reducer, grads

    def synchronise(self, optimizer: Any) -> None:
        """Rank 0's parameters and optimizer state (the arrays the Trainer holds) on every rank."""
        arrays = [p.value for p in self.params] + [optimizer._state[k] for k in sorted(optimizer._state)]
        host = [a.to_numpy() for a in arrays]
        flat = np.concatenate([h.reshape(-1) for h in host]) if host else np.zeros(0)
        self.comm.Bcast(flat, root=0)
        if self.rank != 0:
            o = 0
            for a, h in zip(arrays, host):
                a.write_from(flat[o:o + h.size].reshape(h.shape).astype(h.dtype, copy=False))
                o += h.size

    # -- each epoch
    def epoch_rows(self, rng: np.random.Generator) -> np.ndarray:
        """This rank's rows for the epoch, in step order: global batches of bs * world_size rows of the shared
        permutation; the last, shorter one split as evenly as the ranks allow (dropped when it has fewer rows than
        ranks, so that every rank runs the same number of steps)."""
        order = rng.permutation(self.n) if self.shuffle else np.arange(self.n)
        g = self.bs * self.size
        full, rem = divmod(self.n, g)
        parts = [order[k * g + self.rank * self.bs:k * g + (self.rank + 1) * self.bs] for k in range(full)]
        self.totals = [g] * full
        if rem >= self.size:
            cuts = [full * g + (rem * r) // self.size for r in range(self.size + 1)]
            parts.append(order[cuts[self.rank]:cuts[self.rank + 1]])
            self.last_rows = [cuts[r + 1] - cuts[r] for r in range(self.size)]
            self.totals.append(rem)
        self.steps_done = 0
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)

    @property
    def samples(self) -> int:
        """The rows the last planned epoch trains on, over all ranks."""
        return int(sum(self.totals))

    def step_hook(self) -> Optional[Callable[[int], None]]:
        """The Trainer's hook: this step's gradients averaged over the ranks (None in a world of one)."""
        if self.size == 1:
            return None
        grads, reducer = self.grads, self.reducer
        even = [1.0 / self.size] * self.size

        def reduce(rows: int) -> None:
            t0 = time.perf_counter()
            k = self.steps_done
            self.steps_done += 1
            grads.gather()
            # each rank's mean weighted by its rows (all equal but in the last, uneven step)
            reducer.reduce(even if self.totals[k] == self.bs * self.size else
                           [r / self.totals[k] for r in self.last_rows])
            grads.scatter()
            self.comm_time += time.perf_counter() - t0
        return reduce

    def reduce_sums(self, sums: Sequence[float], epoch_time: float) -> Tuple[List[float], float, float]:
        """The epoch's loss and metric sums over all ranks; the slowest rank's epoch time and the ranks' mean time
        in gradient reduction."""
        buf = np.array([*sums, self.comm_time], np.float64)
        self.comm.Allreduce(self.MPI.IN_PLACE, buf, op=self.MPI.SUM)
        slowest = self.comm.allreduce(epoch_time, op=self.MPI.MAX)
        comm_time = float(buf[-1]) / self.size
        self.comm_time = 0.0
        return [float(v) for v in buf[:-1]], float(slowest), comm_time

    def any_rank(self, flag: bool) -> bool:
        """True on every rank when it is on any (a callback stopping one rank stops all)."""
        return bool(self.comm.allreduce(bool(flag), op=self.MPI.LOR))
