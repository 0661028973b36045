"""HETNN_TEST_SEED=<the seed pytest's header printed> replays a run's inputs, under pytest-xdist too: every worker
draws from the controller's seed (each drew its own before, so a CI failure's inputs could not be replayed)."""
import json
import os
import subprocess
import sys

import pytest

PROBE = os.environ.get("HETNN_SEED_PROBE_OUT")


@pytest.mark.skipif(PROBE is None, reason="run by test_the_printed_seed_replays_every_workers_inputs")
@pytest.mark.parametrize("case", range(6))
def test_probe(rng, case):
    with open(os.path.join(PROBE, f"{case}.json"), "w") as f:
        json.dump({"pid": os.getpid(), "draw": rng.integers(0, 2**62, 4).tolist()}, f)


def _run(out, seed=None):
    env = {k: v for k, v in os.environ.items() if k != "HETNN_TEST_SEED"}
    env["HETNN_SEED_PROBE_OUT"] = str(out)
    if seed is not None:
        env["HETNN_TEST_SEED"] = seed
    r = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "-k", "probe",
                        os.path.abspath(__file__)], env=env, capture_output=True, text=True, timeout=300,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert r.returncode == 0, r.stdout + r.stderr
    out.mkdir(exist_ok=True)
    got = {}
    for case in range(6):
        with open(out / f"{case}.json") as f:
            got[case] = json.load(f)
    return r.stdout, got


def test_the_printed_seed_replays_every_workers_inputs(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    text, first = _run(tmp_path / "a")
    seed = [w.split("=", 1)[1] for w in text.split() if w.startswith("HETNN_TEST_SEED=")]
    assert seed, text
    assert len({v["pid"] for v in first.values()}) == 2  # the cases ran in both workers
    _, again = _run(tmp_path / "b", seed[0])
    assert {c: v["draw"] for c, v in again.items()} == {c: v["draw"] for c, v in first.items()}
