"""The element-wise ops (hetnn.exp, hetnn.add, ..., the operators of hetnn.Array): every op of the core's table on
every device and every dtype it takes, against NumPy computed in float64 from the same inputs (integers and bools
exactly); broadcasting, 0-size and scalar operands; the integer rules (wrapping, division by zero, shifts); the
type promotion; casts; operators, in-place forms and the refusals (NumPy arrays, other devices, NumPy ufuncs)."""
import os
import re
from pathlib import Path

import numpy as np
import pytest

import hetnn
from hetnn import _core

from conftest import rel_err

OPS = {name: (arity, kind) for name, arity, kind in _core.elementwise_ops() if kind != "cast"}
FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int8", "uint8", "int32", "int64")
NP_NAME = {"pow": "power", "bitwise_invert": "invert", "bitwise_left_shift": "left_shift",
           "bitwise_right_shift": "right_shift", "atan": "arctan", "asin": "arcsin", "acos": "arccos",
           "atanh": "arctanh", "asinh": "arcsinh", "acosh": "arccosh", "atan2": "arctan2"}
DOMAIN = {"log": (0.1, 5), "log2": (0.1, 5), "log10": (0.1, 5), "sqrt": (0.1, 5), "log1p": (-0.5, 5),
          "asin": (-0.9, 0.9), "acos": (-0.9, 0.9), "atanh": (-0.9, 0.9), "acosh": (1.1, 5), "reciprocal": (0.5, 3),
          "pow": (0.5, 2), "divide": (0.5, 3), "floor_divide": (0.5, 3), "remainder": (0.5, 3)}


def _takes(op, dtype):
    """Whether op is defined for arrays of dtype (hetnn's rules: core/elementwise.cpp)."""
    kind = OPS[op][1]
    if dtype == "bool" and (kind == "arith" or op in ("bitwise_left_shift", "bitwise_right_shift")):
        return False
    if dtype in FLOATS and kind == "bitwise":
        return False
    return not (op == "signbit" and dtype not in FLOATS)


def _ref_types(op, dtype, dev):
    """(the type both inputs are read as, the result's dtype)."""
    kind = OPS[op][1]
    if kind == "real" and dtype not in FLOATS:
        dtype = "float64" if "float64" in dev.dtypes else "float32"
    return dtype, ("bool" if kind in ("compare", "test", "logical") else dtype)


def _host(rng, op, dtype, shape):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype in INTS:
        info = np.iinfo(dtype)
        if op in ("bitwise_left_shift", "bitwise_right_shift"):
            return rng.integers(max(info.min, -2), min(info.max, 8 * info.bits // 8 + 2), shape).astype(dtype)
        if op == "pow":
            return rng.integers(max(info.min, -3), 4, shape).astype(dtype)
        lo, hi = (info.min, info.max) if rng.integers(2) else (max(info.min, -9), 10)
        return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)
    lo, hi = DOMAIN.get(op, (-3, 3))
    x = rng.uniform(lo, hi, shape)
    return x.astype(np.float32) if dtype == "bfloat16" else x.astype(dtype)


def _upload(dev, x, dtype):
    a = hetnn.asarray(x, device=dev)
    return a.astype(dtype) if dtype == "bfloat16" else a


def _reference(op, ins, in_t, out_t):
    """NumPy's op on the inputs read as in_t, in float64 for floating types (exact for integers and bools)."""
    arity = OPS[op][0]
    if in_t in FLOATS:
        xs = [np.asarray(x, dtype=np.float64) for x in ins]
    else:
        xs = [np.asarray(x).astype(in_t) for x in ins]
    if arity == 2:
        xs = [np.array(v) for v in np.broadcast_arrays(*xs)]
    shape = xs[0].shape
    xs = [np.atleast_1d(v) for v in xs]
    f = getattr(np, NP_NAME.get(op, op), None)
    with np.errstate(all="ignore"):
        if op == "reciprocal":
            r = 1.0 / xs[0]
        elif op == "round" and in_t not in FLOATS:
            r = xs[0]
        elif op == "pow" and in_t not in FLOATS:
            r = np.power(xs[0].astype(np.int64), np.maximum(xs[1].astype(np.int64), 0)).astype(in_t)
            neg = xs[1].astype(np.int64) < 0
            r[neg] = np.where(xs[0][neg] == 1, 1, np.where(xs[0][neg] == -1, 1 - 2 * (xs[1][neg] & 1), 0))
        elif op in ("bitwise_left_shift", "bitwise_right_shift"):
            bits = np.dtype(in_t).itemsize * 8
            s = xs[1].astype(np.int64)
            out_of_range = (s < 0) | (s >= bits)
            safe = np.where(out_of_range, 0, s).astype(in_t)
            r = (np.left_shift if op == "bitwise_left_shift" else np.right_shift)(xs[0], safe)
            r[out_of_range] = 0 if op == "bitwise_left_shift" else np.where(xs[0][out_of_range] < 0, -1, 0)
        elif op in ("floor_divide", "remainder") and in_t not in FLOATS:
            a, b = np.broadcast_arrays(*xs)
            safe = np.where(b == 0, 1, b)
            r = f(a, safe).astype(in_t)
            r[b == 0] = 0
        else:
            r = f(*xs) if arity == 2 else f(xs[0])
    r = np.asarray(r).reshape(shape)
    return r.astype(out_t) if out_t in ("bool",) + INTS else r.astype(np.float64)


TOL = {"float32": 2e-6, "float64": 1e-13, "float16": 1e-3, "bfloat16": 8e-3}
SHAPES = [((3, 4), (3, 4)), ((2, 3, 5), (5,)), ((4, 1), (1, 6)), ((0, 3), (3,)), ((7,), ()), ((), ())]


def _assert_matches(res, ref, out_t, what):
    """Integers and bools exactly; floating results: NaN and infinities where the reference has them, the finite
    values within the dtype's tolerance (norm-wise) of the reference rounded to the result's dtype (the best the
    device can return: a float16 square of 2e-4 is 4.2e-8 exactly and 6e-8, the smallest subnormal, at best)."""
    assert res.shape == ref.shape, what
    if out_t not in FLOATS:
        np.testing.assert_array_equal(res, ref, err_msg=what)
        return
    with np.errstate(over="ignore"):
        ref = ref.astype(out_t).astype(np.float64)
    res = res.astype(np.float64)
    finite = np.isfinite(ref)
    np.testing.assert_array_equal(np.isnan(res), np.isnan(ref), err_msg=f"{what}: NaN")
    np.testing.assert_array_equal(res[np.isinf(ref)], ref[np.isinf(ref)], err_msg=f"{what}: infinities")
    if finite.any():
        assert rel_err(res[finite], ref[finite]) <= TOL[out_t], what


@pytest.mark.parametrize("op", sorted(OPS))
def test_every_op_on_every_dtype_matches_numpy(device, rng, op):
    arity = OPS[op][0]
    for dtype in FLOATS + INTS + ("bool",):
        if dtype not in device.dtypes or not _takes(op, dtype):
            continue
        in_t, out_t = _ref_types(op, dtype, device)
        for sa, sb in SHAPES if arity == 2 else [(s, None) for s, _ in SHAPES]:
            ins = [_host(rng, op, dtype, sa)] + ([_host(rng, op, dtype, sb)] if arity == 2 else [])
            args = [_upload(device, x, dtype) for x in ins]
            got = getattr(hetnn, op)(*args)
            assert got.device == device
            assert got.dtype.name == out_t, (op, dtype, got.dtype)
            host_ins = [a.numpy() for a in args]  # as the device holds them (bfloat16 rounded)
            ref = _reference(op, host_ins, in_t, out_t)
            _assert_matches(got.numpy(), ref, out_t, f"{op} {dtype} {sa} {sb}")


def test_a_result_in_the_subnormal_range_is_judged_against_its_best_rounding(device):
    """A float16 scalar of 2.05e-4 squared is 4.2e-8, below float16's smallest subnormal (6e-8): the device's 6e-8 is
    the correctly rounded result, which the comparison took for a relative error of 0.42 against the exact value
    (a CI run drew such an input)."""
    x = hetnn.asarray(np.float16(2.05e-4), device=device)
    got = hetnn.square(x).numpy()
    assert got == np.float16(np.float64(np.float16(2.05e-4)) ** 2) == np.float16(2 ** -24)
    _assert_matches(got, _reference("square", [x.numpy()], "float16", "float16"), "float16", "square float16 ()")


LARGE = (1 << 20) + 3  # elementwise_cl.cpp's kFixedOpMin and a ragged end: CPU-type OpenCL devices build the op in


@pytest.mark.parametrize("op,dtype,mode", [("add", "float32", "arrays"), ("subtract", "float32", "scalar first"),
                                           ("multiply", "float64", "scalar second"), ("divide", "float32", "arrays"),
                                           ("maximum", "float16", "arrays"), ("exp", "float32", "unary"),
                                           ("floor_divide", "int32", "arrays"), ("less", "int8", "scalar second"),
                                           ("bitwise_xor", "uint8", "arrays"), ("negative", "bfloat16", "unary")])
def test_large_contiguous_calls(device, rng, op, dtype, mode):
    """Contiguous operands of a million elements and more: on CPU-type OpenCL devices a program with the op and
    its operands' arrangement fixed at build time (each arrangement: two arrays, a number either side, one array)."""
    if dtype not in device.dtypes:
        pytest.skip(f"{device.id} has no {dtype}")
    in_t, out_t = _ref_types(op, dtype, device)
    x = _upload(device, _host(rng, op, dtype, (LARGE,)), dtype)
    if mode == "unary":
        got, ins = getattr(hetnn, op)(x), [x.numpy()]
    elif mode == "arrays":
        y = _upload(device, _host(rng, op, dtype, (LARGE,)), dtype)
        got, ins = getattr(hetnn, op)(x, y), [x.numpy(), y.numpy()]
    else:
        s = 2 if dtype in INTS else 1.5
        got = getattr(hetnn, op)(s, x) if mode == "scalar first" else getattr(hetnn, op)(x, s)
        ins = [np.asarray(s, dtype=x.numpy().dtype), x.numpy()] if mode == "scalar first" else \
            [x.numpy(), np.asarray(s, dtype=x.numpy().dtype)]
    assert got.dtype.name == out_t
    _assert_matches(got.numpy(), _reference(op, ins, in_t, out_t), out_t, f"{op} {dtype} {mode}")


@pytest.mark.parametrize("start,stop", [(0, None), (5, None), (3, -7), (1, 1 + 16 * (LARGE // 16))])
def test_float32_exp_of_offset_views_beyond_a_million_elements(device, rng, start, stop):
    """float32 exp of contiguous views starting anywhere, with any tail (CPU-type OpenCL: sixteen elements an item
    and the last item the rest, ew_exp16), into poisoned outputs and in place, within 1 ulp of the rounded float64."""
    x = rng.uniform(-80, 80, LARGE + 20).astype(np.float32)
    a = hetnn.asarray(x, device=device)
    v, xv = a[start:stop], x[start:stop]
    want = np.exp(xv.astype(np.float64)).astype(np.float32)
    out = hetnn.full(xv.shape, np.nan, "float32", device=device)
    got = hetnn.exp(v, out=out).numpy()
    assert _ulps(got, want).max() <= 1
    hetnn.exp(v, out=v)  # in place
    assert _ulps(a.numpy()[start:stop], want).max() <= 1
    np.testing.assert_array_equal(a.numpy()[:start], x[:start])  # the elements around the view untouched
    if stop is not None:
        np.testing.assert_array_equal(a.numpy()[stop:], x[stop:])


@pytest.mark.parametrize("op", [o for o, (a, k) in OPS.items() if a == 2])
def test_python_numbers_are_weak_scalars_either_side(device, rng, op):
    for dtype in ("float32", "int32", "uint8"):
        if not _takes(op, dtype):
            continue
        x = _host(rng, op, dtype, (5, 3))
        s = 2 if dtype in INTS else 1.5
        a = hetnn.asarray(x, device=device)
        in_t, out_t = _ref_types(op, dtype, device)
        for got, ins in ((getattr(hetnn, op)(a, s), [x, np.full_like(x, s)]),
                         (getattr(hetnn, op)(s, a), [np.full_like(x, s), x])):
            assert got.dtype.name == out_t
            _assert_matches(got.numpy(), _reference(op, ins, in_t, out_t), out_t, f"{op} {dtype}")


def test_integers_wrap_and_divide_by_zero_as_documented(device):
    a = hetnn.asarray(np.array([127, -128, 100, 7, -7], np.int8), device=device)
    np.testing.assert_array_equal((a + 1).numpy(), np.array([127, -128, 100, 7, -7], np.int8) + np.int8(1))
    np.testing.assert_array_equal((-a).numpy(), np.array([-127, -128, -100, -7, 7], np.int8))
    z = hetnn.asarray(np.array([0, -1, 3, 0, 2], np.int8), device=device)
    np.testing.assert_array_equal((a // z).numpy(), [0, -128, 33, 0, -4])
    np.testing.assert_array_equal((a % z).numpy(), [0, 0, 1, 0, 1])
    big = hetnn.asarray(np.array([np.iinfo(np.int64).min], np.int64), device=device)
    np.testing.assert_array_equal((big // -1).numpy(), [np.iinfo(np.int64).min])
    np.testing.assert_array_equal(abs(big).numpy(), [np.iinfo(np.int64).min])


def test_type_promotion_follows_the_array_api_table():
    rt = hetnn.result_type
    assert rt("int8", "int32") == np.int32 and rt("int32", "int64") == np.int64
    assert rt("uint8", "int8") == np.int32  # hetnn has no int16
    assert rt("float32", "float64") == np.float64 and rt("float16", "float32") == np.float32
    assert rt("float16", "bfloat16") == np.float32
    assert rt("int64", "float32") == np.float32 and rt("bool", "uint8") == np.uint8
    assert rt("bool", "bool") == np.bool_


def test_mixed_dtypes_and_scalars_promote(device):
    a = hetnn.asarray(np.arange(4, dtype=np.int32), device=device)
    f = hetnn.asarray(np.full(4, 0.5, np.float32), device=device)
    r = a + f
    assert r.dtype == np.float32 and np.array_equal(r.numpy(), np.arange(4) + 0.5)
    real = "float64" if "float64" in device.dtypes else "float32"
    assert (a / 2).dtype.name == real and (a * 0.5).dtype.name == real
    assert (a + 1).dtype == np.int32 and (f + 1).dtype == np.float32 and (a > 1).dtype == np.bool_
    u = hetnn.asarray(np.arange(4, dtype=np.uint8), device=device)
    with pytest.raises(ValueError, match="300 is out of range for uint8"):
        u + 300


def test_astype_on_the_device_saturates_and_wraps(device):
    x = hetnn.asarray(np.array([np.nan, 1e10, -1e10, 2.7, -2.7, 0.0], np.float32), device=device)
    np.testing.assert_array_equal(x.astype("int32").numpy(), [0, 2**31 - 1, -2**31, 2, -2, 0])
    np.testing.assert_array_equal(x.astype("uint8").numpy(), [0, 255, 0, 2, 0, 0])
    np.testing.assert_array_equal(x.astype("bool").numpy(), [True, True, True, True, True, False])
    i = hetnn.asarray(np.array([300, -1], np.int64), device=device)
    np.testing.assert_array_equal(i.astype("uint8").numpy(), np.array([300, -1]).astype(np.uint8))
    b = hetnn.asarray(np.array([1.5, -2.25], np.float64 if "float64" in device.dtypes else np.float32),
                      device=device)
    np.testing.assert_array_equal(b.astype("float16").numpy(), np.array([1.5, -2.25], np.float16))
    assert b.astype(b.dtype, copy=False) is b


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_unary_op_in_place_gives_what_it_gives_into_a_new_array(device, rng, dtype):
    """out= the input itself: the CPU device's float32 exp computes a block's results before it knows whether every
    element was in its fast form's range (the others then computed again from the input), so it must not write
    them over the input first. Blocks of ordinary values beside blocks with NaN, infinities, overflowing and
    underflowing arguments and subnormals; 1 Mi elements (several threads, results stored in place: a streamed
    output goes through a buffer)."""
    if dtype not in device.dtypes:
        pytest.skip(f"{device.id} has no {dtype}")
    n = (1 << 20) + 3
    specials = np.array([np.nan, np.inf, -np.inf, 100.0, -100.0, 1e-40, -0.0, 3e38, 1e300], dtype=np.float64)
    for op, (arity, _kind) in sorted(OPS.items()):
        if arity != 1 or not _takes(op, dtype) or _ref_types(op, dtype, device)[1] != dtype:
            continue
        host = _host(rng, op, dtype, (n,))
        with np.errstate(over="ignore"):
            at = rng.choice(n, 64, replace=False)
            host[at] = specials[rng.integers(0, len(specials), 64)].astype(dtype)
        want = getattr(hetnn, op)(hetnn.asarray(host, device=device)).numpy()
        x = hetnn.asarray(host, device=device)
        got = getattr(hetnn, op)(x, out=x)
        assert got is x
        np.testing.assert_array_equal(x.numpy(), want, err_msg=f"{op} {dtype} on {device.id}")


def test_operators_and_in_place_forms(device, rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    y = rng.standard_normal(4).astype(np.float32)
    a, b = hetnn.asarray(x, device=device), hetnn.asarray(y, device=device)
    for got, ref in ((a + b, x + y), (a - b, x - y), (a * b, x * y), (a / b, x / y), (2 - a, 2 - x),
                     (1 / a, 1 / x), (a ** 2, x ** 2), (-a, -x), (+a, x), (abs(a), np.abs(x))):
        assert rel_err(got.numpy(), ref) < 1e-6
    for got, ref in ((a < b, x < y), (a >= 0, x >= 0), (a == a, x == x), (a != b, x != y)):
        np.testing.assert_array_equal(got.numpy(), ref)
    c = a.copy()
    before = c
    c += b
    assert c is before and rel_err(c.numpy(), x + y) < 1e-6
    i = hetnn.asarray(np.array([6, 3], np.int32), device=device)
    np.testing.assert_array_equal((i & 2).numpy(), [2, 2])
    np.testing.assert_array_equal((i << 1).numpy(), [12, 6])
    np.testing.assert_array_equal((~i).numpy(), [-7, -4])
    with pytest.raises(ValueError, match="out must have"):
        i += 0.5  # a float result cannot go into int32
    np.testing.assert_array_equal((a @ a.T).numpy(), hetnn.matmul(a, a.T).numpy())


def test_refusals_are_clear(device):
    a = hetnn.asarray(np.ones(3, np.float32), device=device)
    with pytest.raises(TypeError, match=r"numpy.ndarray in host memory.*hetnn.asarray"):
        a + np.ones(3)
    with pytest.raises(TypeError, match=r"numpy.ndarray in host memory"):
        np.ones(3) + a
    with pytest.raises(TypeError, match=r"numpy.ndarray in host memory"):
        np.add(a, np.ones(3))
    with pytest.raises(TypeError, match="NumPy cannot write into a hetnn.Array"):
        np.add.reduce(a, out=a)
    with pytest.raises(TypeError, match="hash"):
        hash(a)
    with pytest.raises(TypeError, match="ambiguous"):
        bool(a == a)
    with pytest.raises(ValueError, match=r"shapes \(3,\) and \(4,\) cannot be broadcast"):
        a + hetnn.asarray(np.ones(4, np.float32), device=device)
    with pytest.raises(TypeError, match="not defined for bool"):
        (a > 0) + (a > 0)
    with pytest.raises(TypeError, match="needs integer or bool"):
        a & a
    with pytest.raises(TypeError, match="x must be a hetnn.Array"):
        hetnn.exp(np.ones(3))
    with pytest.raises(ValueError, match=r"out must have shape \(3,\) and dtype float32, got \(1,\)"):
        hetnn.add(hetnn.asarray(np.ones(1, np.float32), device=device), a,
                  out=hetnn.asarray(np.ones(1, np.float32), device=device))
    others = [d for d in hetnn.devices() if d != device]
    if others:
        with pytest.raises(TypeError, match="different devices"):
            a + hetnn.asarray(np.ones(3, np.float32), device=others[0])


def test_numpy_ufuncs_on_arrays_run_on_the_device(device, rng):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    a = hetnn.asarray(x, device=device)
    for got, ref in ((np.add(a, a), x + x), (np.exp(a), np.exp(x)), (np.power(a, 2), x ** 2),
                     (np.multiply(2.0, a), 2 * x), (np.arctan2(a, a), np.arctan2(x, x))):
        assert isinstance(got, hetnn.Array) and got.device == device
        assert rel_err(got.numpy(), ref) < 1e-6
    np.testing.assert_array_equal(np.greater(a, 0).numpy(), x > 0)
    out = hetnn.empty((4, 3), "float32", device=device)
    assert np.negative(a, out=out) is out and np.array_equal(out.numpy(), -x)
    # what hetnn has no op for yet (a reduction) NumPy computes on the host: in place on the CPU device's memory,
    # through the implicit copy elsewhere (set_implicit_host_copies)
    assert float(np.sum(a)) == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-5, abs=1e-5)


def test_every_op_is_exported_and_typed():
    stub = (Path(hetnn.__file__).parent / "_elementwise.pyi").read_text()
    for op in OPS:
        assert callable(getattr(hetnn, op)) and op in hetnn.__all__
        assert re.search(rf"^def {op}\(", stub, re.M), f"{op} has no signature in _elementwise.pyi"


def test_where_on_every_dtype_broadcasts_and_promotes(device, rng):
    for dtype in FLOATS + INTS + ("bool",):
        if dtype not in device.dtypes:
            continue
        for sc, s1, s2 in [((3, 4), (3, 4), (3, 4)), ((3, 1), (1, 4), (4,)), ((), (5,), ()), ((0, 2), (2,), (1, 2)),
                           ((2, 3, 5), (3, 1), (2, 1, 5))]:
            c = rng.random(sc) < 0.5
            x1, x2 = _host(rng, "add", dtype, s1), _host(rng, "add", dtype, s2)
            a1, a2 = _upload(device, x1, dtype), _upload(device, x2, dtype)
            got = hetnn.where(hetnn.asarray(c, device=device), a1, a2)
            assert got.device == device and got.dtype.name == dtype
            ref = np.where(c, a1.numpy(), a2.numpy())
            np.testing.assert_array_equal(got.numpy().astype(np.float64) if dtype in FLOATS else got.numpy(),
                                          ref.astype(np.float64) if dtype in FLOATS else ref,
                                          err_msg=f"{dtype} {sc} {s1} {s2}")


def test_where_with_numbers_non_bool_conditions_and_nan(device):
    x = hetnn.asarray(np.array([-1.5, 0.0, np.nan, 2.0], np.float32), device=device)
    np.testing.assert_array_equal(hetnn.where(x > 0, x, 0.0).numpy(), np.array([0, 0, 0, 2], np.float32))
    np.testing.assert_array_equal(hetnn.where(x > 0, 1, x).numpy(), np.array([-1.5, 0, np.nan, 1], np.float32))
    i = hetnn.asarray(np.array([0, 3, -2], np.int32), device=device)
    got = hetnn.where(i, i, 7)  # an int condition is read as != 0
    assert got.dtype.name == "int32"
    np.testing.assert_array_equal(got.numpy(), np.array([7, 3, -2], np.int32))
    f = hetnn.where(i > 0, i, 0.5)  # a float with an int array: the default real type
    assert f.dtype.name == ("float64" if "float64" in device.dtypes else "float32")
    np.testing.assert_array_equal(f.numpy(), [0.5, 3, 0.5])
    out = hetnn.zeros((3,), "int32", device=device)
    assert hetnn.where(i > 0, i, -i, out=out) is out
    np.testing.assert_array_equal(out.numpy(), [0, 3, 2])


def test_where_refusals(device):
    x = hetnn.zeros((2, 3), "float32", device=device)
    with pytest.raises(ValueError, match=r"hetnn.where: operands of shapes \(2, 3\) and \(4,\)"):
        hetnn.where(x > 0, x, hetnn.zeros((4,), "float32", device=device))
    with pytest.raises(TypeError, match="host memory"):
        hetnn.where(x > 0, x, np.zeros(3))
    with pytest.raises(TypeError, match="x1 or x2 must be a hetnn Array"):
        hetnn.where(x > 0, 1, 2)
    with pytest.raises(ValueError, match="out of range for uint8"):
        hetnn.where(x > 0, hetnn.zeros((2, 3), "uint8", device=device), 300)
    with pytest.raises(TypeError, match="condition must be a hetnn.Array|x must be a hetnn.Array"):
        hetnn.where(np.ones(3, bool), x, x)


def test_out_is_returned_itself(device):
    x = hetnn.asarray(np.array([1.0, 2.0], np.float32), device=device)
    o = hetnn.empty((2,), "float32", device=device)
    assert hetnn.exp(x, out=o) is o and hetnn.add(x, x, out=o) is o and hetnn.add(1.0, x, out=o) is o
    np.testing.assert_allclose(o.numpy(), [2.0, 3.0])


def test_clip_matches_numpy(device, rng):
    x = rng.standard_normal((5, 7)).astype(np.float32)
    x[0, 0] = np.nan
    a = hetnn.asarray(x, device=device)
    lo = rng.uniform(-1, 0, (1, 7)).astype(np.float32)
    for kw, want in (({"min": -0.5, "max": 0.5}, np.clip(x, -0.5, 0.5)), ({"max": 0.1}, np.minimum(x, 0.1)),
                     ({"min": hetnn.asarray(lo, device=device)}, np.maximum(x, lo)), ({}, x)):
        got = hetnn.clip(a, **kw)
        assert got.dtype == np.float32 and got is not a
        np.testing.assert_array_equal(got.numpy(), want)
    i = hetnn.asarray(np.arange(-5, 5, dtype=np.int32), device=device)
    got = hetnn.clip(i, -2, 3)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.numpy(), np.clip(np.arange(-5, 5), -2, 3))
    with pytest.raises(TypeError, match="clip: min"):
        hetnn.clip(a, min="0")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_sign_of_either_zero_is_plus_zero_and_nan_stays(device, dtype):
    # NumPy 2 and the Array API: sign(-0.0) is +0.0 (hetnn kept the -0.0)
    if dtype not in device.dtypes:
        pytest.skip(f"{device.id} has no {dtype}")
    x = hetnn.asarray(np.array([-0.0, 0.0, np.nan, -2.5, 3.0]), device=device).astype(dtype)
    got = hetnn.sign(x).astype("float64").numpy()
    assert not np.signbit(got[:2]).any() and got[0] == 0 and np.isnan(got[2]) and list(got[3:]) == [-1.0, 1.0]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("n", [5, 70001])  # a small call and one split over the threads (and PoCL's fixed-op path)
def test_negative_flips_the_sign_of_zeros_and_nans(device, dtype, n):
    """negative(+0.0) is -0.0 in NumPy and the Array API (IEEE negation): hetnn computed 0 - x, +0.0 for either
    zero, so `-a` differed from NumPy's in the sign of every zero."""
    if dtype not in device.dtypes:
        pytest.skip(f"{device.id} has no {dtype}")
    host = np.resize(np.array([0.0, -0.0, np.nan, -np.nan, -2.5, np.inf]), n)
    x = hetnn.asarray(host, device=device).astype(dtype)
    for got in (hetnn.negative(x), -x):
        g = got.astype("float64").numpy()
        np.testing.assert_array_equal(np.signbit(g), np.signbit(np.negative(host)))
        np.testing.assert_array_equal(g, np.negative(host))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rounding_functions_give_numpy_s_bits(device, dtype):
    """floor, ceil, trunc and round (ties to even) are exact: the same bits as NumPy's, signed zeros and
    infinities included, on a call long enough for the vector-width loops and their ragged end."""
    if dtype not in device.dtypes:
        pytest.skip(f"{device.id} has no {dtype}")
    x = np.resize(np.array([0.5, 1.5, 2.5, -0.5, -1.5, -0.0, 0.0, -2.7, 2.7, np.inf, -np.inf, 1e30, -1e-30, 4.5e15],
                           dtype=dtype), 70001)
    a = hetnn.asarray(x, device=device)
    for op, ref in (("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc), ("round", np.round)):
        got = getattr(hetnn, op)(a).numpy()
        np.testing.assert_array_equal(got.view(f"u{x.itemsize}"), ref(x).view(f"u{x.itemsize}"), err_msg=op)


def _ulps(got, want):
    """Distance in float32 units in the last place (the bit patterns' order; both finite or equal specials)."""
    def order(a):
        i = a.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(order(got) - order(want))


def test_float32_exp_is_within_an_ulp_over_its_whole_range(device):
    """The CPU device's float32 exp is its own vectorised polynomial (libm's does not vectorise): within 1 ulp of
    the correctly rounded value from overflow down through the subnormal results to 0, NaN kept, infinities
    exact. CPU-type OpenCL devices compute the same form (PoCL's exp ran an element at a time), also within 1 ulp,
    in the shared program and in the one built for the op (a call of 2^20 elements or more); GPUs the OpenCL C
    exp, within its 3 ulp."""
    rng = np.random.default_rng()
    x = np.concatenate([np.linspace(-105.0, 90.0, 400_001, dtype=np.float32),
                        rng.uniform(-105, 90, 100_000).astype(np.float32),
                        rng.uniform(-1e-3, 1e-3, 10_000).astype(np.float32),
                        np.float32([0.0, -0.0, 88.72283, 88.7229, -87.33655, -103.27893, -103.972, -104.0, 1e30,
                                    -1e30, np.inf, -np.inf])])
    bound = 1 if device.kind == "cpu" or device.type == "cpu" else 3
    for x in (x, np.tile(x, 3)):
        want = np.exp(x.astype(np.float64)).astype(np.float32)
        out = hetnn.empty(x.shape, "float32", device=device)
        got = hetnn.exp(hetnn.asarray(x, device=device), out=out).numpy()
        special = ~np.isfinite(want) | (want == 0)
        np.testing.assert_array_equal(got[special], want[special])
        worst = int(_ulps(got[~special], want[~special]).max())
        assert worst <= bound, f"exp of {x.size} elements off by {worst} ulp"
    nan = np.float32([np.nan, -np.nan])
    assert np.isnan(hetnn.exp(hetnn.asarray(nan, device=device)).numpy()).all()


# float32 functions: the CPU device's own vectorised forms (vec_functions.h) and, for blocks holding anything
# outside their domain, libm's calls; OpenCL devices: the OpenCL C built-ins, within the spec's bounds (OpenCL 1.2,
# 7.4: single precision, in ulp)
F32_FUNCTIONS = {"tanh": 5, "sinh": 4, "cosh": 4, "expm1": 3, "log": 3, "log2": 3, "log10": 3, "log1p": 2,
                 "atanh": 5, "asinh": 4, "acosh": 4, "sin": 4, "cos": 4, "tan": 5, "atan": 5, "asin": 4, "acos": 4,
                 "pow": 16, "atan2": 6, "hypot": 4}
CL_CPU_FORMS = {"tanh", "sinh", "cosh", "expm1", "log", "log2", "log10", "log1p", "atanh", "asinh", "acosh",
                "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "hypot", "pow"}
F32_SPECIALS = np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 3.4028235e38, -3.4028235e38,
                           1.1754944e-38, -1.1754944e-38, 1e-45, -1e-45, 2.0, -2.0, 88.7, -88.7, 1e-8, 131072.0,
                           131073.0, -1e6, 1e30, 0.99999994, -0.99999994, 1.0000001, 2.0 ** 53])


def _f32_sweep(rng, n):
    """n float32 values spread over every binade of both signs (every k-th bit pattern from a random start, NaNs
    dropped), shuffled so that each block of the CPU device's loops holds a mix."""
    step = (1 << 32) // n
    bits = (np.arange(n, dtype=np.uint64) * step + int(rng.integers(step))).astype(np.uint32)
    x = bits.view(np.float32)
    return rng.permutation(x[~np.isnan(x)])


@pytest.mark.parametrize("op,dtype", [("tanh", "float32"), ("log", "float32"), ("sin", "float32"),
                                      ("cosh", "float64"), ("log", "float64"), ("expm1", "float64")])
def test_functions_in_place_with_specials_in_every_block(device, rng, op, dtype):
    """out= the input itself, with a NaN, an infinity or an argument beyond the forms' range in most blocks of 64
    (the CPU device: libm for those elements, its form for the rest of the block): the same values as into a fresh
    array, and those NumPy's (a block's libm results taken after the form had overwritten the input would be of
    the form's results)."""
    if dtype not in device.dtypes:
        pytest.skip(f"{device.id} has no {dtype}")
    x = rng.uniform(0.1, 3.0, 64 * 40 + 5).astype(dtype)
    specials = np.array([np.nan, np.inf, -np.inf, 1e30 if dtype == "float32" else 1e300, -5.0, 0.0], dtype)
    at = rng.choice(x.size, 30, replace=False)
    x[at] = rng.choice(specials, at.size)
    with np.errstate(all="ignore"):
        want = getattr(np, op)(x.astype(np.float64)).astype(dtype)
    fresh = getattr(hetnn, op)(hetnn.asarray(x, device=device)).numpy()
    a = hetnn.asarray(x, device=device)
    got = getattr(hetnn, op)(a, out=a).numpy()
    np.testing.assert_array_equal(got, fresh)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    np.testing.assert_allclose(got[finite], want[finite], rtol=4 * np.finfo(dtype).eps, atol=0)


@pytest.mark.parametrize("op", sorted(F32_FUNCTIONS))
def test_float32_functions_are_within_their_ulp_bound_over_the_whole_range(device, op):
    """Every float32 function over values from every binade (two operands: y over every binade and moderate): the
    CPU device within 1 ulp of the correctly rounded value (its forms compute in double and round once), and so
    CPU-type OpenCL devices for the exp and log family (the same forms, cpu_math.cl), other OpenCL devices and
    functions within the OpenCL C bound; NaN, infinities and zeros (their signs too) exactly NumPy's, mixed into the
    sweep and in a call of their own with the domains' edges; the edges with finite results in a call of their own
    (log1p and acosh of 2^53 were 262144 and 524288 ulp off: a rounding "correction" of 1). tanh computes in float
    lanes, and so does atan: the test below checks them over the whole range."""
    rng = np.random.default_rng()
    binary = OPS[op][0] == 2
    fn = getattr(np, NP_NAME.get(op, op))
    x = _f32_sweep(rng, LARGE + LARGE // 64)  # NaNs dropped, still beyond LARGE: CPU-type OpenCL's fixed-op build
    if op in ("atanh", "asin", "acos"):  # most of the sweep is outside the domain: the inside sampled as densely
        x = rng.permutation(np.concatenate([x, rng.uniform(-1, 1, 100_000).astype(np.float32)]))
    args = [x]
    if binary:
        y = np.where(rng.random(x.size) < 0.5, rng.uniform(-8, 8, x.size), _f32_sweep(rng, 2 * x.size)[:x.size])
        args.append(y.astype(np.float32))
    # the CPU device, and CPU-type OpenCL devices for the functions they compute as it does (cpu_math.cl)
    cpu = device.kind == "cpu" or (device.type == "cpu" and op in CL_CPU_FORMS and "float64" in device.dtypes)
    bound = 1 if cpu else F32_FUNCTIONS[op]
    tiny = np.finfo(np.float32).tiny  # OpenCL: zeros' signs and subnormal results (may be flushed) not compared
    n = F32_SPECIALS.size
    edges = [np.tile(F32_SPECIALS, n)] + ([np.repeat(F32_SPECIALS, n)] if binary else [])
    with np.errstate(all="ignore"):  # and the edges with finite results alone: on the CPU device its own forms' blocks
        inside = np.isfinite(fn(*edges))
    for a in (args, edges, [np.tile(v[inside], 9) for v in edges]):
        with np.errstate(all="ignore"):
            want = fn(*(v.astype(np.float64) for v in a)).astype(np.float32)
        out = hetnn.full(want.shape, np.nan, "float32", device=device)  # poisoned: every element written
        got = getattr(hetnn, op)(*(hetnn.asarray(v, device=device) for v in a), out=out).numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{op}: NaN")
        exact = np.isinf(want) | (want == 0) if cpu else np.isinf(want)  # CPU: the same bits (zeros' signs)
        np.testing.assert_array_equal(got[exact].view(np.uint32), want[exact].view(np.uint32), err_msg=op)
        special = exact | np.isnan(want) | (want == 0) | (not cpu and np.abs(want) < tiny)
        worst = _ulps(got[~special], want[~special])
        assert worst.max(initial=0) <= bound, \
            f"{op} off by {worst.max()} ulp at {[v[~special][worst.argmax()] for v in a]}"


_LEVEL_FLAGS = {"x86-64-v4": {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"},
                "x86-64-v3": {"avx2", "fma", "bmi2", "f16c"}, "x86-64": set()}


def _build_float_lanes_check(tmp_path, *flags):
    """scripts/check_float_lanes.cpp built with g++ and `flags`; (executable, None), or (None, g++'s result) when
    the build failed. Skips without g++ on x86-64."""
    import platform
    import shutil
    import subprocess
    if platform.machine() not in ("x86_64", "AMD64") or not shutil.which("g++"):
        pytest.skip("needs g++ on x86-64")
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    exe = str(tmp_path / "check")
    b = subprocess.run(["g++", "-std=c++17", "-fopenmp", "-Wno-psabi", *flags, "-I" + os.path.join(root, "cpp", "src"),
                        os.path.join(root, "scripts", "check_float_lanes.cpp"), "-o", exe],
                       capture_output=True, text=True, timeout=300)
    return (exe, None) if b.returncode == 0 else (None, b)


@pytest.mark.parametrize("level", sorted(_LEVEL_FLAGS))
def test_float_lane_functions_are_within_an_ulp_at_every_clone_level(level, tmp_path):
    """The CPU device's float32 tanh, atan, cosh, sinh and expm1 compute in float lanes (vec_functions.h tanh16,
    ...), where rounding errors are not hidden by a double evaluation: scripts/check_float_lanes.cpp built for each
    x86-64 level the loops are cloned for (with and without fused multiply-adds), every 61st block of 16 float32 of
    each range against the function in double rounded, the negatives as the function's symmetry says (expm1: both
    signs against the reference), infinities, zeros and the overflow edge: none more than 1 ulp away."""
    import subprocess
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    if not _LEVEL_FLAGS[level] <= flags:
        pytest.skip(f"this processor does not run {level}")
    exe, failed = _build_float_lanes_check(tmp_path, "-O2", f"-march={level}")
    assert exe, failed.stderr
    for fn in ("tanh", "atan", "cosh", "sinh", "expm1"):
        r = subprocess.run([exe, fn, "61"], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        assert " 0 by more than 1 ulp; 0 negatives not as the function's symmetry says; 0 specials off" in r.stdout, \
            r.stdout


def test_vector_forms_do_nothing_undefined_outside_their_domains(tmp_path):
    """A block of 64 elements holding one NaN or overflowing input still runs the vector form on every lane (libm's
    results replace those lanes after), so the forms must not overflow signed integers there: float64 exp built its
    power of two from such a lane's garbage exponent, a signed overflow GCC's UBSan reports (the Python suite under
    ASan+UBSan found it). scripts/check_float_lanes.cpp `edges` runs every form on such lanes, built with
    -fsanitize=undefined."""
    import subprocess
    exe, failed = _build_float_lanes_check(tmp_path, "-O1", "-fsanitize=undefined", "-fno-sanitize-recover=all")
    if not exe and "ubsan" in failed.stderr:
        pytest.skip("g++ cannot link -fsanitize=undefined here: " + failed.stderr[-200:])
    assert exe, failed.stderr
    r = subprocess.run([exe, "edges"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "runtime error" not in r.stderr, r.stdout + r.stderr


@pytest.mark.parametrize("op", ["exp", "expm1", "log", "log1p", "log2", "cosh"])
def test_float64_exp_and_log_are_within_an_ulp(device, op):
    """float64 exp, expm1, log, log1p, log2 and cosh: the CPU device's own vectorised forms (vec_functions.h,
    libm's calls beyond their range) within 1 ulp of long double's value rounded, and so CPU-type OpenCL devices
    (exp, expm1, log, log1p: the same forms in cpu_math.cl, subnormals through them; log2, cosh: PoCL's own); other
    OpenCL devices within the OpenCL C bound (log1p 2 ulp, the others 3); the specials (zeros, infinities, NaN,
    subnormals, the forms' range edges) NumPy's exactly. Beyond 2^20 elements: CPU-type OpenCL's fixed-op build."""
    if "float64" not in device.dtypes:
        pytest.skip(f"{device.id} has no float64")
    if np.finfo(np.longdouble).nmant < 60:
        pytest.skip("no extended long double for the reference")
    rng = np.random.default_rng()
    if op.startswith("exp") or op == "cosh":
        x = np.concatenate([rng.uniform(-745, 710, 200_000), rng.uniform(-1, 1, 100_000), rng.uniform(-4, 4, 50_000),
                            rng.uniform(-1e-6, 1e-6, 10_000)])
    else:
        x = np.concatenate([np.exp2(rng.uniform(-1074, 1024, 200_000)), rng.uniform(0.5, 2, 100_000)])
        if op == "log1p":  # and (-1, 0): near -1 and near 0
            x = np.concatenate([x - 1, x[:100_000], -np.exp2(rng.uniform(-1074, -1e-9, 100_000))])
            x = x[x > -1]
    x = rng.permutation(np.tile(x, -(-LARGE // x.size)))
    with np.errstate(all="ignore"):
        want = getattr(np, op)(x.astype(np.longdouble)).astype(np.float64)
    got = getattr(hetnn, op)(hetnn.asarray(x, device=device),
                             out=hetnn.full(x.shape, np.nan, "float64", device=device)).numpy()
    cpu = device.kind == "cpu" or device.type == "cpu"  # CPU-type OpenCL: the CPU device's forms (cpu_math.cl)
    # the CPU device: infinities and zeros exactly, subnormal results within the ulp; OpenCL: subnormals not compared
    finite = np.isfinite(want) & (want != 0) & (cpu | (np.abs(want) >= np.finfo(np.float64).tiny))
    special = np.isinf(want) | (want == 0) if cpu else np.isinf(want)
    np.testing.assert_array_equal(got[special], want[special])

    def ulps(a, b):
        def order(v):
            i = v.view(np.int64)
            return np.where(i < 0, -(i & 0x7FFFFFFFFFFFFFFF), i)
        return np.abs(order(a) - order(b))
    worst = ulps(got[finite], want[finite])
    bound = 1 if cpu else 2 if op == "log1p" else 3
    assert worst.max() <= bound, f"{op} off by {worst.max()} ulp at {x[finite][worst.argmax()]!r}"
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 5e-324, 2.2250738585072014e-308, 1e308,
                         -707.0, -707.0000001, 709.0, 709.0000001, 709.78, 710.0, -745.1, -746.0, 2.0 ** 52,
                         2.0 ** 53, -0.9999999999999999, 1.7976931348623157e308])
    with np.errstate(all="ignore"):
        swant = getattr(np, op)(specials)
    sgot = getattr(hetnn, op)(hetnn.asarray(specials, device=device)).numpy()
    np.testing.assert_array_equal(np.isnan(sgot), np.isnan(swant))
    exact = np.isinf(swant) | (swant == 0) if cpu else np.isinf(swant)
    np.testing.assert_array_equal(sgot[exact], swant[exact])
    close = np.isfinite(swant) & (swant != 0) & (cpu | (np.abs(swant) >= np.finfo(np.float64).tiny))
    assert ulps(sgot[close], swant[close]).max(initial=0) <= bound


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int8"])
def test_a_scalar_exponent_of_2_or_minus_1_gives_pows_results(device, dtype):
    """x ** 2 runs as square and a float x ** -1 as reciprocal (as NumPy's operator; pow's logarithm and exponential
    took 4.5 ms for 4 Mi float32 against 0.54 and 0.97): the results are pow's, the same bits as NumPy's on the
    CPU device (integers wrapping), over a strided view and into out=, specials included."""
    if dtype not in device.dtypes:
        pytest.skip(f"{device.id} has no {dtype}")
    rng = np.random.default_rng()
    floating = dtype.startswith("float")
    if floating:
        with np.errstate(over="ignore"):  # float16: the large ones become infinities
            x = np.concatenate([rng.standard_normal(5000) * 10.0 ** rng.integers(-30, 30, 5000),
                                [0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e-30]]).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, 5000, endpoint=True).astype(dtype)
    a = hetnn.asarray(x, device=device)
    exact = device.kind == "cpu"
    for e in ((2, -1) if floating else (2,)):
        with np.errstate(all="ignore"):
            want = np.power(x, np.array(e, dtype)) if floating else (x * x).astype(dtype)
        for got in ((a ** e).numpy(), hetnn.pow(a[::2], e).numpy(),
                    hetnn.pow(a, e, out=hetnn.full(x.shape, 7, dtype, device=device)).numpy()):
            w = want[::2] if got.shape != want.shape else want
            nan = np.isnan(w) if floating else np.zeros(w.shape, bool)
            np.testing.assert_array_equal(np.isnan(got) if floating else nan, nan)  # NaN's payload not compared
            got, w = got[~nan], w[~nan]
            if exact or e == 2:
                np.testing.assert_array_equal(got.view(f"u{x.itemsize}"), w.view(f"u{x.itemsize}"), err_msg=str(e))
            else:  # OpenCL's division: within its bound
                np.testing.assert_allclose(got, w, rtol=3 * np.finfo(dtype).eps, err_msg=str(e))


@pytest.mark.parametrize("dtype", INTS)
def test_integer_floor_divide_and_remainder_over_the_whole_range(device, dtype):
    """Integer // and % against NumPy over the type's whole range and small divisors (the CPU device takes 8- and
    32-bit ones through double at the vector width), with hetnn's rules: a zero divisor gives 0, MIN // -1 wraps
    to MIN and MIN % -1 is 0; a length with a ragged end, poisoned outputs."""
    if dtype not in device.dtypes:
        pytest.skip(f"{device.id} has no {dtype}")
    rng = np.random.default_rng()
    info = np.iinfo(dtype)
    n = 20_011
    x = rng.integers(info.min, info.max, n, endpoint=True).astype(dtype)
    y = np.where(rng.random(n) < 0.5, rng.integers(max(info.min, -5), 6, n),
                 rng.integers(info.min, info.max, n, endpoint=True)).astype(dtype)
    x[:4], y[:4] = [info.min, info.max, info.min, 0], [1, -1 if info.min else 1, 0, 0]
    if info.min:
        x[4], y[4] = info.min, -1
    safe = np.where(y == 0, 1, y).astype(dtype)
    with np.errstate(all="ignore"):
        want = {"floor_divide": np.where(y == 0, 0, np.floor_divide(x, safe)).astype(dtype),
                "remainder": np.where(y == 0, 0, np.remainder(x, safe)).astype(dtype)}
    a, b = hetnn.asarray(x, device=device), hetnn.asarray(y, device=device)
    for op, w in want.items():
        got = getattr(hetnn, op)(a, b, out=hetnn.full(x.shape, 7, dtype, device=device)).numpy()
        np.testing.assert_array_equal(got, w, err_msg=op)


def test_a_repeated_mid_size_op_gets_its_op_built_in_on_cpu_type_devices(opencl_device):
    """CPU-type OpenCL devices build an element-wise op into its program from 2^20 elements, and from 2^14 once the
    same op, types and arrangement have been called three times (PoCL ran the shared program's run-time choice of
    the op 2-5x slower at 64 KiB-1 MiB). In a fresh process: the shared program at the first call, the op's own at
    the fourth, none after; every result NumPy's."""
    if opencl_device.type != "cpu":
        pytest.skip("GPUs run the shared program at every size")
    import subprocess
    import sys
    code = f"""
import numpy as np, hetnn
d = hetnn.device({opencl_device.id!r})
x = np.random.default_rng(0).standard_normal(1 << 14).astype(np.float32)
a, out = hetnn.asarray(x, device=d), hetnn.empty((1 << 14,), "float32", device=d)
hetnn.synchronize(d)
def programs():
    s = d._dev.first_use_stats()
    return s["built"] + s["disk_hits"]
seen = [programs()]
for _ in range(6):
    out[...] = np.nan
    hetnn.log1p(hetnn.abs(a), out=out)
    np.testing.assert_allclose(out.numpy(), np.log1p(np.abs(x.astype(np.float64))), rtol=2e-7, atol=0)
    seen.append(programs())
print([s - seen[0] for s in seen])
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    # abs's shared program and log1p's at the first call; log1p's own at the fourth (abs reaches it too)
    import ast
    counts = ast.literal_eval(r.stdout.strip().splitlines()[-1])
    assert counts[1] >= 1 and counts[3] == counts[1] and counts[4] > counts[3] and counts[6] == counts[5], counts
