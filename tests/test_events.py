"""hetnn.Event on every device: recorded around work, it completes with it, and the device's time between two events
lies within the host's time around them; misuse is a clear exception."""
import time

import numpy as np
import pytest

import hetnn


def test_events_bracket_the_work_between_them(device, rng):
    x = rng.standard_normal((384, 384)).astype(np.float32)
    a = hetnn.asarray(x, device=device)
    start, end = hetnn.Event(device), hetnn.Event(device)
    t0 = time.perf_counter()
    assert start.record() is start
    y = a
    for _ in range(4):
        y = hetnn.matmul(y, a) * (1 / 384)
    end.record()
    end.synchronize()
    wall = time.perf_counter() - t0
    assert end.done and end.query() and start.done
    elapsed = start.elapsed_time(end)
    assert 0 < elapsed <= wall + 1e-3, (elapsed, wall)
    assert end.elapsed_time(start) == pytest.approx(-elapsed)
    want = x.astype(np.float64)
    for _ in range(4):
        want = want @ x / 384
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-4)  # the work itself ran
    assert "recorded" in repr(end)


def test_an_event_recorded_again_marks_the_later_point(device):
    first = hetnn.Event(device).record()
    again = hetnn.Event(device).record()
    time.sleep(0.01)
    hetnn.zeros((1000,), device=device).numpy()
    again.record()
    assert first.elapsed_time(again) > 0


def test_event_misuse_is_a_clear_error(device):
    e = hetnn.Event(device)
    for call in (lambda: e.done, e.synchronize, lambda: e.elapsed_time(hetnn.Event(device).record())):
        with pytest.raises(ValueError, match="never recorded"):
            call()
    with pytest.raises(TypeError, match="must be a hetnn.Event"):
        hetnn.Event(device).record().elapsed_time(1.0)
    others = [d for d in hetnn.devices() if d.id != device.id]
    if others:
        with pytest.raises(ValueError, match="not comparable"):
            hetnn.Event(device).record().elapsed_time(hetnn.Event(others[0]).record())
    assert hetnn.Event().device.id == hetnn.get_default_device().id
