"""hetnn.nn / hetnn.optim: gradients against central finite differences in float64, training on every device
(XOR, agreement between devices, reproducibility), save/load, and the errors bad inputs get."""
import json

import numpy as np
import pytest

import hetnn
from hetnn import nn, optim

import max_pool_reference as pool_ref
from conftest import rel_err


def ce_np(logits, labels):
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(labels)), labels].mean()


def mse_np(pred, target):
    return ((pred - target) ** 2).mean()


def grads_after_one_batch(model, x, y, loss):
    """Analytic gradients: one full-batch step with lr = 0 leaves the parameters unchanged."""
    opt = optim.SGD(model.parameters(), lr=0.0)
    model.fit(x, y, loss=loss, optimizer=opt, epochs=1, batch_size=len(x), shuffle=False)
    return [p.grad_data.numpy() for p in model.parameters()]


def numeric_grads(model, x, loss_of_output, eps=1e-6):
    out = []
    for p in model.parameters():
        base = p.numpy()
        g = np.zeros_like(base)
        for i in np.ndindex(base.shape):
            for sign in (1, -1):
                v = base.copy()
                v[i] += sign * eps
                p.value.write_from(v)
                g[i] += sign * loss_of_output(model.predict(x))
            g[i] /= 2 * eps
        p.value.write_from(base)
        out.append(g)
    return out


@pytest.mark.requires("float64")
@pytest.mark.parametrize("act", [None, "relu", "sigmoid", "tanh"])
def test_dense_gradients_cross_entropy(device, rng, act):
    x = rng.standard_normal((7, 5))
    y = rng.integers(0, 3, 7)
    model = nn.Sequential([nn.Dense(5, 4, act, seed=1), nn.Dense(4, 3, seed=2)], device=device, dtype="float64")
    analytic = grads_after_one_batch(model, x, y, nn.CrossEntropyLoss())
    numeric = numeric_grads(model, x, lambda out: ce_np(out, y))
    for a, n in zip(analytic, numeric):
        assert rel_err(a, n) < 1e-6


@pytest.mark.requires("float64")
@pytest.mark.parametrize("layer", [nn.ReLU, nn.Sigmoid, nn.Tanh])
def test_activation_layers_and_mse_gradients(device, rng, layer):
    x = rng.standard_normal((6, 3))
    t = rng.standard_normal((6, 2))
    model = nn.Sequential([nn.Dense(3, 4, seed=3), layer(), nn.Dense(4, 2, seed=4)], device=device, dtype="float64")
    analytic = grads_after_one_batch(model, x, t, nn.MSELoss())
    numeric = numeric_grads(model, x, lambda out: mse_np(out, t))
    for a, n in zip(analytic, numeric):
        assert rel_err(a, n) < 1e-6


@pytest.mark.requires("float64")
def test_softmax_last_layer_folds_into_cross_entropy(device, rng):
    x = rng.standard_normal((8, 4))
    y = np.eye(3)[rng.integers(0, 3, 8)]  # one-hot targets
    model = nn.Sequential([nn.Dense(4, 3, seed=5), nn.Softmax()], device=device, dtype="float64")
    probs = model.predict(x)
    np.testing.assert_allclose(probs.sum(axis=1), 1, rtol=1e-12)
    analytic = grads_after_one_batch(model, x, y, nn.CrossEntropyLoss())
    numeric = numeric_grads(model, x, lambda p: -(y * np.log(p)).sum(axis=1).mean())
    for a, n in zip(analytic, numeric):
        assert rel_err(a, n) < 1e-6
    with pytest.raises(ValueError, match="Softmax layer trains only with CrossEntropyLoss"):
        model.fit(x, y, loss=nn.MSELoss(), optimizer=optim.SGD(model.parameters(), lr=0.1))


@pytest.mark.requires("float64")
def test_maxpool_flatten_reshape_layers(device, rng):
    """Dense -> Reshape -> MaxPool2d (overlapping windows, padding) -> Flatten -> Dense: the first layer's gradients
    pass through the pooling backward, so finite differences check it; the forward against hetnn.max_pool2d."""
    x = rng.standard_normal((5, 6))
    y = rng.integers(0, 3, 5)
    pool = nn.MaxPool2d(3, stride=2, padding=1)
    model = nn.Sequential([nn.Dense(6, 2 * 5 * 4, "tanh", seed=6), nn.Reshape(2, 5, 4), pool, nn.Flatten(),
                           nn.Dense(2 * 3 * 2, 3, seed=7)], device=device, dtype="float64")
    w1, b1, w2, b2 = [p.numpy() for p in model.parameters()]
    h = np.tanh(x @ w1.T + b1).reshape(5, 2, 5, 4)
    ref = pool_ref.max_pool2d(h, (3, 3), (2, 2), (1, 1), (1, 1), False)[0].reshape(5, -1) @ w2.T + b2
    assert rel_err(model.predict(x), ref) < 1e-12
    analytic = grads_after_one_batch(model, x, y, nn.CrossEntropyLoss())
    numeric = numeric_grads(model, x, lambda out: ce_np(out, y))
    for a, n in zip(analytic, numeric):
        assert rel_err(a, n) < 1e-6
    with pytest.raises(ValueError, match="sizes differ"):
        nn.Sequential([nn.Dense(6, 7), nn.Reshape(2, 4)], device=device).predict(x)


def test_xor_reaches_full_accuracy(device):
    x, y = hetnn.datasets.xor()
    model = nn.Sequential([nn.Dense(2, 4, "tanh", seed=0), nn.Dense(4, 1, "sigmoid", seed=1)], device=device)
    opt = optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    hist = model.fit(x, y, loss=nn.MSELoss(), optimizer=opt, epochs=400, batch_size=4, metrics=["accuracy"],
                     seed=0)
    assert hist.history["accuracy"][-1] == 1.0
    assert model.evaluate(x, y, metrics=["accuracy"])["accuracy"] == 1.0
    np.testing.assert_array_equal(model.predict(x) > 0.5, y > 0.5)


def _mlp(device, seed=0):
    return nn.Sequential([nn.Flatten(), nn.Dense(12, 16, "relu", seed=seed), nn.Dense(16, 5, seed=seed + 1)],
                         device=device)


def test_training_agrees_across_devices_and_is_reproducible(rng):
    x = rng.random((40, 3, 4)).astype(np.float32)
    y = rng.integers(0, 5, 40)
    results = {}
    for dev in hetnn.devices():
        runs = []
        for _ in range(2):
            model = _mlp(dev)
            opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)
            hist = model.fit(x, y, loss=nn.CrossEntropyLoss(), optimizer=opt, epochs=2, batch_size=8, seed=3,
                             metrics=["accuracy"])
            runs.append(([p.numpy() for p in model.parameters()], hist.history["loss"]))
        for a, b in zip(runs[0][0], runs[1][0]):  # same seed, same device: the same run
            np.testing.assert_array_equal(a, b)
        results[dev.id] = runs[0][0]
    ids = list(results)
    for other in ids[1:]:
        for a, b in zip(results[ids[0]], results[other]):
            assert rel_err(b, a) < 1e-4, f"{other} vs {ids[0]}"


def _numpy_sgd_training(params, x, y, *, epochs, bs, lr, momentum, nesterov, weight_decay):
    """Flatten, Dense+ReLU, Dense, mean cross-entropy, PyTorch's SGD: in float64, minibatches in order."""
    w1, b1, w2, b2 = [p.astype(np.float64) for p in params]
    vel = [np.zeros_like(p) for p in (w1, b1, w2, b2)]
    x = x.reshape(len(x), -1).astype(np.float64)
    for _ in range(epochs):
        for i in range(0, len(x), bs):
            xb, yb = x[i:i + bs], y[i:i + bs]
            h = np.maximum(xb @ w1.T + b1, 0)
            z = h @ w2.T + b2
            p = np.exp(z - z.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            dz = (p - np.eye(z.shape[1])[yb]) / len(xb)
            dh = dz @ w2 * (h > 0)
            grads = (dh.T @ xb, dh.sum(axis=0), dz.T @ h, dz.sum(axis=0))
            new = []
            for w, g, v in zip((w1, b1, w2, b2), grads, vel):
                g = g + weight_decay * w
                v *= momentum
                v += g
                new.append(w - lr * (g + momentum * v if nesterov else v))
            w1, b1, w2, b2 = new
    return [w1, b1, w2, b2]


def test_training_matches_float64_numpy_on_every_device(device, rng):
    """Two epochs of Nesterov SGD with weight decay against the same training in float64 NumPy."""
    x = rng.random((40, 3, 4)).astype(np.float32)
    y = rng.integers(0, 5, 40)
    model = _mlp(device)
    start = [p.numpy() for p in model.parameters()]
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)
    model.fit(x, y, loss=nn.CrossEntropyLoss(), optimizer=opt, epochs=2, batch_size=8, shuffle=False)
    ref = _numpy_sgd_training(start, x, y, epochs=2, bs=8, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)
    for got, want in zip(model.parameters(), ref):
        assert rel_err(got.numpy(), want) < 1e-4


def test_one_step_matches_numpy_sgd(device, rng):
    """One minibatch step against a NumPy float64 implementation of forward, backward and SGD with momentum."""
    x = rng.standard_normal((16, 6)).astype(np.float32)
    y = rng.integers(0, 3, 16)
    model = nn.Sequential([nn.Dense(6, 5, "relu", seed=7), nn.Dense(5, 3, seed=8)], device=device)
    w1, b1, w2, b2 = [p.numpy().astype(np.float64) for p in model.parameters()]
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model.fit(x, y, loss=nn.CrossEntropyLoss(), optimizer=opt, epochs=1, batch_size=16, shuffle=False)
    h = np.maximum(x @ w1.T + b1, 0)
    z = h @ w2.T + b2
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    dz = (p - np.eye(3)[y]) / 16
    dw2, db2 = dz.T @ h, dz.sum(axis=0)
    dh = dz @ w2 * (h > 0)
    dw1, db1 = dh.T @ x, dh.sum(axis=0)
    for param, ref, g in zip(model.parameters(), (w1, b1, w2, b2), (dw1, db1, dw2, db2)):
        assert rel_err(param.numpy(), ref - 0.05 * g) < 1e-5


def test_history_callbacks_and_schedule(device, rng):
    x = rng.random((30, 12)).astype(np.float32)
    y = rng.integers(0, 5, 30)
    model = nn.Sequential([nn.Dense(12, 5, seed=1)], device=device)
    seen = []
    opt = optim.SGD(model.parameters(), lr=0.1, lr_schedule=lambda e, lr: lr / (e + 1))

    class Stop(nn.Callback):
        def on_epoch_end(self, epoch, logs, model):
            seen.append((epoch, opt.lr, sorted(logs)))
            return epoch == 2

    onehot = np.eye(5, dtype=np.float32)[y]
    hist = model.fit(x, onehot, loss="cross_entropy", optimizer=opt, epochs=10, batch_size=7,
                     metrics=["accuracy", "mae"], validation_data=(x, onehot), callbacks=[Stop()])
    assert hist.epochs == [0, 1, 2]
    assert [s[1] for s in seen] == [0.1, 0.05, 0.1 / 3]
    assert set(hist.history) == {"loss", "accuracy", "mae", "val_loss", "val_accuracy", "val_mae", "epoch_time"}
    assert all(len(v) == 3 for v in hist.history.values())
    assert hist.device_time.get("matmul", 0) > 0 and hist.device_time.get("sgd_update", 0) > 0
    # the reported loss is the mean over the epoch's samples; the validation loss that of the final weights
    ev = model.evaluate(x, y, metrics=["accuracy"])  # integer labels give the same loss as one-hot rows
    assert abs(ev["loss"] - hist.history["val_loss"][-1]) < 1e-5
    probs_mae = np.abs(model.predict(x).astype(np.float64) - onehot).mean()
    assert abs(probs_mae - hist.history["val_mae"][-1]) < 1e-6  # mae of the model's outputs
    with pytest.raises(ValueError, match="mae needs targets"):
        model.evaluate(x, y, metrics=["mae"])
    assert abs(ev["accuracy"] - hist.history["val_accuracy"][-1]) < 1e-6


def test_save_and_load_predict_identically(device, rng, tmp_path):
    x = rng.random((9, 3, 4)).astype(np.float32)
    model = nn.Sequential([nn.Flatten(), nn.Dense(12, 7, "tanh", seed=2), nn.Dense(7, 3, seed=3), nn.Softmax()],
                          device=device)
    path = tmp_path / "m.npz"
    model.save(path)
    loaded = nn.load(path, device=device)
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))
    assert [type(layer) for layer in loaded.layers] == [type(layer) for layer in model.layers]


@pytest.mark.parametrize("fault", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_save_that_fails_part_way_keeps_the_previous_model(tmp_path, monkeypatch, fault):
    """Saving over a model writes a temporary file and renames it: a full disk or Ctrl-C part-way through once left
    neither the old model nor a new one."""
    x = np.random.default_rng().random((5, 4)).astype(np.float32)
    old = nn.Sequential([nn.Dense(4, 3, seed=1)], device="cpu")
    path = tmp_path / "m.npz"
    old.save(path)
    before = path.read_bytes()
    new = nn.Sequential([nn.Dense(4, 3, seed=2)], device="cpu")
    real_savez = np.savez

    def failing_savez(f, **arrays):
        real_savez(f, **arrays)
        f.truncate(f.tell() // 2)  # half of it written
        raise fault
    monkeypatch.setattr(np, "savez", failing_savez)
    with pytest.raises(type(fault)):
        new.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    np.testing.assert_array_equal(nn.load(path).predict(x), old.predict(x))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npz"]  # no temporary left behind
    new.save(path)  # and a save that completes replaces it
    np.testing.assert_array_equal(nn.load(path).predict(x), new.predict(x))


def _special_files(tmp_path):
    """Paths that are not regular files, made in tmp_path (never the system's own: the defect replaced /dev/full)."""
    import os
    import socket
    import stat

    out = {"directory": tmp_path / "dir", "fifo": tmp_path / "fifo", "dangling link": tmp_path / "dangling"}
    out["directory"].mkdir()
    os.mkfifo(out["fifo"])
    os.symlink(tmp_path / "nowhere", out["dangling link"])
    out["link to a fifo"] = tmp_path / "to-fifo"
    os.symlink(out["fifo"], out["link to a fifo"])
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "sock"))
        out["socket"] = tmp_path / "sock"
    finally:
        sock.close()
    if os.geteuid() == 0:  # a character device like /dev/null (1, 3), in tmp_path
        os.mknod(tmp_path / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        out["character device"] = tmp_path / "null"
    return out


def test_a_save_never_replaces_what_is_not_a_regular_file(tmp_path):
    """Sequential.save, the reports' writer and the caches write a temporary file and rename it over the target:
    renaming over a device node replaced it (as root, /dev/full became a regular file). Such a target, a FIFO, a
    directory or a dangling link is refused with OSError naming it, and left as it was; a link to a regular file
    keeps being a link, with the new model in the file it names."""
    import os
    import stat

    from hetnn._loader import _core

    model = nn.Sequential([nn.Dense(4, 3, seed=1)], device="cpu")
    for what, path in _special_files(tmp_path).items():
        before = os.lstat(path)
        with pytest.raises(OSError, match="(?i)cannot write .*" + what.split()[-1]) as err:
            model.save(path)
        assert str(path) in str(err.value)
        with pytest.raises(OSError, match="cannot write"):
            _core.write_file_atomic(str(path), b"data")
        after = os.lstat(path)
        assert (stat.S_IFMT(after.st_mode), after.st_ino) == (stat.S_IFMT(before.st_mode), before.st_ino), what
    assert not [p.name for p in tmp_path.rglob("*.tmp*")]  # nothing left behind
    real, link = tmp_path / "real.npz", tmp_path / "link.npz"
    model.save(real)
    os.symlink(real, link)
    other = nn.Sequential([nn.Dense(4, 3, seed=2)], device="cpu")
    other.save(link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    x = np.random.default_rng().random((5, 4)).astype(np.float32)
    np.testing.assert_array_equal(nn.load(real).predict(x), other.predict(x))


def test_a_write_beyond_the_file_size_limit_surfaces_and_keeps_the_old_file(tmp_path):
    """A full disk or a quota fails a write part-way: the writers check every write and the fsync, raise OSError
    naming the file, leave the previous file and no temporary (RLIMIT_FSIZE stands in for a full disk)."""
    import subprocess
    import sys

    code = f"""
import os, resource, signal, numpy as np
from hetnn import nn
from hetnn._loader import _core
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
path = {str(tmp_path / "m.npz")!r}
nn.Sequential([nn.Dense(4, 3, seed=1)], device="cpu").save(path)
before = open(path, "rb").read()
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
for write in (lambda: nn.Sequential([nn.Dense(400, 300, seed=2)], device="cpu").save(path),
              lambda: _core.write_file_atomic(path, b"x" * 100000)):
    try:
        write()
    except OSError as e:
        assert "cannot write " + path in str(e) and e.errno is not None, e
    else:
        raise SystemExit("no error")
    assert open(path, "rb").read() == before
print(sorted(os.listdir(os.path.dirname(path))))
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == "['m.npz']"


def test_load_rejects_foreign_and_corrupt_files(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip at all")
    with pytest.raises(ValueError, match="not a readable .npz"):
        nn.load(bad)
    other = tmp_path / "other.npz"
    np.savez(other, a=np.zeros(3))
    with pytest.raises(ValueError, match="holds no hetnn model"):
        nn.load(other)
    arch = {"format": "hetnn.nn.Sequential/1", "dtype": "float32",
            "layers": [{"kind": "dense", "config": {"in_features": 2, "out_features": 3}}]}
    short = tmp_path / "short.npz"
    np.savez(short, __architecture__=np.array(json.dumps(arch)), param_0=np.zeros((3, 2), np.float32))
    with pytest.raises(ValueError, match="missing param_1"):
        nn.load(short)
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, __architecture__=np.array(json.dumps(arch)), param_0=np.zeros((2, 2), np.float32),
             param_1=np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="has shape"):
        nn.load(wrong)
    evil = tmp_path / "evil.npz"
    np.savez(evil, __architecture__=np.array([{"x": 1}], dtype=object))
    with pytest.raises(ValueError):
        nn.load(evil)


def test_bad_inputs_raise_clear_errors(device, rng):
    x = rng.random((10, 4)).astype(np.float32)
    y = rng.integers(0, 3, 10)
    model = nn.Sequential([nn.Dense(4, 3, seed=0)], device=device)
    opt = optim.SGD(model.parameters(), lr=0.1)
    fit = lambda xx, yy, **kw: model.fit(xx, yy, loss=nn.CrossEntropyLoss(), optimizer=opt, **kw)  # noqa: E731
    with pytest.raises(ValueError, match="x has 10 samples but y has 9"):
        fit(x, y[:9])
    with pytest.raises(ValueError, match="takes 4 features per sample"):
        fit(x[:, :3], y)
    for bad in (3, -1):
        yb = y.copy()
        yb[4] = bad
        with pytest.raises(ValueError, match=f"label {bad} is out of range for 3 classes"):
            fit(x, yb)
    xn = x.copy()
    xn[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN or infinity \(first at index \(2, 1\)\)"):
        fit(xn, y)
    with pytest.raises(ValueError, match="y holds NaN"):
        model.fit(x, np.full((10, 3), np.nan), loss=nn.MSELoss(), optimizer=opt)
    for bs in (0, -5, 2.5):
        with pytest.raises(ValueError, match="batch_size must be a positive int"):
            fit(x, y, batch_size=bs)
    with pytest.raises(ValueError, match="lr must be >= 0"):
        optim.SGD(model.parameters(), lr=-0.1)
    with pytest.raises(ValueError, match="nesterov=True needs momentum"):
        optim.SGD(model.parameters(), lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="not this model's"):
        fit_other = nn.Sequential([nn.Dense(4, 3)], device=device)
        model.fit(x, y, loss=nn.CrossEntropyLoss(), optimizer=optim.SGD(fit_other.parameters(), lr=0.1))
    with pytest.raises(TypeError, match="hetnn.nn loss"):
        model.fit(x, y, loss="hinge", optimizer=opt)
    with pytest.raises(ValueError, match="unknown metric"):
        fit(x, y, metrics=["f1"])
    with pytest.raises(ValueError, match="targets must have shape"):
        model.fit(x, np.zeros((10, 2)), loss=nn.MSELoss(), optimizer=opt)
    with pytest.raises(TypeError, match="must be numeric"):
        fit(np.array([["a"] * 4] * 10), y)
    with pytest.raises(ValueError, match="activation must be one of"):
        nn.Dense(4, 3, activation="gelu")
    with pytest.raises(ValueError, match="in_features must be a positive int"):
        nn.Dense(0, 3)
    with pytest.raises(ValueError, match="Softmax is supported only as the last layer"):
        nn.Sequential([nn.Softmax(), nn.Dense(3, 3)])
    with pytest.raises(ValueError, match=r"MaxPool2d: padding \(2, 2\) must be at most half"):
        nn.MaxPool2d(2, padding=2)  # at construction, not at the first batch
    with pytest.raises(ValueError, match=r"layer 0 \(MaxPool2d\).*too small"):
        nn.Sequential([nn.MaxPool2d(3), nn.Flatten(), nn.Dense(9, 1)], device=device).predict(
            np.zeros((2, 1, 2, 2), np.float32))


def test_datasets(tmp_path):
    from hetnn import datasets
    arr = np.arange(24, dtype=">i4").reshape(2, 3, 4)
    p = tmp_path / "a-idx3"
    p.write_bytes(bytes([0, 0, 0x0C, 3]) + np.array(arr.shape, ">u4").tobytes() + arr.tobytes())
    np.testing.assert_array_equal(datasets.read_idx(p), np.arange(24).reshape(2, 3, 4))
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(ValueError, match="bad magic"):
        datasets.read_idx(tmp_path / "bad")
    (tmp_path / "short").write_bytes(bytes([0, 0, 0x08, 1]) + np.array([5], ">u4").tobytes() + b"\x00\x01")
    with pytest.raises(ValueError, match="header says shape"):
        datasets.read_idx(tmp_path / "short")
    with pytest.raises(FileNotFoundError, match="dataset-fashion-mnist"):
        datasets.fashion_mnist(tmp_path / "nowhere")
    (xtr, ytr), (xte, yte) = datasets.solar_irradiance(n_samples=1000, seed=1)
    assert xtr.shape == (800, 50) and ytr.shape == (800, 1) and xte.shape == (200, 50)
    (xtr2, _), _ = datasets.solar_irradiance(n_samples=1000, seed=1)
    np.testing.assert_array_equal(xtr, xtr2)
    assert np.corrcoef(xtr[:, 0], ytr[:, 0])[0, 1] > 0.8  # correlated sensors: the target is predictable


def test_fashion_mnist_files():
    from hetnn import datasets
    import os
    if not os.path.isdir(datasets.FASHION_MNIST_DIR):
        pytest.skip("dataset-fashion-mnist is not installed (scripts/setup.sh installs it)")
    (xtr, ytr), (xte, yte) = datasets.fashion_mnist()
    assert xtr.shape == (60000, 28, 28) and xtr.dtype == np.uint8
    assert xte.shape == (10000, 28, 28) and yte.shape == (10000,)
    assert set(np.unique(ytr)) == set(range(10))
    assert np.bincount(ytr).tolist() == [6000] * 10


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_models_are_mixed_precision_and_learn(device, rng, dtype):
    """A float16 / bfloat16 model is mixed precision: float32 parameters (master weights) and gradients, the layers
    computing on 16-bit copies of them. Its first-batch gradients against float64 NumPy from the weights as the
    layers see them (rounded to the 16-bit type), then it learns a separable problem."""
    x = rng.standard_normal((64, 12)).astype(dtype)
    y = np.argmax(x.astype(np.float64) @ rng.standard_normal((12, 3)), axis=1)
    model = nn.Sequential([nn.Dense(12, 16, "tanh", seed=1), nn.Dense(16, 3, seed=2)], device=device, dtype=dtype)
    model.loss_scale = 1024.0  # float16: no overflow of the first step's scaled gradients, whatever the data
    assert all(p.numpy().dtype == np.float32 for p in model.parameters())
    w1, b1, w2, b2 = (p.numpy().astype(dtype).astype(np.float64) for p in model.parameters())
    xd = x.astype(np.float64)
    h = np.tanh(xd @ w1.T + b1)
    z = h @ w2.T + b2
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    dz = (p - np.eye(3)[y]) / len(x)
    dh = (dz @ w2) * (1 - h ** 2)
    want = [dh.T @ xd, dh.sum(axis=0), dz.T @ h, dz.sum(axis=0)]
    got = grads_after_one_batch(model, x, y, nn.CrossEntropyLoss())
    unit = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}[dtype]
    for g, w in zip(got, want):
        assert g.dtype == np.float32  # unscaled (float16's loss scale divided out)
        assert rel_err(g, w) < 16 * unit
    opt = optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    model.fit(x, y, loss=nn.CrossEntropyLoss(), optimizer=opt, epochs=30, batch_size=16)
    assert np.mean(np.argmax(model.predict(x).astype(np.float64), axis=1) == y) >= 0.9


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_updates_below_the_16_bit_step_reach_the_master_weights(device, rng, dtype):
    """An update far below the 16-bit type's step at the weights' size (which a 16-bit parameter would lose to
    rounding) moves the float32 master weights by lr * gradient."""
    x = rng.standard_normal((32, 5)).astype(dtype)
    t = rng.standard_normal((32, 2)).astype(dtype)
    model = nn.Sequential([nn.Dense(5, 2, seed=4)], device=device, dtype=dtype)
    model.loss_scale = 256.0  # float16: gradients of about 1 overflow at the default 2**16 (that step is skipped)
    w0, b0 = (p.numpy().astype(np.float64) for p in model.parameters())
    w16, b16 = w0.astype(dtype).astype(np.float64), b0.astype(dtype).astype(np.float64)
    lr = 1e-4  # bfloat16's step at 0.3 is 2**-9, float16's 2**-12: lr * g is far below half of either
    model.fit(x, t, loss="mse", optimizer=optim.SGD(model.parameters(), lr=lr), epochs=1, batch_size=32,
              shuffle=False)
    xd, td = x.astype(np.float64), t.astype(np.float64)
    y = xd @ w16.T + b16
    dz = 2 * (y - td) / t.size
    # the layers round the output and its gradient to the 16-bit type: each term of a gradient sum is off by a few
    # units of its own size (|dz| bounded by the output's and the target's), whatever the sum's cancellation
    unit = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}[dtype]
    dzmag = 2 * (np.abs(y) + np.abs(td)) / t.size
    for got, start, g, mag in zip(model.parameters(), (w0, b0), (dz.T @ xd, dz.sum(axis=0)),
                                  (dzmag.T @ np.abs(xd), dzmag.sum(axis=0))):
        moved = got.numpy().astype(np.float64) - start
        assert np.all(np.abs(moved + lr * g) <= lr * 8 * unit * mag + 2 ** -23 * np.abs(start))
    moved_w = model.parameters()[0].numpy().astype(np.float64) - w0
    assert np.max(np.abs(moved_w)) > 0.5 * np.max(np.abs(lr * (dz.T @ xd)))  # the update was not lost to rounding


def test_float16_loss_scaling_keeps_gradients_below_float16s_range(device, rng):
    """Weight gradients of about 3e-7, a few of float16's subnormal steps (6e-8) apart: unscaled, float16 would hold
    them to within tens of percent; scaled by the loss scale in the backward pass they keep float16's 11 bits, and
    reach the float32 gradients unscaled."""
    x = rng.uniform(1e-5, 2e-5, (16, 4)).astype(np.float16)
    model = nn.Sequential([nn.Dense(4, 1, seed=2)], device=device, dtype="float16")
    out = model.predict(x).astype(np.float64)
    t = (out + 0.01).astype(np.float16)
    model.fit(x, t, loss="mse", optimizer=optim.SGD(model.parameters(), lr=0.0), epochs=1, batch_size=16,
              shuffle=False)
    g = model.parameters()[0].grad_data.numpy()
    want = (2 * (out - t.astype(np.float64)) / t.size).T @ x.astype(np.float64)
    assert g.dtype == np.float32 and np.max(np.abs(want)) < 1e-6
    np.testing.assert_allclose(g, want, rtol=0.01)


def test_float16_overflow_skips_the_update_and_halves_the_scale(device, rng):
    x = rng.standard_normal((24, 4)).astype(np.float16)
    y = rng.integers(0, 3, 24)
    model = nn.Sequential([nn.Dense(4, 3, seed=5)], device=device, dtype="float16")
    before = [p.numpy() for p in model.parameters()]
    model.loss_scale = 2.0 ** 40  # the first steps' scaled gradients overflow float16
    hist = model.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(model.parameters(), lr=0.5), epochs=1,
                     batch_size=8, shuffle=False)
    assert hist.params["skipped_steps"] == 3 and hist.params["loss_scale"] == 2.0 ** 37 == model.loss_scale
    for b, p in zip(before, model.parameters()):
        np.testing.assert_array_equal(p.numpy(), b)  # every update skipped
    model.loss_scale = 2.0 ** 10
    hist = model.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(model.parameters(), lr=0.5), epochs=2,
                     batch_size=8)
    # every step taken now, each parameter moved (whether an SGD step of 0.5 on random labels lowers the loss is
    # the draw's: it rose in about 4 of 10,000 draws, once in CI)
    assert hist.params["skipped_steps"] == 0 and model.loss_scale >= 2.0 ** 10
    for b, p in zip(before, model.parameters()):
        assert np.any(p.numpy() != b)
    for bad, exc in ((0.5, ValueError), (float("nan"), ValueError), ("x", TypeError), (None, TypeError)):
        model.loss_scale = bad
        with pytest.raises(exc, match="loss_scale"):
            model.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(model.parameters(), lr=0.5), epochs=1,
                      batch_size=8)


def _model_file(tmp_path, arch=None, **entries):
    """A .npz holding an architecture (dict, or raw text) and the given entries."""
    from hetnn.nn._saving import FORMAT as _FORMAT

    base = {"format": _FORMAT, "dtype": "float32",
            "layers": [{"kind": "dense", "config": {"in_features": 4, "out_features": 3, "activation": None,
                                                    "bias": True, "init": "glorot_uniform"}}]}
    text = arch if isinstance(arch, str) else json.dumps(base if arch is None else {**base, **arch})
    path = tmp_path / "m.npz"
    np.savez(path, __architecture__=np.array(text), **entries)
    return path


GOOD = {"param_0": np.zeros((3, 4), np.float32), "param_1": np.zeros(3, np.float32)}


@pytest.mark.parametrize("case, make, message", [
    ("plain .npy", lambda p: (np.save(p / "m.npy", np.zeros(3)), p / "m.npy")[1], "is not a readable .npz file"),
    ("dtype int32", lambda p: _model_file(p, {"dtype": "int32"}, **GOOD), "dtype 'int32' is not one of"),
    ("dtype float13", lambda p: _model_file(p, {"dtype": "float13"}, **GOOD), "dtype 'float13'"),
    ("dtype list", lambda p: _model_file(p, {"dtype": [1]}, **GOOD), "dtype [1]"),
    ("deep JSON", lambda p: _model_file(p, "[" * 100000 + "]" * 100000, **GOOD), "not valid JSON"),
    ("huge Dense", lambda p: _model_file(p, {"layers": [{"kind": "dense", "config": {
        "in_features": 10**6, "out_features": 10**6}}]}, **GOOD), "param_0 has shape (3, 4), the architecture needs"),
    ("extra entry", lambda p: _model_file(p, param_x=np.zeros(1), **GOOD), "entry 'param_x' is not a parameter"),
    ("object array", lambda p: _model_file(p, **{**GOOD, "param_1": np.array([None, 1], dtype=object)}),
     "param_1"),
    ("integer parameter", lambda p: _model_file(p, **{**GOOD, "param_1": np.zeros(3, np.int32)}),
     "param_1 is int32, not floating point"),
    ("unknown kind", lambda p: _model_file(p, {"layers": [{"kind": "Conv9", "config": {}}]}),
     "layer 0: unknown kind 'Conv9'"),
])
def test_load_names_the_file_and_entry_of_every_malformed_model(tmp_path, case, make, message):
    """Each once raised TypeError, AttributeError, RecursionError or MemoryError (or cost gigabytes before the
    check): now a ValueError naming the file and what is wrong, before any layer is built."""
    path = make(tmp_path)
    with pytest.raises(ValueError) as info:
        nn.load(path)
    assert str(path) in str(info.value) and message in str(info.value), (case, str(info.value))


def test_load_of_an_interrupted_save_is_a_value_error(tmp_path):
    """An empty or truncated member, what an interrupted write leaves, once raised AttributeError."""
    import zipfile

    good = _model_file(tmp_path, **GOOD)
    bad = tmp_path / "cut.npz"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(bad, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, b"" if info.filename == "param_1.npy" else data)
    with pytest.raises(ValueError, match=r"cut.npz: entry 'param_1' is not a readable .npy array"):
        nn.load(bad)


def test_sgd_step_and_zero_state_match_numpy(device, rng):
    """SGD.step() outside fit (the MLP benchmark's hand-written loop uses it) and zero_state(), against NumPy."""
    model = nn.Sequential([nn.Dense(5, 3, seed=2)], device=device)
    (w, b) = model.parameters()
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01)
    gw, gb = rng.standard_normal((3, 5)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    w.grad.write_from(gw)
    b.grad.write_from(gb)
    w0, b0 = w.numpy().astype(np.float64), b.numpy().astype(np.float64)
    ref, vel = [w0, b0], [np.zeros_like(w0), np.zeros_like(b0)]

    def numpy_step():
        for i, g in enumerate((gw, gb)):
            d = g + 0.01 * ref[i]
            vel[i] = 0.9 * vel[i] + d
            ref[i] = ref[i] - 0.1 * vel[i]
    for _ in range(2):
        opt.step()
        numpy_step()
    assert rel_err(w.numpy(), ref[0]) < 1e-5 and rel_err(b.numpy(), ref[1]) < 1e-5
    opt.zero_state()  # momentum forgotten: the next step starts from v = 0
    vel = [np.zeros_like(w0), np.zeros_like(b0)]
    opt.step()
    numpy_step()
    assert rel_err(w.numpy(), ref[0]) < 1e-5 and rel_err(b.numpy(), ref[1]) < 1e-5


def test_ctrl_c_as_the_temporary_file_is_created_leaves_nothing_behind(tmp_path, monkeypatch):
    """A KeyboardInterrupt right after the save's temporary file exists (it once landed between mkstemp's return
    and the cleanup's try) must leave the previous model and no temporary file."""
    import os

    old = nn.Sequential([nn.Dense(4, 3, seed=1)], device="cpu")
    path = tmp_path / "m.npz"
    old.save(path)
    before = path.read_bytes()
    real_open = os.open

    def interrupted_open(p, flags, *args, **kwargs):
        fd = real_open(p, flags, *args, **kwargs)
        if str(p).endswith(".tmp") or ".m.npz." in str(p):
            os.close(fd)
            raise KeyboardInterrupt
        return fd
    monkeypatch.setattr(os, "open", interrupted_open)
    with pytest.raises(KeyboardInterrupt):
        nn.Sequential([nn.Dense(4, 3, seed=2)], device="cpu").save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npz"]


def _avg_pool_ref(x, k, s, p, count_include_pad, divisor):
    """PyTorch's avg_pool2d in float64 loops (ceil_mode off)."""
    n, c, h, w = x.shape
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * s - p, j * s - p
            r1, c1 = min(r0 + k, h + p), min(c0 + k, w + p)
            area = (r1 - r0) * (c1 - c0)
            rs, cs = slice(max(r0, 0), min(r1, h)), slice(max(c0, 0), min(c1, w))
            inside = (rs.stop - rs.start) * (cs.stop - cs.start)
            d = divisor or (area if count_include_pad else inside)
            out[:, :, i, j] = x[:, :, rs, cs].sum(axis=(2, 3)) / d
    return out


@pytest.mark.requires("float64")
@pytest.mark.parametrize("count_include_pad, divisor", [(True, None), (False, None), (True, 3)])
def test_avgpool_layer(device, rng, count_include_pad, divisor):
    """Dense -> Reshape -> AvgPool2d (overlapping windows, padding) -> Flatten -> Dense: the forward against float64
    loops, the gradients through the pooling backward against finite differences, and a save/load round trip."""
    x = rng.standard_normal((5, 6))
    y = rng.integers(0, 3, 5)
    pool = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=count_include_pad, divisor_override=divisor)
    model = nn.Sequential([nn.Dense(6, 2 * 5 * 4, "tanh", seed=6), nn.Reshape(2, 5, 4), pool, nn.Flatten(),
                           nn.Dense(2 * 3 * 2, 3, seed=7)], device=device, dtype="float64")
    w1, b1, w2, b2 = [p.numpy() for p in model.parameters()]
    h = np.tanh(x @ w1.T + b1).reshape(5, 2, 5, 4)
    ref = _avg_pool_ref(h, 3, 2, 1, count_include_pad, divisor).reshape(5, -1) @ w2.T + b2
    assert rel_err(model.predict(x), ref) < 1e-12
    analytic = grads_after_one_batch(model, x, y, nn.CrossEntropyLoss())
    numeric = numeric_grads(model, x, lambda out: ce_np(out, y))
    for a, n in zip(analytic, numeric):
        assert rel_err(a, n) < 1e-6


def test_avgpool_layer_after_a_convolution_trains_and_saves(device, rng, tmp_path):
    """In a convolution network (whose activations the CPU device keeps in blocked layouts: reordered before the
    pooling) the float32 forward matches the float64 reference, and the model saves and loads."""
    x = rng.standard_normal((4, 2, 6, 6)).astype(np.float32)
    model = nn.Sequential([nn.Conv2d(2, 16, 3, padding=1, seed=0), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(),
                           nn.Dense(16 * 9, 3, seed=1)], device=device)
    w, b, w2, b2 = [p.numpy().astype(np.float64) for p in model.parameters()]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((4, 16, 6, 6))
    for i in range(3):
        for j in range(3):
            conv += np.einsum("nchw,oc->nohw", xp[:, :, i:i + 6, j:j + 6], w[:, :, i, j])
    h = np.maximum(conv + b[None, :, None, None], 0)
    ref = _avg_pool_ref(h, 2, 2, 0, True, None).reshape(4, -1) @ w2.T + b2
    assert rel_err(model.predict(x), ref) < 1e-4
    hist = model.fit(x, rng.integers(0, 3, 4), loss="cross_entropy", optimizer=optim.SGD(model.parameters(), lr=0.1),
                     epochs=2, batch_size=2)
    assert all(np.isfinite(hist.history["loss"]))
    model.save(tmp_path / "m.npz")
    loaded = nn.load(tmp_path / "m.npz", device=device)
    assert isinstance(loaded[2], nn.AvgPool2d) and loaded[2].config() == model[2].config()
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))


@pytest.mark.parametrize("kw, exc, what", [
    ({"kernel_size": 0}, ValueError, "AvgPool2d"),
    ({"kernel_size": 2, "padding": 2}, ValueError, r"AvgPool2d: padding \(2, 2\) must be at most half"),
    ({"kernel_size": 2, "count_include_pad": 1}, TypeError, "count_include_pad must be a bool, got 1"),
    ({"kernel_size": 2, "divisor_override": 0}, ValueError, "divisor_override must be None or an int > 0, got 0"),
    ({"kernel_size": 2, "divisor_override": 1.5}, ValueError, "divisor_override must be None or an int > 0"),
])
def test_avgpool_layer_bad_arguments(kw, exc, what):
    with pytest.raises(exc, match=what):
        nn.AvgPool2d(**kw)
