"""hetnn.distributed on 2 local ranks (mpirun --oversubscribe -np 2, one thread each): collectives on every device
against NumPy, mismatched arrays refused on every rank, a rank that raises ending the job instead of a hang, and
data-parallel fit (replicas identical every epoch, equal to single-process training on the global batch)."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

MPIRUN = Path(sys.executable).with_name("mpirun")
pytestmark = pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None or not MPIRUN.exists(),
                                reason="hetnn[distributed] (mpi4py, Open MPI) is not installed")
WORKER = Path(__file__).parent / "distributed" / "worker.py"


def _mpirun(case, timeout=120, ranks=2, **env_vars):
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", **env_vars)
    return subprocess.run([str(MPIRUN), "--oversubscribe", "-np", str(ranks), sys.executable, str(WORKER), case],
                          capture_output=True, text=True, timeout=timeout, env=env)


def test_collectives_on_every_device_match_numpy():
    p = _mpirun("collectives")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "rank 0: collectives ok" in p.stdout and "rank 1: collectives ok" in p.stdout


def test_ranks_passing_different_arrays_get_a_clear_error():
    p = _mpirun("mismatch")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "rank 0: mismatch refused" in p.stdout and "rank 1: mismatch refused" in p.stdout


def test_a_rank_that_raises_ends_the_job_instead_of_a_hang():
    p = _mpirun("one_rank_raises", timeout=60)  # subprocess.TimeoutExpired (a hang) fails the test
    assert p.returncode != 0
    assert "rank 1 fails on purpose" in p.stderr and "rank 1 of 2 raised RuntimeError; aborting every rank" in p.stderr


def test_before_init_and_bad_arguments():
    from hetnn import distributed as dist  # importing does not start MPI (this process never does)
    with pytest.raises(RuntimeError, match="init"):
        dist.rank()
    # one process without mpirun is a world of one (MPI started in a child: not in the test process, which forks)
    p = subprocess.run([sys.executable, str(WORKER), "single"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
    assert p.returncode == 0 and "rank 0: single ok" in p.stdout, p.stdout + p.stderr


def _ok(case, timeout=180, ranks=2, **env_vars):
    p = _mpirun(case, timeout, ranks, **env_vars)
    assert p.returncode == 0, p.stdout + p.stderr
    assert all(f"rank {r}: {case} ok" in p.stdout for r in range(ranks)), p.stdout
    assert "Error" not in p.stderr, p.stderr  # Open MPI's component noise stays out of the user's output


@pytest.mark.parametrize("ranks,env,mode", [
    (2, {}, "shared memory"),
    (4, {"HETNN_DIST_RANKS_PER_NODE": "2"}, "hierarchical"),  # two "machines" of two ranks
    (2, {"HETNN_DIST_REDUCTION": "allreduce"}, "MPI_Allreduce")], ids=["shared", "hierarchical", "allreduce"])
def test_distributed_fit_equals_single_process_on_the_global_batch(ranks, env, mode):
    _ok("fit_matches_single_process", 240, ranks, HETNN_TEST_REDUCTION=mode, **env)


def test_distributed_cnn_with_dropout_keeps_replicas_identical():
    _ok("cnn_and_dropout")


def test_ranks_calling_fit_differently_get_a_clear_error():
    p = _mpirun("fit_arguments_differ")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "rank 0: differing arguments refused" in p.stdout and "rank 1: differing arguments refused" in p.stdout


def test_ranks_building_different_models_get_a_clear_error():
    p = _mpirun("fit_models_differ")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "rank 0: differing models refused" in p.stdout and "rank 1: differing models refused" in p.stdout


def test_a_rank_that_raises_in_fit_ends_the_job_instead_of_a_hang():
    p = _mpirun("rank_raises_in_fit", timeout=90)
    assert p.returncode != 0
    assert "rank 1 fails in fit on purpose" in p.stderr and "aborting every rank" in p.stderr


def test_a_rank_that_dies_in_fit_ends_the_job_instead_of_a_hang():
    p = _mpirun("rank_dies_in_fit", timeout=90)  # a hang fails with TimeoutExpired
    assert p.returncode != 0
    assert "rank 0: rank_dies_in_fit ok" not in p.stdout


def test_fit_distributed_before_init_and_in_a_world_of_one():
    p = subprocess.run([sys.executable, str(WORKER), "fit_single"], capture_output=True, text=True, timeout=90,
                       env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
    assert p.returncode == 0 and "rank 0: fit_single ok" in p.stdout, p.stdout + p.stderr


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("sources", [1, 2, 3, 5])
def test_shared_memory_reduction_pass_against_numpy(rng, dtype, sources):
    """The one pass of the node-local reduction: targets[lo:hi] = sum_k w_k * sources_k[lo:hi], the rest untouched
    (sources among the targets, as the segments are, and one target that is not); every target gets the same bits.
    The slice spans several of the pass's blocks and ends inside one."""
    from hetnn._loader import _core
    src = [rng.standard_normal(3000).astype(dtype) for _ in range(sources)]
    extra = np.full(3000, np.nan, dtype)
    before = [s.copy() for s in src]
    w = list(rng.uniform(0.1, 1.0, sources))
    _core._reduce_slices(src, w, 600, 2900, src + [extra])
    want = sum(wk * b[600:2900].astype(np.float64) for wk, b in zip(w, before))
    for s, b in zip(src + [extra], before + [np.full(3000, np.nan, dtype)]):
        np.testing.assert_allclose(s[600:2900], want, rtol=1e-6 if dtype == "float32" else 1e-14, atol=1e-6)
        assert np.array_equal(s[600:2900], extra[600:2900])
        assert np.array_equal(s[:600], b[:600], equal_nan=True) and np.array_equal(s[2900:], b[2900:], equal_nan=True)


def test_shared_memory_reduction_pass_refuses_bad_arguments():
    from hetnn._loader import _core
    a = np.zeros(8, np.float32)
    with pytest.raises(ValueError, match="one weight per source"):
        _core._reduce_slices([a], [1.0, 2.0], 0, 8, [a])
    with pytest.raises(TypeError, match="float32 or float64"):
        _core._reduce_slices([np.zeros(8, np.int32)], [1.0], 0, 8, [a])
    with pytest.raises(TypeError, match="one dtype"):
        _core._reduce_slices([a], [1.0], 0, 8, [np.zeros(8)])
    with pytest.raises(ValueError, match=r"slice \[0, 9\) outside a segment of 8"):
        _core._reduce_slices([a], [1.0], 0, 9, [a])
    ro = np.zeros(8, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        _core._reduce_slices([a], [1.0], 0, 8, [ro])
