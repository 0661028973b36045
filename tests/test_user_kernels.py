"""hetnn.ElementwiseKernel on every device: results against NumPy in float64 on fresh random data, type
placeholders, numbers as inputs, broadcasting, given outputs, several outputs, the index `i`, a preamble, the
on-disk cache (a second process loads what the first compiled), and the refusals: bad parameter lists, type
mismatches, and compile errors that carry the compiler's log and the generated source."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hetnn

from conftest import rel_err


def test_a_typed_kernel_matches_float64(device, rng):
    k = hetnn.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = exp(x) * y + sqrt(fabs(y))", "exp_mul")
    x = rng.uniform(-2, 2, (37, 5)).astype(np.float32)
    y = rng.uniform(-2, 2, (37, 5)).astype(np.float32)
    z = k(hetnn.asarray(x, device=device), hetnn.asarray(y, device=device))
    assert isinstance(z, hetnn.Array) and z.device is device and z.dtype == np.float32 and z.shape == (37, 5)
    want = np.exp(x.astype(np.float64)) * y + np.sqrt(np.abs(y.astype(np.float64)))
    assert rel_err(z.numpy(), want) < 1e-6


@pytest.mark.parametrize("dtype", ("float64", "int32", "int64", "int8", "uint8"))
def test_placeholders_take_the_arrays_dtype(device, rng, dtype):
    if dtype not in device.dtypes:
        pytest.skip(f"{device.id} has no {dtype}")
    k = hetnn.ElementwiseKernel("T x, T y", "T z", "z = x * y + x", "mul_add")
    if dtype.startswith("float"):
        x, y = rng.standard_normal(100).astype(dtype), rng.standard_normal(100).astype(dtype)
    else:
        x, y = rng.integers(-5, 6, 100).astype(dtype), rng.integers(-5, 6, 100).astype(dtype)
    z = k(hetnn.asarray(x, device=device), hetnn.asarray(y, device=device))
    assert z.dtype == np.dtype(dtype)
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(z.numpy(), x * y + x, rtol=1e-12)


def test_numbers_broadcasting_given_outputs_and_two_outputs(device, rng):
    k = hetnn.ElementwiseKernel("T x, T y, float32 s", "T lo, T hi", "lo = fmin(x, y) * s; hi = fmax(x, y) + s",
                                "minmax")
    x = rng.standard_normal((4, 1, 6)).astype(np.float32)
    y = rng.standard_normal((3, 1)).astype(np.float32)
    lo, hi = k(hetnn.asarray(x, device=device), hetnn.asarray(y, device=device), 2.5)
    assert lo.shape == hi.shape == (4, 3, 6)
    np.testing.assert_allclose(lo.numpy(), np.minimum(x, y) * 2.5, rtol=1e-6)
    np.testing.assert_allclose(hi.numpy(), np.maximum(x, y) + 2.5, rtol=1e-6)
    out_lo = hetnn.zeros((4, 3, 6), device=device)
    out_hi = hetnn.zeros((4, 3, 6), device=device)
    got = k(hetnn.asarray(x, device=device), hetnn.asarray(y, device=device), 1.0, out_lo, out_hi)
    assert got[0] is out_lo and got[1] is out_hi
    np.testing.assert_allclose(out_hi.numpy(), np.maximum(x, y) + 1, rtol=1e-6)


def test_the_index_the_preamble_and_outputs_read_before_written(device):
    k = hetnn.ElementwiseKernel("int64 step", "int64 y", "y = twice(y) + i * step", "indexed",
                                preamble="static inline long twice(long v) { return 2 * v; }")
    y = hetnn.asarray(np.arange(10, dtype=np.int64), device=device)
    k(3, y)
    np.testing.assert_array_equal(y.numpy(), 2 * np.arange(10) + 3 * np.arange(10))
    flag = hetnn.ElementwiseKernel("float32 x", "bool b", "b = x > 0 ? 7 : 0", "positive")
    b = flag(hetnn.asarray(np.array([-1.0, 2.0, 0.0, 3.0], np.float32), device=device))
    assert b.dtype == np.bool_
    np.testing.assert_array_equal(b.numpy().view(np.uint8), [0, 1, 0, 1])  # stored as 0/1


def test_pi_by_monte_carlo_with_a_user_kernel_and_a_reduction(device):
    inside = hetnn.ElementwiseKernel("T x, T y", "int32 hit", "hit = x * x + y * y <= 1 ? 1 : 0", "inside")
    g = hetnn.random.default_rng(12345)
    n = 200_000
    x = g.random(n, dtype="float32", device=device)
    y = g.random(n, dtype="float32", device=device)
    pi = 4 * float(hetnn.sum(inside(x, y))) / n
    assert abs(pi - np.pi) < 6 * np.sqrt(np.pi / 4 * (1 - np.pi / 4) / n) * 4


def test_a_second_process_loads_the_cached_kernel(tmp_path):
    code = textwrap.dedent("""
        import numpy as np, hetnn
        k = hetnn.ElementwiseKernel("float64 x", "float64 y", "y = x * 3.0 + 0.5", "cached_once")
        for d in hetnn.devices():
            if "float64" in d.dtypes:
                assert (k(hetnn.asarray(np.arange(4.0), device=d)).numpy() == np.arange(4.0) * 3 + 0.5).all()
        print(hetnn._core.cache_stats() if hasattr(hetnn._core, "cache_stats") else "ok")
    """)
    env = {**__import__("os").environ, "HETNN_CACHE_DIR": str(tmp_path)}
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
    libs = list((tmp_path / "user_kernels").glob("*.so"))
    assert len(libs) == 1 and (libs[0].parent / (libs[0].name + ".mac")).exists()
    # a damaged library (its MAC no longer matches) is rebuilt, never loaded
    libs[0].write_bytes(b"\x7fELF garbage")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert libs[0].read_bytes()[:4] == b"\x7fELF" and len(libs[0].read_bytes()) > 1000


@pytest.mark.parametrize("args,exc,match", [
    (("float32 x,", "float32 y", "y = x", "k"), ValueError, "empty entry"),
    (("float32", "float32 y", "y = 1", "k"), ValueError, "'type name'"),
    (("float32 x y z", "float32 y", "y = 1", "k"), ValueError, "'type name'"),
    (("float32 x", "float32 x", "x = 1", "k"), ValueError, "named twice"),
    (("float32 i", "float32 y", "y = i", "k"), ValueError, "cannot name a parameter"),
    (("float32 x", "", "x", "k"), ValueError, "at least one output"),
    (("float32 x", "float32 y", "y = x", "2bad"), ValueError, "identifier"),
    (("float16 x", "float32 y", "y = x", "k"), TypeError, "float16 parameters are not supported"),
    (("float32 x", "float32 y", "  ", "k"), ValueError, "operation is empty"),
    (("T- x", "T y", "y = x", "k"), ValueError, "neither a dtype nor a type placeholder"),
])
def test_bad_definitions_are_refused(args, exc, match):
    with pytest.raises(exc, match=match):
        hetnn.ElementwiseKernel(*args)


def test_bad_calls_are_refused(device):
    k = hetnn.ElementwiseKernel("T x, T y", "T z", "z = x + y", "add2")
    a = hetnn.zeros((3,), device=device)
    i = hetnn.zeros((3,), dtype="int32", device=device)
    for call, exc, match in ((lambda: k(a), TypeError, "takes 2 inputs"),
                             (lambda: k(a, i), TypeError, "T is float32 by an earlier argument and int32"),
                             (lambda: k(1.0, 2.0), TypeError, "at least one array"),
                             (lambda: k(a, hetnn.zeros((4,), device=device)), ValueError, "cannot be broadcast"),
                             (lambda: k(a, a, hetnn.zeros((2,), device=device)), ValueError, "has shape"),
                             (lambda: k(a, "x"), TypeError, "operands must be"),
                             (lambda: k(a, a, a.numpy()), TypeError, "outputs must be hetnn Arrays")):
        with pytest.raises(exc, match=match):
            call()
    typed = hetnn.ElementwiseKernel("int32 x", "int32 y", "y = x", "copy_int")
    with pytest.raises(TypeError, match="must be int32, got float32"):
        typed(a)
    with pytest.raises(TypeError, match="got the float"):
        hetnn.ElementwiseKernel("int32 x, int32 w", "int32 y", "y = x + w", "addw")(i, 0.5)


def test_a_compile_error_carries_the_log_and_the_source(device):
    k = hetnn.ElementwiseKernel("float32 x", "float32 y", "y = x +* undefined_thing", "broken")
    with pytest.raises(hetnn.CompileError) as info:
        k(hetnn.zeros((2,), device=device))
    assert "undefined_thing" in info.value.log and "the generated source" in info.value.log
    assert "broken" in str(info.value)


def test_mixing_devices_is_refused():
    devs = hetnn.devices()
    if len(devs) < 2:
        pytest.skip("one device")
    k = hetnn.ElementwiseKernel("T x, T y", "T z", "z = x + y", "add3")
    with pytest.raises(TypeError, match="different devices"):
        k(hetnn.zeros((2,), device=devs[0]), hetnn.zeros((2,), device=devs[1]))
