"""Repeats spread over worker processes (hetnn._workers): recorded in a worker, merged call by call in the reporting
process, resampled by process in the ratio intervals."""
import json
import subprocess
import sys

import numpy as np
import pytest

import hetnn
import hetnn.study
from hetnn import _workers
from hetnn._timing import Case, interleave
from hetnn.bench.stats import paired, ratio_interval


@pytest.fixture
def clean_workers():
    yield
    _workers._recorder = None
    _workers._merger = None


def _cases(calls):
    return [Case("a", lambda: calls.append("a")), Case("b", lambda: calls.append("b"))]


def test_a_worker_records_and_the_reporting_process_merges(tmp_path, clean_workers):
    path = str(tmp_path / "w.json")
    _workers._recorder = _workers._Recorder(path)
    _workers.set_key("matmul #0")
    interleave(_cases([]), n_warmup=0, n_repeat=3, settle=False)
    _workers._recorder.write()
    _workers._recorder = None
    with open(path) as f:
        recording = json.load(f)
    _workers._merger = _workers._Merger([recording, recording])
    _workers.set_key("matmul #0")
    a, b = interleave(_cases([]), n_warmup=0, n_repeat=4, settle=False)
    assert a.n_repeat == b.n_repeat == 3 + 3 + 4
    procs = list(_workers.process_of(a.rounds))
    assert procs == [0] * 3 + [1] * 3 + [2] * 4
    assert a.noise["processes"] == 3 and _workers._merger.unmatched == 0
    # pairs stay within a process and round
    x, y = paired(list(a.wall_times), list(b.wall_times), list(a.rounds), list(b.rounds))
    assert len(x) == len(y) == 10


def test_a_call_with_other_cases_is_not_merged(tmp_path, clean_workers):
    recording = {"maxpool #0": [{"names": ["other"], "results": []}]}
    _workers._merger = _workers._Merger([recording])
    _workers.set_key("maxpool #0")
    a, _ = interleave(_cases([]), n_warmup=0, n_repeat=2, settle=False)
    assert a.n_repeat == 2 and _workers._merger.unmatched == 1
    _workers.set_key("matmul #0")  # a key the worker never ran
    a, _ = interleave(_cases([]), n_warmup=0, n_repeat=2, settle=False)
    assert a.n_repeat == 2 and _workers._merger.unmatched == 2


def test_the_interval_covers_the_processes_disagreement():
    """Two processes that each measured a tight ratio, 1.0 and 1.2: over rounds alone the interval is narrow around
    their pooled median; resampled by process first, it reaches both."""
    rng = np.random.default_rng(7)
    x = list(1.0 + 0.002 * rng.standard_normal(20))
    y = list(np.r_[1.0 + 0.002 * rng.standard_normal(10), 1.2 + 0.002 * rng.standard_normal(10)])
    rounds = list(range(10)) + [_workers.ROUND_STRIDE + r for r in range(10)]
    pair = paired(x, y, rounds, rounds)
    assert pair.processes == [0] * 10 + [1] * 10
    two_stage = ratio_interval([pair])
    rounds_only = ratio_interval([(x, y)])
    assert two_stage.low < 1.01 and two_stage.high > 1.19, two_stage
    assert rounds_only.high - rounds_only.low < two_stage.high - two_stage.low


def test_one_process_keeps_the_plain_bootstrap():
    x, y = [1.0, 1.1, 0.9, 1.05], [2.0, 2.2, 1.8, 2.1]
    pair = paired(x, y, [0, 1, 2, 3], [0, 1, 2, 3])
    assert pair.processes is None and pair == (x, y)
    assert ratio_interval([pair]) == ratio_interval([(x, y)])


@pytest.mark.parametrize("bad", [0, -1, 65, 1.5, "3"])
def test_bad_process_counts(bad):
    with pytest.raises(ValueError, match="--processes"):
        hetnn.bench.run("matmul", processes=bad, shapes=[(4, 4, 4)], device="cpu", compare="none")


def test_the_command_spreads_its_repeats_over_processes(tmp_path):
    out = tmp_path / "r"
    p = subprocess.run([sys.executable, "-m", "hetnn", "bench", "matmul", "--shapes", "8x8x8,16x8x4", "--device",
                        "cpu", "--compare", "numpy", "--repeat", "4", "--warmup", "1", "--processes", "2",
                        "--threads", "1", "--no-progress", "--output", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "processes: 2, one after another" in p.stdout
    assert "median of up to 4 synchronized repeats, 2 in each of 2 processes" in p.stdout
    assert "differed between the processes" not in p.stdout and "failed" not in p.stdout
    rows = [r for r in json.loads((tmp_path / "r.json").read_text())["rows"] if "times_ms" in r]
    assert rows and all(sorted(set(_workers.process_of(r["rounds"]))) == [0, 1] for r in rows)
    assert all(len(r["times_ms"]) == 4 for r in rows)


def test_a_failing_worker_is_said_and_its_repeats_missing(monkeypatch):
    monkeypatch.setattr(sys, "executable", sys.executable + "-missing")
    with pytest.raises(FileNotFoundError):
        _workers.run_workers({}, 1)
    monkeypatch.undo()
    recs, notes = _workers.run_workers({"options": {"bogus_option": 1}, "suite": "matmul"}, 1)
    assert recs == [] and len(notes) == 1 and "worker process 1 failed" in notes[0]


def test_the_default_spreads_only_runs_with_repeats_enough_for_each_process():
    Options = hetnn.bench.Options
    assert Options().process_count() == 3                      # 20 repeats
    assert Options(quick=True).process_count() == 3            # 10
    assert Options(repeat=5).process_count() == 1              # a process would hold fewer than 3
    assert Options(repeat=7).process_count() == 2
    assert Options(repeat=2, processes=2).process_count() == 2  # asked for: as asked


def test_few_repeats_get_an_interval_that_covers():
    """Three paired epochs: the bootstrap of medians covered the true ratio in 75 % of these draws (five repeats:
    92.5 %), a 95 % interval in name only; Student's t over the log ratios covers it in 94.5 % (94.3 %)."""
    rng = np.random.default_rng(11)
    hits = {3: 0, 5: 0}
    trials = 400
    for n in hits:
        for _ in range(trials):
            x = np.exp(rng.normal(0.0, 0.1, n))
            y = 2.0 * np.exp(rng.normal(0.0, 0.1, n))
            r = ratio_interval([(list(x), list(y))])
            hits[n] += r.low <= 2.0 <= r.high
    assert all(h >= 0.9 * trials for h in hits.values()), hits


def test_a_study_spreads_its_repeats_over_processes():
    rep = hetnn.study.run("maxpool", quick=True, processes=2, repeat=4, max_duration=4.0, sizes=[4, 16],
                          device="cpu")
    assert "processes: 2, one after another" in rep.text and "differed between the processes" not in rep.text
    timed = [r for r in rep.rows if r.get("times_ms")]
    assert timed and all(len(r["times_ms"]) == 4 for r in timed)  # 2 repeats in each process
    assert rep.environment["processes"] == 2 and rep.environment["config"]["repeat"] == 4


def test_studies_that_train_take_one_process():
    with pytest.raises(ValueError, match="trains networks"):
        hetnn.study.run("cnn", quick=True, processes=2)
    with pytest.raises(ValueError, match="processes must be an integer"):
        hetnn.study.run("maxpool", quick=True, processes=0)
