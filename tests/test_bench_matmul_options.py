"""The matmul suite's options for the published GEMM study: MxNxK shapes on the command line, both aggregates (total
FLOP over total time, and the arithmetic mean of GFLOP/s), and value labels on the plot's bars."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from hetnn.bench import run

FAST = dict(device="cpu", compare="numpy", repeat=3, warmup=1, max_duration=0.2, progress=False)


def test_shapes_given_as_mxnxk_on_the_command_line():
    env = dict(os.environ)
    env.pop("HETNN_POISON", None)
    p = subprocess.run([sys.executable, "-m", "hetnn", "bench", "matmul", "--shapes", "64x48x32,17X5x9", "--device",
                        "cpu", "--compare", "none", "--repeat", "3", "--warmup", "1", "--no-output", "--no-progress",
                        "-v"],  # -v: the M, N and K columns
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    assert "custom shapes" in p.stdout
    lines = [ln.split() for ln in p.stdout.splitlines()]
    assert any(ln[:4] == ["64x48x32", "64", "48", "32"] for ln in lines if len(ln) > 4), p.stdout
    assert any(ln[:4] == ["17x5x9", "17", "5", "9"] for ln in lines if len(ln) > 4), p.stdout


@pytest.mark.parametrize("bad", ["3x4", "0x4x4", "axbxc", "64x48x32,", "huge"])
def test_bad_shapes_on_the_command_line(bad):
    p = subprocess.run([sys.executable, "-m", "hetnn", "bench", "matmul", "--shapes", bad, "--device", "cpu",
                        "--no-output"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "--shapes" in p.stderr, p.stderr


def test_both_aggregates():
    res = run("matmul", shapes=[(96, 64, 80), (300, 20, 40), (8, 8, 8)], **FAST)
    for lib in ("hetnn", "numpy"):
        shapes = [r for r in res.rows if r["library"] == lib and not r["shape"].startswith("aggregate")]
        (agg,) = [r for r in res.rows if r["library"] == lib and r["shape"].startswith("aggregate")]
        kept = [r for r in shapes if r["shape"] in agg["shapes"]]
        assert agg["mean_gflops"] == pytest.approx(np.mean([r["gflops"] for r in kept]))
        flops = sum(2.0 * r["M"] * r["N"] * r["K"] for r in kept)
        assert agg["gflops"] == pytest.approx(flops / (sum(r["wall_ms"] for r in kept) / 1e3) / 1e9)
    assert "mean GFLOP/s" in next(line for line in res.text.splitlines() if line.startswith("shape"))


def test_bars_carry_their_values(monkeypatch):
    pytest.importorskip("matplotlib")
    from hetnn.bench import matmul

    # a ceiling beyond reach: a low one read beside other load would leave flagged bars unlabelled, as it should
    monkeypatch.setattr(matmul, "fp32_peak_gflops", lambda device: 1e9)
    res = run("matmul", shapes=[(96, 64, 80), (128, 128, 128)], **FAST)
    fig = res.plot()["matmul"]
    ax = fig.axes[0]
    texts = {t.get_text() for t in ax.texts}  # bar_label writes annotations
    want = {format(r["gflops"], ".0f") for r in res.rows if not r["shape"].startswith("aggregate")}
    assert want <= texts, (want, texts)


@pytest.mark.parametrize("user_value", [None, "20"])
def test_measuring_commands_run_with_short_openblas_spins(tmp_path, user_value):
    """OpenBLAS's threads spun 0.1 s after each NumPy call, and every interleaved turn after NumPy's waited for them:
    `bench` and `study` run in a fresh interpreter with OPENBLAS_THREAD_TIMEOUT=24 unless the user set a value,
    which the report's environment records."""
    env = dict(os.environ)
    env.pop("HETNN_POISON", None)
    env.pop("OPENBLAS_THREAD_TIMEOUT", None)
    if user_value:
        env["OPENBLAS_THREAD_TIMEOUT"] = user_value
    prefix = tmp_path / "r"
    p = subprocess.run([sys.executable, "-m", "hetnn", "bench", "matmul", "--shapes", "32x32x32", "--device", "cpu",
                        "--compare", "numpy", "--repeat", "3", "--warmup", "1", "--no-progress", "--output",
                        str(prefix)], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    (path,) = tmp_path.glob("r*.json")
    got = json.loads(path.read_text())["environment"]["environment"].get("OPENBLAS_THREAD_TIMEOUT")
    assert got == (user_value or "24"), got


def test_in_process_runs_say_how_to_shorten_openblas_spins(monkeypatch):
    """In a notebook NumPy's OpenBLAS keeps its 0.1 s spin, and each interleaved turn after NumPy's waits for it:
    the report says what to set, where that applies (OpenBLAS, more than one thread, nothing set)."""
    from threadpoolctl import threadpool_info

    from hetnn import _cpus, _openblas

    if not any(p.get("internal_api") == "openblas" for p in threadpool_info()):
        pytest.skip("NumPy's BLAS here is not OpenBLAS")
    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    monkeypatch.setattr(_openblas, "can_shorten", lambda: False)  # an OpenBLAS without the calls to shorten it
    note = _cpus.spin_note(2)
    assert note is not None and "OPENBLAS_THREAD_TIMEOUT=24" in note and "before NumPy is imported" in note
    assert _cpus.spin_note(1) is None  # one thread: no workers to wait for
    monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", "28")
    assert _cpus.spin_note(2) is None  # the user chose


def test_in_process_runs_shorten_openblas_spins(monkeypatch):
    """A notebook's NumPy loaded OpenBLAS with its 0.1 s spin: a run on a plan of two threads (as the suites,
    the studies, compare and free_cpus run) ends the workers and restarts them with the short spin, so a NumPy
    call leaves no worker busy after it; the default is back after the run."""
    import time

    from hetnn import _cpus, _openblas

    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    if not _openblas.can_shorten():
        pytest.skip("no OpenBLAS here that exports openblas_read_env and blas_thread_shutdown_")
    assert _cpus.spin_note(2) is None  # nothing to tell the user: the run does it
    allowed = _cpus.allowed_cpus()
    plan = _cpus.CpuPlan(allowed, allowed, 0.0, {}, 0.0, fixed=2)
    a = np.random.default_rng().standard_normal((384, 384))
    with _cpus.use(plan, pin=False):
        assert _openblas.timeouts() and set(_openblas.timeouts()) == {24}
        spun = []
        for _ in range(3):
            a @ a
            t0 = time.process_time()
            time.sleep(0.25)
            spun.append(time.process_time() - t0)
        assert "OPENBLAS_THREAD_TIMEOUT" not in os.environ
    # 2^24 cycles are a few ms; 2^28 were 0.05 s of a worker's CPU after each call on a quiet Zen 4 (a busy
    # machine only shortens a spin)
    assert min(spun) < 0.02, spun
    assert set(_openblas.timeouts()) == {28}  # the library's own default again
