"""Per-step hooks of fit: Callback.on_batch_end (step, size, the batch's loss against float64 NumPy, the scheduled
rate, the step's time) and fit(step_times=True); neither changes what training computes; errors surface."""
import numpy as np
import pytest

from hetnn import nn, optim


def _model(device):
    return nn.Sequential([nn.Dense(4, 8, "relu", seed=0), nn.Dense(8, 3, seed=1)], device=device)


def _data(rng, n=56):
    return rng.standard_normal((n, 4)).astype(np.float32), rng.integers(0, 3, n)


class _Steps(nn.Callback):
    def __init__(self):
        self.logs = []

    def on_batch_end(self, step, logs, model):
        self.logs.append(logs)


def _ce64(sd, x, y):
    h = np.maximum(x.astype(np.float64) @ sd["0.weight"].T.astype(np.float64) + sd["0.bias"], 0)
    h = h @ sd["1.weight"].T.astype(np.float64) + sd["1.bias"]
    h = h - h.max(axis=1, keepdims=True)
    return float(-(h[np.arange(len(y)), y] - np.log(np.exp(h).sum(axis=1))).mean())


def test_on_batch_end_sees_every_step(device, rng):
    x, y = _data(rng)  # 56 rows in batches of 16: 16, 16, 16, 8
    m = _model(device)
    first = _ce64(m.state_dict(), x[:16], y[:16])
    rec = _Steps()
    sched = optim.StepLR(3, 0.5)
    h = m.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(m.parameters(), lr=0.2, lr_schedule=sched), epochs=2,
              batch_size=16, shuffle=False, callbacks=[rec])
    assert [r["batch"] for r in rec.logs] == [0, 1, 2, 3] * 2
    assert [r["size"] for r in rec.logs] == [16, 16, 16, 8] * 2
    assert [r["lr"] for r in rec.logs] == pytest.approx([sched(s, 0.2) for s in range(8)])
    assert rec.logs[0]["loss"] == pytest.approx(first, rel=1e-4)  # step 0's batch at the initial weights
    for e in range(2):  # the steps' losses weighted by their rows are the epoch's loss
        steps = rec.logs[4 * e:4 * e + 4]
        mean = sum(r["loss"] * r["size"] for r in steps) / 56
        assert mean == pytest.approx(h.history["loss"][e], rel=1e-5)
    assert all(r["step_time"] > 0 for r in rec.logs) and h.step_times == []


def test_step_times_and_hooks_change_nothing_in_training(device, rng):
    x, y = _data(rng)
    out = []
    for kw in ({}, {"step_times": True, "callbacks": [_Steps()]}):
        m = _model(device)
        h = m.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(m.parameters(), lr=0.1, momentum=0.9), epochs=3,
                  batch_size=16, seed=4, **kw)
        out.append((m.state_dict(), h))
    for k in out[0][0]:
        np.testing.assert_array_equal(out[0][0][k], out[1][0][k])
    assert out[0][1].history["loss"] == out[1][1].history["loss"]
    times = out[1][1].step_times
    assert len(times) == 3 and all(len(t) == 4 and min(t) > 0 for t in times)
    assert out[0][1].step_times == []


def test_an_error_in_on_batch_end_surfaces_and_ends_the_fit(device, rng):
    x, y = _data(rng)
    ended = []

    class Boom(nn.Callback):
        def on_batch_end(self, step, logs, model):
            if step == 2:
                raise RuntimeError("stop at step 2")

        def on_train_end(self, model):
            ended.append(True)
    m = _model(device)
    with pytest.raises(RuntimeError, match="stop at step 2"):
        m.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(m.parameters(), lr=0.1), epochs=2, batch_size=16,
              callbacks=[Boom()])
    assert ended == [True]
    assert np.all(np.isfinite(m.predict(x[:4])))  # the model still works


def test_per_step_work_is_refused_where_it_cannot_run(device, rng):
    import hetnn

    devices = [device] + [d for d in hetnn.devices() if d.id != device.id][:1]  # or the device twice
    devices = devices if len(devices) > 1 else [device, device]
    x, y = _data(rng)
    m = _model(device)
    before = m.state_dict()
    with pytest.raises(TypeError, match="fit: step_times must be a bool, got 'yes'"):
        m.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(m.parameters(), lr=0.1), step_times="yes")
    with pytest.raises(ValueError, match="per-step callbacks .* run on one device"):
        m.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(m.parameters(), lr=0.1), callbacks=[_Steps()],
              devices=devices)
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v, before[k])
