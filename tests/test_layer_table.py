"""The layer and optimizer tables: every row of the C++ training loop's tables (hetnn._core.layer_table(),
optimizer_table(); cpp/src/core/train/layers.h) has a row here, and every row runs on every device: the forward
against a float64 NumPy reference (float32, and float64 where the device has it), its gradients (and those of the
layers around it) against central finite differences in float64, save/load and state_dict round trips, its bad
arguments; each optimizer over several of fit's steps against a float64 NumPy transcription."""
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, List, Tuple

import numpy as np
import pytest

import hetnn
from hetnn import _core, nn, optim

import max_pool_reference as pool_ref
from conftest import rel_err
from op_table import _conv_ref, adam_reference
from test_nn import _avg_pool_ref, ce_np, grads_after_one_batch, numeric_grads

CPP = Path(__file__).resolve().parent.parent / "cpp" / "src"
ACTS = {"relu": lambda z: np.maximum(z, 0), "sigmoid": lambda z: 1 / (1 + np.exp(-z)), "tanh": np.tanh}


@dataclass
class LayerRow:
    kind: str                                   # the C++ row (Layer::kind())
    make: Callable[[], Any]                     # the layer, seeded
    sample: Tuple[int, ...]                     # the per-sample input shape
    ref: Callable[[np.ndarray, List[np.ndarray]], np.ndarray]  # float64 forward from (x, parameters)
    bad: List[Tuple[dict, type, str]] = field(default_factory=list)  # constructor kwargs -> exception, message
    kwargs: dict = field(default_factory=dict)  # what make() passed (the bad cases start from it)


def _dense_ref(x, p):
    return np.tanh(x @ p[0].T + p[1])


def _conv_layer_ref(x, p):
    return _conv_ref((x, p[0], p[1], (2, 1), (1, 0), (1, 1), 1, "sigmoid"))[0]


def _activation_ref(name):
    return lambda x, p: ACTS[name](x)


LAYERS = [
    LayerRow("dense", lambda: nn.Dense(6, 5, "tanh", seed=11), (6,), _dense_ref,
             [({"in_features": 0}, ValueError, "in_features"), ({"activation": "gelu"}, ValueError, "gelu")],
             {"in_features": 6, "out_features": 5, "activation": "tanh"}),
    LayerRow("conv2d", lambda: nn.Conv2d(2, 3, 3, stride=(2, 1), padding=(1, 0), activation="sigmoid", seed=12),
             (2, 5, 4), _conv_layer_ref,
             [({"kernel_size": 0}, ValueError, "kernel"), ({"groups": 3}, ValueError, "groups")],
             {"in_channels": 2, "out_channels": 3, "kernel_size": 3}),
    LayerRow("activation", nn.ReLU, (2, 3, 3), _activation_ref("relu")),
    LayerRow("activation", nn.Sigmoid, (7,), _activation_ref("sigmoid")),
    LayerRow("activation", nn.Tanh, (7,), _activation_ref("tanh")),
    LayerRow("flatten", nn.Flatten, (2, 3, 2), lambda x, p: x.reshape(len(x), -1)),
    LayerRow("reshape", lambda: nn.Reshape(3, 4), (2, 6), lambda x, p: x.reshape(len(x), 3, 4),
             [({"shape": (0, 4)}, ValueError, "Reshape")]),
    LayerRow("maxpool2d", lambda: nn.MaxPool2d(3, stride=2, padding=1), (2, 5, 4),
             lambda x, p: pool_ref.max_pool2d(x, (3, 3), (2, 2), (1, 1), (1, 1), False)[0],
             [({"kernel_size": 0}, ValueError, "MaxPool2d"), ({"padding": 2}, ValueError, "padding")],
             {"kernel_size": 3}),
    LayerRow("avgpool2d", lambda: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), (2, 5, 4),
             lambda x, p: _avg_pool_ref(x, 3, 2, 1, False, None),
             [({"divisor_override": 0}, ValueError, "divisor_override"),
              ({"count_include_pad": 1}, TypeError, "count_include_pad")], {"kernel_size": 3}),
    LayerRow("globalavgpool2d", nn.GlobalAvgPool2d, (3, 4, 5), lambda x, p: x.mean(axis=(2, 3)),
             [({"size": 2}, TypeError, "unexpected keyword")]),
    LayerRow("dropout", lambda: nn.Dropout(0.5, seed=13), (6,), lambda x, p: x,
             [({"p": 1.5}, ValueError, r"p must be a probability in \[0, 1\], got 1.5")], {"p": 0.5}),
]
IDS = [f"{r.kind}-{type(r.make()).__name__}" for r in LAYERS]


def _bad_call(row, kw):
    """The row's constructor with its good arguments, kw replacing some ("shape": Reshape's positional ones)."""
    cls = type(row.make())
    if "shape" in kw:
        return cls(*kw["shape"])
    return cls(**{**row.kwargs, **kw})


def test_every_row_of_the_cpp_tables_has_a_row_here():
    cpp_layers = {kind for kind, _, _ in _core.layer_table()}
    assert cpp_layers == {r.kind for r in LAYERS}
    assert {kind for kind, _, _ in _core.optimizer_table()} == set(OPTIMIZERS)
    for _, _, source in _core.layer_table() + _core.optimizer_table():
        assert (CPP / source).is_file(), source


def _model(row, device, dtype):
    """Dense -> Reshape -> the row's layer -> Flatten -> Dense: gradients reach the first layer through the row's
    backward, so finite differences check it (and its own parameters, if any)."""
    inner = row.make()
    width = int(np.prod(row.sample))
    out = int(np.prod(inner.output_shape(row.sample)))
    return nn.Sequential([nn.Dense(4, width, "tanh", seed=1), nn.Reshape(*row.sample), inner, nn.Flatten(),
                          nn.Dense(out, 3, seed=2)], device=device, dtype=dtype)


@pytest.mark.parametrize("row", LAYERS, ids=IDS)
def test_forward_matches_float64(device, rng, row):
    """The layer alone: float32 on every device, and float64 where the device has it."""
    x = rng.standard_normal((5, *row.sample))
    for dtype, tol in (("float32", 1e-5), ("float64", 1e-12)):
        if dtype not in device.dtypes:
            continue
        model = nn.Sequential([row.make()], device=device, dtype=dtype)
        params = [p.numpy().astype(np.float64) for p in model.parameters()]
        xin = x.astype(dtype)
        ref = row.ref(xin.astype(np.float64), params)
        got = model.predict(xin, batch_size=2)  # three batches, the last one short
        assert got.shape == ref.shape and got.dtype == np.dtype(dtype)
        assert rel_err(got, ref) < tol, (dtype, rel_err(got, ref))
        whole = model.predict(xin)  # one batch: the rows as given, no gather
        assert whole.shape == ref.shape and rel_err(whole, ref) < tol
        # an Array in gives an Array on the model's device, with the same values
        arr = model.predict(hetnn.asarray(xin, device=device), batch_size=2)  # as got: the same GEMM shapes
        np.testing.assert_array_equal(arr.numpy(), got)


@pytest.mark.requires("float64")
@pytest.mark.parametrize("row", [r for r in LAYERS if r.kind != "dropout"], ids=[i for i in IDS if "dropout" not in i])
def test_gradients_match_finite_differences(device, rng, row):
    x = rng.standard_normal((4, 4))
    y = rng.integers(0, 3, 4)
    model = _model(row, device, "float64")
    analytic = grads_after_one_batch(model, x, y, nn.CrossEntropyLoss())
    numeric = numeric_grads(model, x, lambda out: ce_np(out, y))
    for a, n in zip(analytic, numeric):
        assert rel_err(a, n) < 1e-6


@pytest.mark.parametrize("row", LAYERS, ids=IDS)
def test_save_load_and_state_dict_round_trips(device, rng, row, tmp_path):
    x = rng.standard_normal((6, 4)).astype(np.float32)
    model = _model(row, device, "float32")
    model.fit(x, rng.integers(0, 3, 6), loss="cross_entropy", optimizer=optim.SGD(model.parameters(), lr=0.1),
              epochs=1, batch_size=3, seed=0)  # trained: the round trips carry more than the initial weights
    before = model.predict(x)
    model.save(tmp_path / "m.npz")
    loaded = nn.load(tmp_path / "m.npz", device=device)
    assert [type(a) for a in loaded.layers] == [type(b) for b in model.layers]
    assert loaded[2].config() == model[2].config()
    np.testing.assert_array_equal(loaded.predict(x), before)
    other = _model(row, device, "float32")
    for p in other.parameters():  # other weights, so that the copy is seen
        p.value.write_from(np.full(p.shape, 0.5, np.float32))
    other.load_state_dict(model.state_dict())
    np.testing.assert_array_equal(other.predict(x), before)


@pytest.mark.parametrize("row, kw, exc, message",
                         [(r, kw, exc, msg) for r in LAYERS for kw, exc, msg in r.bad],
                         ids=[f"{r.kind}-{i}" for r in LAYERS for i in range(len(r.bad))])
def test_bad_arguments(row, kw, exc, message):
    with pytest.raises(exc, match=message):
        _bad_call(row, kw)


# -- optimizers: a linear model under MSE, its gradients in NumPy, the update transcribed in float64
def _sgd_step(p, g, state, t, lr, momentum=0.0, weight_decay=0.0, nesterov=False):
    d = g + weight_decay * p
    if not momentum:
        return p - lr * d, state
    v = d if t == 1 else momentum * state + d  # PyTorch: the first step's buffer is the gradient itself
    return p - lr * (d + momentum * v if nesterov else v), v


def _adam_step(decoupled):
    def step(p, g, state, t, lr, weight_decay=0.0, amsgrad=False, betas=(0.9, 0.999), eps=1e-8):
        m, v, vmax = state if state is not None else (np.zeros_like(p),) * 3
        p, m, v, vmax = adam_reference((p, g, m, v, vmax, weight_decay, t, amsgrad, decoupled), lr=lr, b1=betas[0],
                                       b2=betas[1], eps=eps)
        return p, (m, v, vmax)
    return step


OPTIMIZERS = {
    "sgd": [(optim.SGD, dict(lr=0.1), _sgd_step),
            (optim.SGD, dict(lr=0.05, momentum=0.9, weight_decay=0.01), _sgd_step),
            (optim.SGD, dict(lr=0.05, momentum=0.8, nesterov=True), _sgd_step)],
    "adam": [(optim.Adam, dict(lr=0.05, weight_decay=0.1, amsgrad=True), _adam_step(False))],
    "adamw": [(optim.AdamW, dict(lr=0.05, weight_decay=0.1, betas=(0.8, 0.95)), _adam_step(True))],
}
OPT_CASES = [(k, *case) for k, cases in OPTIMIZERS.items() for case in cases]


@pytest.mark.parametrize("kind, cls, kw, step", OPT_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(OPT_CASES)])
def test_optimizer_over_fit_steps_matches_float64(device, rng, kind, cls, kw, step):
    """Two fits of three minibatches each (the state carried across the fits) against NumPy."""
    fp64 = "float64" in device.dtypes
    dtype = "float64" if fp64 else "float32"
    x = rng.standard_normal((12, 4))
    t = rng.standard_normal((12, 2))
    model = nn.Sequential([nn.Dense(4, 2, seed=3)], device=device, dtype=dtype)
    opt = cls(model.parameters(), **kw)
    params = [p.numpy().astype(np.float64) for p in model.parameters()]
    states: List[Any] = [None, None]
    for fit in range(2):
        model.fit(x.astype(dtype), t.astype(dtype), loss="mse", optimizer=opt, epochs=1, batch_size=4,
                  shuffle=False)
        for k in range(3):
            xb, tb = x[4 * k:4 * k + 4], t[4 * k:4 * k + 4]
            w, b = params
            dz = 2 * (xb @ w.T + b - tb) / tb.size
            for i, g in enumerate((dz.T @ xb, dz.sum(axis=0))):
                params[i], states[i] = step(params[i], g, states[i], 3 * fit + k + 1, **kw)
    for got, ref in zip(model.parameters(), params):
        err = np.max(np.abs(got.numpy().astype(np.float64) - ref)) / (np.max(np.abs(ref)) + 0.3)
        assert err < (1e-12 if fp64 else 1e-4), err


@pytest.mark.parametrize("loss, softmax_last", [("cross_entropy", True), ("cross_entropy", False), ("mse", False)])
def test_evaluate_matches_float64_in_one_batch_and_in_many(device, rng, loss, softmax_last):
    """evaluate's loop in C++: one batch (the rows as given) and several (gathered, the last short) against NumPy."""
    x = rng.standard_normal((11, 5)).astype(np.float32)
    labels = rng.integers(0, 3, 11)
    model = nn.Sequential([nn.Dense(5, 3, seed=4)] + ([nn.Softmax()] if softmax_last else []), device=device)
    w, b = (p.numpy().astype(np.float64) for p in model.parameters())
    z = x.astype(np.float64) @ w.T + b
    if loss == "mse":
        y = rng.standard_normal((11, 3)).astype(np.float32)
        want = {"loss": ((z - y) ** 2).mean(), "mae": np.abs(z - y).mean()}
        metrics = ["mae"]
    else:
        y = labels
        zs = z - z.max(axis=1, keepdims=True)
        logp = zs - np.log(np.exp(zs).sum(axis=1, keepdims=True))
        want = {"loss": -logp[np.arange(11), labels].mean(), "accuracy": (z.argmax(axis=1) == labels).mean()}
        metrics = ["accuracy"]
    for bs in (256, 4):
        got = model.evaluate(x, y, loss=loss, metrics=metrics, batch_size=bs)
        assert set(got) == set(want)
        for k in want:
            assert abs(got[k] - want[k]) <= 1e-5 * max(1.0, abs(want[k])), (bs, k, got[k], want[k])
