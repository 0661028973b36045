"""The benchmark over MPI ranks: the scaling suite launched from the command line and from Python (2 local ranks,
one thread each), a suite run with --distributed gathering one table with host and rank per row, a failing rank
ending the job, bad launch options; Amdahl's fit and the rank counts."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hetnn.bench import Options, run_suites
from hetnn.bench.scaling import amdahl, rank_counts

MPIRUN = Path(sys.executable).with_name("mpirun")
needs_mpi = pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None or not MPIRUN.exists(),
                               reason="hetnn[distributed] (mpi4py, Open MPI) is not installed")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def _hetnn(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "hetnn", *args], capture_output=True, text=True, timeout=timeout,
                          env=ENV)


@needs_mpi
def test_scaling_suite_from_the_command_line(tmp_path):
    p = _hetnn("bench", "scaling", "--quick", "--ranks", "2", "--output", str(tmp_path / "s"))
    assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads((tmp_path / "s.json").read_text())
    rows = data["rows"]
    assert data["environment"]["world_size"] == 2 and (tmp_path / "s-scaling.png").exists()
    assert {(r["workload"], r["mode"], r["ranks"]) for r in rows} == \
        {(w, m, k) for w in ("mlp", "lenet") for m in ("strong", "weak") for k in (1, 2)}
    for r in rows:
        batch = {"mlp": 256, "lenet": 64}[r["workload"]]
        assert r["global_batch"] == (batch * r["ranks"] if r["mode"] == "weak" else batch)
        assert r["epoch_s"] > 0 and r["samples_per_s"] == pytest.approx(r["samples"] / r["epoch_s"])
        assert r["efficiency"] == pytest.approx(r["speedup"] / r["ranks"])
        if r["ranks"] == 1:
            assert r["speedup"] == pytest.approx(1.0) and r["comm_us"] is None
        else:
            assert r["reduction"] == "shared memory" and r["comm_us"] > 0 and 0 < r["comm_share"] < 1
    strong = {r["workload"]: r for r in rows if r["mode"] == "strong" and r["ranks"] == 1}
    weak = {r["workload"]: r for r in rows if r["mode"] == "weak" and r["ranks"] == 2}
    assert all(weak[w]["samples"] == strong[w]["samples"] for w in weak)  # weak at N ranks: the whole set
    assert "mlp strong scaling: 2 ranks =" in p.stdout and "95% CI; flags: " in p.stdout
    # a fit from the clean points, or the plain statement that there were too few (a busy machine)
    assert "Amdahl serial fraction" in p.stdout or "Amdahl: not enough clean points" in p.stdout
    assert all("preempted" in r and "unreliable" in r for r in rows)


@needs_mpi
def test_scaling_suite_from_python_launches_its_ranks():
    import hetnn.bench
    from hetnn import distributed as dist

    r = hetnn.bench.run("scaling", quick=True, ranks=2, threads=1)
    assert not dist.is_initialized()  # this process started no MPI
    assert len(r.rows) == 8 and {row["threads"] for row in r.rows} == {1}
    assert "hetnn scaling benchmark" in r.text and r.environment["world_size"] == 2


@needs_mpi
def test_a_suite_on_every_rank_gathers_one_table(tmp_path):
    p = subprocess.run([str(MPIRUN), "--oversubscribe", "-np", "2", sys.executable, "-m", "hetnn", "bench",
                        "transfer", "--quick", "--device", "cpu", "--distributed", "--no-progress", "--output",
                        str(tmp_path / "t")], capture_output=True, text=True, timeout=300, env=ENV)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = json.loads((tmp_path / "t.json").read_text())["rows"]
    by_rank = {0: [r for r in rows if r["rank"] == 0], 1: [r for r in rows if r["rank"] == 1]}
    assert by_rank[0] and len(by_rank[0]) == len(by_rank[1]) and all(r["host"] for r in rows)
    assert "=== rank 1 on" in p.stdout and "all 2 ranks:" in p.stdout and "[transfer]" in p.stdout


@needs_mpi
def test_a_failing_rank_ends_the_distributed_benchmark():
    common = [sys.executable, "-m", "hetnn", "bench", "transfer", "--quick", "--distributed", "--no-output"]
    p = subprocess.run([str(MPIRUN), "--oversubscribe", "-np", "1", *common, "--device", "cpu", ":", "-np", "1",
                        *common, "--device", "nosuch:7"], capture_output=True, text=True, timeout=180, env=ENV)
    assert p.returncode != 0
    assert "hetnn: rank 1: ValueError" in p.stderr and "nosuch" in p.stderr


@pytest.mark.parametrize("args,message", [
    (["scaling", "--ranks", "0"], "--ranks must be an integer >= 1"),
    (["scaling", "--ranks", "100000"], "ranks per core"),  # once launched 100,000 processes
    (["scaling", "--hostfile", "/nonexistent/hosts"], "--hostfile: no such file"),
    (["matmul", "--ranks", "2"], "--ranks and --hostfile launch the scaling suite"),
    (["scaling", "--threads", "1,2"], "one thread count per rank"),
])
def test_bad_launch_options(args, message):
    p = _hetnn("bench", *args, "--no-output", timeout=120)
    assert p.returncode == 2 and message in p.stderr, p.stdout + p.stderr


def test_bad_scaling_options_from_python():
    import hetnn.bench
    with pytest.raises(ValueError, match="--ranks must be"):
        hetnn.bench.run("scaling", ranks=-1)
    with pytest.raises(ValueError, match="runs over MPI ranks"):  # the suite itself, outside an MPI job
        run_suites("scaling", Options(), lambda text: None)


def test_amdahl_fit_recovers_the_serial_fraction():
    for f in (0.0, 0.05, 0.3):
        rows = [{"ranks": k, "speedup": 1 / (f + (1 - f) / k)} for k in (1, 2, 4, 8)]
        assert amdahl(rows) == pytest.approx(f, abs=1e-12)
    assert amdahl([{"ranks": 1, "speedup": 1.0}]) is None
    noisy = [{"ranks": k, "speedup": s} for k, s in ((2, 1.9), (4, 3.3), (8, 5.1))]
    want = np.linalg.lstsq(np.array([[1 - 1 / k] for k in (2, 4, 8)]),
                           np.array([1 / s - 1 / k for k, s in ((2, 1.9), (4, 3.3), (8, 5.1))]), rcond=None)[0][0]
    assert amdahl(noisy) == pytest.approx(want)


def test_rank_counts():
    assert rank_counts(1) == [1] and rank_counts(2) == [1, 2] and rank_counts(6) == [1, 2, 4, 6]
    assert rank_counts(8) == [1, 2, 4, 8]


def test_scaling_plot_with_an_interval_printed_below_its_speedup():
    """CI found it: a speedup of 1.7013 whose interval's upper bound is 1.7013 printed as "0.71-1.70"; the plot read
    the printed bounds and matplotlib refused the negative error bar."""
    pytest.importorskip("matplotlib")
    from hetnn.bench.plots import plot_scaling
    rows = [dict(suite="scaling", workload="mlp", mode=m, ranks=k, threads=1, speedup=s, efficiency=s / k,
                 speedup_ci=f"{lo:.2f}-{hi:.2f}", speedup_low=lo, speedup_high=hi)
            for m in ("strong", "weak") for k, s, lo, hi in ((1, 1.0, 1.0, 1.0), (2, 1.7013, 0.7132, 1.7013))]
    assert plot_scaling(rows, {}) is not None
