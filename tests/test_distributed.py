"""hetnn.distributed on 2 local ranks (mpirun --oversubscribe -np 2, one thread each): collectives on every device
against NumPy, mismatched arrays refused on every rank, a rank that raises ending the job instead of a hang, and
data-parallel fit (replicas identical every epoch, equal to single-process training on the global batch)."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

MPIRUN = Path(sys.executable).with_name("mpirun")
pytestmark = pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None or not MPIRUN.exists(),
                                reason="hetnn[distributed] (mpi4py, Open MPI) is not installed")
WORKER = Path(__file__).parent / "distributed" / "worker.py"


def _mpirun(case, timeout=120):
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    return subprocess.run([str(MPIRUN), "--oversubscribe", "-np", "2", sys.executable, str(WORKER), case],
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


def _ok(case, timeout=180):
    p = _mpirun(case, timeout)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"rank 0: {case} ok" in p.stdout and f"rank 1: {case} ok" in p.stdout, p.stdout


def test_distributed_fit_equals_single_process_on_the_global_batch():
    _ok("fit_matches_single_process")


def test_distributed_cnn_with_dropout_keeps_replicas_identical():
    _ok("cnn_and_dropout")


def test_ranks_calling_fit_differently_get_a_clear_error():
    p = _mpirun("fit_arguments_differ")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "rank 0: differing arguments refused" in p.stdout and "rank 1: differing arguments refused" in p.stdout


def test_a_rank_that_raises_in_fit_ends_the_job_instead_of_a_hang():
    p = _mpirun("rank_raises_in_fit", timeout=90)
    assert p.returncode != 0
    assert "rank 1 fails in fit on purpose" in p.stderr and "aborting every rank" in p.stderr


def test_fit_distributed_before_init_and_in_a_world_of_one():
    p = subprocess.run([sys.executable, str(WORKER), "fit_single"], capture_output=True, text=True, timeout=90,
                       env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
    assert p.returncode == 0 and "rank 0: fit_single ok" in p.stdout, p.stdout + p.stderr
