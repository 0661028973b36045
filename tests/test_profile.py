"""hetnn.profile: every command of the block recorded with its op and operands, per-op totals that add up to the
device time a Stopwatch measures for the same work, and a loadable Chrome trace."""
import json
import time

import numpy as np

import hetnn
from hetnn import nn, optim


def test_profile_records_ops_with_operands(device, rng, tmp_path):
    a = hetnn.asarray(rng.standard_normal((32, 48)).astype(np.float32), device=device)
    b = hetnn.asarray(rng.standard_normal((40, 48)).astype(np.float32), device=device)
    x = hetnn.asarray(rng.standard_normal((2, 3, 8, 8)).astype(np.float32), device=device)
    hetnn.synchronize(device)
    wall0 = time.perf_counter()
    with hetnn.profile(device) as prof:
        with hetnn.Stopwatch(device) as t:  # the same commands, seen by both
            c = hetnn.matmul(a, b, transpose_b=True, activation="relu")
            y = hetnn.max_pool2d(x, 3, stride=2, padding=1)
    wall = time.perf_counter() - wall0  # measured apart from the profiler: its device time cannot exceed it
    assert c.shape == (32, 40) and y.shape == (2, 3, 4, 4)
    names = [r["name"] for r in prof.records]
    assert any(n.startswith("matmul") for n in names) and "max_pool2d" in names
    mm = [r for r in prof.records if r["name"] == "matmul"]
    assert mm and mm[0]["detail"] == "(32, 48) @ (40, 48)^T, relu"
    pool = [r for r in prof.records if r["name"] == "max_pool2d"][0]
    assert pool["detail"].startswith("(2, 3, 8, 8) k=(3, 3) s=(2, 2) p=(1, 1)")
    assert 0 < prof.device_time <= wall, (prof.device_time, wall)
    assert all(r["end"] >= r["start"] for r in prof.records)
    assert abs(prof.device_time - t.device_time) <= 0.05 * t.device_time
    assert "% of device time" in prof.table() and "operands" in prof.table(by_detail=True)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    trace = json.loads(path.read_text())
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(spans) == len(prof.records)
    instants = [e for e in trace["traceEvents"] if e["ph"] == "i"]  # one per record, in the same order
    assert len(instants) == len(spans)
    for span, enq in zip(spans, instants):  # no command starts before it was enqueued
        assert span["name"] == enq["name"] and span["ts"] >= enq["ts"] - 1e-3 and span["dur"] >= 0


def test_profile_training_per_op(device, rng):
    x = rng.random((64, 20)).astype(np.float32)
    y = rng.integers(0, 4, 64)
    model = nn.Sequential([nn.Dense(20, 16, "relu", seed=0), nn.Dense(16, 4, seed=1)], device=device)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with hetnn.profile(device) as prof:
        model.fit(x, y, loss=nn.CrossEntropyLoss(), optimizer=opt, epochs=1, batch_size=16)
    ops = {g["name"] for g in prof.totals()}
    assert {"take_rows", "loss", "sgd_update", "activation_backward", "sum_rows"} <= ops
    assert any(o.startswith("matmul") for o in ops)
    sgd = [r for r in prof.records if r["name"] == "sgd_update"]
    assert len(sgd) == 4 * 4 and {r["detail"] for r in sgd} == {"(16, 20) momentum", "(16,) momentum",
                                                                  "(4, 16) momentum", "(4,) momentum"}


def test_profile_adds_up_to_benchmark_device_time(device, rng):
    """The bench's device time and the profiler's per-op times come from the same commands: they agree (the issue
    asks for 5 %; both sum the same events, so the gap is rounding)."""
    a = hetnn.asarray(rng.standard_normal((96, 80)).astype(np.float32), device=device)
    b = hetnn.asarray(rng.standard_normal((80, 64)).astype(np.float32), device=device)
    x = hetnn.asarray(rng.standard_normal((2, 4, 16, 16)).astype(np.float32), device=device)

    def work():
        hetnn.matmul(a, b, activation="relu")
        hetnn.max_pool2d(x, 2)

    work()
    with hetnn.profile(device) as prof:
        r = hetnn.benchmark(work, n_warmup=0, n_repeat=6, device=device, rerun=False)  # every repeat profiled is kept
    per_op = sum(g["total_s"] for g in prof.totals())
    bench = float(np.sum(r.device_times))
    assert r.n_repeat == 6 and bench > 0
    assert abs(per_op - bench) <= 0.05 * bench, (per_op, bench)
    assert {"matmul", "max_pool2d"} <= {g["name"] for g in prof.totals()}


def test_a_totals_capture_folds_each_name_and_nests_with_a_detailed_one():
    """fit's device-time capture (details=False) keeps one record per command name, summed, and no operands: a fit
    of 2,000 tiny epochs had spent half its time recording every command. A detailed capture opened inside it still
    gets each command with its operands, and the outer totals include them."""
    cpu = hetnn.device("cpu")
    d = cpu._dev
    a = hetnn.asarray(np.ones((16, 16), np.float32), device=cpu)
    outer = d.capture_begin(False)
    for _ in range(5):
        hetnn.matmul(a, a)
    inner = d.capture_begin(True)
    hetnn.matmul(a, a)
    detailed = [r for r in d.capture_end(inner, True) if r[0] == "matmul"]
    for _ in range(3):
        hetnn.matmul(a, a)
    folded = [r for r in d.capture_end(outer, False) if r[0] == "matmul"]
    assert len(detailed) == 1 and "(16, 16)" in detailed[0][5]
    assert len(folded) == 3  # the five before the inner capture, the inner one, the three after
    assert [r[5] for r in folded].count("") == 2 and folded[1][5] == detailed[0][5]
    assert all(r[3] - r[2] > 0 for r in folded)
    # nothing left open: a later capture is detailed again and sees only its own commands
    tok = d.capture_begin()
    hetnn.matmul(a, a)
    again = [r for r in d.capture_end(tok) if r[0] == "matmul"]
    assert len(again) == 1 and again[0][5]


def test_fit_reports_device_time_from_the_folded_records(rng):
    cpu = hetnn.device("cpu")
    model = nn.Sequential([nn.Dense(4, 8, "relu", seed=0), nn.Dense(8, 3, seed=1)], device=cpu)
    x, y = rng.standard_normal((64, 4)).astype(np.float32), rng.integers(0, 3, 64)
    hist = model.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(model.parameters(), lr=0.1), epochs=3,
                     batch_size=8)
    assert hist.device_time.get("matmul", 0) > 0
    assert sum(hist.device_time.values()) < sum(hist.history["epoch_time"])
