"""Run by tests/test_distributed.py under mpirun: one case per launch (argv[1]); every rank checks its results
against NumPy and exits non-zero on a mismatch."""
import sys

import numpy as np

import hetnn
from hetnn import distributed as dist


def collectives():
    r, n = dist.rank(), dist.world_size()
    rng = np.random.default_rng(100 + r)
    mine = rng.standard_normal((3, 5)).astype(np.float32)
    every = [np.random.default_rng(100 + i).standard_normal((3, 5)).astype(np.float32) for i in range(n)]
    for dev in hetnn.devices():
        x = hetnn.asarray(mine, device=dev)
        s = dist.allreduce(x)
        assert isinstance(s, hetnn.Array) and s.device == dev, (type(s), dev)
        np.testing.assert_allclose(s.numpy(), np.sum(every, axis=0, dtype=np.float64), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(dist.allreduce(x, op="mean").numpy(), np.mean(every, axis=0, dtype=np.float64),
                                   rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(dist.allreduce(x, op="max").numpy(), np.max(every, axis=0))
        np.testing.assert_array_equal(dist.allreduce(x, op="min").numpy(), np.min(every, axis=0))
        np.testing.assert_array_equal(dist.broadcast(x, root=n - 1).numpy(), every[n - 1])
        np.testing.assert_array_equal(dist.allgather(x).numpy(), np.stack(every))
    ints = np.arange(6, dtype=np.int64) * (r + 1)
    got = dist.allreduce(ints)
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, np.arange(6) * sum(range(1, n + 1)))
    big = np.full(100_000, r + 1, np.float32)  # a 100k-parameter gradient
    np.testing.assert_array_equal(dist.allreduce(big), np.full(100_000, n * (n + 1) / 2, np.float32))
    dist.barrier()


def mismatch():
    """Ranks passing different shapes: a clear error on every rank, not memory corruption."""
    try:
        dist.allreduce(np.zeros(3 + dist.rank(), np.float32))
    except ValueError as exc:
        assert "rank 0: shape (3,)" in str(exc) and "rank 1: shape (4,)" in str(exc), exc
        print(f"rank {dist.rank()}: mismatch refused", flush=True)
        return
    raise AssertionError("a shape mismatch was accepted")


def single():
    """One process, no mpirun: a world of one; bad arguments refused."""
    import pytest
    assert (dist.rank(), dist.world_size()) == (0, 1)
    with pytest.raises(ValueError, match="op must be one of"):
        dist.allreduce(np.ones(2, np.float32), op="prod")
    with pytest.raises(ValueError, match="root must be a rank"):
        dist.broadcast(np.ones(2, np.float32), root=1)
    with pytest.raises(TypeError, match="float16"):
        dist.allreduce(np.ones(2, np.float16))
    with pytest.raises(TypeError, match="'mean' needs floating-point"):
        dist.allreduce(np.ones(2, np.int32), op="mean")
    np.testing.assert_array_equal(dist.allgather(np.arange(3.0)), [[0.0, 1.0, 2.0]])


def one_rank_raises():
    """Rank 1 raises while rank 0 waits in a collective: the job must end (non-zero), not hang."""
    if dist.rank() == 1:
        raise RuntimeError("rank 1 fails on purpose")
    dist.allreduce(np.ones(4, np.float32))


if __name__ == "__main__":
    dist.init()
    {"collectives": collectives, "mismatch": mismatch, "single": single,
     "one_rank_raises": one_rank_raises}[sys.argv[1]]()
    print(f"rank {dist.rank()}: {sys.argv[1]} ok", flush=True)
