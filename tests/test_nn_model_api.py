"""Sequential as users of PyTorch and Keras expect it: state_dict / load_state_dict, pickle and deepcopy,
summary(), validation_split, model(x), len and indexing, EarlyStopping (restore_best_weights, a monitor the fit
does not log), evaluate's default metrics, accuracy with MSELoss on one-hot targets, a loaded model's loss."""
import copy
import importlib.util
import pickle

import numpy as np
import pytest

from hetnn import nn, optim


def _model(device, seed=0, n_out=3):
    return nn.Sequential([nn.Dense(4, 8, "tanh", seed=seed), nn.Dense(8, n_out, seed=seed + 1)], device=device)


def _data(rng, n=64, c=3):
    x = rng.standard_normal((n, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5).astype(np.int64)
    return x, np.minimum(y, c - 1)


def test_state_dict_round_trip_and_pytorch_names(device, rng):
    m = _model(device)
    sd = m.state_dict()
    assert list(sd) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert sd["0.weight"].shape == (8, 4) and sd["1.bias"].shape == (3,)
    sd["0.weight"][:] = 0  # copies: the model is unchanged
    assert np.abs(m.state_dict()["0.weight"]).sum() > 0
    other = _model(device, seed=7)
    new = {k: rng.standard_normal(v.shape).astype(np.float32) for k, v in m.state_dict().items()}
    assert other.load_state_dict(new) == ([], [])
    for k, v in other.state_dict().items():
        np.testing.assert_array_equal(v, new[k])
    x = rng.standard_normal((5, 4)).astype(np.float32)
    h = np.tanh(x.astype(np.float64) @ new["0.weight"].T + new["0.bias"])
    np.testing.assert_allclose(other(x), h @ new["1.weight"].T + new["1.bias"], rtol=1e-4, atol=1e-5)


def test_load_state_dict_errors_name_the_keys_and_write_nothing(device, rng):
    m = _model(device)
    before = m.state_dict()
    bad = dict(before)
    bad.pop("1.bias")
    bad["2.weight"] = np.zeros((1, 1), np.float32)
    with pytest.raises(KeyError, match=r"missing keys \['1.bias'\].*unexpected keys \['2.weight'\]"):
        m.load_state_dict(bad)
    assert m.load_state_dict(bad, strict=False) == (["1.bias"], ["2.weight"])
    wrong = {k: np.zeros(v.shape, np.float32) for k, v in before.items()}
    wrong["1.weight"] = np.zeros((3, 9), np.float32)
    with pytest.raises(ValueError, match=r"1.weight has shape \(3, 9\)"):
        m.load_state_dict(wrong)
    assert np.abs(m.state_dict()["0.weight"]).sum() > 0  # nothing written
    with pytest.raises(TypeError, match="mapping"):
        m.load_state_dict([1, 2])


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_state_dict_loads_into_torch_and_back(device, rng):
    import torch

    m = _model(device)
    t = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    rename = {"0.weight": "0.weight", "0.bias": "0.bias", "1.weight": "2.weight", "1.bias": "2.bias"}
    t.load_state_dict({rename[k]: torch.from_numpy(v) for k, v in m.state_dict().items()})
    x = rng.standard_normal((6, 4)).astype(np.float32)
    np.testing.assert_allclose(m.predict(x), t(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        for p in t.parameters():
            p.mul_(-2.0)
    m.load_state_dict({k: t.state_dict()[rename[k]] for k in rename})  # tensors in
    np.testing.assert_allclose(m.predict(x), t(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_pickle_and_deepcopy_keep_values_device_and_loss(device, rng, how):
    m = _model(device)
    x, y = _data(rng)
    m.fit(x, y, loss=nn.CrossEntropyLoss(), optimizer=optim.SGD(m.parameters(), lr=0.1), epochs=1)
    c = pickle.loads(pickle.dumps(m)) if how == "pickle" else copy.deepcopy(m)
    assert c.device == m.device and c.dtype == m.dtype and isinstance(c.loss, nn.CrossEntropyLoss)
    for (k, a), (k2, b) in zip(m.state_dict().items(), c.state_dict().items()):
        assert k == k2
        np.testing.assert_array_equal(a, b)
    assert all(p.value is not q.value for p, q in zip(m.parameters(), c.parameters()))  # independent copies
    c.fit(x, y, loss=nn.CrossEntropyLoss(), optimizer=optim.SGD(c.parameters(), lr=0.5), epochs=1)
    assert not np.array_equal(c.state_dict()["0.weight"], m.state_dict()["0.weight"])
    assert set(m.evaluate(x, y)) == {"loss", "accuracy"}


def test_summary_table(device):
    m = nn.Sequential([nn.Reshape(1, 4, 4), nn.MaxPool2d(2), nn.Flatten(), nn.Dense(4, 5, "relu"),
                       nn.Dense(5, 2)], device=device)
    lines = []
    m.summary(input_shape=(16,), print_fn=lines.append)
    text = lines[0]
    assert "(None, 1, 2, 2)" in text and "(None, 5)" in text and "(None, 2)" in text
    assert "Total params: 37" in text and "3: Dense" in text and device.id in text
    m.summary(print_fn=lines.append)  # without the input shape: shapes unknown, counts still right
    assert "input_shape" in lines[1] and "Total params: 37" in lines[1]
    with pytest.raises(ValueError, match="layer 0 .Reshape."):
        m.summary(input_shape=(15,), print_fn=lines.append)


def test_validation_split_holds_out_the_last_samples(device, rng):
    x, y = _data(rng, n=50)
    a, b = _model(device), _model(device)
    ha = a.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(a.parameters(), lr=0.1), epochs=2,
               validation_split=0.2, metrics=["accuracy"], seed=3)
    hb = b.fit(x[:40], y[:40], loss="cross_entropy", optimizer=optim.SGD(b.parameters(), lr=0.1), epochs=2,
               validation_data=(x[40:], y[40:]), metrics=["accuracy"], seed=3)
    for k in ("loss", "val_loss", "val_accuracy"):
        np.testing.assert_allclose(ha.history[k], hb.history[k], rtol=1e-6)
    for bad, msg in ((1.0, "fraction"), (-0.1, "fraction"), ("0.2", "fraction"), (0.001, "no validation")):
        with pytest.raises(ValueError, match=msg):
            a.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(a.parameters(), lr=0.1), validation_split=bad)
    with pytest.raises(ValueError, match="not both"):
        a.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(a.parameters(), lr=0.1), validation_split=0.2,
              validation_data=(x, y))


def test_call_len_iteration_and_indexing(device, rng):
    m = _model(device)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_array_equal(m(x), m.predict(x))
    assert len(m) == 2 and list(m) == m.layers and m[0] is m.layers[0] and m[-1] is m.layers[1]
    head = m[:1]
    assert isinstance(head, nn.Sequential) and len(head) == 1 and head[0].weight is m[0].weight
    h = np.tanh(x.astype(np.float64) @ m[0].weight.numpy().T + m[0].bias.numpy())
    np.testing.assert_allclose(head(x), h, rtol=1e-5, atol=1e-6)
    with pytest.raises(IndexError):
        m[5]
    with pytest.raises(TypeError, match="ints or slices"):
        m["0"]


def test_parameters_are_array_like(device):
    m = _model(device)
    w = m[0].weight
    assert w.dtype == np.float32 and w.ndim == 2 and w.size == 32 and len(w) == 8
    np.testing.assert_array_equal(np.array(w), w.numpy())  # a copy (np.asarray: a view on the CPU device only)
    assert np.array(w).shape == (8, 4)


class _Record:
    def __init__(self):
        self.states = []

    def on_epoch_end(self, epoch, logs, model):
        self.states.append((logs["val_loss"], model.state_dict()))


def test_early_stopping_restores_the_best_weights(device, rng):
    x, y = _data(rng, n=80)
    m = _model(device)
    rec = _Record()
    es = nn.EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True)
    # a learning rate large enough that the validation loss goes up again
    m.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(m.parameters(), lr=3.0, momentum=0.9), epochs=12,
          validation_split=0.25, callbacks=[rec, es], seed=1)
    losses = [v for v, _ in rec.states]
    best = int(np.argmin(losses))
    assert es.best_epoch == best and es.best == pytest.approx(losses[best])
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v, rec.states[best][1][k])


def test_a_monitor_the_fit_does_not_log_is_refused_before_training(device, rng):
    x, y = _data(rng)
    m = _model(device)
    before = m.state_dict()
    with pytest.raises(ValueError, match="val_loss.*validation_data or validation_split"):
        m.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(m.parameters(), lr=0.1), epochs=3,
              callbacks=[nn.EarlyStopping()])
    with pytest.raises(ValueError, match="'val_acc'"):
        m.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(m.parameters(), lr=0.1), epochs=3,
              validation_split=0.2, callbacks=[nn.EarlyStopping(monitor="val_acc")])
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v, before[k])
    h = m.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(m.parameters(), lr=0.1), epochs=3,
              callbacks=[nn.EarlyStopping(monitor="loss", patience=5)])
    assert len(h.epochs) == 3
    es = nn.EarlyStopping(monitor="val_accuracy")
    assert es.mode == "max"
    for bad in (dict(patience=-1), dict(mode="up"), dict(restore_best_weights=1)):
        with pytest.raises((ValueError, TypeError)):
            nn.EarlyStopping(**bad)


def test_evaluate_default_metrics_follow_the_loss(device, rng):
    x = rng.standard_normal((40, 4)).astype(np.float32)
    target = (x @ rng.standard_normal((4, 1))).astype(np.float32)
    reg = nn.Sequential([nn.Dense(4, 1, seed=0)], device=device)
    reg.fit(x, target, loss="mse", optimizer=optim.SGD(reg.parameters(), lr=0.05), epochs=2)
    res = reg.evaluate(x, target)
    assert set(res) == {"loss", "mae"}
    pred = reg.predict(x).astype(np.float64)
    assert res["mae"] == pytest.approx(np.abs(pred - target).mean(), rel=1e-4)
    assert res["loss"] == pytest.approx(((pred - target) ** 2).mean(), rel=1e-4)


def test_cross_entropy_on_one_output_is_refused(device, rng):
    m = nn.Sequential([nn.Dense(4, 1)], device=device)
    with pytest.raises(ValueError, match="2 or more outputs"):
        m.fit(rng.standard_normal((8, 4)).astype(np.float32), rng.random(8).astype(np.float32),
              loss="cross_entropy", optimizer=optim.SGD(m.parameters(), lr=0.1))


def test_accuracy_with_mse_on_one_hot_targets(device, rng):
    x, labels = _data(rng, n=60)
    onehot = np.eye(3, dtype=np.float32)[labels]
    m = _model(device)
    h = m.fit(x, onehot, loss="mse", optimizer=optim.SGD(m.parameters(), lr=0.2), epochs=2, metrics=["accuracy"])
    assert 0.0 <= h.history["accuracy"][-1] <= 1.0
    res = m.evaluate(x, onehot, metrics=["accuracy"])
    assert res["accuracy"] == pytest.approx((np.argmax(m.predict(x), axis=1) == labels).mean())
    soft = onehot * 0.8 + 0.05  # not one-hot: accuracy has no labels to compare with
    with pytest.raises(ValueError, match="one-hot"):
        m.evaluate(x, soft, metrics=["accuracy"])


def test_a_loaded_model_evaluates_with_its_loss(device, rng, tmp_path):
    x, y = _data(rng)
    m = _model(device)
    m.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(m.parameters(), lr=0.1), epochs=1)
    m.save(tmp_path / "m.npz")
    back = nn.load(tmp_path / "m.npz", device=device)
    assert isinstance(back.loss, nn.CrossEntropyLoss)
    assert back.evaluate(x, y) == pytest.approx(m.evaluate(x, y))


class _FakeBar:
    made = []

    def __init__(self, total, **kw):
        self.total, self.n, self.updates = total, 0, []
        _FakeBar.made.append(self)

    def update(self, k):
        self.n += k
        self.updates.append(self.n)

    def set_description(self, *a, **k):
        pass

    def set_postfix(self, *a, **k):
        pass

    def close(self):
        pass


def test_fit_progress_advances_within_each_epoch(monkeypatch, rng):
    import hetnn._bars

    monkeypatch.setattr(hetnn._bars, "tqdm_class", lambda: _FakeBar)
    _FakeBar.made.clear()
    n, width = 4096, 1024  # one epoch takes well over the 0.1 s between reports
    x = rng.standard_normal((n, width)).astype(np.float32)
    y = rng.integers(0, 10, n)
    m = nn.Sequential([nn.Dense(width, width, "relu"), nn.Dense(width, width, "relu"), nn.Dense(width, 10)],
                      device="cpu")
    m.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(m.parameters(), lr=0.01), epochs=2, batch_size=32,
          verbose=True)
    bar = _FakeBar.made[-1]
    assert bar.total == 2 * n and bar.n == 2 * n
    inside = [u for u in bar.updates if u % n]  # reports that landed part-way through an epoch
    assert inside, bar.updates
    assert bar.updates == sorted(bar.updates)


def test_model_checkpoint_saves_the_best_epochs(device, rng, tmp_path):
    # a learning rate large enough that the validation loss goes up again, so that some epochs are not saved; a
    # draw on which every epoch still improved (HETNN_TEST_SEED=620373285) is replaced by a fresh one
    for _ in range(5):
        x, y = _data(rng, n=80)
        m = _model(device)
        rec = _Record()
        ck = nn.ModelCheckpoint(tmp_path / "best.npz", monitor="val_loss", save_best_only=True)
        every = nn.ModelCheckpoint(str(tmp_path / "m-{epoch:02d}-{val_loss:.4f}.npz"))
        m.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(m.parameters(), lr=3.0, momentum=0.9), epochs=8,
              validation_split=0.25, callbacks=[rec, ck, every], seed=1)
        losses = [v for v, _ in rec.states]
        improving = [e for e, v in enumerate(losses) if v < min(losses[:e], default=np.inf)]
        if len(improving) < len(losses):
            break
    best = int(np.argmin(losses))
    assert ck.best_epoch == best and ck.best == pytest.approx(losses[best])
    assert ck.saved == [str(tmp_path / "best.npz")] * len(improving) and len(improving) < len(losses)
    saved = nn.load(tmp_path / "best.npz", device=device)
    for k, v in saved.state_dict().items():  # the best epoch's weights, not the last
        np.testing.assert_array_equal(v, rec.states[best][1][k])
    assert every.saved == [str(tmp_path / f"m-{e + 1:02d}-{v:.4f}.npz") for e, v in enumerate(losses)]
    last = nn.load(every.saved[-1], device=device)
    for k, v in last.state_dict().items():
        np.testing.assert_array_equal(v, m.state_dict()[k])


def test_model_checkpoint_refuses_what_cannot_work_before_training(device, rng, tmp_path):
    x, y = _data(rng)
    m = _model(device)
    before = m.state_dict()
    opt = optim.SGD(m.parameters(), lr=0.1)
    cases = [(nn.ModelCheckpoint(tmp_path / "m-{val_acc}.npz"), r"names a field this fit does not log.*val_acc"),
             (nn.ModelCheckpoint(tmp_path / "no" / "m.npz"), r"folder .*no' of path .* does not exist"),
             (nn.ModelCheckpoint(tmp_path / "m.npz", save_best_only=True), r"val_loss.*validation_data")]
    for cb, what in cases:
        with pytest.raises(ValueError, match=what):
            m.fit(x, y, loss="cross_entropy", optimizer=opt, epochs=2, callbacks=[cb])
    for k, v in m.state_dict().items():  # nothing trained, nothing written
        np.testing.assert_array_equal(v, before[k])
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(TypeError, match="ModelCheckpoint: path must be a str or os.PathLike, got int"):
        nn.ModelCheckpoint(3)
    with pytest.raises(ValueError, match="ModelCheckpoint: path is empty"):
        nn.ModelCheckpoint("")
    with pytest.raises(TypeError, match="save_best_only must be a bool"):
        nn.ModelCheckpoint("m.npz", save_best_only=1)
    with pytest.raises(ValueError, match="ModelCheckpoint: mode must be"):
        nn.ModelCheckpoint("m.npz", mode="best")
    with pytest.raises(ValueError, match="min_delta must be a finite number"):
        nn.ModelCheckpoint("m.npz", min_delta=float("nan"))
    assert nn.ModelCheckpoint("m.npz", monitor="accuracy").mode == "max"


def _reference(m, x):
    """The float64 forward pass of a model of Dense layers (and activation layers) from its current state."""
    acts = {None: lambda v: v, "": lambda v: v, "tanh": np.tanh, "relu": lambda v: np.maximum(v, 0),
            "sigmoid": lambda v: 1 / (1 + np.exp(-v))}
    h = x.astype(np.float64)
    for layer in m.layers:
        if isinstance(layer, nn.Dense):
            h = acts[layer.activation](h @ layer.weight.numpy().astype(np.float64).T
                                       + layer.bias.numpy().astype(np.float64))
        else:
            h = acts[layer.kind](h)
    return h


def _check_predict(m, x):
    out = np.full((x.shape[0], m._output_shape((x.shape[1],))[0]), np.nan, np.float32)
    out[:] = m.predict(x, batch_size=16)
    np.testing.assert_allclose(out, _reference(m, x), rtol=1e-4, atol=1e-5)


def test_kept_trainer_follows_every_edit_of_the_model(device, rng):
    m = _model(device, seed=int(rng.integers(1000)))
    x = rng.standard_normal((37, 4)).astype(np.float32)
    _check_predict(m, x)
    kept = m._kept[2]
    _check_predict(m, x[:5])
    assert m._kept[2] is kept  # built once, kept across predicts of other sizes
    m.load_state_dict({k: rng.standard_normal(v.shape) for k, v in m.state_dict().items()})
    _check_predict(m, x)
    m.layers[0].activation = "relu"
    _check_predict(m, x)
    m.layers[1].weight._place(m.device._dev, np.dtype(np.float32))  # a new array in the parameter
    m.layers[1].weight.value.write_from(rng.standard_normal((3, 8)).astype(np.float32))
    _check_predict(m, x)
    m.layers.append(nn.Sigmoid())
    _check_predict(m, x)
    del m.layers[1:]
    _check_predict(m, x)
    for n in (1, 16, 17, 2, 33):  # one batch, exactly one, one and a bit, ...: every size right
        _check_predict(m, rng.standard_normal((n, 4)).astype(np.float32))


def test_kept_trainer_evaluates_with_each_calls_metrics(device, rng):
    m = _model(device, seed=int(rng.integers(1000)))
    x, y = _data(rng, n=50)
    out = _reference(m, x)
    z = np.exp(out - out.max(axis=1, keepdims=True))
    probs = z / z.sum(axis=1, keepdims=True)
    ce = -np.mean(np.log(probs[np.arange(len(y)), y]))
    acc = np.mean(out.argmax(axis=1) == y)
    first = m.evaluate(x, y, loss="cross_entropy", metrics=["accuracy"], batch_size=16)
    assert first["loss"] == pytest.approx(ce, rel=1e-4) and first["accuracy"] == pytest.approx(acc)
    onehot = np.eye(3, dtype=np.float32)[y]
    second = m.evaluate(x, onehot, loss="mse", metrics=["mae"], batch_size=16)
    assert set(second) == {"loss", "mae"}
    assert second["loss"] == pytest.approx(np.mean((out - onehot) ** 2), rel=1e-4)
    assert second["mae"] == pytest.approx(np.mean(np.abs(out - onehot)), rel=1e-4)
    third = m.evaluate(x, y, loss="cross_entropy", metrics=["accuracy"], batch_size=16)
    assert third == pytest.approx(first)


def test_predicts_from_several_threads_on_one_model(device, rng):
    import threading
    m = _model(device, seed=int(rng.integers(1000)))
    xs = [rng.standard_normal((int(rng.integers(1, 40)), 4)).astype(np.float32) for _ in range(8)]
    errors = []

    def work(x):
        try:
            for _ in range(20):
                _check_predict(m, x)
        except Exception as exc:  # noqa: BLE001 - reported below with the thread's input
            errors.append((x.shape, exc))

    threads = [threading.Thread(target=work, args=(x,)) for x in xs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
