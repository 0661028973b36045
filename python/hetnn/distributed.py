"""Collectives over MPI on hetnn Arrays and NumPy arrays (``pip install 'hetnn[distributed]'``: mpi4py and Open MPI
from PyPI). Launch with ``mpirun -np N python script.py``; each process is one rank::

    from hetnn import distributed as dist
    dist.init()                                  # a rank that raises now aborts the whole job, not a hang
    g = dist.allreduce(grad, op="mean")          # the mean over ranks, on grad's device
    w = dist.broadcast(w, root=0)                # rank 0's values everywhere

Arrays on an OpenCL device are staged through host memory; CPU-device arrays are read in place. Each collective
returns a new array of the kind it was given (a hetnn Array on the same device, or NumPy)."""
from __future__ import annotations

import contextlib
import os
import sys
import time
import types
from typing import Any, Iterator, Optional

import numpy as np

from ._array import Array, asarray

_OPS = ("sum", "mean", "max", "min")
_DTYPES = ("float32", "float64", "int8", "uint8", "int32", "int64")  # those MPI has types for
_comm: Any = None
_excepthook_installed = False


def _mpi() -> Any:
    if "mpi4py.MPI" not in sys.modules and "OMPI_MCA_osc" not in os.environ:
        # Open MPI's UCX one-sided component prints "Error: OSC UCX component priority set inside component query
        # failed" on every window where UCX finds no network (a laptop, a VM); hetnn's windows are shared memory.
        # Set OMPI_MCA_osc yourself to choose otherwise.
        os.environ["OMPI_MCA_osc"] = "^ucx"
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise ImportError("hetnn.distributed needs mpi4py and an MPI library: pip install 'hetnn[distributed]' "
                          f"({type(exc).__name__}: {exc})") from None
    return MPI


def init() -> None:
    """Starts MPI (idempotent) and makes an uncaught exception on any rank abort every rank with its traceback:
    a rank that dies while the others wait in a collective would otherwise hang the job."""
    global _comm, _excepthook_installed
    MPI = _mpi()
    if _comm is None:
        _comm = MPI.COMM_WORLD
    if not _excepthook_installed:
        previous = sys.excepthook

        def abort_job(kind: type, value: BaseException, tb: Optional[types.TracebackType]) -> None:
            previous(kind, value, tb)
            sys.stderr.write(f"hetnn.distributed: rank {_comm.Get_rank()} of {_comm.Get_size()} raised "
                             f"{kind.__name__}; aborting every rank\n")
            sys.stderr.flush()
            _comm.Abort(1)
        sys.excepthook = abort_job
        _excepthook_installed = True


def is_initialized() -> bool:
    """Whether init() has run in this process."""
    return _comm is not None


def _world() -> Any:
    if _comm is None:
        raise RuntimeError("hetnn.distributed: call hetnn.distributed.init() first")
    return _comm


def rank() -> int:
    """This process's rank, 0 .. world_size() - 1."""
    return int(_world().Get_rank())


def world_size() -> int:
    """The number of ranks in the job."""
    return int(_world().Get_size())


def barrier() -> None:
    """Waits until every rank has reached it."""
    _world().Barrier()


@contextlib.contextmanager
def _within(comm: Any) -> Iterator[None]:
    """Collectives and distributed fit over ``comm`` (a sub-communicator of the world) inside the block: the scaling
    suite trains on the first k ranks while the others wait."""
    global _comm
    before, _comm = _world(), comm
    try:
        yield
    finally:
        _comm = before


def _idle_barrier(comm: Any, poll: float = 0.002) -> None:
    """A barrier whose waiting sleeps instead of spinning (MPI_Barrier polls at full speed: a rank waiting for a
    measurement on the same machine would take a core from it)."""
    req = comm.Ibarrier()
    while not req.Test():
        time.sleep(poll)


def _host(x: Any, what: str) -> np.ndarray:
    if isinstance(x, Array):
        view = x._a.host_numpy()  # CPU device: the array's own memory
        if view is None:
            view = x.numpy()
    else:
        view = np.asarray(x)
    if view.dtype.name not in _DTYPES:
        raise TypeError(f"hetnn.distributed.{what}: x must hold one of {', '.join(_DTYPES)}, got "
                        f"{type(x).__name__} of dtype {view.dtype}")
    return np.ascontiguousarray(view)


def _like(x: Any, result: np.ndarray) -> Any:
    return asarray(result, device=x.device) if isinstance(x, Array) else result


def _check_same(host: np.ndarray, what: str) -> None:
    """Every rank must pass the same shape and dtype (a mismatch would corrupt memory or hang inside MPI)."""
    mine = (host.shape, host.dtype.str)
    seen = _world().allgather(mine)
    if any(s != mine for s in seen):
        raise ValueError(f"hetnn.distributed.{what}: the ranks passed different arrays: " +
                         ", ".join(f"rank {i}: shape {s[0]} dtype {np.dtype(s[1]).name}" for i, s in enumerate(seen)))


def allreduce(x: Any, op: str = "sum") -> Any:
    """The element-wise ``op`` ("sum", "mean", "max", "min") of x over all ranks, on every rank."""
    if op not in _OPS:
        raise ValueError(f"hetnn.distributed.allreduce: op must be one of {', '.join(_OPS)}, got {op!r}")
    host = _host(x, "allreduce")
    _check_same(host, "allreduce")
    if op == "mean" and host.dtype.kind not in "f":
        raise TypeError(f"hetnn.distributed.allreduce: op 'mean' needs floating-point data, got {host.dtype}")
    MPI = _mpi()
    out = np.empty_like(host)
    _world().Allreduce(host, out, op={"sum": MPI.SUM, "mean": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}[op])
    if op == "mean":
        out /= world_size()
    return _like(x, out)


def broadcast(x: Any, root: int = 0) -> Any:
    """Rank ``root``'s x on every rank (every rank passes an array of the same shape and dtype)."""
    if not isinstance(root, int) or isinstance(root, bool) or not 0 <= root < world_size():
        raise ValueError(f"hetnn.distributed.broadcast: root must be a rank in 0..{world_size() - 1}, got {root!r}")
    host = _host(x, "broadcast")
    _check_same(host, "broadcast")
    buf = host.copy()
    _world().Bcast(buf, root=root)
    return _like(x, buf)


def allgather(x: Any) -> Any:
    """Every rank's x stacked along a new first axis (world_size(), *x.shape), on every rank."""
    host = _host(x, "allgather")
    _check_same(host, "allgather")
    out = np.empty((world_size(),) + host.shape, host.dtype)
    _world().Allgather(host, out)
    return _like(x, out)


__all__ = ["init", "is_initialized", "rank", "world_size", "barrier", "allreduce", "broadcast", "allgather"]
