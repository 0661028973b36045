"""Bad-input sweep: every public function (the ops through the op table's bad calls, on every device) called with
wrong types, wrong ndim, mismatched shapes, negative or zero sizes, non-contiguous and read-only arrays, arrays on
different devices, unsupported dtypes, absurd sizes, corrupt and foreign model files and unknown device specs. Each
must raise a typed exception whose message names the argument; none may crash, hang or return garbage. The case
count is in the test ids and in the session summary ("bad-input cases tried")."""
import re

import numpy as np
import pytest

import hetnn
from hetnn import nn, optim
from op_table import OPS, _readonly

COUNT = {"cases": 0}  # read by conftest's terminal summary

CPU = hetnn.device("cpu")
OTHER = next((d for d in hetnn.devices() if d.id != "cpu"), None)
F32 = np.ones((4, 4), np.float32)


def _model():
    return nn.Sequential([nn.Dense(4, 3, "relu", seed=0), nn.Dense(3, 2, seed=1)], device=CPU)


def _fit(model=False, **kw):
    m = _MODEL if model else _model()
    args = dict(x=np.ones((8, 4), np.float32), y=np.zeros(8, np.int64), loss=nn.CrossEntropyLoss(),
                optimizer=optim.SGD(m.parameters(), lr=0.1), epochs=1, batch_size=4)
    args.update(kw)
    x, y = args.pop("x"), args.pop("y")
    return m.fit(x, y, **args)


_MODEL = _model()


def _npy_header(descr, shape):
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _architecture_bomb(tmp):
    """A model file whose architecture member inflates to 64 MiB from a few KiB (compressed)."""
    import zipfile

    p = tmp / "bomb.npz"
    with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("__architecture__.npy", _npy_header("<U16777216", ()) + b"\0" * (64 << 20))
    return str(p)


def _claims_more(tmp):
    """A saved model whose parameter member's header claims a 4 TB array in 100 bytes."""
    import zipfile

    p = tmp / "claims.npz"
    _model().save(str(p))
    with zipfile.ZipFile(p) as z:
        members = {n: z.read(n) for n in z.namelist()}
    members["param_0.npy"] = _npy_header("<f4", (1000000, 1000000)) + b"\0" * 100
    with zipfile.ZipFile(p, "w") as z:
        for n, data in members.items():
            z.writestr(n, data)
    return str(p)


def _short_message(call):
    """call()'s exception, after checking its message is short (a 100,000-character value was echoed whole)."""
    try:
        call()
    except Exception as exc:
        assert len(str(exc)) < 1000, len(str(exc))
        raise


def _write(tmp, name, data):
    p = tmp / name
    p.write_bytes(data)
    return str(p)


def _foreign_npz(tmp):
    p = tmp / "foreign.npz"
    np.savez(p, weights=np.ones(3))
    return str(p)


def _other_device_matmul():
    if OTHER is None:
        pytest.skip("one device only")
    return hetnn.matmul(hetnn.asarray(F32, device=CPU), hetnn.asarray(F32, device=OTHER))


def _too_big(dev):
    return hetnn.empty((1 << 40,), dtype="float32", device=dev)  # 4 TiB: addressable, beyond any device here


# (id, call, exception type, regex the message must match: it names the argument)
CASES = [
    # devices
    ("device-unknown-spec", lambda t: hetnn.device("no-such-device"), ValueError, "no device matches"),
    ("device-int", lambda t: hetnn.device(3.5), TypeError, "device"),
    ("device-opencl-out-of-range", lambda t: hetnn.device("opencl:9:9"), ValueError, "opencl:9:9"),
    ("set-default-unknown", lambda t: hetnn.set_default_device("gpu:99"), ValueError, "gpu:99"),
    ("synchronize-unknown", lambda t: hetnn.synchronize("tpu"), ValueError, "tpu"),
    # arrays
    ("asarray-object-dtype", lambda t: hetnn.asarray(np.array([object()])), TypeError, "asarray"),
    ("asarray-strings", lambda t: hetnn.asarray(["a", "b"]), TypeError, "asarray"),
    ("asarray-complex", lambda t: hetnn.asarray(np.ones(3, np.complex64)), TypeError, "complex64"),
    ("asarray-bad-dtype-name", lambda t: hetnn.asarray(F32, dtype="float13"), (TypeError, ValueError), "dtype"),
    ("asarray-ragged", lambda t: hetnn.asarray([[1, 2], [3]]), (TypeError, ValueError), "asarray"),
    ("asarray-unknown-device", lambda t: hetnn.asarray(F32, device="npu"), ValueError, "npu"),
    ("empty-negative", lambda t: hetnn.empty((-1, 3)), ValueError, "shape"),
    ("empty-float-size", lambda t: hetnn.empty((2.5, 3)), TypeError, "shape"),
    ("empty-bad-dtype", lambda t: hetnn.empty((2,), dtype="int3"), (TypeError, ValueError), "dtype"),
    ("empty-absurd-cpu", lambda t: _too_big(CPU), MemoryError, "bytes|memory|allocat"),
    ("empty-unaddressable", lambda t: hetnn.empty((1 << 62,), device=CPU), ValueError, "shape"),
    ("empty-product-overflow", lambda t: hetnn.empty((1 << 40, 1 << 40), device=CPU), ValueError, "shape"),
    ("zeros-string-shape", lambda t: hetnn.zeros("abc"), TypeError, "shape"),
    # the ops' own bad calls are rows of the op table (tests/op_table.py): test_op_bad_call below, on every device
    ("matmul-different-devices", lambda t: _other_device_matmul(), ValueError, "device"),
    # timing and profiling
    ("benchmark-not-callable", lambda t: hetnn.benchmark(3), TypeError, "fn"),
    ("benchmark-negative-repeat", lambda t: hetnn.benchmark(lambda: None, n_repeat=-1), ValueError, "n_repeat"),
    ("benchmark-warmup-float", lambda t: hetnn.benchmark(lambda: None, n_warmup=1.5), TypeError, "n_warmup"),
    ("timer-unknown-device", lambda t: hetnn.Stopwatch("fpga"), ValueError, "fpga"),
    ("profile-unknown-device", lambda t: hetnn.profile("fpga"), ValueError, "fpga"),
    # nn layers and models
    ("dense-zero-features", lambda t: nn.Dense(0, 3), ValueError, "in_features"),
    ("dense-negative-out", lambda t: nn.Dense(3, -1), ValueError, "out_features"),
    ("dense-float-features", lambda t: nn.Dense(3.5, 2), TypeError, "in_features"),
    ("dense-unknown-activation", lambda t: nn.Dense(3, 2, "swish"), ValueError, "activation"),
    ("dense-unknown-init", lambda t: nn.Dense(3, 2, init="zeros?"), ValueError, "init"),
    ("sequential-not-layers", lambda t: nn.Sequential([3]), TypeError, "layer"),
    ("sequential-empty", lambda t: nn.Sequential([]), ValueError, "layer"),
    ("sequential-feature-mismatch", lambda t: nn.Sequential([nn.Dense(4, 3), nn.Dense(5, 2)]), ValueError,
     "in_features|features"),
    ("fit-length-mismatch", lambda t: _fit(y=np.zeros(7, np.int64)), ValueError, "x|y"),
    ("fit-wrong-features", lambda t: _fit(x=np.ones((8, 5), np.float32)), ValueError, "feature|x"),
    ("fit-label-out-of-range", lambda t: _fit(y=np.full(8, 9, np.int64)), ValueError, "label"),
    ("fit-negative-label", lambda t: _fit(y=np.full(8, -1, np.int64)), ValueError, "label"),
    ("fit-nan-x", lambda t: _fit(x=np.full((8, 4), np.nan, np.float32)), ValueError, "NaN"),
    ("fit-batch-zero", lambda t: _fit(batch_size=0), ValueError, "batch_size"),
    ("fit-epochs-negative", lambda t: _fit(epochs=-1), ValueError, "epochs"),
    ("fit-loss-unknown-name", lambda t: _fit(loss="hinge"), TypeError, "loss"),
    ("fit-loss-int", lambda t: _fit(loss=3), TypeError, "loss"),
    ("fit-metric-unknown", lambda t: _fit(metrics=("f1",)), ValueError, "metric"),
    ("fit-callback-not-callback", lambda t: _fit(callbacks=[3]), TypeError, "callback"),
    ("fit-string-x", lambda t: _fit(x="data"), TypeError, "x"),
    ("fit-x-3d", lambda t: _fit(x=np.ones((8, 2, 2), np.float32)), ValueError, "x|feature"),
    ("predict-batch-negative", lambda t: _model().predict(np.ones((2, 4), np.float32), batch_size=-3), ValueError,
     "batch_size"),
    ("predict-wrong-features", lambda t: _model().predict(np.ones((2, 7), np.float32)), ValueError, "feature|x"),
    ("evaluate-metric-unknown", lambda t: _model().evaluate(np.ones((2, 4), np.float32), np.zeros(2, np.int64),
                                                            metrics=("auc",)), ValueError, "metric"),
    ("sgd-negative-lr", lambda t: optim.SGD(_model().parameters(), lr=-0.1), ValueError, "lr"),
    ("sgd-negative-momentum", lambda t: optim.SGD(_model().parameters(), lr=0.1, momentum=-0.5), ValueError,
     "momentum"),
    ("sgd-negative-weight-decay", lambda t: optim.SGD(_model().parameters(), lr=0.1, weight_decay=-1.0),
     ValueError, "weight_decay"),
    ("sgd-nesterov-without-momentum", lambda t: optim.SGD(_model().parameters(), lr=0.1, nesterov=True),
     ValueError, "nesterov"),
    ("sgd-no-params", lambda t: optim.SGD([], lr=0.1), ValueError, "param"),
    ("sgd-schedule-not-callable", lambda t: optim.SGD(_model().parameters(), lr=0.1, lr_schedule=3), TypeError,
     "lr_schedule"),
    ("load-missing-file", lambda t: nn.load(str(t / "nope.npz")), (FileNotFoundError, ValueError), "nope.npz"),
    ("load-garbage-file", lambda t: nn.load(_write(t, "g.npz", b"garbage" * 50)), ValueError, "g.npz"),
    ("load-truncated-zip", lambda t: nn.load(_write(t, "z.npz", b"PK\x03\x04" + b"\0" * 40)), ValueError, "z.npz"),
    ("load-foreign-npz", lambda t: nn.load(_foreign_npz(t)), ValueError, "foreign.npz"),
    ("load-directory", lambda t: nn.load(str(t)), (ValueError, IsADirectoryError, PermissionError), str),
    ("load-architecture-bomb", lambda t: nn.load(_architecture_bomb(t)), ValueError, "architecture entry is"),
    ("load-member-claims-4tb", lambda t: nn.load(_claims_more(t)), ValueError, "claims shape"),
    # issue 35's round: each once a crash, a wrong answer or a message naming no argument
    ("fit-empty-validation", lambda t: _fit(validation_data=(np.ones((0, 4), np.float32), np.zeros(0, np.int64))),
     ValueError, "validation_data has no samples"),
    ("fit-seed-negative", lambda t: _fit(seed=-5), ValueError, "seed"),
    ("fit-seed-float", lambda t: _fit(seed=1.5), TypeError, "seed"),
    ("fit-batch-beyond-int64", lambda t: _fit(batch_size=2**63), ValueError, "batch_size"),
    ("fit-x-beyond-float32", lambda t: _fit(x=np.full((8, 4), 1e300)), ValueError, "x holds 1e\\+300 .*float32"),
    ("fit-y-beyond-float32", lambda t: _fit(y=np.full((8, 2), -1e300), loss="mse"), ValueError, "y holds"),
    ("sgd-infinite-lr", lambda t: optim.SGD(_model().parameters(), lr=float("inf")), ValueError, "lr .*finite"),
    ("adam-huge-int-lr", lambda t: optim.Adam(_model().parameters(), lr=10**400), ValueError, "lr .*finite"),
    ("adamw-infinite-decay", lambda t: optim.AdamW(_model().parameters(), weight_decay=float("inf")), ValueError,
     "weight_decay .*finite"),
    ("schedule-returns-inf", lambda t: _fit(optimizer=optim.SGD(_MODEL.parameters(), lr=0.1,
                                                                lr_schedule=lambda e, lr: float("inf")), model=True),
     ValueError, "schedule"),
    ("schedule-returns-10-400", lambda t: _fit(optimizer=optim.SGD(_MODEL.parameters(), lr=0.1,
                                                                   lr_schedule=lambda e, lr: 10**400), model=True),
     ValueError, "schedule.*finite"),
    ("state-dict-ragged", lambda t: _model().load_state_dict({"0.weight": [[1.0, 2.0], [3.0]]}, strict=False),
     ValueError, "0.weight"),
    ("maxpool-layer-padding", lambda t: nn.MaxPool2d(2, padding=5), ValueError, "padding"),
    ("maxpool-layer-dilation", lambda t: nn.MaxPool2d(2, dilation=0), ValueError, "dilation"),
    ("asarray-copy-false-other-dtype", lambda t: np.asarray(hetnn.asarray(F32, device=CPU), dtype=np.float64,
                                                            copy=False), ValueError, "copy"),
    # datasets
    ("read-idx-garbage", lambda t: hetnn.datasets.read_idx(_write(t, "x.idx", b"\x01\x02\x03")), ValueError,
     "x.idx"),
    ("fashion-mnist-missing-dir", lambda t: hetnn.datasets.fashion_mnist(str(t / "none")), FileNotFoundError,
     "fashion"),
    ("solar-negative-samples", lambda t: hetnn.datasets.solar_irradiance(n_samples=-5), ValueError, "n_samples"),
    # bench front
    ("bench-run-unknown-suite", lambda t: hetnn.bench.run("convolutions"), ValueError, "suite"),
    ("bench-run-unknown-option", lambda t: hetnn.bench.run("matmul", fast=True), TypeError, "fast"),
    ("bench-run-bool-duration", lambda t: hetnn.bench.run("matmul", max_duration=True), ValueError,
     "max-duration"),
    ("bench-run-string-epochs", lambda t: hetnn.bench.run("mlp", epochs="3"), TypeError, "epochs"),
    ("bench-run-zero-epochs", lambda t: hetnn.bench.run("all", epochs=0), ValueError, "epochs"),
    ("bench-run-quick-string", lambda t: hetnn.bench.run("mlp", quick="yes"), TypeError, "quick"),
    ("bench-compare-int-operands", lambda t: hetnn.bench.compare("matmul", F32.astype(np.int32),
                                                                 F32.astype(np.int32)), TypeError, "dtype"),
    ("bench-compare-zero-repeats", lambda t: hetnn.bench.compare("matmul", F32, F32, n_repeat=0), ValueError,
     "n_repeat"),
    ("bench-compare-unknown-op", lambda t: hetnn.bench.compare("conv2d", F32), ValueError, "op"),
    ("bench-compare-unknown-peer", lambda t: hetnn.bench.compare("matmul", F32, F32, against="matlab"), ValueError,
     "matlab"),
    ("bench-run-long-unknown-peer", lambda t: _short_message(lambda: hetnn.bench.run("matmul", compare="x" * 100000)),
     ValueError, "100000 characters"),
]

if OTHER is not None:
    CASES.append(("empty-absurd-" + OTHER.id.replace(":", "-"), lambda t: _too_big(OTHER), MemoryError,
                  "bytes|memory|allocat"))


def _expect(name, call, exc, pattern):
    COUNT["cases"] += 1
    with pytest.raises(exc) as info:
        call()
    msg = str(info.value)
    if pattern is str:
        assert msg, f"{name}: empty message"
    else:
        assert re.search(pattern, msg), f"{name}: message does not name the argument: {msg!r}"


@pytest.mark.parametrize("case", CASES, ids=[f"{i:03d}-{c[0]}" for i, c in enumerate(CASES)])
def test_bad_input(case, tmp_path):
    import hetnn.bench  # noqa: F401  (hetnn.bench.run / compare in the table)

    name, call, exc, pattern = case
    _expect(name, lambda: call(tmp_path), exc, pattern)


OP_BAD = [(name, label, call, exc, msg) for name, op in sorted(OPS.items()) for label, call, exc, msg in op.bad]


@pytest.mark.parametrize("name,label,call,exc,msg", OP_BAD, ids=[f"{b[0]}-{b[1]}" for b in OP_BAD])
def test_op_bad_call(device, name, label, call, exc, msg):
    """Every op-table row's bad calls, on every device: a typed error whose message names the argument."""
    _expect(f"{name}-{label}", lambda: call(device), exc, msg)


def test_normal_call_after_failed_allocation(device):
    """An allocation beyond device memory leaves the device usable."""
    with pytest.raises(MemoryError):
        _too_big(device)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(hetnn.matmul(a, a.T.copy(), device=device), a @ a.T)


def test_non_contiguous_and_readonly_inputs_are_read_correctly(device):
    """Views and read-only arrays are valid inputs: copied if needed, never misread."""
    base = np.arange(64, dtype=np.float32).reshape(8, 8)
    for a in (base[::2, ::2], base.T, base[:, 1:5], _readonly()):
        b = np.ones((a.shape[1], 3), np.float32)
        np.testing.assert_allclose(hetnn.matmul(a, b, device=device), a.astype(np.float64) @ b, rtol=1e-6)
    x = np.arange(2 * 3 * 8 * 8, dtype=np.float32).reshape(2, 3, 8, 8)[:, :, ::-1, :]
    want = x.reshape(2, 3, 4, 2, 4, 2).max(axis=(3, 5))
    np.testing.assert_array_equal(hetnn.max_pool2d(x, 2, device=device), want)
