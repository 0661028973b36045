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
        if dtype.startswith("float"):
            # the compiler may fuse x * y + x into one rounding (FMA): within a few units of the terms' size, which
            # near cancellation is far from the result's own (x * y = -x to 1e-5 once took rtol 1.6e-12)
            x64, y64 = x.astype(np.float64), y.astype(np.float64)
            bound = 4 * np.finfo(dtype).eps * (np.abs(x64 * y64) + np.abs(x64))
            assert np.all(np.abs(z.numpy() - (x64 * y64 + x64)) <= bound)
        else:
            np.testing.assert_array_equal(z.numpy(), x * y + x)


def test_numbers_broadcasting_given_outputs_and_two_outputs(device, rng):
    k = hetnn.ElementwiseKernel("T x, T y, float32 s", "T lo, T hi", "lo = fmin(x, y) * s; hi = fmax(x, y) + s",
                                "minmax")
    x = rng.standard_normal((4, 1, 6)).astype(np.float32)
    y = rng.standard_normal((3, 1)).astype(np.float32)
    lo, hi = k(hetnn.asarray(x, device=device), hetnn.asarray(y, device=device), 2.5)
    assert lo.shape == hi.shape == (4, 3, 6)
    np.testing.assert_allclose(lo.numpy(), np.minimum(x, y) * 2.5, rtol=1e-6)
    np.testing.assert_allclose(hi.numpy(), np.maximum(x, y) + 2.5, rtol=1e-6)
    out_lo = hetnn.zeros((4, 3, 6), "float32", device=device)
    out_hi = hetnn.zeros((4, 3, 6), "float32", device=device)
    got = k(hetnn.asarray(x, device=device), hetnn.asarray(y, device=device), 1.0, out_lo, out_hi)
    assert got[0] is out_lo and got[1] is out_hi
    np.testing.assert_allclose(out_hi.numpy(), np.maximum(x, y) + 1, rtol=1e-6)


def test_one_kernel_serves_contiguous_and_strided_calls_in_any_order(device, rng):
    """CPU-type OpenCL devices build a contiguous call's kernel without the strided offsets: a kernel called on
    contiguous arrays, then on a transposed view and a broadcast operand, then contiguous again, right each time
    (each arrangement its own cached kernel, never the other's)."""
    k = hetnn.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x * 2 - y", "twice_minus")
    x = rng.standard_normal((64, 48)).astype(np.float32)
    y = rng.standard_normal((48, 64)).astype(np.float32)
    row = rng.standard_normal((1, 48)).astype(np.float32)
    a, b, r = (hetnn.asarray(v, device=device) for v in (x, y, row))
    bt = hetnn.asarray(y.T.copy(), device=device)
    for got, want in ((k(a, bt), 2.0 * x - y.T), (k(a, b.mT), 2.0 * x - y.T), (k(a, r), 2.0 * x - row),
                      (k(a.mT, b), 2.0 * x.T - y), (k(a, bt), 2.0 * x - y.T)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("xshape,yshape", [((1000,), (1,)), ((100, 37), (37,)), ((70, 40), (70, 1)),
                                            ((5, 16), (1, 16)), ((33, 3), (33, 1)), ((3, 5, 40), (5, 1))])
def test_broadcasts_of_one_and_two_dimensions_and_the_index(device, rng, xshape, yshape):
    """Broadcast operands (CPU-type OpenCL devices: a two-dimensional range where the merged shape has one or two
    dimensions and rows of 16 or more): every element and the flat index i right, ragged group edges, a given
    output poisoned first."""
    k = hetnn.ElementwiseKernel("float32 row, float32 col", "float32 z, int64 idx", "z = row * col - 1.5f; idx = i",
                                "bc_index")  # parameters named as a two-dimensional walk might name its own
    x = rng.standard_normal(xshape).astype(np.float32)
    y = rng.standard_normal(yshape).astype(np.float32)
    shape = np.broadcast_shapes(xshape, yshape)
    z = hetnn.full(shape, np.nan, "float32", device=device)
    idx = hetnn.full(shape, -7, "int64", device=device)
    k(hetnn.asarray(x, device=device), hetnn.asarray(y, device=device), z, idx)
    np.testing.assert_allclose(z.numpy(), x.astype(np.float64) * y - 1.5, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(idx.numpy(), np.arange(int(np.prod(shape))).reshape(shape))


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
    (("float32 x", "float32 y", "  ", "k"), ValueError, "operation is empty"),
    (("T- x", "T y", "y = x", "k"), ValueError, "neither a dtype nor a type placeholder"),
])
def test_bad_definitions_are_refused(args, exc, match):
    with pytest.raises(exc, match=match):
        hetnn.ElementwiseKernel(*args)


def test_bad_calls_are_refused(device):
    k = hetnn.ElementwiseKernel("T x, T y", "T z", "z = x + y", "add2")
    a = hetnn.zeros((3,), "float32", device=device)
    i = hetnn.zeros((3,), dtype="int32", device=device)
    for call, exc, match in ((lambda: k(a), TypeError, "takes 2 inputs"),
                             (lambda: k(a, i), TypeError, "T is float32 by an earlier argument and int32"),
                             (lambda: k(1.0, 2.0), TypeError, "at least one array"),
                             (lambda: k(a, hetnn.zeros((4,), "float32", device=device)), ValueError,
                              "cannot be broadcast"),
                             (lambda: k(a, a, hetnn.zeros((2,), "float32", device=device)), ValueError, "has shape"),
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
        k(hetnn.zeros((2,), "float32", device=device))
    assert "undefined_thing" in info.value.log and "the generated source" in info.value.log
    assert "broken" in str(info.value)


def test_mixing_devices_is_refused():
    devs = hetnn.devices()
    if len(devs) < 2:
        pytest.skip("one device")
    k = hetnn.ElementwiseKernel("T x, T y", "T z", "z = x + y", "add3")
    with pytest.raises(TypeError, match="different devices"):
        k(hetnn.zeros((2,), "float32", device=devs[0]), hetnn.zeros((2,), "float32", device=devs[1]))


# ---- ReductionKernel ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,axis", [((1000,), None), ((37, 50), 1), ((37, 50), 0), ((4, 30, 5), (0, 2)),
                                        ((200_003,), None), ((3, 0), 1), ((5, 6), ())])
def test_a_reduction_kernel_matches_float64(device, rng, shape, axis):
    l2 = hetnn.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    x = rng.uniform(-2, 2, shape).astype(np.float32)
    got = l2(hetnn.asarray(x, device=device), axis=axis)
    want = np.sqrt(np.sum(x.astype(np.float64) ** 2, axis=axis))
    assert got.shape == want.shape and got.dtype == np.float32 and got.device is device
    assert rel_err(got.numpy(), want) < 1e-5
    kept = l2(hetnn.asarray(x, device=device), axis=axis, keepdims=True)
    assert kept.shape == np.sum(x, axis=axis, keepdims=True).shape


def test_a_reduction_with_two_inputs_a_number_a_reduce_type_and_two_outputs(device, rng):
    # a weighted sum of squares in float64 (reduce_type) over float32 inputs, and its square root
    k = hetnn.ReductionKernel("float32 x, float32 w, float32 s", "float32 total, float32 root",
                              "w * x * x * s", "a + b", "total = a; root = sqrt(a)", "0", "weighted",
                              reduce_type="float64" if "float64" in device.dtypes else "float32")
    x = rng.uniform(-1, 1, (64, 33)).astype(np.float32)
    w = rng.uniform(0, 1, (1, 33)).astype(np.float32)
    total, root = k(hetnn.asarray(x, device=device), hetnn.asarray(w, device=device), 0.5, axis=1)
    want = np.sum(w.astype(np.float64) * x.astype(np.float64) ** 2, axis=1) * 0.5
    assert rel_err(total.numpy(), want) < 1e-5 and rel_err(root.numpy(), np.sqrt(want)) < 1e-5


def test_max_and_argmax_style_reductions_and_integers(device, rng):
    mx = hetnn.ReductionKernel("T x", "T y", "x", "a > b ? a : b", "y = a", "-2147483647 - 1", "imax")
    x = rng.integers(-10**6, 10**6, (9, 1001)).astype(np.int32)
    np.testing.assert_array_equal(mx(hetnn.asarray(x, device=device), axis=1).numpy(), x.max(axis=1))
    count = hetnn.ReductionKernel("T x", "int64 total", "x > 0 ? 1 : 0", "a + b", "total = a", "0", "count_positive")
    assert int(count(hetnn.asarray(x, device=device))) == int((x > 0).sum())


def test_pi_with_a_reduction_kernel(device):
    hits = hetnn.ReductionKernel("T x, T y", "int64 total", "x * x + y * y <= 1 ? 1 : 0", "a + b", "total = a", "0",
                                  "hits")
    g = hetnn.random.default_rng(7)
    n = 300_000
    x = g.random(n, dtype="float32", device=device)
    y = g.random(n, dtype="float32", device=device)
    inside = int(hits(x, y))
    xs, ys = x.numpy(), y.numpy()
    # the points inside, up to the rare point within a rounding of the circle (compilers may fuse x * x + y * y)
    assert abs(inside - int(np.count_nonzero(xs * xs + ys * ys <= 1))) <= 2


def test_reduction_kernel_refusals(device):
    for args, kw, exc, match in (
            (("T a", "T y", "a", "a + b", "y = a", "0", "k"), {}, ValueError, "cannot name a parameter"),
            (("T x", "T y", "x", " ", "y = a", "0", "k"), {}, ValueError, "reduce_expr is empty"),
            (("T x", "T y", "x", "a + b", "y = a", "", "k"), {}, ValueError, "identity is empty")):
        with pytest.raises(exc, match=match):
            hetnn.ReductionKernel(*args, **kw)
    k = hetnn.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "plain_sum")
    a = hetnn.zeros((3, 4), "float32", device=device)
    for call, exc, match in ((lambda: k(a, axis=2), ValueError, "out of bounds"),
                             (lambda: k(a, axis=(0, 0)), ValueError, "given twice"),
                             (lambda: k(1.0), TypeError, "at least one array input"),
                             (lambda: k(a, hetnn.zeros((2,), "float32", device=device), axis=0), ValueError,
                              "has shape"),
                             (lambda: k(a, axis="0"), TypeError, "axis must be")):
        with pytest.raises(exc, match=match):
            call()
    broken = hetnn.ReductionKernel("T x", "T y", "x", "a +* b", "y = a", "0", "broken_red")
    with pytest.raises(hetnn.CompileError) as info:
        broken(a)
    assert "the generated source" in info.value.log


def test_a_given_output_keeps_what_the_operation_does_not_assign(device, rng):
    x = rng.standard_normal(1000).astype(np.float32)
    z0 = rng.standard_normal(1000).astype(np.float32)
    masked = hetnn.ElementwiseKernel("T x", "T z", "if (x > 0) z = x;", "masked_copy")
    z = hetnn.asarray(z0, device=device)
    masked(hetnn.asarray(x, device=device), z)
    np.testing.assert_array_equal(z.numpy(), np.where(x > 0, x, z0))
    acc = hetnn.ElementwiseKernel("T x", "T z", "z += x", "accumulate")
    acc(hetnn.asarray(x, device=device), z)
    np.testing.assert_allclose(z.numpy(), np.where(x > 0, x, z0) + x, rtol=1e-6)
    fresh = acc(hetnn.asarray(x, device=device))  # a new output starts at 0
    np.testing.assert_array_equal(fresh.numpy(), x)


def test_a_kernel_called_with_changing_operands_resolves_each_call_afresh():
    """A call reuses what the previous call resolved when its operands' device, dtypes, shapes and numbers' kinds
    match; any change must resolve again: each result against NumPy, each refusal still raised after good calls."""
    rng = np.random.default_rng()
    k = hetnn.ElementwiseKernel("T x, T y, float64 s", "T z", "z = x * s + y", "plan_reuse")
    for dev in hetnn.devices():
        f64 = "float64" in dev.dtypes
        for dtype in ("float32", "float64", "int32") if f64 else ("float32", "int32"):
            for xs, ys in (((5,), (5,)), ((2, 3), (3,)), ((4, 1), (1, 6)), ((0, 3), (3,)), ((5,), (5,))):
                for s in (2, 0.5):
                    x = rng.integers(-9, 9, xs).astype(dtype)
                    y = rng.integers(-9, 9, ys).astype(dtype)
                    want = (x.astype(np.float64) * s + y).astype(dtype)
                    got = k(hetnn.asarray(x, device=dev), hetnn.asarray(y, device=dev), s)
                    assert got.dtype == np.dtype(dtype) and got.device == dev
                    np.testing.assert_array_equal(got.numpy(), want)
                    out = hetnn.empty(want.shape, dtype, device=dev)
                    assert k(hetnn.asarray(x, device=dev), hetnn.asarray(y, device=dev), s, out) is out
                    np.testing.assert_array_equal(out.numpy(), want)
        a = hetnn.asarray(np.ones(3, np.float32), device=dev)
        k(a, a, 1.0)
        with pytest.raises(ValueError, match="has shape"):
            k(a, a, 1.0, hetnn.empty((2,), "float32", device=dev))
        with pytest.raises(TypeError, match="must be float64|by an earlier argument"):
            k(a, hetnn.asarray(np.ones(3, np.int32), device=dev), 1.0)
        two = hetnn.ElementwiseKernel("T x", "T u, T v", "u = x; v = -x", "plan_two_outputs")
        o = hetnn.empty((3,), "float32", device=dev)
        two(a, hetnn.empty((3,), "float32", device=dev), hetnn.empty((3,), "float32", device=dev))
        with pytest.raises(ValueError, match="same array"):
            two(a, o, o)
    devs = hetnn.devices()
    if len(devs) > 1:
        a0 = hetnn.asarray(np.ones(3, np.float32), device=devs[0])
        k(a0, a0, 1.0)
        with pytest.raises(TypeError, match="different devices"):
            k(a0, hetnn.asarray(np.ones(3, np.float32), device=devs[1]), 1.0)


def _bits_equal(got, want):
    """Equal bit for bit, except that any NaN matches any NaN (payloads may differ in their low bits)."""
    g, w = np.asarray(got), np.asarray(want)
    nan = np.isnan(w.astype(np.float32))
    assert np.array_equal(np.isnan(g.astype(np.float32)), nan)
    assert np.array_equal(g[~nan].view(np.uint16 if g.itemsize == 2 else np.uint32),
                          w[~nan].view(np.uint16 if w.itemsize == 2 else np.uint32))


@pytest.mark.parametrize("dtype", ("float16", "bfloat16"))
def test_16_bit_parameters_are_read_and_written_exactly(device, dtype):
    """float16 / bfloat16 parameters are stored in 16 bits and computed in float32: every one of the 65,536 bit
    patterns widens exactly, and narrowing rounds to nearest even as NumPy / ml_dtypes do (halfway cases, overflow
    to inf, float16 subnormals, signed zeros, NaN)."""
    half = dtype
    from ml_dtypes import bfloat16
    npt = np.float16 if half == "float16" else bfloat16
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(npt)
    widen = hetnn.ElementwiseKernel(f"{half} x", "float32 y", "y = x", f"widen_{half}")
    got = widen(hetnn.asarray(every, device=device)).numpy()
    _bits_equal(got, every.astype(np.float32))
    rng = np.random.default_rng()
    base = every.astype(np.float32)
    bits = base[np.isfinite(base)].view(np.uint32)
    half_ulp = np.uint32(0x1000 if half == "float16" else 0x8000)  # the float32 bits below the 16-bit value's last
    x = np.concatenate([(bits + d).view(np.float32) for d in (np.uint32(0), half_ulp - 1, half_ulp, half_ulp + 1)] +
                       [rng.standard_normal(20000).astype(np.float32) * np.float32(10.0) ** rng.integers(-9, 6, 20000),
                        np.float32([65519.0, 65520.0, 65536.0, 3.4e38, -3.4e38, 6e-8, 2.9e-8, 3e-8, 1e-45, -0.0,
                                    np.inf, -np.inf, np.nan])]).astype(np.float32)
    narrow = hetnn.ElementwiseKernel("float32 x", f"{half} y", "y = x", f"narrow_{half}")
    out = narrow(hetnn.asarray(x, device=device))
    assert out.dtype == np.dtype(npt)
    _bits_equal(out.numpy(), x.astype(npt))


@pytest.mark.parametrize("dtype", ("float16", "bfloat16"))
def test_reduction_kernels_take_16_bit_arrays_and_compute_in_float32(device, rng, dtype):
    """A ReductionKernel over float16 / bfloat16 inputs (a placeholder and a fixed type), with a 16-bit output and a
    16-bit reduce_type: the elements read exactly, summed in float32, the result rounded once to 16 bits."""
    from ml_dtypes import bfloat16
    npt = np.float16 if dtype == "float16" else bfloat16
    x = rng.uniform(-2, 2, (23, 301)).astype(npt)
    w = rng.uniform(-1, 1, (301,)).astype(npt)
    a, b = hetnn.asarray(x, device=device), hetnn.asarray(w, device=device)
    dot = hetnn.ReductionKernel(f"T x, {dtype} w", "T y", "x * w", "a + b", "y = a", "0", f"dot16_{dtype}")
    got = dot(a, b, axis=1)
    assert got.dtype == np.dtype(npt) and got.shape == (23,)
    want = (x.astype(np.float64) * w.astype(np.float64)).sum(axis=1)
    # float32 sums of 301 products (each exact in float32) and one rounding to 16 bits
    tol = (2 ** -10 if dtype == "float16" else 2 ** -7) + 301 * 2 ** -23
    assert rel_err(got.numpy().astype(np.float64), want) <= tol
    out = hetnn.asarray(np.full(23, np.nan, npt), device=device)  # poisoned before the call
    assert dot(a, b, out, axis=1) is out
    np.testing.assert_array_equal(out.numpy(), got.numpy())
    amax = hetnn.ReductionKernel("T x", "float32 y", "fabs(x)", "fmax(a, b)", "y = a", "0", f"amax16_{dtype}",
                                 reduce_type=dtype)
    np.testing.assert_array_equal(amax(a).numpy(), np.float32(np.abs(x.astype(np.float32)).max()))


@pytest.mark.parametrize("dtype", ("float16", "bfloat16"))
def test_placeholders_bound_to_16_bit_arrays_compute_in_float32(device, rng, dtype):
    half = dtype
    from ml_dtypes import bfloat16
    npt = np.float16 if half == "float16" else bfloat16
    k = hetnn.ElementwiseKernel("T x, T y, float32 s", "T z", "z = x * s + y", f"axpy_{half}")
    x, y = (rng.uniform(-4, 4, (37, 5)).astype(npt) for _ in range(2))
    got = k(hetnn.asarray(x, device=device), hetnn.asarray(y, device=device), 0.5)
    assert got.dtype == np.dtype(npt)
    want = (x.astype(np.float64) * 0.5 + y.astype(np.float64)).astype(npt)  # one rounding, to 16 bits
    assert rel_err(got.numpy().astype(np.float64), want.astype(np.float64)) <= (2 ** -10 if half == "float16" else
                                                                                 2 ** -7)
    out = hetnn.zeros((37, 5), half, device=device)
    assert k(hetnn.asarray(x, device=device), hetnn.asarray(y, device=device), 0.5, out) is out
    np.testing.assert_array_equal(out.numpy(), got.numpy())
