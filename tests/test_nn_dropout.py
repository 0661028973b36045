"""hetnn.nn.Dropout and the dropout op: masks against the transcribed draw, statistics, the backward as the same op,
a float64 finite-difference check of a network through a known mask, predict/evaluate without dropout, the same
masks on every device, save/load, bad arguments."""
import pickle

import numpy as np
import pytest

import hetnn
from hetnn import _core, nn, optim
from hetnn.nn._layers import _splitmix64

from conftest import rel_err
from op_table import dropout_keep


def _put(device, x):
    return _core.Array.from_numpy(hetnn.device(device)._dev, np.ascontiguousarray(x))


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_keeps_one_minus_p_and_keeps_the_mean(device, rng, p):
    n = 200_000
    x = rng.standard_normal(n).astype(np.float32) + 3
    y = _core.dropout(_put(device, x), p, int(rng.integers(2**63))).to_numpy()
    kept = np.count_nonzero(y)
    sd = np.sqrt(n * p * (1 - p))
    assert abs(kept - n * (1 - p)) < 6 * sd  # binomial: 6 standard deviations
    np.testing.assert_allclose(y[y != 0], x[y != 0] / (1 - p), rtol=1e-6)
    assert abs(y.mean() - x.mean()) < 6 * x.std() * np.sqrt(p / (1 - p) / n) + 6 * x.mean() * sd / n / (1 - p)


def test_dropout_mask_is_a_function_of_seed_and_index(device, rng):
    x = rng.standard_normal((37, 11)).astype(np.float32)
    seed = int(rng.integers(2**63))
    a = _core.dropout(_put(device, x), 0.5, seed).to_numpy()
    np.testing.assert_array_equal(a, _core.dropout(_put(device, x), 0.5, seed).to_numpy())
    np.testing.assert_array_equal(a != 0, dropout_keep(seed, x.size, 0.5).reshape(x.shape) & (x != 0))
    assert (a != _core.dropout(_put(device, x), 0.5, seed + 1).to_numpy()).any()


def test_dropout_in_place_and_nan_as_multiplication(device, rng):
    x = rng.standard_normal(1000).astype(np.float32)
    x[::7] = np.nan
    X = _put(device, x)
    keep = dropout_keep(5, x.size, 0.3)
    assert _core.dropout(X, 0.3, 5, X) is not None
    y = X.to_numpy()
    np.testing.assert_allclose(y[keep], x[keep] / 0.7, rtol=1e-6)
    # dropped elements are x * 0, as torch.nn.functional.dropout: NaN stays NaN, the rest become 0
    assert np.isnan(y[~keep & np.isnan(x)]).all() and (y[~keep & ~np.isnan(x)] == 0).all()


@pytest.mark.requires("float64")
def test_dropout_backward_is_its_adjoint(device, rng):
    x, g = rng.standard_normal((2, 500))
    seed = int(rng.integers(2**63))
    y = _core.dropout(_put(device, x), 0.4, seed).to_numpy()
    gx = _core.dropout(_put(device, g), 0.4, seed).to_numpy()
    assert abs(np.dot(g, y) - np.dot(gx, x)) < 1e-12 * np.abs(g).sum() * np.abs(x).sum() / 0.6


def _masked_forward(params, x, mask, p):
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1.T + b1) * mask / (1 - p)
    return h @ w2.T + b2


@pytest.mark.requires("float64")
def test_network_gradients_through_the_step_mask(device, rng):
    x = rng.standard_normal((6, 5))
    t = rng.standard_normal((6, 2))
    drop = nn.Dropout(0.5, seed=int(rng.integers(2**62)))
    model = nn.Sequential([nn.Dense(5, 8, "tanh", seed=1), drop, nn.Dense(8, 2, seed=2)], device=device,
                          dtype="float64")
    params = [p.numpy() for p in model.parameters()]
    # the first step of the first trainer built: Dropout._to_trainer's seed, then the trainer's step 1
    mask = dropout_keep(_splitmix64(_splitmix64(drop.seed)), 6 * 8, 0.5).reshape(6, 8)
    model.fit(x, t, loss="mse", optimizer=optim.SGD(model.parameters(), lr=0.0), epochs=1, batch_size=6,
              shuffle=False)
    analytic = [p.grad_data.numpy() for p in model.parameters()]

    def loss(ps):
        return np.mean((_masked_forward(ps, x, mask, 0.5) - t) ** 2)
    for k, base in enumerate(params):
        num = np.zeros_like(base)
        for i in np.ndindex(base.shape):
            hi = [q.copy() for q in params]
            lo = [q.copy() for q in params]
            hi[k][i] += 1e-6
            lo[k][i] -= 1e-6
            num[i] = (loss(hi) - loss(lo)) / 2e-6
        assert rel_err(analytic[k], num) < 1e-6, k


def test_predict_and_evaluate_run_without_dropout(device, rng):
    x = rng.standard_normal((9, 4)).astype(np.float32)
    with_drop = nn.Sequential([nn.Dense(4, 6, "relu", seed=3), nn.Dropout(0.9), nn.Dense(6, 3, seed=4)],
                              device=device)
    plain = nn.Sequential([nn.Dense(4, 6, "relu", seed=3), nn.Dense(6, 3, seed=4)], device=device)
    np.testing.assert_array_equal(with_drop.predict(x), plain.predict(x))
    y = rng.integers(0, 3, 9)
    assert with_drop.evaluate(x, y, loss="cross_entropy") == plain.evaluate(x, y, loss="cross_entropy")


def test_training_with_dropout_differs_from_without_and_learns(device, rng):
    x = rng.standard_normal((256, 8)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64)

    def model(p):
        return nn.Sequential([nn.Dense(8, 32, "relu", seed=5), nn.Dropout(p, seed=9), nn.Dense(32, 2, seed=6)],
                             device=device)
    a, b = model(0.3), model(0.0)
    for m in (a, b):
        m.fit(x, y, loss="cross_entropy", optimizer=optim.Adam(m.parameters(), lr=1e-2), epochs=10, batch_size=32,
              seed=0)
    assert not np.array_equal(a.state_dict()["0.weight"], b.state_dict()["0.weight"])
    assert a.evaluate(x, y, metrics=["accuracy"])["accuracy"] > 0.9


def test_predict_and_evaluate_do_not_change_what_the_next_fit_draws(device, rng):
    """The weights a fit gives depend on the seeds and the data alone: one 8-row predict (or an evaluate) before
    the fit once moved the dropout masks on and changed them. Two fits in a row still draw different masks."""
    x = rng.standard_normal((96, 8)).astype(np.float32)
    y = rng.integers(0, 2, 96)

    def model():
        return nn.Sequential([nn.Dense(8, 16, "relu", seed=3), nn.Dropout(0.5, seed=21), nn.Dense(16, 2, seed=4)],
                             device=device)

    def fit(m):
        m.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(m.parameters(), lr=0.1), epochs=1, batch_size=16,
              shuffle=False)
        return m.state_dict()

    def trained(before):
        m = model()
        before(m)
        return fit(m)["0.weight"]

    plain = trained(lambda m: None)
    np.testing.assert_array_equal(trained(lambda m: m.predict(x[:8])), plain)
    np.testing.assert_array_equal(trained(lambda m: m.evaluate(x, y, loss="cross_entropy")), plain)

    def everything(m):  # in an order of its own, and a pickled copy used too
        m.summary(input_shape=(8,), print_fn=lambda line: None)
        m.state_dict()
        pickle.loads(pickle.dumps(m)).predict(x[:4])
        m.evaluate(x[:16], y[:16], loss="cross_entropy")
        m.predict(x[:8])
    np.testing.assert_array_equal(trained(everything), plain)
    # a second fit draws new masks: from the same weights, a fresh model's first fit (the first masks) differs
    m = model()
    first = fit(m)
    m.predict(x[:8])
    second = fit(m)["0.weight"]
    fresh = model()
    fresh.load_state_dict(first)
    assert not np.array_equal(fit(fresh)["0.weight"], second)


def test_every_device_draws_the_same_masks(rng):
    ocl = [d for d in hetnn.devices() if d.kind == "opencl"]
    if not ocl:
        pytest.skip("no OpenCL device")
    x = rng.standard_normal((64, 10)).astype(np.float32)
    y = rng.integers(0, 3, 64)
    states = []
    for dev in ("cpu", ocl[0]):
        m = nn.Sequential([nn.Dense(10, 16, "relu", seed=1), nn.Dropout(0.5, seed=11), nn.Dense(16, 3, seed=2)],
                          device=dev)
        m.fit(x, y, loss="cross_entropy", optimizer=optim.Adam(m.parameters()), epochs=2, batch_size=16,
              shuffle=False)
        states.append(m.state_dict())
    for k in states[0]:
        assert rel_err(states[0][k], states[1][k]) < 1e-4, k


def test_dropout_saves_loads_and_summarises(device, rng, tmp_path):
    model = nn.Sequential([nn.Dense(4, 6, "relu", seed=3), nn.Dropout(0.25, seed=7), nn.Dense(6, 2, seed=4)],
                          device=device)
    model.save(tmp_path / "m.npz")
    back = nn.load(tmp_path / "m.npz", device=device)
    assert isinstance(back.layers[1], nn.Dropout) and back.layers[1].p == 0.25 and back.layers[1].seed == 7
    x = rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_array_equal(back.predict(x), model.predict(x))
    lines = []
    model.summary(input_shape=(4,), print_fn=lines.append)
    assert "Dropout" in lines[0]


@pytest.mark.parametrize("bad,msg", [(dict(p=1.5), "p must"), (dict(p=-0.1), "p must"), (dict(p="half"), "p must"),
                                     (dict(p=True), "p must"), (dict(p=float("nan")), "p must"),
                                     (dict(seed=-1), "seed"), (dict(seed=1.5), "seed")])
def test_dropout_bad_arguments(bad, msg):
    with pytest.raises(ValueError, match=msg):
        nn.Dropout(**bad)
