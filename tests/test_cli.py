import csv
import os
import subprocess
import sys
import time

import pytest

import hetnn
from hetnn.bench.arrays import LARGE_BYTES, large_bytes
from hetnn.bench.arrays import OPS as ARRAY_OPS


def _run(*args, timeout=300):
    env = dict(os.environ)
    env.pop("HETNN_POISON", None)
    return subprocess.run([sys.executable, "-m", "hetnn", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_bench_quick_reports_every_device_and_numpy(tmp_path):
    # the timeout bounds a hang only: the run takes 3 minutes on a quiet 2-vCPU machine, twice that beside other load
    r = _run("bench", "--quick", "--output", str(tmp_path / "quick"), timeout=1500)
    assert r.returncode == 0, r.stderr
    with open(tmp_path / "quick.csv") as f:
        all_rows = list(csv.DictReader(f))
    assert (tmp_path / "quick.json").exists()
    for suite in ("peak", "matmul", "maxpool", "mlp", "transfer", "arrays"):  # a real PNG per suite
        with open(tmp_path / f"quick-{suite}.png", "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    flagged = [(x["suite"], x["device"], x.get("library"), x.get("shape") or x.get("widths"), x["ceiling_error"])
               for x in all_rows if x.get("flagged") and x.get("ceiling_under_load") not in (True, "True")]
    # (a ceiling measured while the machine was busy is a lower bound: rows above it say so, and are not errors)
    assert not flagged, ("a figure above its measured ceiling", flagged, r.stdout[:3000])
    rows = [x for x in all_rows if x["suite"] == "matmul"]
    pool = [x for x in all_rows if x["suite"] == "maxpool"]
    for dev in [d.id for d in hetnn.devices()]:
        mine = [x for x in pool if x["library"] == "hetnn" and x["device"] == dev]
        assert any(x["case"] == "large k2s2" for x in mine), r.stdout
        for x in mine:
            assert float(x["fwd_gbps"]) > 0 and float(x["max_abs_err"]) == 0.0
    assert "STREAM triad" in r.stdout and "sweep" in r.stdout
    # every process timed the same runs of the suites spread over processes; the others are this process's alone
    assert "differed between the processes" not in r.stdout
    for lib, dev in [("hetnn", d.id) for d in hetnn.devices()] + [("numpy", "host")]:
        mine = [x for x in rows if x["library"] == lib and x["device"] == dev]
        shapes = [x for x in mine if not x["shape"].startswith("aggregate")]
        # the aggregate is left out when preemption spoiled too many shapes (test_bench_api checks exactly when)
        assert len(shapes) == 4 and len(mine) - len(shapes) <= 1, (lib, dev, r.stdout)
        for x in shapes:
            assert float(x["gflops"]) > 0 and float(x["max_rel_err"]) < 1e-5
        assert dev in r.stdout
    assert "hetnn cpu / NumPy" in r.stdout
    mlp = [x for x in all_rows if x["suite"] == "mlp" and x["part"] == "fashion-mnist"]
    topo = [x for x in all_rows if x["suite"] == "mlp" and x["part"] == "topology"]
    for dev in [d.id for d in hetnn.devices()]:
        (m,) = [x for x in mlp if x["library"] == "hetnn" and x["device"] == dev]
        # one epoch of 784-128-10 from the same weights: a trained model, not a placeholder
        assert float(m["test_accuracy"]) > 0.7 and 0 < float(m["epoch_s"]) < 60
        assert len([x for x in topo if x["device"] == dev]) == 3 * 5 * 2  # depths x widths 50..800 x batches
    (npy,) = [x for x in mlp if x["library"] == "numpy"]
    assert abs(float(npy["test_accuracy"]) - float(m["test_accuracy"])) < 0.1
    assert "784-128-10 epoch: hetnn cpu" in r.stdout
    pk = {x["device"]: x for x in all_rows if x["suite"] == "peak"}
    assert set(pk) == {d.id for d in hetnn.devices()} and all(float(x["fp32_gflops"]) > 0 for x in pk.values())
    arr = [x for x in all_rows if x["suite"] == "arrays"]
    big = f"{large_bytes() >> 20} MiB"  # beyond this host's last-level cache; the transposed add keeps 64 MiB
    want = {(op, sz) for op in ARRAY_OPS
            for sz in ("1 KiB", f"{LARGE_BYTES >> 20} MiB" if op == "add transposed" else big)}
    for lib, dev in [("hetnn", d.id) for d in hetnn.devices()] + [("numpy", "host")]:
        mine = [x for x in arr if x["library"] == lib and x["device"] == dev]
        assert {(x["op"], x["size"]) for x in mine} == want, (lib, dev)
        assert all(float(x["max_rel_err"]) < 1e-5 and float(x["us"]) > 0 for x in mine), (lib, dev)
    assert f"add {big}: hetnn cpu / NumPy (speed)" in r.stdout
    tr = [x for x in all_rows if x["suite"] == "transfer"]
    for d in hetnn.devices():  # the quick report's copies: no page-locked rows (`bench transfer` has them)
        mine = [x for x in tr if x["device"] == d.id]
        assert {x["direction"] for x in mine} == {"h2d", "d2h", "d2d"} and all(float(x["gbps"]) > 0 for x in mine)
    assert "pinned / pageable" not in r.stdout


def test_bench_unknown_device_is_an_error_not_a_crash():
    r = _run("bench", "--quick", "--device", "no-such-device")
    assert r.returncode == 2 and "no device matches" in r.stderr


def test_bench_bad_sweep_max_is_a_usage_error():
    r = _run("bench", "maxpool", "--sweep-max", "100")
    assert r.returncode == 2 and "--sweep-max must be a power of two" in r.stderr


@pytest.mark.parametrize("args, message", [
    (("--epochs", "0"), "--epochs must be >= 1, got 0"),
    (("--max-width", "0"), "--max-width must be >= 50, got 0"),
    (("--sweep-max", "0"), "--sweep-max must be a power of two >= 4, got 0"),
    (("--threads", "0"), "--threads: expected auto, default or thread counts >= 1"),
    (("--dtype", "float13"), "--dtype takes float32, float64, float16, bfloat16, tf32 (float32 data at precision "
                             "'high'; comma-separated), got 'float13'"),
    (("--shapes", "12x"), "--shapes: '12x' is not MxNxK"),
    (("--shapes", "nonsense"), "--shapes: unknown shape set 'nonsense'"),
])
def test_bench_bad_values_fail_before_any_suite_or_worker_runs(args, message):
    """Checked before any suite runs: 0 once meant "default" and the whole run started; a bad --dtype or --shapes
    once started the worker processes (each failing on it) and the suites before matmul."""
    t0 = time.perf_counter()
    r = _run("bench", "all", "--no-output", *args)
    assert r.returncode == 2 and message in r.stderr and "benchmark" not in r.stdout
    assert "worker process" not in r.stdout + r.stderr
    assert time.perf_counter() - t0 < 30


def test_bench_unwritable_output_fails_before_the_run(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = _run("bench", "matmul", "--output", str(blocker / "sub" / "run"))  # a directory under a file
    assert r.returncode == 2 and "--output: cannot write" in r.stderr and "benchmark" not in r.stdout


@pytest.mark.parametrize("args, message", [(("--sizes", "abc"), "--sizes: 'abc' is not N or MxNxK"),
                                           (("--sizes", ""), "--sizes: '' is not N or MxNxK"),
                                           (("--budget", "-1"), "--budget must be a number of seconds > 0")])
def test_tune_bad_values_name_the_option(args, message):
    for kernel in ("gemm", "conv"):
        r = _run("tune", kernel, *args)
        assert r.returncode == 2 and message in r.stderr, kernel


def test_bench_unknown_suite():
    r = _run("bench", "convolution")
    assert r.returncode == 2 and "unknown suite" in r.stderr


def test_help():
    r = _run("--help")
    assert r.returncode == 0 and "devices" in r.stdout and "bench" in r.stdout


def test_version_and_plain_text_help():
    r = _run("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"hetnn {hetnn.__version__}"
    assert hetnn.__version__ != "unknown"
    for args in (("--help",), ("bench", "--help")):
        r = _run(*args)
        assert r.returncode == 0 and "``" not in r.stdout and ":func:" not in r.stdout


def test_progress_and_compare_none_speak_the_python_api_s_words(tmp_path):
    r = _run("bench", "transfer", "--quick", "--device", "cpu", "--compare", "none", "--no-progress",
             "--no-output", "--repeat", "1", "--warmup", "0")
    assert r.returncode == 0, r.stderr
    r = _run("bench", "-x")
    assert r.returncode == 2 and "unrecognized arguments: -x" in r.stderr
    import inspect

    import hetnn.bench as bench

    assert bench.Options(compare="none").peers("numpy,torch") == []
    assert bench.Options().progress is None  # None: bars when someone watches, as on the command line
    assert inspect.signature(bench.run).parameters["suite"].default is None  # the CLI's default suite
