"""Learning rates per step (hetnn.optim.StepLR, ExponentialLR, CosineAnnealingLR, LinearLR, OneCycleLR): their
values (PyTorch's definitions), fit's C++ loop applying one per step across epochs (against a float64 NumPy
trajectory and against one-step fits), step() applying them, and bad values refused before any step."""
import math

import numpy as np
import pytest

from hetnn import nn, optim


def test_the_schedules_follow_pytorch_s_definitions():
    assert [optim.StepLR(3, 0.5)(s, 1.0) for s in range(7)] == [1, 1, 1, 0.5, 0.5, 0.5, 0.25]
    assert optim.ExponentialLR(0.9)(4, 2.0) == pytest.approx(2.0 * 0.9 ** 4)
    cos = optim.CosineAnnealingLR(T_max=10, eta_min=0.1)
    assert cos(0, 1.0) == 1.0 and cos(5, 1.0) == pytest.approx(0.55) and cos(10, 1.0) == cos(25, 1.0) == 0.1
    lin = optim.LinearLR(start_factor=0.25, end_factor=1.0, total_iters=4)
    assert [lin(s, 2.0) for s in range(6)] == [0.5, 0.875, 1.25, 1.625, 2.0, 2.0]
    one = optim.OneCycleLR(max_lr=1.0, total_steps=100, pct_start=0.3)
    assert one(0, 123.0) == pytest.approx(1 / 25)  # base_lr is not used
    assert one(29, 0.0) == pytest.approx(1.0)  # the top at pct_start * total_steps - 1, as PyTorch
    assert one(99, 0.0) == pytest.approx(1 / 25 / 1e4) and one(500, 0.0) == one(99, 0.0)
    # step 64: 35 of the 70 steps down from the top at 29, halfway along the cosine
    assert one(64, 0.0) == pytest.approx(4e-6 + (1 - 4e-6) * (1 + math.cos(math.pi * 35 / 70)) / 2)


def _linear_model(device):
    return nn.Sequential([nn.Dense(3, 1, seed=2)], device=device)


def test_fit_applies_a_rate_per_step_across_epochs(device, rng):
    """Plain SGD on a linear model with MSE, batches in order: the weights after two epochs of 4 steps each equal
    the float64 trajectory with the schedule's rate at steps 0..7."""
    x = rng.standard_normal((32, 3)).astype(np.float32)
    y = rng.standard_normal((32, 1)).astype(np.float32)
    m = _linear_model(device)
    sd = m.state_dict()
    w, b = sd["0.weight"].astype(np.float64), sd["0.bias"].astype(np.float64)
    sched = optim.OneCycleLR(max_lr=0.5, total_steps=8)
    opt = optim.SGD(m.parameters(), lr=0.1, lr_schedule=sched)
    m.fit(x, y, loss="mse", optimizer=opt, epochs=2, batch_size=8, shuffle=False)
    for step in range(8):
        i = slice(8 * (step % 4), 8 * (step % 4) + 8)
        xb, yb = x[i].astype(np.float64), y[i].astype(np.float64)
        g = 2 * (xb @ w.T + b - yb) / len(xb)  # d mean((h - y)^2) / dh
        lr = sched(step, 0.1)
        w, b = w - lr * g.T @ xb, b - lr * g.sum(axis=0)
    got = m.state_dict()
    np.testing.assert_allclose(got["0.weight"], w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["0.bias"], b, rtol=1e-5, atol=1e-6)
    assert opt.iterations == 8 and opt.lr == pytest.approx(sched(7, 0.1))


def test_a_scheduled_fit_equals_one_step_fits_at_the_schedule_s_rates(device, rng):
    """Momentum and a model with a hidden layer: one fit of 3 epochs x 4 steps against 12 one-step fits, each at
    the rate the schedule gives that step (set by hand): the same weights, bit for bit."""
    x = rng.standard_normal((48, 4)).astype(np.float32)
    y = rng.integers(0, 3, 48)
    sched = optim.CosineAnnealingLR(T_max=12, eta_min=0.01)
    out = []
    for by_hand in (False, True):
        m = nn.Sequential([nn.Dense(4, 8, "relu", seed=0), nn.Dense(8, 3, seed=1)], device=device)
        if by_hand:
            opt = optim.SGD(m.parameters(), lr=0.3, momentum=0.9)
            for s in range(12):
                opt.lr = sched(s, 0.3)
                i = slice(12 * (s % 4), 12 * (s % 4) + 12)
                m.fit(x[i], y[i], loss="cross_entropy", optimizer=opt, epochs=1, batch_size=12, shuffle=False)
        else:
            opt = optim.SGD(m.parameters(), lr=0.3, momentum=0.9, lr_schedule=sched)
            m.fit(x, y, loss="cross_entropy", optimizer=opt, epochs=3, batch_size=12, shuffle=False)
        out.append(m.state_dict())
    for k in out[0]:
        np.testing.assert_array_equal(out[0][k], out[1][k])


def test_step_applies_the_schedule(device, rng):
    m = _linear_model(device)
    opt = optim.Adam(m.parameters(), lr=0.2, lr_schedule=optim.StepLR(2, 0.1))
    seen = []
    for _ in range(5):
        opt.step()  # zero gradients: the rate is what is checked
        seen.append(opt.lr)
    assert seen == pytest.approx([0.2, 0.2, 0.02, 0.02, 0.002]) and opt.iterations == 5


def test_a_schedule_that_returns_a_bad_rate_is_refused_before_the_epoch(device, rng):
    class Bad(optim.Schedule):
        def __call__(self, step, base_lr):
            return float("nan") if step == 5 else base_lr

    x = rng.standard_normal((32, 3)).astype(np.float32)
    y = rng.standard_normal((32, 1)).astype(np.float32)
    m = _linear_model(device)
    opt = optim.SGD(m.parameters(), lr=0.1, lr_schedule=Bad())
    m.fit(x, y, loss="mse", optimizer=opt, epochs=1, batch_size=8)  # steps 0-3
    before = m.state_dict()
    with pytest.raises(ValueError, match="SGD: the lr the schedule returned for step 5 must be >= 0.0, got nan"):
        m.fit(x, y, loss="mse", optimizer=opt, epochs=1, batch_size=8)
    for k, v in m.state_dict().items():  # no step of that epoch ran
        np.testing.assert_array_equal(v, before[k])
    assert opt.iterations == 4


@pytest.mark.parametrize("make, what", [
    (lambda: optim.StepLR(0), r"StepLR: step_size must be an int >= 1, got 0"),
    (lambda: optim.StepLR(2, gamma=float("inf")), r"StepLR: gamma must be a finite number"),
    (lambda: optim.ExponentialLR(-0.5), r"ExponentialLR: gamma must be in \[0, inf\], got -0.5"),
    (lambda: optim.CosineAnnealingLR(1.5), r"T_max must be an int >= 1"),
    (lambda: optim.LinearLR(start_factor=0), r"LinearLR: start_factor must be in \(0, 1\], got 0"),
    (lambda: optim.LinearLR(end_factor=2), r"LinearLR: end_factor must be in \[0, 1\], got 2"),
    (lambda: optim.OneCycleLR(0, 10), r"OneCycleLR: max_lr must be in \(0, inf\], got 0"),
    (lambda: optim.OneCycleLR(1.0, 10, pct_start=1.0), r"pct_start must be in \(0, 1\), got 1.0"),
    (lambda: optim.OneCycleLR(1.0, "10"), r"total_steps must be an int >= 1"),
])
def test_bad_schedule_settings(make, what):
    with pytest.raises(ValueError, match=what):
        make()


def test_the_core_refuses_too_few_or_bad_rates(device, monkeypatch):
    """The C++ loop checks its table before the first step, whoever calls it."""
    from hetnn._loader import _core

    assert _core.Trainer.epoch_steps(16, 8) == 2 and _core.Trainer.epoch_steps(17, 8) == 3
    x, y = np.ones((16, 3), np.float32), np.ones((16, 1), np.float32)
    m = _linear_model(device)
    before = m.state_dict()
    opt = optim.SGD(m.parameters(), lr=0.1)
    for table, what in (([0.1], r"1 learning rate\(s\) for an epoch of 2 steps"),
                        ([0.1, float("inf")], r"the learning rate of step 1 must be finite and >= 0"),
                        ([-0.1, 0.1], r"the learning rate of step 0 must be finite and >= 0")):
        monkeypatch.setattr(opt, "_epoch_lrs", lambda steps, t=table: list(t))
        with pytest.raises(ValueError, match=what):
            m.fit(x, y, loss="mse", optimizer=opt, epochs=1, batch_size=8)
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v, before[k])
