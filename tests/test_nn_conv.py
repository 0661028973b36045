"""hetnn.nn.Conv2d in Sequential: gradients against float64 finite differences (strides, padding, dilation, groups,
activation, bias), a CNN that learns on every device, CPU and OpenCL agreeing after a step, save/load, summary."""
import numpy as np
import pytest

from hetnn import datasets, nn, optim

from conftest import rel_err
from op_table import _conv_ref
from test_nn import ce_np, grads_after_one_batch, mse_np, numeric_grads


@pytest.mark.requires("float64")
@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, activation="relu"),
                                dict(padding="same", dilation=2, activation="tanh"),
                                dict(groups=2, bias=False, activation="sigmoid")], ids=["plain", "s2p1", "same-d2",
                                                                                        "groups"])
def test_conv_layer_gradients(device, rng, kw):
    y = rng.integers(0, 3, 3)
    conv = nn.Conv2d(2, 4, 3, seed=1, **kw)
    out = conv.output_shape((2, 6, 5))
    model = nn.Sequential([conv, nn.Flatten(), nn.Dense(int(np.prod(out)), 3, seed=2)], device=device,
                          dtype="float64")
    x = rng.standard_normal((3, 2, 6, 5))
    if kw.get("activation") == "relu":
        # a central difference across ReLU's kink measures neither side's slope (CI drew one: relative error 0.04):
        # inputs whose pre-activations all lie clear of 0
        w, b = (p.numpy() for p in model.parameters()[:2])
        geometry = ((2, 2), (1, 1), (1, 1), 1, None)
        while np.min(np.abs(_conv_ref((x, w, b) + geometry)[0])) < 1e-3:
            x = rng.standard_normal((3, 2, 6, 5))
    analytic = grads_after_one_batch(model, x, y, nn.CrossEntropyLoss())
    numeric = numeric_grads(model, x, lambda o: ce_np(o, y))
    for a, n in zip(analytic, numeric):
        assert rel_err(a, n) < 1e-6


@pytest.mark.requires("float64")
@pytest.mark.parametrize("head", ["fused relu, pool 2", "relu layer, overlapping pool"])
def test_conv_pool_stack_gradients(device, rng, head):
    # A ReLU before max pooling has its mask applied by the pool's backward (on the pooled gradient): both forms
    x = rng.standard_normal((2, 1, 8, 8))
    t = rng.standard_normal((2, 2))
    first = [nn.Conv2d(1, 3, 3, padding=1, activation="relu", seed=3), nn.MaxPool2d(2)] if head.startswith("fused") \
        else [nn.Conv2d(1, 3, 3, padding=1, seed=3), nn.ReLU(), nn.MaxPool2d(3, stride=2, padding=1)]
    model = nn.Sequential(first + [nn.Conv2d(3, 2, 2, seed=4), nn.Flatten(), nn.Dense(2 * 3 * 3, 2, seed=5)],
                          device=device, dtype="float64")
    analytic = grads_after_one_batch(model, x, t, nn.MSELoss())
    numeric = numeric_grads(model, x, lambda o: mse_np(o, t))
    for a, n in zip(analytic, numeric):
        assert rel_err(a, n) < 1e-6


def _cnn(device, seed=0):
    return nn.Sequential([nn.Conv2d(1, 4, 3, padding=1, activation="relu", seed=seed), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Dense(4 * 8 * 8, 1, seed=seed + 1)], device=device)


def test_a_cnn_learns_the_radiation_maps(device):
    (x, y), (xt, yt) = datasets.radiation_maps(n_samples=800, size=16, wind=(2, 1), seed=0)
    model = _cnn(device)
    before = model.evaluate(xt, yt, loss="mse")["loss"]
    model.fit(x, y, loss="mse", optimizer=optim.SGD(model.parameters(), lr=0.05, momentum=0.9), epochs=8,
              batch_size=32, seed=0)
    after = model.evaluate(xt, yt)["loss"]
    assert after < 0.25 * before, (before, after)


def test_cpu_and_opencl_agree_after_a_step(rng):
    import hetnn

    ocl = [d for d in hetnn.devices() if d.kind == "opencl"]
    if not ocl:
        pytest.skip("no OpenCL device")
    (x, y), _ = datasets.radiation_maps(n_samples=64, size=16, seed=1)
    models = [_cnn(d, seed=7) for d in ("cpu", ocl[0])]
    for m in models:
        m.fit(x, y, loss="mse", optimizer=optim.SGD(m.parameters(), lr=0.05), epochs=1, batch_size=16,
              shuffle=False)
    for a, b in zip(*(m.state_dict().values() for m in models)):
        assert rel_err(a, b) < 1e-4


def test_conv_model_saves_loads_and_summarises(device, rng, tmp_path):
    model = _cnn(device, seed=3)
    x = rng.standard_normal((5, 1, 16, 16)).astype(np.float32)
    model.save(tmp_path / "cnn.npz")
    back = nn.load(tmp_path / "cnn.npz", device=device)
    np.testing.assert_array_equal(back.predict(x), model.predict(x))
    lines = []
    model.summary(input_shape=(1, 16, 16), print_fn=lines.append)
    assert "(None, 4, 16, 16)" in lines[0] and "Total params: 297" in lines[0]


@pytest.mark.parametrize("bad,exc,msg", [(dict(in_channels=0), ValueError, "in_channels"),
                                         (dict(groups=3), ValueError, "groups"),
                                         (dict(stride=0), ValueError, "stride"),
                                         (dict(stride=2, padding="same"), ValueError, "same"),
                                         (dict(activation="gelu"), ValueError, "activation"),
                                         (dict(kernel_size=0), ValueError, "kernel_size"),
                                         (dict(init="zeros"), ValueError, "init")])
def test_conv_layer_bad_arguments(bad, exc, msg):
    args = dict(in_channels=2, out_channels=4, kernel_size=3)
    args.update(bad)
    with pytest.raises(exc, match=msg):
        nn.Conv2d(**args)


def test_global_avg_pool_after_convolutions_serves_any_image_size(device, rng):
    """Conv2d -> ReLU -> GlobalAvgPool2d -> Dense (on the CPU device the convolution's output is held blocked and
    reordered before the pooling): float32 predictions against float64 NumPy at two image sizes, and a fit."""
    model = nn.Sequential([nn.Conv2d(2, 16, 3, padding=1, seed=0), nn.ReLU(), nn.GlobalAvgPool2d(),
                           nn.Dense(16, 3, seed=1)], device=device)
    w, b, w2, b2 = [p.numpy().astype(np.float64) for p in model.parameters()]
    for size in (6, 9):
        x = rng.standard_normal((4, 2, size, size)).astype(np.float32)
        conv = _conv_ref((x, w, b, (1, 1), (1, 1), (1, 1), 1, "relu"))[0]
        ref = conv.mean(axis=(2, 3)) @ w2.T + b2
        assert rel_err(model.predict(x), ref) < 1e-4
    hist = model.fit(x, rng.integers(0, 3, 4), loss="cross_entropy", optimizer=optim.SGD(model.parameters(), lr=0.1),
                     epochs=3, batch_size=2)
    assert all(np.isfinite(hist.history["loss"]))
    with pytest.raises(ValueError, match="GlobalAvgPool2d takes"):
        nn.Sequential([nn.GlobalAvgPool2d()], device=device).predict(np.zeros((2, 5), np.float32))
