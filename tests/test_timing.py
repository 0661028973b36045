import math
import time

import numpy as np
import pytest

import hetnn
from hetnn.bench.peak import fp32_peak_gflops


def test_benchmark_counts_and_statistics(device):
    a = hetnn.asarray(np.ones((64, 64), np.float32), device=device)
    c = hetnn.empty((64, 64), "float32", device=device)
    # rerun=False: every repeat kept, so the count is exact also beside a busy neighbour (re-runs are tested apart)
    r = hetnn.benchmark(hetnn.matmul, (a, a), {"out": c}, n_warmup=2, n_repeat=7, flops=2 * 64**3,
                        device=device, rerun=False)
    assert r.n_repeat == 7 and r.wall_times.shape == (7,) and r.device_times.shape == (7,)
    assert (r.wall_times > 0).all() and (r.device_times > 0).all()
    assert r.min <= r.median <= r.wall["max"] and r.std >= 0
    assert r.commands_per_call >= 1  # the GEMM kernel, plus packing kernels on CPU-shaped OpenCL devices
    # an unsynchronised timer would report more than the device can do
    assert 0 < r.gflops <= 1.1 * (fp32_peak_gflops(device) or math.inf)
    assert "matmul" in repr(r) and "GFLOP/s" in repr(r) and device.id in repr(r)
    np.testing.assert_array_equal(c.numpy(), np.full((64, 64), 64, np.float32))


def test_device_time_lies_within_wall_time(device):
    # Device work happens between the two synchronizations, so its duration cannot exceed the wall time.
    a = hetnn.asarray(np.ones((256, 256), np.float32), device=device)
    c = hetnn.empty((256, 256), "float32", device=device)
    r = hetnn.benchmark(hetnn.matmul, (a, a), {"out": c}, n_warmup=1, n_repeat=5, device=device)
    assert (r.device_times <= r.wall_times * 1.02 + 2e-5).all()


def test_device_time_sums_every_command(device):
    a = hetnn.asarray(np.ones((128, 128), np.float32), device=device)
    c1 = hetnn.empty((128, 128), "float32", device=device)
    c2 = hetnn.empty((128, 128), "float32", device=device)

    def one():
        hetnn.matmul(a, a, out=c1)

    def three():  # two kernels and a download
        hetnn.matmul(a, a, out=c1)
        hetnn.matmul(a, a, out=c2)
        c2.numpy()

    r1 = hetnn.benchmark(one, n_warmup=1, n_repeat=5, device=device)
    r3 = hetnn.benchmark(three, n_warmup=1, n_repeat=5, device=device)
    assert r3.commands_per_call == 2 * r1.commands_per_call + 1
    start = time.perf_counter()
    with hetnn.Stopwatch(device) as t:
        three()
    wall = time.perf_counter() - start  # measured apart from the Stopwatch: its device time must fit inside
    names = [rec["name"] for rec in t.records if not rec["name"].startswith("matmul:")]  # drop packing steps
    assert names == ["matmul", "matmul", "d2h"]
    assert 0 < t.device_time <= wall
    assert t.records[-1]["bytes"] == 128 * 128 * 4


def test_numpy_function_has_no_device_time():
    x = np.ones((32, 32))
    r = hetnn.benchmark(np.dot, (x, x), n_warmup=0, n_repeat=3, device=[])
    assert r.n_repeat == 3 and np.isnan(r.device_times).all() and math.isnan(r.device["median"])
    assert "device" not in repr(r)


def test_max_duration_stops_early():
    import time

    r = hetnn.benchmark(time.sleep, (0.02,), n_warmup=0, n_repeat=1000, max_duration=0.1, device=[])
    assert 1 <= r.n_repeat <= 10


def test_timer_synchronizes_and_measures(device):
    a = hetnn.asarray(np.ones((200, 200), np.float32), device=device)
    with hetnn.Stopwatch(device) as t:
        c = hetnn.matmul(a, a)
    assert t.elapsed > 0 and t.device_time > 0
    assert t.device_time <= t.elapsed * 1.02 + 2e-5
    np.testing.assert_array_equal(c.numpy(), np.full((200, 200), 200, np.float32))
    assert "Stopwatch(" in repr(t)


def test_nested_timers(device):
    a = hetnn.asarray(np.ones((32, 32), np.float32), device=device)
    with hetnn.Stopwatch(device) as outer:
        hetnn.matmul(a, a)
        with hetnn.Stopwatch(device) as inner:
            hetnn.matmul(a, a)
    assert len(outer.records) == 2 * len(inner.records) >= 2


def test_synchronize_accepts_all_forms(device):
    hetnn.synchronize()
    hetnn.synchronize(device)
    hetnn.synchronize(device.id)
    hetnn.synchronize([device, "cpu"])
    with pytest.raises(ValueError):
        hetnn.synchronize("no-such-device")


@pytest.mark.parametrize("kw,exc", [({"n_repeat": 0}, ValueError), ({"n_warmup": -1}, ValueError),
                                    ({"n_repeat": 2.5}, TypeError), ({"max_duration": -1}, ValueError),
                                    ({"flops": "many"}, ValueError)])
def test_benchmark_bad_arguments(kw, exc):
    with pytest.raises(exc):
        hetnn.benchmark(lambda: None, **kw)


def test_benchmark_needs_callable():
    with pytest.raises(TypeError, match="callable"):
        hetnn.benchmark(42)


def test_spread_pct_is_the_interquartile_range_over_the_median():
    from hetnn._measurement import spread_pct

    assert spread_pct([1.0, 1.0, 1.0, 1.0]) == 0.0
    assert abs(spread_pct([1.0, 2.0, 3.0, 4.0, 5.0]) - 100 * (4.0 - 2.0) / 3.0) < 1e-12
    assert abs(spread_pct([1.0, 2.0, 3.0, 4.0, 500.0]) - 100 * 2.0 / 3.0) < 1e-12  # one outlier moves nothing
    assert np.isnan(spread_pct([1.0, 2.0, 3.0]))
    r = hetnn.benchmark(lambda: None, n_warmup=0, n_repeat=8, device=[])
    assert r.spread_pct >= 0 and "IQR" in repr(r) and r.as_dict()["spread_pct"] == r.spread_pct


def test_a_call_longer_than_the_budget_is_warmed_up_once():
    """NumPy's sliding-window pooling of a large layer takes half a second a call: two warm-up calls in each of the
    quick report's three processes cost more than the row's whole timed budget."""
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.06)

    (r,) = hetnn.interleave([hetnn.Case("slow", slow)], n_warmup=3, n_repeat=2, max_duration=0.05, rerun=False)
    assert r.first_use["warmup_calls"] == 1 and r.first_use["best_call_s"] >= 0.05
    assert len(calls) == 1 + r.n_repeat
    calls.clear()
    (r,) = hetnn.interleave([hetnn.Case("quick", lambda: calls.append(1))], n_warmup=3, n_repeat=2,
                            max_duration=0.05, rerun=False)
    assert r.first_use["warmup_calls"] == 3


def test_a_call_slow_for_a_few_calls_after_the_other_case_is_timed_as_in_a_loop():
    """A memory-bound call after the other case's turn and the settling found its data gone from the last-level
    cache and ran slow for two or three calls (NumPy's tanh 2.7-3.1 ms, 1.5 in a loop); the untimed calls before
    the timed one stopped after 2 ms, and it was timed slow: hetnn's tanh read 1.0x NumPy's speed, 0.6x in a loop.
    They now go on until one runs near the case's best call (within PRECALL_MAX_S)."""
    import time

    cold = [0]

    def other():
        cold[0] = 2  # its turn leaves the next two calls of the memory-bound case slow

    def memory_bound():
        time.sleep(0.004 if cold[0] else 0.001)
        cold[0] = max(0, cold[0] - 1)

    a, _ = hetnn.interleave([hetnn.Case("memory bound", memory_bound), hetnn.Case("other", other)],
                            n_warmup=3, n_repeat=5, rerun=False)
    assert np.median(a.wall_times) < 0.0025, a.wall_times  # 1 ms as in a loop; 4 ms after 2 ms of untimed calls


def test_untimed_calls_before_a_timed_one_run_as_it_does(monkeypatch):
    """A short case gets untimed calls right before each timed one, so that it is timed as in a loop; they must run
    with its devices' recorder open, as the timed call does (made without it, the timed call paid ~10 us more than
    in a loop for its recording path: a 12 us op timed at 25, against peers timed without a recorder)."""
    from hetnn import _timing

    cpu = hetnn.device("cpu")
    events = []
    real_open, real_close = _timing._Capture.open, _timing._Capture.close

    def open_(self, details=True):
        if self.devs:
            events.append("open")
        return real_open(self, details)

    def close_(self):
        if self.devs:
            events.append("close")
        return real_close(self)

    monkeypatch.setattr(_timing._Capture, "open", open_)
    monkeypatch.setattr(_timing._Capture, "close", close_)
    x = hetnn.asarray(np.ones((4, 4), np.float32), device=cpu)

    def fn():
        events.append("call")
        hetnn.add(x, x)

    n_warmup = 2
    results = hetnn.interleave([hetnn.Case("short", fn, devices=[cpu]), hetnn.Case("peer", lambda: None)],
                               n_warmup=n_warmup, n_repeat=4, rerun=False)
    assert results[0].n_repeat == 4
    calls = [i for i, e in enumerate(events) if e == "call"][n_warmup:]  # warm-up calls are first use: apart
    assert len(calls) > 4  # the timed calls and the untimed ones before them
    for i in calls:
        before = [e for e in events[:i] if e != "call"]
        assert before and before[-1] == "open", f"call {i} made outside a recording: {events}"
