"""Every op, registered once: how to call it on a device, its float64 NumPy reference, fresh random inputs, the
dtypes it takes and its bad calls. tests/test_op_table.py runs every row on every device and fails when an op of the
public API or of the backend interface (HETNN_BACKEND_OPS in cpp/src/core/ops.h) has no row.

A row's `run(dev, inputs)` returns NumPy results (a tuple); `reference(inputs)` the same in float64; `tol` the
allowed norm-wise relative error per dtype; `bad` lists (label, call(dev), exception types, message regex). The
property tests (tests/test_properties.py), the bad-input sweep (tests/test_bad_inputs.py) and the C++ ops driver
(cpp/tests/ops_driver.cpp, its kOps registry) iterate these rows."""
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np

import hetnn
from hetnn import _core

import max_pool_reference as pool_ref
import sort_reference as sort_ref

F = ("float32", "float64")


@dataclass
class Op:
    name: str
    run: Callable[[Any, Tuple], Tuple]
    reference: Callable[[Tuple], Tuple]
    inputs: Callable[[np.random.Generator, str], Tuple]
    dtypes: Sequence[str] = F
    tol: Dict[str, float] = field(default_factory=lambda: {"float32": 2e-5, "float64": 1e-12})
    bad: List[Tuple[str, Callable[[Any], Any], Any, str]] = field(default_factory=list)
    backend: Sequence[str] = ()  # the HETNN_BACKEND_OPS entries this row exercises


def _up(dev, x):
    return _core.Array.from_numpy(dev._dev, np.ascontiguousarray(x))


def _acts64(x, act):
    return {"relu": np.maximum(x, 0), "sigmoid": 1 / (1 + np.exp(-x)), "tanh": np.tanh(x)}[act]


def _softmax64(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _shape(rng, rows=(1, 40), cols=(1, 33)):
    return int(rng.integers(*rows)), int(rng.integers(*cols))


# ---- matmul --------------------------------------------------------------------------------------------------------
def _mm_inputs(rng, dtype):
    m, k, n = (int(v) for v in rng.integers(1, 70, 3))
    ta, tb = bool(rng.integers(2)), bool(rng.integers(2))
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    return a, b, ta, tb, rng.standard_normal(n).astype(dtype), str(rng.choice(["", "relu", "tanh"]))


def _mm_run(dev, inp):
    a, b, ta, tb, bias, act = inp
    return (hetnn.matmul(a, b, transpose_a=ta, transpose_b=tb, bias=bias, activation=act or None, device=dev),)


def _mm_ref(inp):
    a, b, ta, tb, bias, act = inp
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    y = (a64.T if ta else a64) @ (b64.T if tb else b64) + bias.astype(np.float64)
    return (_acts64(y, act) if act else y,)


# ---- element-wise (every op in detail: tests/test_elementwise.py) ----------------------------------------------
_EW_SMOOTH = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum,
              "minimum": np.minimum, "hypot": np.hypot, "atan2": np.arctan2, "exp": np.exp, "tanh": np.tanh,
              "sin": np.sin, "negative": np.negative, "abs": np.abs, "square": np.square}


def _ew_inputs(rng, dtype):
    op = str(rng.choice(sorted(_EW_SMOOTH) + ["where"]))
    a = rng.standard_normal(_shape(rng)).astype(dtype)
    b = rng.standard_normal(a.shape[1:] if rng.integers(2) else a.shape).astype(dtype)  # broadcast or not
    return op, a, b


def _ew_run(dev, inp):
    op, a, b = inp
    if op == "where":
        x = hetnn.asarray(a, device=dev)
        return (hetnn.where(x > 0, x, hetnn.asarray(b, device=dev)).numpy(),)
    fn = getattr(hetnn, op)
    args = [hetnn.asarray(a, device=dev)] + ([hetnn.asarray(b, device=dev)] if _core_arity(op) == 2 else [])
    return (fn(*args).numpy(),)


def _core_arity(op):
    return {n: a for n, a, _ in _core.elementwise_ops()}[op]


def _ew_ref(inp):
    op, a, b = inp
    if op == "where":
        return (np.where(a > 0, a, b).astype(np.float64),)
    args = [a.astype(np.float64)] + ([b.astype(np.float64)] if _core_arity(op) == 2 else [])
    return (_EW_SMOOTH[op](*args),)


def _ew_arr(dev, shape, dtype="float32"):
    return hetnn.asarray(np.ones(shape, dtype), device=dev)


EW_BAD = [
    ("shapes", lambda d: hetnn.add(_ew_arr(d, (2, 3)), _ew_arr(d, (4,))), ValueError, r"\(2, 3\) and \(4,\)"),
    ("bool-arith", lambda d: hetnn.add(_ew_arr(d, 2, "bool"), _ew_arr(d, 2, "bool")), TypeError, "bool"),
    ("float-bitwise", lambda d: hetnn.bitwise_and(_ew_arr(d, 2), _ew_arr(d, 2)), TypeError, "integer or bool"),
    ("numpy-operand", lambda d: hetnn.add(_ew_arr(d, 2), np.ones(2)), TypeError, "host memory"),
    ("out-shape", lambda d: hetnn.exp(_ew_arr(d, 2), out=_ew_arr(d, 3)), ValueError, "out must have shape"),
    ("int-scalar-range", lambda d: hetnn.add(_ew_arr(d, 2, "uint8"), 256), ValueError, "out of range for uint8"),
]


# ---- reductions (every one in detail: tests/test_reduction.py) -------------------------------------------------
_RED = ("sum", "max", "argmax", "mean", "var", "cumulative_sum", "cumulative_prod")


def _red_inputs(rng, dtype):
    op = str(rng.choice(_RED))
    # positive values: a sum that cancels is checked against the magnitudes it adds (tests/test_reduction.py), not
    # against its small result, which this row's norm-wise tolerance does
    x = rng.uniform(0.5, 1.5, (int(rng.integers(1, 9)), *_shape(rng))).astype(dtype)
    along = op in ("argmax", "cumulative_sum", "cumulative_prod")
    axis = int(rng.integers(-3, 3)) if along or rng.integers(2) else None
    return op, x, axis


def _red_run(dev, inp):
    op, x, axis = inp
    return (getattr(hetnn, op)(hetnn.asarray(x, device=dev), axis=axis).numpy(),)


def _red_ref(inp):
    op, x, axis = inp
    x64 = x.astype(np.float64)
    return ({"cumulative_sum": np.cumsum, "cumulative_prod": np.cumprod}.get(op, getattr(np, op))(x64, axis=axis),)


RED_BAD = [
    ("axis-range", lambda d: hetnn.sum(_ew_arr(d, (2, 3)), axis=2), ValueError, "axis 2 is out of bounds"),
    ("axis-twice", lambda d: hetnn.sum(_ew_arr(d, (2, 3)), axis=(0, -2)), ValueError, "given twice"),
    ("axis-type", lambda d: hetnn.sum(_ew_arr(d, (2, 3)), axis="0"), TypeError, "axis must be None"),
    ("empty-max", lambda d: hetnn.max(_ew_arr(d, (0, 3)), axis=0), ValueError, "zero-size reduction"),
    ("scan-axis", lambda d: hetnn.cumulative_sum(_ew_arr(d, (2, 3))), ValueError, "axis is required"),
]


# ---- sorting (in detail: tests/test_sorting.py) -------------------------------------------------------------------
def _sort_inputs(rng, dtype):
    shape = tuple(int(v) for v in rng.integers(1, 9, int(rng.integers(1, 4))))
    x = (int_image(rng, shape, dtype) if dtype in INTS else
         rng.integers(-4, 4, shape).astype(dtype))  # duplicates: stability shows
    return x, int(rng.integers(-len(shape), len(shape))), bool(rng.integers(2))


def _sort_run(op):
    return lambda dev, inp: (getattr(hetnn, op)(hetnn.asarray(inp[0], device=dev), axis=inp[1],
                                                descending=inp[2]).numpy(),)


def _sort_ref(op):
    return lambda inp: (getattr(sort_ref, op)(*inp),)


def _search_inputs(rng, dtype):
    x1 = np.sort(int_image(rng, (int(rng.integers(0, 40)),), dtype) if dtype in INTS else
                 rng.integers(-4, 4, int(rng.integers(0, 40))).astype(dtype))
    x2 = (int_image(rng, (int(rng.integers(1, 30)),), dtype) if dtype in INTS else
          rng.integers(-5, 5, int(rng.integers(1, 30))).astype(dtype))
    return x1, x2, str(rng.choice(["left", "right"]))


def _search_run(dev, inp):
    x1, x2, side = inp
    return (hetnn.searchsorted(hetnn.asarray(x1, device=dev), hetnn.asarray(x2, device=dev), side=side).numpy(),)


def _search_ref(inp):
    x1, x2, side = inp
    return (np.searchsorted(x1, x2, side=side),)


# ---- tensordot and boolean masks (built in the front from the core's ops) -------------------------------------------
def _tdot_inputs(rng, dtype):
    n = int(rng.integers(0, 3))
    free_a = tuple(int(v) for v in rng.integers(0, 5, int(rng.integers(0, 3))))
    free_b = tuple(int(v) for v in rng.integers(0, 5, int(rng.integers(0, 3))))
    summed = tuple(int(v) for v in rng.integers(0, 6, n))
    make = (lambda s: rng.integers(-9, 9, s).astype(dtype)) if dtype in INTS else \
        (lambda s: rng.standard_normal(s).astype(dtype))
    return make(free_a + summed), make(summed + free_b), n


def _tdot_run(dev, inp):
    a, b, n = inp
    return (hetnn.tensordot(hetnn.asarray(a, device=dev), hetnn.asarray(b, device=dev), axes=n).numpy(),)


def _tdot_ref(inp):
    a, b, n = inp
    if a.dtype.kind in "iu":
        return (np.tensordot(a, b, axes=n),)
    return (np.tensordot(a.astype(np.float64), b.astype(np.float64), axes=n),)


def _mms_inputs(rng, dtype):
    """matmul's stacked forms (the Array API's): a vector or a stack of matrices each side (1-4 dimensions), the
    stacks broadcast against each other (extents 0-3, some 1), K from 0; integers wrap as NumPy's."""
    m, k, n = (int(v) for v in rng.integers(0, 6, 3))
    nd_a, nd_b = (int(v) for v in rng.integers(1, 5, 2))
    stack = tuple(int(v) for v in rng.integers(0, 4, max(nd_a, nd_b, 2) - 2))

    def stack_of(nd):
        return tuple(1 if rng.random() < 0.3 else e for e in stack[len(stack) - (nd - 2):]) if nd > 2 else ()

    sa = (k,) if nd_a == 1 else stack_of(nd_a) + (m, k)
    sb = (k,) if nd_b == 1 else stack_of(nd_b) + (k, n)
    make = (lambda s: rng.integers(-9, 10, s).astype(dtype)) if dtype in INTS else \
        (lambda s: rng.standard_normal(s).astype(dtype))
    return make(sa), make(sb)


def _mms_run(dev, inp):
    a, b = (hetnn.asarray(x, device=dev) for x in inp)
    return hetnn.matmul(a, b).numpy(), (a @ b).numpy()


def _mms_ref(inp):
    a, b = inp
    want = np.matmul(a, b) if a.dtype.kind in "iu" else np.matmul(a.astype(np.float64), b.astype(np.float64))
    return want, want


def _mask_inputs(rng, dtype):
    shape = tuple(int(v) for v in rng.integers(0, 5, int(rng.integers(1, 4))))
    x = int_image(rng, shape, dtype) if dtype in INTS else rng.standard_normal(shape).astype(dtype)
    k = int(rng.integers(0, len(shape) + 1))
    return x, rng.random(shape[:k]) < rng.random()


def _mask_run(dev, inp):
    x, m = inp
    a, mask = hetnn.asarray(x, device=dev), hetnn.asarray(m, device=dev)
    got = a[mask]
    a[mask] = got * 2  # one row per true element
    return got.numpy(), a.numpy()


def _mask_ref(inp):
    x, m = inp
    y = x.copy()
    y[m] = x[m] * 2
    return x[m], y


SORT_BAD = [
    ("0-d", lambda d: hetnn.sort(hetnn.asarray(np.float32(1), device=d)), ValueError, "0-d"),
    ("axis-range", lambda d: hetnn.sort(_ew_arr(d, (2, 3)), axis=2), ValueError, "axis 2 is out of bounds"),
    ("axis-type", lambda d: hetnn.argsort(_ew_arr(d, (2, 3)), axis=1.0), TypeError, "axis must be an int"),
    ("descending-type", lambda d: hetnn.sort(_ew_arr(d, (2, 3)), descending="yes"), TypeError, "descending"),
    ("numpy-input", lambda d: hetnn.sort(np.zeros(3)), TypeError, "hetnn.asarray"),
    ("nonzero-0-d", lambda d: hetnn.nonzero(hetnn.asarray(np.float32(1), device=d)), ValueError, "0-d"),
]


# ---- indexing and manipulation (copy_strided) ---------------------------------------------------------------------
_MANIP = ("getitem", "setitem", "permute_dims", "flip", "concat", "take")


def _manip_inputs(rng, dtype):
    op = str(rng.choice(_MANIP))
    x = rng.standard_normal(tuple(int(v) for v in rng.integers(1, 7, int(rng.integers(1, 5))))).astype(dtype)
    key = tuple(slice(int(rng.integers(-n, n)), None, int(rng.choice([-3, -2, -1, 1, 2, 3]))) for n in x.shape)
    perm = tuple(int(v) for v in rng.permutation(x.ndim))
    axis = int(rng.integers(-x.ndim, x.ndim))
    idx = rng.integers(-x.shape[axis], x.shape[axis], int(rng.integers(0, 9)))
    return op, x, key, perm, axis, idx


def _manip_run(dev, inp):
    op, x, key, perm, axis, idx = inp
    a = hetnn.asarray(x, device=dev)
    if op == "getitem":
        return (a[key].numpy(),)
    if op == "setitem":
        a[key] = hetnn.asarray(-x[key], device=dev)
        return (a.numpy(),)
    if op == "permute_dims":
        return (hetnn.permute_dims(a, perm).numpy(),)
    if op == "flip":
        return (hetnn.flip(a, axis=axis).numpy(),)
    if op == "concat":
        return (hetnn.concat([a, hetnn.flip(a, axis=axis)], axis=axis).numpy(),)
    return (hetnn.take(a, hetnn.asarray(idx, device=dev), axis=axis).numpy(),)


def _manip_ref(inp):
    op, x, key, perm, axis, idx = inp
    x = x.astype(np.float64)
    if op == "getitem":
        return (x[key],)
    if op == "setitem":
        y = x.copy()
        y[key] = -x[key]
        return (y,)
    if op == "permute_dims":
        return (np.transpose(x, perm),)
    if op == "flip":
        return (np.flip(x, axis=axis),)
    if op == "concat":
        return (np.concatenate([x, np.flip(x, axis=axis)], axis=axis),)
    return (np.take(x, idx, axis=axis),)


MANIP_BAD = [
    ("index-range", lambda d: _ew_arr(d, (2, 3))[0, 3], IndexError, "index 3 is out of bounds for axis 1 with size 3"),
    ("too-many", lambda d: _ew_arr(d, (2, 3))[0, 0, 0], IndexError, "too many indices"),
    ("step-zero", lambda d: _ew_arr(d, (2, 3))[::0], ValueError, "step cannot be zero"),
    ("perm", lambda d: hetnn.permute_dims(_ew_arr(d, (2, 3)), (1, 1)), ValueError, "given twice"),
    ("concat-shape", lambda d: hetnn.concat([_ew_arr(d, (2, 3)), _ew_arr(d, (2, 4))]), ValueError, "same shape"),
    ("take-range", lambda d: hetnn.take(_ew_arr(d, (2, 3)), hetnn.asarray(np.array([2]), device=d), axis=0),
     IndexError, "out of bounds"),
]


# ---- random numbers ------------------------------------------------------------------------------------------------
def _rand_inputs(rng, dtype):
    return int(rng.integers(0, 2**63)), tuple(int(v) for v in rng.integers(0, 40, int(rng.integers(0, 3)))), \
        int(rng.integers(0, 100))


def _rand_run(dev, inp):
    seed, shape, skip = inp
    g = hetnn.random.default_rng(seed)
    g.random(skip, dtype="float32", device=dev)  # the stream continues: counters [skip, skip + size)
    return (g.random(shape, dtype="float32", device=dev).numpy(),)


def _rand_ref(inp):
    seed, shape, skip = inp
    n = int(np.prod(shape))
    k = np.arange(skip, skip + n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + (k + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (((z >> np.uint64(40)).astype(np.float64) * 2.0 ** -24).reshape(shape),)


RAND_BAD = [
    ("seed", lambda d: hetnn.random.default_rng(-1), ValueError, "seed must be in"),
    ("range", lambda d: hetnn.random.default_rng(0).integers(3, 3, device=d), ValueError, "empty range"),
    ("scale", lambda d: hetnn.random.default_rng(0).normal(0, -1, device=d), ValueError, "scale >= 0"),
]


# ---- user kernels --------------------------------------------------------------------------------------------------
_USER = {}


def _user_kernel():
    if "k" not in _USER:  # (not "if not _USER": the reduction row's kernel may be made first)
        _USER["k"] = hetnn.ElementwiseKernel("T x, T y, T s", "T z", "z = x * y + s * exp(-fabs(x))", "op_table_row")
    return _USER["k"]


def _user_inputs(rng, dtype):
    shape = _shape(rng)
    y_shape = shape if rng.integers(2) else (1, shape[1])  # broadcast half the time
    return rng.uniform(-2, 2, shape).astype(dtype), rng.uniform(-2, 2, y_shape).astype(dtype), float(rng.uniform(-3, 3))


def _user_run(dev, inp):
    x, y, s = inp
    return (_user_kernel()(hetnn.asarray(x, device=dev), hetnn.asarray(y, device=dev), s).numpy(),)


def _user_ref(inp):
    x, y, s = (v.astype(np.float64) if isinstance(v, np.ndarray) else v for v in inp)
    return (x * y + s * np.exp(-np.abs(x)),)


def _user_red_kernel():
    if "r" not in _USER:
        _USER["r"] = hetnn.ReductionKernel("T x, T y", "T z", "x * y", "a + b", "z = a", "0", "op_table_red")
    return _USER["r"]


def _user_red_inputs(rng, dtype):
    # positive products: a sum that cancels has no norm-wise bound against its own small result (float32 sums of
    # products in (-4, 4) missed 2e-5 at random)
    x, y, _ = _user_inputs(rng, dtype)
    return np.abs(x) + 0.5, np.abs(y) + 0.5, [None, 0, 1, (0, 1)][int(rng.integers(4))]


def _user_red_run(dev, inp):
    x, y, axis = inp
    return (_user_red_kernel()(hetnn.asarray(x, device=dev), hetnn.asarray(y, device=dev), axis=axis).numpy(),)


def _user_red_ref(inp):
    x, y, axis = inp
    return (np.sum(x.astype(np.float64) * y.astype(np.float64), axis=axis),)


USER_BAD = [
    ("params", lambda d: hetnn.ElementwiseKernel("float32", "float32 y", "y = 1", "k"), ValueError, "'type name'"),
    ("types", lambda d: _user_kernel()(_ew_arr(d, (2,)), _ew_arr(d, (2,), "int32"), 1.0), TypeError,
     "by an earlier argument"),
]


# ---- max pooling ---------------------------------------------------------------------------------------------------
INTS = ("int8", "uint8", "int32", "int64")


def int_image(rng, shape, dtype):
    """Integers of ``dtype``: digits 0-9 (the max-pooling study's images: many ties) or the type's whole range
    (int64 within +-2^52 and its lowest value, so that the float64 reference holds them exactly)."""
    if rng.integers(2) == 0:
        return rng.integers(0, 10, shape).astype(dtype)
    info = np.iinfo(dtype)
    lo, hi = max(int(info.min), -2**52), min(int(info.max), 2**52)
    x = rng.integers(lo, hi, shape, endpoint=True).astype(dtype)
    if x.size:
        x.flat[rng.integers(x.size)] = info.min
    return x


def _pool_inputs(rng, dtype, mode="-inf"):
    k = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
    s = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    top = (k[0] + 1, k[1] + 1) if mode == "zeros" else (k[0] // 2, k[1] // 2)  # zero padding: any width
    p = (int(rng.integers(0, top[0] + 1)), int(rng.integers(0, top[1] + 1)))
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(k[0], 19)), int(rng.integers(k[1], 19)))
    x = int_image(rng, shape, dtype) if dtype in INTS else rng.standard_normal(shape).astype(dtype)
    return x, k, s, p


def _max_pool_inputs(rng, dtype):
    mode = "zeros" if rng.random() < 0.3 else "-inf"
    return (*_pool_inputs(rng, dtype, mode), mode)


def _pool_run(dev, inp):
    x, k, s, p, mode = inp
    y, idx = hetnn.max_pool2d(x, k, s, p, return_indices=True, padding_mode=mode, device=dev)
    return y, idx


def _pool_ref(inp):
    x, k, s, p, mode = inp
    return (pool_ref.max_pool2d_zeros if mode == "zeros" else pool_ref.max_pool2d)(x, k, s, p, (1, 1), False)


def _pool_bwd_inputs(rng, dtype):
    x, k, s, p, mode = _max_pool_inputs(rng, dtype)
    _, idx = _pool_ref((x, k, s, p, mode))
    return rng.standard_normal(idx.shape).astype(dtype), idx, x.shape, k, s, p, mode


def _pool_bwd_run(dev, inp):
    g, idx, shape, k, s, p, mode = inp
    return (hetnn.max_pool2d_backward(g, idx, shape, k, s, p, padding_mode=mode, device=dev),)


def _pool_bwd_ref(inp):
    g, idx, shape, k, s, p, mode = inp
    return (pool_ref.max_pool2d_backward(g.astype(np.float64), idx, shape),)


# ---- average pooling -----------------------------------------------------------------------------------------------
def _avg_out(n, k, s, p, ceil):
    """PyTorch's pooling output length (pooling_output_shape), written out apart from the core's."""
    o = -((-(n + 2 * p - k)) // s) + 1 if ceil else (n + 2 * p - k) // s + 1
    return o - 1 if ceil and (o - 1) * s >= n + p else o


def _avg_inputs(rng, dtype):
    x, k, s, p = _pool_inputs(rng, dtype)
    divisor = None if rng.integers(2) else int(rng.integers(1, 6)) * int(rng.choice([-1, 1]))
    return x, k, s, p, bool(rng.integers(2)), bool(rng.integers(2)), divisor


def _avg_run(dev, inp):
    x, k, s, p, ceil, include_pad, divisor = inp
    return (hetnn.avg_pool2d(x, k, s, p, ceil, include_pad, divisor, device=dev),)


def _avg_ref(inp):
    x, k, s, p, ceil, include_pad, divisor = inp
    n, c, h, w = x.shape
    oh, ow = _avg_out(h, k[0], s[0], p[0], ceil), _avg_out(w, k[1], s[1], p[1], ceil)
    y = np.empty((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * s[0] - p[0], j * s[1] - p[1]
            r1, c1 = min(r0 + k[0], h + p[0]), min(c0 + k[1], w + p[1])
            win = x[:, :, max(r0, 0):min(r1, h), max(c0, 0):min(c1, w)].astype(np.float64)
            size = divisor or ((r1 - r0) * (c1 - c0) if include_pad else win.shape[2] * win.shape[3])
            y[:, :, i, j] = win.sum(axis=(2, 3)) / size
    return (y,)


def _avg(x, *args, **kwargs):
    return lambda d: hetnn.avg_pool2d(x, *args, device=d, **kwargs)


def _avg_bwd_inputs(rng, dtype):
    x, k, s, p, ceil, include_pad, divisor = _avg_inputs(rng, dtype)
    (y,) = _avg_ref((x, k, s, p, ceil, include_pad, divisor))
    return rng.standard_normal(y.shape).astype(dtype), x.shape, k, s, p, ceil, include_pad, divisor


def _avg_bwd_run(dev, inp):
    g, shape, k, s, p, ceil, include_pad, divisor = inp
    return (hetnn.avg_pool2d_backward(g, shape, k, s, p, ceil, include_pad, divisor, device=dev),)


def _avg_bwd_ref(inp):
    """The adjoint of the forward reference: each window's gradient over its divisor, added to its input positions."""
    g, (n, c, h, w), k, s, p, ceil, include_pad, divisor = inp
    gx = np.zeros((n, c, h, w))
    for i in range(g.shape[2]):
        for j in range(g.shape[3]):
            r0, c0 = i * s[0] - p[0], j * s[1] - p[1]
            r1, c1 = min(r0 + k[0], h + p[0]), min(c0 + k[1], w + p[1])
            a0, a1, b0, b1 = max(r0, 0), min(r1, h), max(c0, 0), min(c1, w)
            size = divisor or ((r1 - r0) * (c1 - c0) if include_pad else (a1 - a0) * (b1 - b0))
            gx[:, :, a0:a1, b0:b1] += g[:, :, i:i + 1, j:j + 1].astype(np.float64) / size
    return (gx,)


def _avg_bwd(g, shape, *args, **kwargs):
    return lambda d: hetnn.avg_pool2d_backward(g, shape, *args, device=d, **kwargs)




def _conv_inputs(rng, dtype):
    groups = int(rng.choice([1, 1, 2, 3]))
    cg, og = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    s, d = (int(rng.integers(1, 3)), int(rng.integers(1, 3))), (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    padding = "same" if s == (1, 1) and rng.integers(4) == 0 else (int(rng.integers(0, 3)), int(rng.integers(0, 3)))
    pad = (0, 0) if padding == "same" else padding
    h = int(rng.integers(max(1, d[0] * (kh - 1) + 1 - 2 * pad[0]), 12))
    w = int(rng.integers(max(1, d[1] * (kw - 1) + 1 - 2 * pad[1]), 12))
    x = rng.standard_normal((int(rng.integers(0, 3)), cg * groups, h, w)).astype(dtype)
    weight = (rng.standard_normal((og * groups, cg, kh, kw)) / np.sqrt(cg * kh * kw)).astype(dtype)
    bias = rng.standard_normal(og * groups).astype(dtype) if rng.integers(2) else None
    act = [None, "relu", "sigmoid", "tanh"][int(rng.integers(4))]
    return x, weight, bias, s, padding, d, groups, act


def _conv_pads(padding, ekh, ekw):
    """(top, bottom, left, right) for PyTorch's padding argument, given the dilated kernel's extent."""
    if padding == "same":
        return (ekh - 1) // 2, ekh - 1 - (ekh - 1) // 2, (ekw - 1) // 2, ekw - 1 - (ekw - 1) // 2
    pad = (0, 0) if padding == "valid" else padding
    return pad[0], pad[0], pad[1], pad[1]


def _conv_run(dev, inp):
    x, weight, bias, s, padding, d, groups, act = inp
    return (hetnn.conv2d(x, weight, bias, s, padding, d, groups, act, device=dev),)


def _conv_ref(inp):
    """Direct summation in float64 over the zero-padded input (PyTorch's definition, written apart from hetnn)."""
    x, weight, bias, s, padding, d, groups, act = inp
    x, weight = x.astype(np.float64), weight.astype(np.float64)
    n, c, h, w = x.shape
    o, cg, kh, kw = weight.shape
    top, bottom, left, right = _conv_pads(padding, d[0] * (kh - 1) + 1, d[1] * (kw - 1) + 1)
    xp = np.zeros((n, c, h + top + bottom, w + left + right))
    xp[:, :, top:top + h, left:left + w] = x
    ekh, ekw = d[0] * (kh - 1) + 1, d[1] * (kw - 1) + 1
    oh, ow = (h + top + bottom - ekh) // s[0] + 1, (w + left + right - ekw) // s[1] + 1
    y = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                r0, c0 = i * d[0], j * d[1]
                patch = xs[:, :, r0:r0 + s[0] * (oh - 1) + 1:s[0], c0:c0 + s[1] * (ow - 1) + 1:s[1]]
                y[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, weight[g * og:(g + 1) * og, :, i, j])
    if bias is not None:
        y += bias.astype(np.float64)[None, :, None, None]
    return (y if act is None else _acts64(y, act),)


def _conv_bwd_inputs(rng, dtype):
    x, weight, bias, s, padding, d, groups, _ = _conv_inputs(rng, dtype)
    y_shape = _conv_ref((x, weight, None, s, padding, d, groups, None))[0].shape
    return rng.standard_normal(y_shape).astype(dtype), x, weight, s, padding, d, groups


def _conv_bwd_run(dev, inp):
    gy, x, weight, s, padding, d, groups = inp
    return hetnn.conv2d_backward(gy, x, weight, s, padding, d, groups, device=dev)


def _conv_bwd_ref(inp):
    """The forward reference's adjoint in float64: every kernel tap's patch of the padded input gets gy through the
    tap's weights (scatter-added back, then the padding cropped), and each tap's weight gradient is gy against it."""
    gy, x, weight, s, padding, d, groups = inp
    gy, x, weight = gy.astype(np.float64), x.astype(np.float64), weight.astype(np.float64)
    n, c, h, w = x.shape
    o, cg, kh, kw = weight.shape
    top, bottom, left, right = _conv_pads(padding, d[0] * (kh - 1) + 1, d[1] * (kw - 1) + 1)
    xp = np.zeros((n, c, h + top + bottom, w + left + right))
    xp[:, :, top:top + h, left:left + w] = x
    gxp = np.zeros_like(xp)
    oh, ow = gy.shape[2], gy.shape[3]
    og = o // groups
    gw = np.zeros_like(weight)
    for g in range(groups):
        cs, os_ = slice(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og)
        for i in range(kh):
            for j in range(kw):
                r0, c0 = i * d[0], j * d[1]
                rows, cols = slice(r0, r0 + s[0] * (oh - 1) + 1, s[0]), slice(c0, c0 + s[1] * (ow - 1) + 1, s[1])
                gxp[:, cs, rows, cols] += np.einsum("nohw,oc->nchw", gy[:, os_], weight[os_, :, i, j])
                gw[os_, :, i, j] = np.einsum("nohw,nchw->oc", gy[:, os_], xp[:, cs, rows, cols])
    return gxp[:, :, top:top + h, left:left + w], gw, gy.sum(axis=(0, 2, 3))


def _conv(x, w, *args, **kwargs):
    return lambda d: hetnn.conv2d(x, w, *args, device=d, **kwargs)


# ---- training ops --------------------------------------------------------------------------------------------------
def _act_inputs(rng, dtype):
    return rng.standard_normal(_shape(rng)).astype(dtype) * 3, str(rng.choice(["relu", "sigmoid", "tanh"]))


def _act_bwd_inputs(rng, dtype):
    x, act = _act_inputs(rng, dtype)
    y = _acts64(x.astype(np.float64), act).astype(dtype)
    return rng.standard_normal(x.shape).astype(dtype), y, act


def _act_bwd_ref(inp):
    g, y, act = (inp[0].astype(np.float64), inp[1].astype(np.float64), inp[2])
    return (np.where(y <= 0, 0.0, g) if act == "relu" else g * y * (1 - y) if act == "sigmoid" else g * (1 - y * y),)


def _loss_inputs(rng, dtype):
    rows, cols = _shape(rng, cols=(2, 12))
    kind = str(rng.choice(["cross_entropy", "mse"]))
    pred = rng.standard_normal((rows, cols)).astype(dtype)
    target = (rng.integers(0, cols, rows).astype(np.int64) if kind == "cross_entropy"
              else rng.standard_normal((rows, cols)).astype(dtype))
    return kind, pred, target


def _loss_run(dev, inp):
    kind, pred, target = inp
    acc = _core.Array.zeros(dev._dev, [1], "float32")
    grad = _core.Array.empty(dev._dev, list(pred.shape), pred.dtype.name)
    _core.batch_loss(kind, _up(dev, pred), _up(dev, target), acc, grad)
    return acc.to_numpy(), grad.to_numpy()


def _loss_ref(inp):
    kind, pred, target = inp
    p = pred.astype(np.float64)
    n, c = p.shape
    if kind == "mse":
        d = p - target.astype(np.float64)
        return np.array([(d * d).mean(axis=1).sum()]), 2 * d / (n * c)
    sm = _softmax64(p)
    loss = -np.log(sm[np.arange(n), target]).sum()
    g = sm.copy()
    g[np.arange(n), target] -= 1
    return np.array([loss]), g / n


def _metric_inputs(rng, dtype):
    rows, cols = _shape(rng, cols=(2, 9))
    return rng.standard_normal((rows, cols)).astype(dtype), rng.integers(0, cols, rows).astype(np.int64)


def _metric_run(dev, inp):
    pred, labels = inp
    acc = _core.Array.zeros(dev._dev, [1], "float32")
    _core.metric("correct_argmax", _up(dev, pred), _up(dev, labels), acc)
    return (acc.to_numpy(),)


def _sgd_inputs(rng, dtype):
    shape = _shape(rng)
    return (rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype),
            rng.standard_normal(shape).astype(dtype), float(rng.choice([0.0, 0.9])), float(rng.choice([0.0, 1e-2])),
            bool(rng.integers(2)))


def _sgd_run(dev, inp):
    p, g, v, mom, wd, nest = inp
    P, V = _up(dev, p), _up(dev, v)
    _core.sgd_update(P, _up(dev, g), V if mom else None, 0.1, mom, wd, bool(nest and mom))
    return P.to_numpy(), (V.to_numpy() if mom else v)


def _sgd_ref(inp):
    p, g, v, mom, wd, nest = (x.astype(np.float64) if isinstance(x, np.ndarray) else x for x in inp)
    d = g + wd * p
    if not mom:
        return p - 0.1 * d, v
    vel = mom * v + d
    return p - 0.1 * (d + mom * vel if nest else vel), vel


def _adam_inputs(rng, dtype):
    shape = _shape(rng)
    p, g, m = (rng.standard_normal(shape).astype(dtype) for _ in range(3))
    v = (rng.standard_normal(shape) ** 2).astype(dtype)
    vmax = v + (rng.standard_normal(shape) ** 2).astype(dtype) * rng.integers(0, 2, shape)
    return (p, g, m, v, vmax.astype(dtype), float(rng.choice([0.0, 0.05])), int(rng.integers(1, 6)),
            bool(rng.integers(2)), bool(rng.integers(2)))


def _adam_run(dev, inp):
    p, g, m, v, vmax, wd, step, ams, decoupled = inp
    P, M, V, X = _up(dev, p), _up(dev, m), _up(dev, v), _up(dev, vmax)
    _core.adam_update(P, _up(dev, g), M, V, X if ams else None, 0.01, 0.8, 0.95, 1e-3, wd, step, ams, decoupled)
    return P.to_numpy(), M.to_numpy(), V.to_numpy(), (X.to_numpy() if ams else vmax)


def adam_reference(inp, lr=0.01, b1=0.8, b2=0.95, eps=1e-3):
    """torch.optim.Adam / AdamW's single-tensor step, transcribed in float64."""
    p, g, m, v, vmax, wd, step, ams, decoupled = (x.astype(np.float64) if isinstance(x, np.ndarray) else x
                                                  for x in inp)
    if decoupled:
        p = p * (1 - lr * wd)
    else:
        g = g + wd * p
    m = m + (g - m) * (1 - b1)
    v = v * b2 + (1 - b2) * g * g
    bc1, bc2 = 1 - b1 ** step, 1 - b2 ** step
    if ams:
        vmax = np.maximum(vmax, v)
    denom = np.sqrt(vmax if ams else v) / np.sqrt(bc2) + eps
    return p - lr / bc1 * m / denom, m, v, vmax


def dropout_keep(seed, n, p):
    """The dropout mask (DropoutDesc in cpp/src/core/ops.h) transcribed: SplitMix64 of (seed, i), 24 bits against
    round(p * 2^24)."""
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + (np.arange(n, dtype=np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(40)) >= np.uint64(round(p * (1 << 24)))


def _dropout_inputs(rng, dtype):
    return (rng.standard_normal(_shape(rng, (1, 300))).astype(dtype), float(rng.choice([0.0, 0.1, 0.5, 0.9, 1.0])),
            int(rng.integers(0, 2**64, dtype=np.uint64)))


def _dropout_ref(inp):
    x, p, seed = inp
    keep = dropout_keep(seed, x.size, p).reshape(x.shape)
    return (np.where(keep, x.astype(np.float64) / (1 - p) if p < 1 else 0.0, 0.0),)


def _take_inputs(rng, dtype):
    rows, cols = _shape(rng)
    n = int(rng.integers(1, rows + 1))
    return rng.standard_normal((rows, cols)).astype(dtype), rng.integers(0, rows, n).astype(np.int64)


# ---- bad calls: (label, call(device), exception type(s), regex the message must match: it names the argument) --------
F32 = np.ones((4, 4), np.float32)
X4 = np.ones((1, 2, 6, 6), np.float32)


def _readonly():
    a = np.ones((4, 4), np.float32)
    a.flags.writeable = False
    return a


def _mm(*args, **kw):
    return lambda d: hetnn.matmul(*args, device=d, **kw)


def _pool(*args, **kw):
    return lambda d: hetnn.max_pool2d(*args, device=d, **kw)


def _pool_bwd(*args, **kw):
    return lambda d: hetnn.max_pool2d_backward(*args, device=d, **kw)


MATMUL_BAD = [
    ("int32-activation", _mm(np.ones((2, 2), np.int32), np.ones((2, 2), np.int32), activation="relu"), TypeError,
     "activation needs 2-D or 3-D operands of one floating dtype.*int32"),
    ("inner-mismatch", _mm(np.ones((2, 3), np.float32), np.ones((4, 2), np.float32)), ValueError, "K|inner|shape"),
    ("beta-without-out", _mm(F32, F32, beta=1.0), ValueError, "beta"),
    ("1d-bias", _mm(np.ones(4, np.float32), F32, bias=np.ones(4, np.float32)), ValueError,
     r"bias needs 2-D or 3-D operands.*\(4,\)"),
    ("4d-transposed", _mm(np.ones((1, 1, 4, 4), np.float32), F32, transpose_a=True), ValueError, "transpose_a needs"),
    ("dtype-mismatch-alpha", _mm(F32, F32.astype(np.float64), alpha=2.0), TypeError, "float32 and float64"),
    ("0d", _mm(np.float32(2.0), F32), ValueError, "a is 0-d"),
    ("bool", _mm(np.ones((2, 2), bool), np.ones((2, 2), bool)), TypeError, "numeric"),
    ("vector-misaligned", _mm(F32, np.ones(3, np.float32)), ValueError, "not aligned"),
    ("stacks-unbroadcastable", _mm(np.ones((2, 4, 4, 4), np.float32), np.ones((3, 4, 4), np.float32)), ValueError,
     "cannot be broadcast"),
    ("string", _mm("ab", F32), TypeError, "a"),
    ("none", _mm(None, F32), TypeError, "a"),
    ("bias-shape", _mm(F32, F32, bias=np.ones(3, np.float32)), ValueError, "bias"),
    ("activation", _mm(F32, F32, activation="gelu"), ValueError, "activation"),
    ("alpha-string", _mm(F32, F32, alpha="x"), TypeError, "alpha"),
    ("alpha-overflow", _mm(F32, F32, alpha=10**400), ValueError, "alpha"),
    ("beta-overflow", _mm(F32, F32, beta=-10**400), ValueError, "beta"),
    ("transpose-int", _mm(F32, F32, transpose_a=2), TypeError, "transpose_a"),
    ("precision-word", _mm(F32, F32, precision="medium"), ValueError, "precision must be 'highest'"),
    ("precision-not-str", _mm(F32, F32, precision=1), TypeError, "precision"),
    ("out-dtype-wider", _mm(F32, F32, out_dtype="float64"), TypeError, "out_dtype float64"),
    ("out-dtype-unknown", _mm(F32, F32, out_dtype="float8"), TypeError, "out_dtype: unsupported dtype"),
    ("out-shape", lambda d: hetnn.matmul(hetnn.asarray(F32, device=d), hetnn.asarray(F32, device=d),
                                         out=hetnn.empty((3, 3), device=d)), ValueError, "out"),
    ("out-readonly-numpy", _mm(F32, F32, out=_readonly()), (ValueError, TypeError), "out"),
    ("mixed-host-device", lambda d: hetnn.matmul(hetnn.asarray(F32, device=d), F32), TypeError, "b"),
    ("batch-mismatch", _mm(np.ones((2, 4, 4), np.float32), np.ones((3, 4, 4), np.float32)), ValueError, "batch"),
]
POOL_BAD = [
    ("kernel-zero", _pool(X4, 0), ValueError, "kernel_size"),
    ("kernel-beyond-int", _pool(np.zeros((1, 1, 4, 4), np.float32), 2**31), ValueError, "kernel_size"),
    ("stride-beyond-int", _pool(np.zeros((1, 1, 4, 4), np.float32), 2, (1, -2**40)), ValueError, "stride"),
    ("2d-input", _pool(F32, 2), ValueError, "input|x"),
    ("5d-input", _pool(np.ones((1, 1, 1, 4, 4), np.float32), 2), ValueError, "input|x"),
    ("kernel-negative", _pool(X4, -2), ValueError, "kernel_size"),
    ("kernel-float", _pool(X4, 2.5), TypeError, "kernel_size"),
    ("kernel-triple", _pool(X4, (2, 2, 2)), (TypeError, ValueError), "kernel_size"),
    ("stride-zero", _pool(X4, 2, 0), ValueError, "stride"),
    ("padding-too-big", _pool(X4, 2, 1, 2), ValueError, "padding"),
    ("padding-negative", _pool(X4, 2, 1, -1), ValueError, "padding"),
    ("dilation-zero", _pool(X4, 2, dilation=0), ValueError, "dilation"),
    ("window-larger-than-input", _pool(X4, 7), ValueError, "output|window|kernel"),
    ("bool-dtype", _pool(X4.astype(bool), 2), TypeError, "bool"),
    ("ceil-string", _pool(X4, 2, ceil_mode="yes"), TypeError, "ceil_mode"),
    ("empty-channel", _pool(np.ones((1, 0, 4, 4), np.float32), 2), ValueError, "empty"),
    ("padding-mode-unknown", _pool(X4, 2, padding_mode="reflect"), ValueError, "padding_mode"),
    ("padding-mode-type", _pool(X4, 2, padding_mode=1), TypeError, "padding_mode"),
]
POOL_BWD_BAD = [
    ("index-outside-window", _pool_bwd(np.ones((1, 1, 2, 2), np.float32), np.full((1, 1, 2, 2), 15, np.int64),
                                       (1, 1, 4, 4), 2), ValueError, "window|indices"),
    ("index-dtype", _pool_bwd(np.ones((1, 2, 3, 3), np.float32), np.zeros((1, 2, 3, 3), np.float32), X4.shape, 2),
     TypeError, "indices"),
    ("shape-mismatch", _pool_bwd(np.ones((1, 2, 3, 3), np.float32), np.zeros((1, 2, 2, 3), np.int64), X4.shape, 2),
     ValueError, "indices|shape"),
    ("index-out-of-range", _pool_bwd(np.ones((1, 2, 3, 3), np.float32), np.full((1, 2, 3, 3), 99, np.int64),
                                     X4.shape, 2), ValueError, "indices"),
    ("input-shape-wrong", _pool_bwd(np.ones((1, 2, 3, 3), np.float32), np.zeros((1, 2, 3, 3), np.int64), (1, 2, 6),
                                    2), ValueError, "input_shape"),
    ("padding-index-without-zero-padding", _pool_bwd(np.ones((1, 1, 5, 5), np.float32),
                                                     np.full((1, 1, 5, 5), -1, np.int64), (1, 1, 4, 4), 2, 1, 1),
     ValueError, "indices"),
]


CX = np.zeros((1, 4, 6, 6), np.float32)
CW = np.zeros((8, 4, 3, 3), np.float32)
CONV_BAD = [
    ("x-2d", _conv(np.zeros((6, 6), np.float32), CW), ValueError, "x must be 4-D"),
    ("weight-3d", _conv(CX, np.zeros((8, 4, 3), np.float32)), ValueError, "weight must be 4-D"),
    ("channels-mismatch", _conv(CX, np.zeros((8, 3, 3, 3), np.float32)), ValueError, "input channels"),
    ("groups-not-dividing", _conv(CX, np.zeros((8, 4, 3, 3), np.float32), groups=3), ValueError, "groups"),
    ("groups-zero", _conv(CX, CW, groups=0), ValueError, "groups"),
    ("groups-float", _conv(CX, CW, groups=1.5), TypeError, "groups"),
    ("kernel-larger-than-input", _conv(CX, np.zeros((8, 4, 7, 7), np.float32)), ValueError, "padded input"),
    ("stride-zero", _conv(CX, CW, stride=0), ValueError, "stride"),
    ("dilation-zero", _conv(CX, CW, dilation=(1, 0)), ValueError, "dilation"),
    ("padding-negative", _conv(CX, CW, padding=-1), ValueError, "padding"),
    ("padding-word", _conv(CX, CW, padding="full"), ValueError, "padding"),
    ("same-strided", _conv(CX, CW, stride=2, padding="same"), ValueError, "same"),
    ("bias-shape", _conv(CX, CW, np.zeros(4, np.float32)), ValueError, "bias"),
    ("bias-dtype", _conv(CX, CW, np.zeros(8, np.float64)), TypeError, "bias"),
    ("weight-dtype", _conv(CX, CW.astype(np.float64)), TypeError, "weight"),
    ("int-input", _conv(CX.astype(np.int32), CW.astype(np.int32)), TypeError, "conv2d takes"),
    ("activation", _conv(CX, CW, activation="gelu"), ValueError, "activation|gelu"),
    ("precision-word", _conv(CX, CW, precision="tf32"), ValueError, "conv2d: precision must be"),
    # a 60001 x 80001 output plane from a 1x1 input: 32-bit in-plane offsets gave zeros on OpenCL
    ("output-plane-beyond-int", _conv(np.zeros((1, 1, 1, 1), np.float32), np.zeros((1, 1, 1, 1), np.float32),
                                      padding=(30000, 40000)), ValueError, "output plane of more than 2\\^31-1"),
]
CONV_BWD_BAD = [
    ("grad-shape", lambda d: hetnn.conv2d_backward(np.zeros((1, 8, 3, 3), np.float32), CX, CW, device=d), ValueError,
     "grad_output"),
    ("grad-dtype", lambda d: hetnn.conv2d_backward(np.zeros((1, 8, 4, 4), np.float64), CX, CW, device=d), TypeError,
     "grad_output"),
    ("flag-not-bool", lambda d: hetnn.conv2d_backward(np.zeros((1, 8, 4, 4), np.float32), CX, CW, input_grad=1,
                                                      device=d), TypeError, "input_grad"),
    ("precision-none-word", lambda d: hetnn.conv2d_backward(np.zeros((1, 8, 4, 4), np.float32), CX, CW,
                                                            precision="", device=d), ValueError, "precision"),
    ("output-plane-beyond-int", lambda d: hetnn.conv2d_backward(
        np.zeros((1, 1, 1, 1), np.float32), np.zeros((1, 1, 1, 1), np.float32), np.zeros((1, 1, 1, 1), np.float32),
        padding=(30000, 40000), device=d), ValueError, "output plane of more than 2\\^31-1"),
]
AVG_BAD = [
    ("kernel-zero", _avg(X4, 0), ValueError, "kernel_size"),
    ("kernel-missing", _avg(X4), TypeError, "kernel_size"),
    ("padding-too-big", _avg(X4, 2, 1, 2), ValueError, "padding"),
    ("divisor-zero", _avg(X4, 2, divisor_override=0), ValueError, "divisor_override"),
    ("divisor-float", _avg(X4, 2, divisor_override=2.5), TypeError, "divisor_override"),
    ("divisor-pair", _avg(X4, 2, divisor_override=(2, 2)), TypeError, "divisor_override"),
    ("include-pad-string", _avg(X4, 2, count_include_pad="yes"), TypeError, "count_include_pad"),
    ("2d-input", _avg(F32, 2), ValueError, "input"),
    ("int-dtype", _avg(X4.astype(np.int32), 2), TypeError, "int32"),
    ("out-wrong-shape", _avg(X4, 2, out=np.empty((1, 1, 2, 2), np.float32)), ValueError, "out"),
]
G4 = np.ones((1, 2, 3, 3), np.float32)  # avg_pool2d(X4, 2)'s output shape
AVG_BWD_BAD = [
    ("wrong-grad-shape", _avg_bwd(G4[:, :, :2], X4.shape, 2), ValueError, "grad_output has shape"),
    ("input-shape-2d", _avg_bwd(G4, (6, 6), 2), ValueError, "input_shape"),
    ("input-shape-negative", _avg_bwd(G4, (1, 2, -6, 6), 2), ValueError, "input_shape"),
    ("input-shape-text", _avg_bwd(G4, "1,2,6,6", 2), TypeError, "input_shape"),
    ("no-kernel", _avg_bwd(G4, X4.shape, None), TypeError, "kernel_size"),
    ("divisor-zero", _avg_bwd(G4, X4.shape, 2, divisor_override=0), ValueError, "divisor_override"),
    ("int-grad", _avg_bwd(G4.astype(np.int32), X4.shape, 2), TypeError, "int32"),
    ("include-pad-text", _avg_bwd(G4, X4.shape, 2, count_include_pad="yes"), TypeError, "count_include_pad"),
    ("out-wrong-shape", _avg_bwd(G4, X4.shape, 2, out=np.empty((1, 2, 3, 3), np.float32)), ValueError, "out"),
]


OPS: Dict[str, Op] = {op.name: op for op in [
    Op("matmul", _mm_run, _mm_ref, _mm_inputs, backend=["matmul"], bad=MATMUL_BAD),
    Op("max_pool2d", _pool_run, _pool_ref, _max_pool_inputs, dtypes=F + INTS, tol=dict.fromkeys(F + INTS, 0.0),
       backend=["max_pool2d"], bad=POOL_BAD),
    Op("max_pool2d_backward", _pool_bwd_run, _pool_bwd_ref, _pool_bwd_inputs, tol={"float32": 1e-6, "float64": 1e-14},
       backend=["max_pool2d_backward"], bad=POOL_BWD_BAD),
    Op("avg_pool2d", _avg_run, _avg_ref, _avg_inputs, dtypes=F + ("float16", "bfloat16"),
       tol={"float32": 1e-6, "float64": 1e-14, "float16": 1e-3, "bfloat16": 8e-3}, backend=["avg_pool2d"],
       bad=AVG_BAD),
    Op("avg_pool2d_backward", _avg_bwd_run, _avg_bwd_ref, _avg_bwd_inputs, dtypes=F + ("float16", "bfloat16"),
       tol={"float32": 1e-6, "float64": 1e-14, "float16": 2e-3, "bfloat16": 1.6e-2}, backend=["avg_pool2d_backward"],
       bad=AVG_BWD_BAD),
    Op("conv2d", _conv_run, _conv_ref, _conv_inputs, dtypes=F + ("float16", "bfloat16"),
       tol={"float32": 2e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1.6e-2}, backend=["conv2d"], bad=CONV_BAD),
    Op("conv2d_backward", _conv_bwd_run, _conv_bwd_ref, _conv_bwd_inputs, dtypes=F + ("float16", "bfloat16"),
       tol={"float32": 2e-5, "float64": 1e-12, "float16": 4e-3, "bfloat16": 3e-2},
       backend=["conv2d_backward_data", "conv2d_backward_weights"], bad=CONV_BWD_BAD),
    Op("activation", lambda d, i: (_core.activation(_up(d, i[0]), i[1]).to_numpy(),),
       lambda i: (_acts64(i[0].astype(np.float64), i[1]),), _act_inputs, backend=["activation"], bad=[
        ("unknown", lambda d: _core.activation(_up(d, np.ones(3, np.float32)), "gelu"), ValueError, "activation")]),
    Op("activation_backward", lambda d, i: (_core.activation_backward(_up(d, i[0]), _up(d, i[1]), i[2]).to_numpy(),),
       _act_bwd_ref, _act_bwd_inputs, backend=["activation_backward"]),
    Op("softmax", lambda d, i: (_core.softmax(_up(d, i[0])).to_numpy(),), lambda i: (_softmax64(i[0].astype(
        np.float64)),), lambda r, t: (r.standard_normal(_shape(r)).astype(t) * 4,), backend=["softmax"], bad=[
        ("1-d", lambda d: _core.softmax(_up(d, np.ones(3, np.float32))), ValueError, "2-D|rows")]),
    Op("batch_loss", _loss_run, _loss_ref, _loss_inputs, tol={"float32": 1e-5, "float64": 1e-6},
       backend=["loss"], bad=[
        ("unknown", lambda d: _core.batch_loss("hinge", _up(d, np.ones((2, 2), np.float32)),
                                               _up(d, np.zeros(2, np.int64)), _core.Array.zeros(d._dev, [1],
                                                                                            "float32")),
         ValueError, "hinge|loss")]),
    Op("metric", _metric_run, lambda i: (np.array([float((i[0].argmax(axis=1) == i[1]).sum())]),), _metric_inputs,
       tol={"float32": 0.0, "float64": 0.0}, backend=["metric"]),
    Op("sgd_update", _sgd_run, _sgd_ref, _sgd_inputs, backend=["sgd_update"], bad=[
        ("momentum-without-velocity", lambda d: _core.sgd_update(_up(d, np.ones(2, np.float32)),
                                                                 _up(d, np.ones(2, np.float32)), None, 0.1, 0.9,
                                                                 0.0, False), ValueError, "velocity")]),
    Op("adam_update", _adam_run, adam_reference, _adam_inputs, dtypes=F + ("float16", "bfloat16"),
       tol={"float32": 2e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1.6e-2}, backend=["adam_update"], bad=[
        ("amsgrad-without-vmax", lambda d: _core.adam_update(*(_up(d, np.ones(2, np.float32)) for _ in range(4)),
                                                             None, 0.1, 0.9, 0.999, 1e-8, 0.0, 1, True, False),
         ValueError, "vmax"),
        ("beta1-one", lambda d: _core.adam_update(*(_up(d, np.ones(2, np.float32)) for _ in range(4)), None, 0.1,
                                                  1.0, 0.999, 1e-8, 0.0, 1, False, False), ValueError, "beta1"),
        ("step-zero", lambda d: _core.adam_update(*(_up(d, np.ones(2, np.float32)) for _ in range(4)), None, 0.1,
                                                  0.9, 0.999, 1e-8, 0.0, 0, False, False), ValueError, "step"),
        ("m-is-param", lambda d: (lambda P: _core.adam_update(P, _up(d, np.ones(2, np.float32)), P,
                                                              _up(d, np.ones(2, np.float32)), None, 0.1, 0.9, 0.999,
                                                              1e-8, 0.0, 1, False, False))(
            _up(d, np.ones(2, np.float32))), ValueError, "param and m"),
        ("v-wrong-shape", lambda d: _core.adam_update(*(_up(d, np.ones(2, np.float32)) for _ in range(3)),
                                                      _up(d, np.ones(3, np.float32)), None, 0.1, 0.9, 0.999, 1e-8,
                                                      0.0, 1, False, False), ValueError, "v has shape")]),
    Op("dropout", lambda d, i: (_core.dropout(_up(d, i[0]), i[1], i[2]).to_numpy(),), _dropout_ref,
       _dropout_inputs, dtypes=F + ("float16", "bfloat16"),
       tol={"float32": 1e-6, "float64": 1e-14, "float16": 1e-3, "bfloat16": 8e-3}, backend=["dropout"], bad=[
        ("p-above-one", lambda d: _core.dropout(_up(d, np.ones(2, np.float32)), 1.5, 0), ValueError, "p must"),
        ("p-nan", lambda d: _core.dropout(_up(d, np.ones(2, np.float32)), float("nan"), 0), ValueError, "p must"),
        ("int-input", lambda d: _core.dropout(_up(d, np.ones(2, np.int32)), 0.5, 0), TypeError, "int32"),
        ("negative-seed", lambda d: _core.dropout(_up(d, np.ones(2, np.float32)), 0.5, -1), TypeError, ""),
        ("out-wrong-shape", lambda d: _core.dropout(_up(d, np.ones(2, np.float32)), 0.5, 0,
                                                    _up(d, np.ones(3, np.float32))), ValueError, "out")]),
    Op("sum_rows", lambda d, i: (_core.sum_rows(_up(d, i[0])).to_numpy(),),
       lambda i: (i[0].astype(np.float64).sum(axis=0),), lambda r, t: (r.standard_normal(_shape(r)).astype(t),),
       tol={"float32": 1e-5, "float64": 1e-13}, backend=["sum_rows"]),
    Op("take_rows", lambda d, i: (_core.take_rows(_up(d, i[0]), _up(d, i[1]), 0, len(i[1])).to_numpy(),),
       lambda i: (i[0][i[1]].astype(np.float64),), _take_inputs, tol={"float32": 0.0, "float64": 0.0},
       backend=["take_rows"]),
    Op("elementwise", _ew_run, _ew_ref, _ew_inputs, tol={"float32": 2e-6, "float64": 1e-13},
       backend=["elementwise", "where"], bad=EW_BAD),
    Op("reduce", _red_run, _red_ref, _red_inputs, tol={"float32": 2e-5, "float64": 1e-12},
       backend=["reduce", "cumulative_sum"], bad=RED_BAD),
    Op("sort", _sort_run("sort"), _sort_ref("sort"), _sort_inputs, dtypes=F + INTS, tol=dict.fromkeys(F + INTS, 0.0),
       backend=["sort"], bad=SORT_BAD),
    Op("argsort", _sort_run("argsort"), _sort_ref("argsort"), _sort_inputs, dtypes=F + INTS,
       tol=dict.fromkeys(F + INTS, 0.0), backend=["sort"]),
    Op("tensordot", _tdot_run, _tdot_ref, _tdot_inputs, dtypes=F + ("int32", "int8"),
       tol={"float32": 2e-5, "float64": 1e-12, "int32": 0.0, "int8": 0.0}, backend=["matmul"], bad=[
        ("extent", lambda d: hetnn.tensordot(_ew_arr(d, (2, 3)), _ew_arr(d, (2, 3)), axes=1), ValueError,
         "differ in extent"),
        ("axes", lambda d: hetnn.tensordot(_ew_arr(d, (2, 3)), _ew_arr(d, (3, 2)), axes=-1), ValueError,
         "must be in")]),
    Op("matmul_stacked", _mms_run, _mms_ref, _mms_inputs, dtypes=F + INTS,
       tol={"float32": 2e-5, "float64": 1e-12, **dict.fromkeys(INTS, 0.0)}, backend=["matmul"], bad=[
        ("out", lambda d: hetnn.matmul(_ew_arr(d, (3,)), _ew_arr(d, (3,)), out=hetnn.empty((), device=d)),
         ValueError, "out needs")]),
    Op("mask_index", _mask_run, _mask_ref, _mask_inputs, dtypes=F + INTS, tol=dict.fromkeys(F + INTS, 0.0),
       bad=[("mask-shape", lambda d: _ew_arr(d, (2, 3))[_ew_arr(d, (3,)) > 0], IndexError, "along axis 0"),
            ("mask-beside", lambda d: _ew_arr(d, (2, 3))[_ew_arr(d, (2,)) > 0, 0], IndexError, "whole index")]),
    Op("searchsorted", _search_run, _search_ref, _search_inputs, dtypes=F + INTS, tol=dict.fromkeys(F + INTS, 0.0),
       backend=["searchsorted"], bad=[
        ("x1-2d", lambda d: hetnn.searchsorted(_ew_arr(d, (2, 3)), _ew_arr(d, (2,))), ValueError, "x1 must be 1-D"),
        ("side", lambda d: hetnn.searchsorted(_ew_arr(d, (3,)), _ew_arr(d, (2,)), side="up"), ValueError, "side")]),
    Op("copy_strided", _manip_run, _manip_ref, _manip_inputs, dtypes=F + ("float16",),
       tol={"float32": 0.0, "float64": 0.0, "float16": 0.0}, backend=["copy_strided"], bad=MANIP_BAD),
    Op("elementwise_kernel", _user_run, _user_ref, _user_inputs, tol={"float32": 2e-6, "float64": 1e-14},
       backend=["user_elementwise"], bad=USER_BAD),
    Op("reduction_kernel", _user_red_run, _user_red_ref, _user_red_inputs, tol={"float32": 2e-5, "float64": 1e-12},
       backend=["user_reduction"], bad=[
           ("axis", lambda d: _user_red_kernel()(_ew_arr(d, (2, 3)), _ew_arr(d, (2, 3)), axis=2), ValueError,
            "out of bounds"),
           ("names", lambda d: hetnn.ReductionKernel("T a", "T y", "a", "a + b", "y = a", "0", "k"), ValueError,
            "cannot name a parameter")]),
    Op("random", _rand_run, _rand_ref, _rand_inputs, dtypes=("float32",), tol={"float32": 0.0},
       backend=["random"], bad=RAND_BAD),
]}
