"""Bad-input sweep: every public function called with wrong types, wrong ndim, mismatched shapes, negative or zero
sizes, non-contiguous and read-only arrays, arrays on different devices, unsupported dtypes, absurd sizes, corrupt
and foreign model files and unknown device specs. Each must raise a typed exception whose message names the
argument; none may crash, hang or return garbage. The case count is in the test ids (bad_input[NNN-...]) and in the
session summary ("bad-input cases tried")."""
import numpy as np
import pytest

import hetnn
from hetnn import nn, optim

COUNT = {"cases": 0}  # read by conftest's terminal summary

CPU = hetnn.device("cpu")
OTHER = next((d for d in hetnn.devices() if d.id != "cpu"), None)
F32 = np.ones((4, 4), np.float32)
X4 = np.ones((1, 2, 6, 6), np.float32)


def _readonly():
    a = np.ones((4, 4), np.float32)
    a.flags.writeable = False
    return a


def _model():
    return nn.Sequential([nn.Dense(4, 3, "relu", seed=0), nn.Dense(3, 2, seed=1)], device=CPU)


def _fit(**kw):
    m = _model()
    args = dict(x=np.ones((8, 4), np.float32), y=np.zeros(8, np.int64), loss=nn.CrossEntropyLoss(),
                optimizer=optim.SGD(m.parameters(), lr=0.1), epochs=1, batch_size=4)
    args.update(kw)
    x, y = args.pop("x"), args.pop("y")
    return m.fit(x, y, **args)


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
    # matmul
    ("matmul-1d", lambda t: hetnn.matmul(np.ones(4, np.float32), F32), ValueError, "a"),
    ("matmul-4d", lambda t: hetnn.matmul(np.ones((1, 1, 4, 4), np.float32), F32), ValueError, "a"),
    ("matmul-inner-mismatch", lambda t: hetnn.matmul(F32, np.ones((5, 4), np.float32)), ValueError, "K|inner|shape"),
    ("matmul-dtype-mismatch", lambda t: hetnn.matmul(F32, F32.astype(np.float64)), TypeError, "dtype"),
    ("matmul-int-dtype", lambda t: hetnn.matmul(F32.astype(np.int32), F32.astype(np.int32)), TypeError, "int32"),
    ("matmul-string", lambda t: hetnn.matmul("ab", F32), TypeError, "a"),
    ("matmul-none", lambda t: hetnn.matmul(None, F32), TypeError, "a"),
    ("matmul-bias-shape", lambda t: hetnn.matmul(F32, F32, bias=np.ones(3, np.float32)), ValueError, "bias"),
    ("matmul-activation", lambda t: hetnn.matmul(F32, F32, activation="gelu"), ValueError, "activation"),
    ("matmul-alpha-string", lambda t: hetnn.matmul(F32, F32, alpha="x"), TypeError, "alpha"),
    ("matmul-alpha-overflow", lambda t: hetnn.matmul(F32, F32, alpha=10**400), ValueError, "alpha"),
    ("matmul-beta-overflow", lambda t: hetnn.matmul(F32, F32, beta=-10**400), ValueError, "beta"),
    ("max_pool2d-kernel-beyond-int", lambda t: hetnn.max_pool2d(np.zeros((1, 1, 4, 4), np.float32), 2**31),
     ValueError, "kernel_size"),
    ("max_pool2d-stride-beyond-int", lambda t: hetnn.max_pool2d(np.zeros((1, 1, 4, 4), np.float32), 2, (1, -2**40)),
     ValueError, "stride"),
    ("matmul-beta-without-out", lambda t: hetnn.matmul(F32, F32, beta=1.0), ValueError, "beta"),
    ("matmul-transpose-int", lambda t: hetnn.matmul(F32, F32, transpose_a=2), TypeError, "transpose_a"),
    ("matmul-out-shape", lambda t: hetnn.matmul(hetnn.asarray(F32), hetnn.asarray(F32),
                                                out=hetnn.empty((3, 3))), ValueError, "out"),
    ("matmul-out-readonly-numpy", lambda t: hetnn.matmul(F32, F32, out=_readonly()), (ValueError, TypeError),
     "out"),
    ("matmul-mixed-host-device", lambda t: hetnn.matmul(hetnn.asarray(F32), F32), TypeError, "b"),
    ("matmul-different-devices", lambda t: _other_device_matmul(), ValueError, "device"),
    ("matmul-batch-mismatch", lambda t: hetnn.matmul(np.ones((2, 4, 4), np.float32), np.ones((3, 4, 4), np.float32)),
     ValueError, "batch"),
    # max pooling
    ("pool-2d-input", lambda t: hetnn.max_pool2d(F32, 2), ValueError, "input|x"),
    ("pool-5d-input", lambda t: hetnn.max_pool2d(np.ones((1, 1, 1, 4, 4), np.float32), 2), ValueError, "input|x"),
    ("pool-kernel-zero", lambda t: hetnn.max_pool2d(X4, 0), ValueError, "kernel_size"),
    ("pool-kernel-negative", lambda t: hetnn.max_pool2d(X4, -2), ValueError, "kernel_size"),
    ("pool-kernel-float", lambda t: hetnn.max_pool2d(X4, 2.5), TypeError, "kernel_size"),
    ("pool-kernel-triple", lambda t: hetnn.max_pool2d(X4, (2, 2, 2)), (TypeError, ValueError), "kernel_size"),
    ("pool-stride-zero", lambda t: hetnn.max_pool2d(X4, 2, 0), ValueError, "stride"),
    ("pool-padding-too-big", lambda t: hetnn.max_pool2d(X4, 2, 1, 2), ValueError, "padding"),
    ("pool-padding-negative", lambda t: hetnn.max_pool2d(X4, 2, 1, -1), ValueError, "padding"),
    ("pool-dilation-zero", lambda t: hetnn.max_pool2d(X4, 2, dilation=0), ValueError, "dilation"),
    ("pool-window-larger-than-input", lambda t: hetnn.max_pool2d(X4, 7), ValueError, "output|window|kernel"),
    ("pool-int-dtype", lambda t: hetnn.max_pool2d(X4.astype(np.int32), 2), TypeError, "int32"),
    ("pool-ceil-string", lambda t: hetnn.max_pool2d(X4, 2, ceil_mode="yes"), TypeError, "ceil_mode"),
    ("pool-empty-channel", lambda t: hetnn.max_pool2d(np.ones((1, 0, 4, 4), np.float32), 2), ValueError, "empty"),
    ("pool-bwd-index-dtype", lambda t: hetnn.max_pool2d_backward(np.ones((1, 2, 3, 3), np.float32),
                                                                 np.zeros((1, 2, 3, 3), np.float32), X4.shape, 2),
     TypeError, "indices"),
    ("pool-bwd-shape-mismatch", lambda t: hetnn.max_pool2d_backward(np.ones((1, 2, 3, 3), np.float32),
                                                                    np.zeros((1, 2, 2, 3), np.int64), X4.shape, 2),
     ValueError, "indices|shape"),
    ("pool-bwd-index-out-of-range", lambda t: hetnn.max_pool2d_backward(
        np.ones((1, 2, 3, 3), np.float32), np.full((1, 2, 3, 3), 99, np.int64), X4.shape, 2), ValueError, "indices"),
    ("pool-bwd-input-shape-wrong", lambda t: hetnn.max_pool2d_backward(
        np.ones((1, 2, 3, 3), np.float32), np.zeros((1, 2, 3, 3), np.int64), (1, 2, 6), 2), ValueError,
     "input_shape"),
    # timing and profiling
    ("benchmark-not-callable", lambda t: hetnn.benchmark(3), TypeError, "fn"),
    ("benchmark-negative-repeat", lambda t: hetnn.benchmark(lambda: None, n_repeat=-1), ValueError, "n_repeat"),
    ("benchmark-warmup-float", lambda t: hetnn.benchmark(lambda: None, n_warmup=1.5), TypeError, "n_warmup"),
    ("timer-unknown-device", lambda t: hetnn.Timer("fpga"), ValueError, "fpga"),
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
    # datasets
    ("read-idx-garbage", lambda t: hetnn.datasets.read_idx(_write(t, "x.idx", b"\x01\x02\x03")), ValueError,
     "x.idx"),
    ("fashion-mnist-missing-dir", lambda t: hetnn.datasets.fashion_mnist(str(t / "none")), FileNotFoundError,
     "fashion"),
    ("solar-negative-samples", lambda t: hetnn.datasets.solar_irradiance(n_samples=-5), ValueError, "n_samples"),
    # bench front
    ("bench-run-unknown-suite", lambda t: hetnn.bench.run("conv"), ValueError, "suite"),
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
]

if OTHER is not None:
    CASES.append(("empty-absurd-" + OTHER.id.replace(":", "-"), lambda t: _too_big(OTHER), MemoryError,
                  "bytes|memory|allocat"))


@pytest.mark.parametrize("case", CASES, ids=[f"{i:03d}-{c[0]}" for i, c in enumerate(CASES)])
def test_bad_input(case, tmp_path):
    import hetnn.bench  # noqa: F401  (hetnn.bench.run / compare in the table)

    name, call, exc, pattern = case
    COUNT["cases"] += 1
    with pytest.raises(exc) as info:
        call(tmp_path)
    msg = str(info.value)
    if pattern is str:
        assert msg, f"{name}: empty message"
    else:
        import re
        assert re.search(pattern, msg), f"{name}: message does not name the argument: {msg!r}"


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
