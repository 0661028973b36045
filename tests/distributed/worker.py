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


def _mlp(device, dtype, dropout=False):
    from hetnn import nn
    layers = [nn.Dense(6, 8, activation="tanh", seed=1)] + ([nn.Dropout(0.3, seed=4)] if dropout else []) + \
        [nn.Dense(8, 3, seed=2)]
    return nn.Sequential(layers, device=device, dtype=dtype)


class _Snapshots:
    """A callback keeping the weights after every epoch."""

    def __init__(self):
        self.seen = []

    def on_epoch_end(self, epoch, logs, model):
        self.seen.append(np.concatenate([p.numpy().reshape(-1) for p in model.parameters()]).astype(np.float64))


def fit_matches_single_process():
    """N ranks x batch 5 against one process at batch 5N on the same shuffled data: after every epoch the replicas
    hold the same weights, equal to single-process training's (float64: to rounding; float32: to its tolerance).
    37 samples on 2 ranks: three global batches of 10 and a last one of 7 split 3 + 4 (a weighted mean). The
    reduction the test expects (shared memory, hierarchical, MPI_Allreduce) comes in HETNN_TEST_REDUCTION."""
    import os
    n_ranks = dist.world_size()
    from hetnn import optim
    rng = np.random.default_rng(7)  # the same data on every rank
    x = rng.standard_normal((37, 6))
    y = rng.integers(0, 3, 37)
    optimizers = {"sgd": lambda m: optim.SGD(m.parameters(), lr=0.1, momentum=0.9),
                  "adam": lambda m: optim.Adam(m.parameters(), lr=0.01)}
    for dev in hetnn.devices():
        for dtype, tol in (("float64", 1e-12), ("float32", 2e-5)):
            if dtype not in dev.dtypes:
                continue
            for name, make in optimizers.items():
                what = f"{dev.id} {dtype} {name}"
                model = _mlp(dev, dtype)
                if dist.rank() == 1:  # rank 0's initial weights must win
                    for p in model.parameters():
                        p.value.write_from(np.full(p.value.shape, 5.0, p.value.dtype))
                snaps, ref = _Snapshots(), _Snapshots()
                hist = model.fit(x, y, loss="cross_entropy", optimizer=make(model), epochs=3, batch_size=5, seed=11,
                                 metrics=["accuracy"], callbacks=[snaps], distributed=True)
                single = _mlp(dev, dtype)
                sh = single.fit(x, y, loss="cross_entropy", optimizer=make(single), epochs=3, batch_size=5 * n_ranks,
                                seed=11, metrics=["accuracy"], callbacks=[ref])
                for e, (w, want) in enumerate(zip(snaps.seen, ref.seen)):
                    every = dist.allgather(w)
                    assert all(np.array_equal(every[0], o) for o in every), f"{what} epoch {e}: the replicas differ"
                    err = np.max(np.abs(w - want)) / np.max(np.abs(want))
                    assert err < tol, f"{what} epoch {e}: distributed vs single process {err:.3g}"
                for k in ("loss", "accuracy"):
                    np.testing.assert_allclose(hist.history[k], sh.history[k], rtol=max(tol, 1e-6), err_msg=what)
                assert hist.params["ranks"] == n_ranks and hist.params["global_batch_size"] == 5 * n_ranks
                assert hist.params["reduction"] == os.environ["HETNN_TEST_REDUCTION"], hist.params
                assert len(hist.history["comm_time"]) == 3


def _cnn(device, dropout):
    from hetnn import nn
    return nn.Sequential([nn.Conv2d(1, 3, 3, padding=1, activation="relu", seed=1), nn.MaxPool2d(2), nn.Flatten(),
                          *([nn.Dropout(0.4, seed=3)] if dropout else []), nn.Dense(3 * 4 * 4, 4, seed=2)],
                         device=device)


def cnn_and_dropout():
    """A CNN (convolution, pooling, dropout) with AdamW on every device: without dropout equal to single-process
    training; with dropout the replicas stay identical (each rank draws its own masks) and the loss falls."""
    from hetnn import optim
    rng = np.random.default_rng(3)
    x = rng.standard_normal((40, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 4, 40)
    for dev in hetnn.devices():
        runs = []
        for dropout, distributed, bs in ((False, True, 4), (False, False, 8), (True, True, 4)):
            model = _cnn(dev, dropout)
            snaps = _Snapshots()
            h = model.fit(x, y, loss="cross_entropy", optimizer=optim.AdamW(model.parameters(), lr=0.01), epochs=4,
                          batch_size=bs, seed=5, callbacks=[snaps], distributed=distributed)
            runs.append((snaps.seen[-1], h.history["loss"]))
            if distributed:
                for e, w in enumerate(snaps.seen):
                    every = dist.allgather(w)
                    assert np.array_equal(every[0], every[1]), f"{dev.id} dropout={dropout} epoch {e}: replicas differ"
        err = np.max(np.abs(runs[0][0] - runs[1][0])) / np.max(np.abs(runs[1][0]))
        assert err < 1e-4, f"{dev.id}: CNN distributed vs single process {err:.3g}"
        assert runs[2][1][-1] < runs[2][1][0], f"{dev.id}: with dropout the loss did not fall: {runs[2][1]}"


def fit_arguments_differ():
    """A rank calling fit with another batch size: every rank raises a ValueError naming it (no hang)."""
    from hetnn import optim
    model = _mlp("cpu", "float32")
    x, y = np.zeros((20, 6), np.float32), np.zeros(20, np.int64)
    try:
        model.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(model.parameters(), lr=0.1),
                  batch_size=4 + dist.rank(), distributed=True)
    except ValueError as exc:
        assert "batch_size (rank 0: 4, rank 1: 5)" in str(exc), exc
        print(f"rank {dist.rank()}: differing arguments refused", flush=True)
        return
    raise AssertionError("ranks with different batch sizes trained")


def fit_models_differ():
    """Ranks that built different models of the same shapes (another activation, another dropout rate) would average
    the gradients of two functions: every rank raises a ValueError naming the layers; ranks differing only in their
    dropout seeds (each draws its own masks) and initialisers (rank 0's weights are broadcast) train."""
    from hetnn import nn, optim
    r = dist.rank()
    x, y = np.zeros((20, 6), np.float32), np.zeros(20, np.int64)
    for a, b in ((nn.Dense(6, 5, "relu"), nn.Dense(6, 5, "tanh")), (nn.Dropout(0.2), nn.Dropout(0.7))):
        mine = a if r == 0 else b
        model = nn.Sequential([nn.Dense(6, 6), mine, nn.Dense(6 if isinstance(mine, nn.Dropout) else 5, 3)],
                              device="cpu")
        try:
            model.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(model.parameters(), lr=0.1), batch_size=4,
                      distributed=True)
        except ValueError as exc:
            assert "the ranks differ in layers" in str(exc) and ("tanh" in str(exc) or "0.7" in str(exc)), exc
            continue
        raise AssertionError(f"ranks with different models trained: {a!r} / {b!r}")
    model = nn.Sequential([nn.Dense(6, 6, init="uniform" if r else "glorot_uniform"), nn.Dropout(0.5, seed=r),
                           nn.Dense(6, 3)], device="cpu")
    model.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(model.parameters(), lr=0.1), batch_size=4,
              distributed=True)
    print(f"rank {r}: differing models refused", flush=True)


def _fit_while_rank1_ends(end):
    """Three epochs of distributed fit where rank 1 calls end() after its first epoch and rank 0 goes on into the
    next epoch's reduction."""
    from hetnn import optim

    class Ending:
        def on_epoch_end(self, epoch, logs, model):
            if dist.rank() == 1:
                end()
    model = _mlp("cpu", "float32")
    rng = np.random.default_rng(0)
    model.fit(rng.standard_normal((64, 6)), rng.integers(0, 3, 64), loss="cross_entropy",
              optimizer=optim.SGD(model.parameters(), lr=0.1), epochs=3, batch_size=8, callbacks=[Ending()],
              distributed=True)


def rank_raises_in_fit():
    """Rank 1 raises in a callback."""
    def fail():
        raise RuntimeError("rank 1 fails in fit on purpose")
    _fit_while_rank1_ends(fail)


def rank_dies_in_fit():
    """Rank 1's process ends without a word (os._exit)."""
    import os
    _fit_while_rank1_ends(lambda: os._exit(3))


def fit_single():
    """No mpirun: fit(distributed=True) before init() is refused; after it a world of one trains as fit does."""
    import pytest
    from hetnn import optim
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((30, 6)), rng.integers(0, 3, 30)
    model = _mlp("cpu", "float64")
    with pytest.raises(RuntimeError, match="hetnn.distributed.init"):
        model.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(model.parameters(), lr=0.1), distributed=True)
    with pytest.raises(TypeError, match="distributed must be a bool"):
        model.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(model.parameters(), lr=0.1), distributed=1)
    dist.init()
    a, b = _mlp("cpu", "float64"), _mlp("cpu", "float64")
    for m, d in ((a, True), (b, False)):
        m.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(m.parameters(), lr=0.1), epochs=2, batch_size=7,
              seed=2, distributed=d)
    for p, q in zip(a.parameters(), b.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-13)


if __name__ == "__main__":
    if sys.argv[1] != "fit_single":
        dist.init()
    {"collectives": collectives, "mismatch": mismatch, "single": single, "one_rank_raises": one_rank_raises,
     "fit_matches_single_process": fit_matches_single_process, "cnn_and_dropout": cnn_and_dropout,
     "fit_arguments_differ": fit_arguments_differ, "fit_models_differ": fit_models_differ,
     "rank_raises_in_fit": rank_raises_in_fit,
     "rank_dies_in_fit": rank_dies_in_fit,
     "fit_single": fit_single}[sys.argv[1]]()
    print(f"rank {dist.rank()}: {sys.argv[1]} ok", flush=True)
