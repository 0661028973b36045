import os
import subprocess
import sys

import hetnn


def _run(*args, timeout=300):
    env = dict(os.environ)
    env.pop("HETNN_POISON", None)
    return subprocess.run([sys.executable, "-m", "hetnn", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_bench_quick_reports_every_device_and_numpy(tmp_path):
    r = _run("bench", "--quick", "--output", str(tmp_path / "quick"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    for d in hetnn.devices():
        rows = [ln for ln in lines if f" hetnn    {d.id} " in ln + " " or f"hetnn    {d.id}" in ln]
        assert len(rows) == 4, (d.id, r.stdout)
        for row in rows:  # GFLOP/s positive, error small
            cells = row.split()
            assert float(cells[-3]) > 0 and float(cells[-2]) < 1e-4
    assert sum(" numpy " in ln for ln in lines) == 4
    assert (tmp_path / "quick.csv").exists() and (tmp_path / "quick.json").exists()


def test_bench_unknown_device_is_an_error_not_a_crash():
    r = _run("bench", "--quick", "--device", "no-such-device")
    assert r.returncode == 2 and "no device matches" in r.stderr


def test_help():
    r = _run("--help")
    assert r.returncode == 0 and "devices" in r.stdout and "bench" in r.stdout
