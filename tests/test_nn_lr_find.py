"""hetnn.nn.lr_find, the learning-rate range test: the rates it steps through, the losses it records (against
float64 NumPy), its early stop on divergence, and the model and optimizer left exactly as they were (a fit after it
gives what a fit without it gives), also after an interrupt."""
import importlib.util

import numpy as np
import pytest

from hetnn import nn, optim


def _data(rng, n=256):
    x = rng.standard_normal((n, 4)).astype(np.float32)
    y = np.minimum((x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5).astype(np.int64), 2)
    return x, y


def _model(device, dropout=False):
    layers = [nn.Dense(4, 16, "relu", seed=3)] + ([nn.Dropout(0.3, seed=5)] if dropout else []) + \
        [nn.Dense(16, 3, seed=4)]
    return nn.Sequential(layers, device=device)


def _ce64(model, x, y):
    """Cross-entropy of the model's current weights on (x, y), in float64."""
    h = x.astype(np.float64)
    sd = model.state_dict()
    ws = [(sd[k].astype(np.float64), sd[k.replace("weight", "bias")].astype(np.float64)) for k in sd if "weight" in k]
    for i, (w, b) in enumerate(ws):
        h = h @ w.T + b
        if i < len(ws) - 1:
            h = np.maximum(h, 0)
    h = h - h.max(axis=1, keepdims=True)
    logp = h - np.log(np.exp(h).sum(axis=1, keepdims=True))
    return float(-logp[np.arange(len(y)), y].mean())


def test_the_rates_grow_exponentially_and_the_first_loss_is_the_model_s(device, rng):
    x, y = _data(rng)
    m = _model(device)
    opt = optim.SGD(m.parameters(), lr=0.1)
    r = nn.lr_find(m, x, y, loss="cross_entropy", optimizer=opt, start_lr=1e-5, end_lr=1e-1, num_iter=20,
                   batch_size=32, seed=7)
    assert r.stopped == "20 steps" and len(r.lrs) == len(r.raw_losses) == len(r.losses) == 20
    np.testing.assert_allclose(r.lrs, 1e-5 * 1e4 ** (np.arange(20) / 19), rtol=1e-12)
    first = np.random.default_rng(7).permutation(len(x))[:32]  # the first batch drawn with the seed
    assert r.raw_losses[0] == pytest.approx(_ce64(m, x[first], y[first]), rel=1e-4)  # weights restored: step 0's
    assert r.losses[0] == pytest.approx(r.raw_losses[0])  # the bias-corrected average of one value is that value


def test_a_diverging_loss_stops_the_test_and_the_suggestion_lies_below(device, rng):
    x, y = _data(rng)
    m = _model(device)
    opt = optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    r = nn.lr_find(m, x, y, loss="cross_entropy", optimizer=opt, start_lr=1e-4, end_lr=1e4, num_iter=100,
                   batch_size=32, smooth=0.5)
    assert r.stopped.startswith("diverged at step ") and len(r.lrs) < 100
    assert not (r.losses[-1] <= 4 * min(r.losses[:-1]))  # the last step's loss set it off (or was not finite)
    assert r.suggestion is not None and 1e-4 <= r.suggestion < r.lrs[-1]


def test_the_model_and_the_optimizer_are_left_as_they_were(device, rng):
    """Dropout's stream, momentum buffers and the weights: a fit after lr_find equals a fit without it."""
    x, y = _data(rng)
    runs = []
    for probe in (False, True):
        m = _model(device, dropout=True)
        opt = optim.SGD(m.parameters(), lr=0.05, momentum=0.9, lr_schedule=lambda e, lr: lr * 0.5 ** e)
        m.fit(x, y, loss="cross_entropy", optimizer=opt, epochs=1, batch_size=32, seed=1)  # momentum exists
        if probe:
            nn.lr_find(m, x, y, loss="cross_entropy", optimizer=opt, num_iter=30, batch_size=16)
            assert opt.lr == 0.05 and opt.base_lr == 0.05 and opt.lr_schedule is not None
        m.fit(x, y, loss="cross_entropy", optimizer=opt, epochs=2, batch_size=32, seed=2)
        runs.append(m.state_dict())
    for k in runs[0]:
        np.testing.assert_array_equal(runs[0][k], runs[1][k])


def test_an_interrupt_leaves_the_model_as_it_was(device, rng, monkeypatch):
    x, y = _data(rng)
    m = _model(device)
    opt = optim.Adam(m.parameters(), lr=1e-3)
    before, calls = m.state_dict(), []
    real = nn.Sequential.fit

    def fit(self, *a, **kw):
        calls.append(1)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return real(self, *a, **kw)
    monkeypatch.setattr(nn.Sequential, "fit", fit)
    with pytest.raises(KeyboardInterrupt):
        nn.lr_find(m, x, y, loss="cross_entropy", optimizer=opt)
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v, before[k])
    assert opt.steps == 0 and opt.lr == 1e-3 and not opt._state  # no moments were there before


def test_a_per_step_schedule_resumes_where_it_was(device, rng):
    """lr_find's steps advanced optimizer.iterations: a per-step schedule then started past its warm-up."""
    x, y = _data(rng)
    m = _model(device)
    opt = optim.SGD(m.parameters(), lr=0.1, lr_schedule=optim.LinearLR(0.1, 1.0, total_iters=50))
    m.fit(x, y, loss="cross_entropy", optimizer=opt, epochs=1, batch_size=32)
    nn.lr_find(m, x, y, loss="cross_entropy", optimizer=opt, num_iter=30, batch_size=16)
    assert opt.iterations == 8 and opt.lr == pytest.approx(0.1 * (0.1 + 0.9 * 7 / 50))


@pytest.mark.parametrize("kw, what", [
    ({"start_lr": 0}, r"start_lr must be a finite number > 0, got 0"),
    ({"end_lr": float("inf")}, r"end_lr must be a finite number > 0"),
    ({"start_lr": 1.0, "end_lr": 0.5}, r"end_lr must be above start_lr"),
    ({"num_iter": 1}, r"num_iter must be an int >= 2, got 1"),
    ({"num_iter": 2.5}, r"num_iter must be an int >= 2"),
    ({"batch_size": 0}, r"batch_size must be an int from 1 to the 64 samples, got 0"),
    ({"batch_size": 65}, r"batch_size must be an int from 1 to the 64 samples, got 65"),
    ({"smooth": 1.0}, r"smooth must be a number in \[0, 1\), got 1.0"),
    ({"diverge": 1}, r"diverge must be a number > 1, got 1"),
])
def test_bad_arguments_are_refused_before_any_step(device, rng, kw, what):
    x, y = _data(rng, n=64)
    m = _model(device)
    before = m.state_dict()
    with pytest.raises(ValueError, match=what):
        nn.lr_find(m, x, y, loss="cross_entropy", optimizer=optim.SGD(m.parameters(), lr=0.1), **kw)
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v, before[k])
    with pytest.raises(ValueError, match="x has 64 samples but y has 63"):
        nn.lr_find(m, x, y[:63], loss="cross_entropy", optimizer=optim.SGD(m.parameters(), lr=0.1))


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs matplotlib")
def test_the_plot_marks_the_suggestion(device, rng):
    x, y = _data(rng)
    m = _model(device)
    r = nn.lr_find(m, x, y, loss="cross_entropy", optimizer=optim.SGD(m.parameters(), lr=0.1), num_iter=40,
                   batch_size=32)
    fig = r.plot()
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and len(ax.lines[0].get_xdata()) == len(r.lrs)
    if r.suggestion is not None:
        assert "steepest descent" in ax.get_legend().get_texts()[-1].get_text()
