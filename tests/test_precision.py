"""The precision float32 products compute in: the setting (process default, per-thread block, per-call argument),
devices without TF32 computing float32 exactly at "high", and the tf32 member of the matrix-unit GEMM (its
rounding of the inputs, its fragment layout and its use by conv2d), run through its emulation off NVIDIA."""
import threading

import numpy as np
import pytest

import hetnn
from hetnn import _core
from op_table import _conv_bwd_ref, _conv_ref


def tf32(x):
    """float32 values rounded to tf32 as cvt.rna.tf32.f32 does (to nearest, ties away from zero), written apart
    from the kernel: on the magnitude's bits, NaN to one quiet NaN, infinities kept."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    special = (bits & 0x7F800000) == 0x7F800000
    rounded = ((bits + 0x1000) & 0xFFFFE000).astype(np.uint32)
    rounded = np.where(special, np.where(bits & 0x007FFFFF, np.uint32(0x7FFFE000), bits.astype(np.uint32)), rounded)
    return rounded.astype(np.uint32).view(np.float32)


@pytest.fixture
def restore_precision():
    before = _core.default_matmul_precision()
    yield
    _core.set_matmul_precision(before)
    _core.set_thread_matmul_precision(None)


@pytest.fixture
def tf32_member(opencl_device):
    """The tf32 GEMM set to the matrix-unit member (emulated where the device has no TF32 units), then restored."""
    old, source = _core.gemm_params(opencl_device._dev, "tf32")
    _core.set_gemm_params(opencl_device._dev, "tf32", "family=mma ts_m=32 ts_n=32 ts_k=16 wm=2 wn=2", "test")
    try:
        yield opencl_device
    finally:
        restore = "" if source.startswith(("database", "default")) else old
        _core.set_gemm_params(opencl_device._dev, "tf32", restore, source)


# ---- the setting -----------------------------------------------------------------------------------------------

def test_default_is_highest_and_the_setting_applies(restore_precision):
    assert hetnn.get_matmul_precision() == "highest"
    hetnn.set_matmul_precision("high")
    assert hetnn.get_matmul_precision() == "high"
    hetnn.set_matmul_precision("highest")
    assert hetnn.get_matmul_precision() == "highest"


def test_block_restores_on_exit_and_on_error_and_nests(restore_precision):
    with hetnn.matmul_precision("high"):
        assert hetnn.get_matmul_precision() == "high"
        with hetnn.matmul_precision("highest"):
            assert hetnn.get_matmul_precision() == "highest"
        assert hetnn.get_matmul_precision() == "high"
    assert hetnn.get_matmul_precision() == "highest"
    with pytest.raises(KeyError):
        with hetnn.matmul_precision("high"):
            raise KeyError("inside")
    assert hetnn.get_matmul_precision() == "highest"
    hetnn.set_matmul_precision("high")  # a block's own setting wins over the default, and leaves it alone
    with hetnn.matmul_precision("highest"):
        assert hetnn.get_matmul_precision() == "highest"
    assert hetnn.get_matmul_precision() == "high"


def test_block_is_this_threads_only(restore_precision):
    seen = {}
    entered, done = threading.Event(), threading.Event()

    def other():
        entered.wait(10)
        seen["other"] = hetnn.get_matmul_precision()
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with hetnn.matmul_precision("high"):
        entered.set()
        done.wait(10)
        seen["own"] = hetnn.get_matmul_precision()
    t.join(10)
    assert seen == {"own": "high", "other": "highest"}


@pytest.mark.parametrize("bad,exc,match", [("medium", ValueError, "'highest'.*'high'.*got 'medium'"),
                                           ("HIGH", ValueError, "got 'HIGH'"), (None, TypeError, "NoneType"),
                                           (2, TypeError, "int")])
def test_bad_settings_name_the_setting_and_change_nothing(restore_precision, bad, exc, match):
    with pytest.raises(exc, match=match) as info:
        hetnn.set_matmul_precision(bad)
    assert "set_matmul_precision" in str(info.value)
    with pytest.raises(exc, match=match) as info:
        hetnn.matmul_precision(bad)
    assert "matmul_precision: precision" in str(info.value)
    assert hetnn.get_matmul_precision() == "highest"


# ---- float32 stays float32 where TF32 is not in force ----------------------------------------------------------

def test_high_computes_float32_exactly_where_the_device_has_no_tf32(device, rng, restore_precision):
    if device.tf32_mode.startswith("tensor cores"):
        pytest.skip("this device computes in tf32 at 'high' (the tf32 tests below check it)")
    assert device.tf32_mode.startswith("float32 (exact)")
    a = rng.standard_normal((45, 70)).astype(np.float32)
    b = rng.standard_normal((70, 33)).astype(np.float32)
    x = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    exact = hetnn.matmul(a, b, device=device), hetnn.conv2d(x, w, padding=1, device=device)
    with hetnn.matmul_precision("high"):
        high = hetnn.matmul(a, b, device=device), hetnn.conv2d(x, w, padding=1, device=device)
    for e, h in zip(exact, high):
        np.testing.assert_array_equal(e, h)  # the same kernels: bit for bit


def test_tf32_parameters_are_checked(opencl_device):
    with pytest.raises(ValueError, match="only family=mma computes in tf32"):
        _core.set_gemm_params(opencl_device._dev, "tf32", "family=tiled", "test")
    with pytest.raises(ValueError, match="ts_k must be at least 8"):
        _core.set_gemm_params(opencl_device._dev, "tf32", "family=mma ts_m=32 ts_n=32 ts_k=4 wm=2 wn=2", "test")
    with pytest.raises(ValueError, match="float16 and bfloat16 only"):
        _core.set_gemm_params(opencl_device._dev, "float32", "family=mma", "test")
    if not opencl_device.tf32_mode.startswith("tensor cores"):  # tf32 products are float32's there
        assert _core.gemm_params(opencl_device._dev, "tf32") == _core.gemm_params(opencl_device._dev, "float32")


# ---- the tf32 member (emulated off NVIDIA: the same fragment addressing as the instruction) ------------------------

_TF32_MEMBERS = ["family=mma ts_m=32 ts_n=32 ts_k=16 wm=2 wn=2", "family=mma ts_m=64 ts_n=32 ts_k=8 wm=2 wn=1",
                 "family=mma ts_m=32 ts_n=64 ts_k=32 wm=1 wn=2"]


@pytest.mark.parametrize("params", _TF32_MEMBERS)
def test_tf32_member_matches_rounded_inputs_in_float64(tf32_member, rng, params):
    dev = tf32_member
    _core.set_gemm_params(dev._dev, "tf32", params, "test")
    for m, n, k, ta, tb in [(1, 1, 1, False, False), (37, 19, 23, True, False), (64, 65, 9, False, True),
                            (13, 7, 40, True, True), (29, 64, 33, False, False), (32, 48, 64, False, False),
                            (64, 32, 48, True, True), (3, 5, 0, False, False)]:
        a = rng.uniform(-1, 1, (k, m) if ta else (m, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (n, k) if tb else (k, n)).astype(np.float32)
        bias = rng.uniform(-1, 1, n).astype(np.float32)
        c = hetnn.matmul(a, b, transpose_a=ta, transpose_b=tb, bias=bias, activation="tanh", device=dev,
                         precision="high")
        a64, b64 = tf32(a).astype(np.float64), tf32(b).astype(np.float64)
        ref = np.tanh((a64.T if ta else a64) @ (b64.T if tb else b64) + bias)  # the bias is added in float32
        assert np.max(np.abs(c - ref), initial=0.0) < 4e-6 * max(1, k) ** 0.5, (m, n, k, ta, tb)


def test_tf32_rounds_to_nearest_ties_away(tf32_member):
    # a (M, 1) @ (1, 1) product with b = 1 returns each a rounded to tf32: ties away from zero, carries into the
    # exponent, the largest float32 to infinity, infinities and NaNs kept
    one = np.float32(1)
    ulp = np.float32(2.0 ** -10)  # tf32's step at 1
    values = np.array([1 + 2.0 ** -11, 1 + 2.0 ** -11 + 2.0 ** -23, 1 + 2.0 ** -12, -(1 + 2.0 ** -11),
                       1 + 3 * 2.0 ** -11, 2 - 2.0 ** -23, np.finfo(np.float32).max, np.inf, -np.inf,
                       1e-40, -1e-40, 0.0, -0.0, np.pi], np.float32)
    expect = np.array([1 + ulp, 1 + ulp, 1, -(1 + ulp), 1 + 2 * ulp, 2, np.inf, np.inf, -np.inf], np.float32)
    np.testing.assert_array_equal(tf32(values)[:9], expect)  # the reference itself, on the cases worked by hand
    c = hetnn.matmul(values[:, None], np.array([[one]]), device=tf32_member, precision="high")
    np.testing.assert_array_equal(c[:, 0], tf32(values))
    nan = hetnn.matmul(np.array([[np.nan]], np.float32), np.array([[one]]), device=tf32_member, precision="high")
    assert np.isnan(nan[0, 0])


def test_precision_in_force_picks_the_member(tf32_member, rng, restore_precision):
    dev = tf32_member
    a = rng.uniform(-1, 1, (40, 50)).astype(np.float32)
    b = rng.uniform(-1, 1, (50, 30)).astype(np.float32)
    exact = a.astype(np.float64) @ b
    rounded = tf32(a).astype(np.float64) @ tf32(b)

    def check(c, tf):
        ref, other = (rounded, exact) if tf else (exact, rounded)
        assert np.max(np.abs(c - ref)) < 1e-5
        assert np.max(np.abs(c - other)) > 1e-4  # the two differ well beyond float32's rounding

    check(hetnn.matmul(a, b, device=dev), False)  # the default: highest, whatever the tf32 parameters
    with hetnn.matmul_precision("high"):
        check(hetnn.matmul(a, b, device=dev), True)
        check(hetnn.matmul(a, b, device=dev, precision="highest"), False)  # a call's own wins
    hetnn.set_matmul_precision("high")
    check(hetnn.matmul(a, b, device=dev), True)
    with hetnn.matmul_precision("highest"):
        check(hetnn.matmul(a, b, device=dev), False)
    # float64 and the 16-bit types ignore it
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(hetnn.matmul(a64, b.astype(np.float64), device=dev), exact, rtol=0, atol=1e-12)


@pytest.mark.parametrize("pointwise", [False, True])
def test_conv2d_and_its_gradients_run_on_the_tf32_member(tf32_member, rng, pointwise):
    dev = tf32_member
    k = 1 if pointwise else 3
    x = rng.standard_normal((2, 5, 9, 8)).astype(np.float32)
    w = (rng.standard_normal((6, 5, k, k)) / np.sqrt(5 * k * k)).astype(np.float32)
    bias = rng.standard_normal(6).astype(np.float32)
    pad = 0 if pointwise else 1
    y = hetnn.conv2d(x, w, bias, 1, pad, 1, 1, "relu", device=dev, precision="high")
    (ref,) = _conv_ref((tf32(x), tf32(w), bias, (1, 1), (pad, pad), (1, 1), 1, "relu"))
    (exact,) = _conv_ref((x, w, bias, (1, 1), (pad, pad), (1, 1), 1, "relu"))
    assert np.max(np.abs(y - ref)) < 2e-5 < np.max(np.abs(y - exact))
    gy = rng.standard_normal(y.shape).astype(np.float32)
    gx, gw, gb = hetnn.conv2d_backward(gy, x, w, 1, pad, device=dev, precision="high")
    rgx, _, _ = _conv_bwd_ref((tf32(gy), x, tf32(w), (1, 1), (pad, pad), (1, 1), 1))
    _, rgw, rgb = _conv_bwd_ref((tf32(gy), tf32(x), w, (1, 1), (pad, pad), (1, 1), 1))
    assert np.max(np.abs(gx - rgx)) < 5e-5
    assert np.max(np.abs(gw - rgw)) < 2e-4
    np.testing.assert_allclose(gb, gy.astype(np.float64).sum(axis=(0, 2, 3)), rtol=0, atol=1e-4)  # a plain sum


def test_tuner_takes_tf32_only_where_it_computes(opencl_device):
    from hetnn import tune

    for c in tune._mma_candidates(tf32=True)[:60]:  # the tuner's tf32 members pass the parameters' checks
        _core.set_gemm_params(opencl_device._dev, "tf32", c, "test")
    _core.set_gemm_params(opencl_device._dev, "tf32", "", "")
    assert all(c.startswith("family=mma") for c in tune.candidates(opencl_device, "tf32"))
    if not opencl_device.tf32_mode.startswith("tensor cores"):
        with pytest.raises(ValueError, match="nothing to tune"):
            tune.tune_gemm(opencl_device, [(32, 32, 32)], dtype="tf32", save=False)


def test_a_stored_tf32_entry_is_used_by_later_processes(tmp_path, opencl_device):
    import os
    import subprocess
    import sys

    env = dict(os.environ, HETNN_CACHE_DIR=str(tmp_path))
    params = "family=mma ts_m=32 ts_n=32 ts_k=16 wm=2 wn=2"
    code = ("import json, sys, hetnn; from hetnn import _core; d = hetnn.device(sys.argv[1]); "
            "_core.store_tuned_gemm(d._dev, 'tf32', json.dumps({'params': sys.argv[2], 'date': 'x'})) "
            "if sys.argv[3] == 'store' else print(_core.gemm_params(d._dev, 'tf32'))")
    for step in ("store", "read"):
        r = subprocess.run([sys.executable, "-c", code, opencl_device.id, params, step], env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == repr((params, "tuned x"))


def test_bench_rows_and_environment_record_the_precision(restore_precision):
    from hetnn.bench import run

    hetnn.set_matmul_precision("high")
    lines = []
    res = run("matmul", shapes="quick", repeat=2, warmup=1, max_duration=0.1, compare="", device="cpu",
              say=lines.append)
    assert res.environment["matmul_precision"] == "high"
    assert res.rows and all(r["precision"] == "high" for r in res.rows)
    assert any(line.startswith("precision: float32 products at 'high'") for line in lines)
    # the CPU device has no TF32: its float32 rows say they computed natively
    shape_rows = [r for r in res.select(library="hetnn") if not str(r["shape"]).startswith("aggregate")]
    assert shape_rows and {r["compute"] for r in shape_rows} == {"native"}


def test_the_environment_and_the_command_line_set_the_default(tmp_path):
    import os
    import subprocess
    import sys

    def run(args, **env_extra):
        env = dict(os.environ, **env_extra)
        env.pop("HETNN_POISON", None)
        return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=300)

    r = run(["-c", "import hetnn; print(hetnn.get_matmul_precision())"], HETNN_MATMUL_PRECISION="high")
    assert r.returncode == 0 and r.stdout.strip() == "high", r.stderr
    code = ("import numpy as np, hetnn\ntry:\n hetnn.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))"
            "\nexcept ValueError as e:\n print(e)")
    r = run(["-c", code], HETNN_MATMUL_PRECISION="tf32")
    assert "HETNN_MATMUL_PRECISION must be 'highest'" in r.stdout and "got 'tf32'" in r.stdout, (r.stdout, r.stderr)
    r = run(["-m", "hetnn", "bench", "matmul", "--shapes", "32x32x32", "--device", "cpu", "--precision", "high",
             "--no-output", "--repeat", "2", "--warmup", "1", "--processes", "1", "--compare", "none"])
    assert r.returncode == 0, r.stderr
    assert "precision: float32 products at 'high'" in r.stdout


def test_the_bench_times_tf32_rows_beside_float32():
    """--dtype float32,tf32: float32 data at precision "high" as rows of their own in the same run, with how they
    computed; a device without TF32 computes them in float32 and says so."""
    from hetnn.bench import run

    res = run("matmul", shapes="64x64x64,32x96x48", dtype="float32,tf32", repeat=2, warmup=1, max_duration=0.1,
              compare="numpy", device="cpu", processes=1)
    tf = [r for r in res.select(library="hetnn", dtype="tf32") if not str(r["shape"]).startswith("aggregate")]
    assert len(tf) == 2 and all(r["compute"] == "float32 (no TF32 here)" and r["max_rel_err"] < 1e-5 for r in tf)
    assert not res.select(library="numpy", dtype="tf32")  # NumPy has no TF32: no row pretends it does
    assert "tf32/f32" in res.text and "precision study" in res.text
