"""Strided views (basic indexing, .T/.mT, permute_dims, flip, unstack, expand_dims/squeeze, reshape): on every device
they share the array's memory as NumPy's do (writes through one show in the other), element-wise ops, reductions,
copies and user kernels read them by their strides, every other op through a dense copy, and outputs that are views
are written element for element; overlapping in-place operations read before they write. Fresh random data, float64
NumPy references, results poisoned before the calls where the op writes into an existing array."""
import numpy as np
import pytest

import hetnn

KEYS = [(slice(1, 5), slice(None, None, 2)), (slice(None, None, -1),), (Ellipsis, slice(None, None, -2)),
        (2, slice(1, None)), (slice(None), 1), (slice(None, None, 3), None, slice(2, 0, -1))]


def _views(x, a):
    """Pairs (NumPy view, hetnn view) of the same elements: slices, transposes, flips and their compositions."""
    for key in KEYS:
        yield x[key], a[key]
    yield x.T, a.mT
    yield x[::-1, ::2].T, a[::-1, ::2].mT
    yield np.flip(x, 0)[1:], hetnn.flip(a, axis=0)[1:]
    yield np.transpose(x, (1, 0))[::2, 1:], hetnn.permute_dims(a, (1, 0))[::2, 1:]


def _pair(rng, device, shape=(6, 7), dtype="float32"):
    x = rng.standard_normal(shape).astype(dtype)
    return x, hetnn.asarray(x, device=device)


def test_views_share_memory_and_report_numpy_strides(device, rng):
    x, a = _pair(rng, device)
    for xv, av in _views(x, a):
        assert av.shape == xv.shape
        assert av.strides == xv.strides, (av.shape, av.strides, xv.strides)
        np.testing.assert_array_equal(av.numpy(), xv)
        assert av._a.same_memory(a._a)
    if device.kind == "cpu":  # NumPy sees a CPU-device view in place, with its strides
        h = np.asarray(a[::2, ::-1])
        assert h.strides == x[::2, ::-1].strides
        np.testing.assert_array_equal(h, x[::2, ::-1])


def test_writes_through_views_show_in_the_array(device, rng):
    x, a = _pair(rng, device)
    x = x.copy()
    a[1:4, ::2][0] = 7.0          # a view of a view, written through
    x[1:4, ::2][0] = 7.0
    a.mT[2] = -1.0                # a column, through the transpose
    x.T[2] = -1.0
    v = a[::-1, 1]
    v += 100                      # in place through a 1-d view with a negative stride
    x[::-1, 1] += 100
    a[:, 0] *= 2                  # Python's getitem / imul / setitem on a column
    x[:, 0] *= 2
    np.testing.assert_array_equal(a.numpy(), x)


def test_overlapping_in_place_reads_before_it_writes(device, rng):
    x, a = _pair(rng, device, (40,))
    x = x.copy()
    a[1:] += a[:-1]
    x[1:] += x[:-1].copy()
    a[:-2] = a[2:]
    x[:-2] = x[2:].copy()
    hetnn.add(a[::-1], a, out=a)  # out overlapping a reversed input
    x[:] = x[::-1] + x
    np.testing.assert_allclose(a.numpy(), x, rtol=1e-6)


@pytest.mark.parametrize("op", ["add", "multiply", "maximum", "atan2", "exp", "negative", "sqrt", "where"])
def test_element_wise_ops_read_views(device, rng, op):
    x, a = _pair(rng, device, (8, 9))
    y, b = _pair(rng, device, (9, 8))
    x, y = np.abs(x), np.abs(y)
    a, b = hetnn.abs(a), hetnn.abs(b)
    xv, av = x[1:7, ::-2], a[1:7, ::-2]          # (6, 5), offset and negative stride
    yv, bv = y.T[1:7, 2:7], b.mT[1:7, 2:7]        # (6, 5), transposed
    if op == "where":
        got, want = hetnn.where(av > bv, av, bv[0]), np.where(xv > yv, xv, yv[0])
    elif op in ("exp", "negative", "sqrt"):
        got, want = getattr(hetnn, op)(av), getattr(np, op)(xv.astype(np.float64))
    else:
        npop = {"atan2": np.arctan2}.get(op, getattr(np, op, None))
        got, want = getattr(hetnn, op)(av, bv), npop(xv.astype(np.float64), yv.astype(np.float64))
    np.testing.assert_allclose(got.numpy(), want, rtol=2e-6, atol=0)
    # a scalar operand and a cast read views too
    np.testing.assert_allclose((av * 3).numpy(), xv * np.float32(3), rtol=1e-7)
    np.testing.assert_array_equal(av.astype("float64").numpy(), xv.astype(np.float64))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8"])
def test_large_transposed_operands_match_numpy(device, rng, dtype):
    """Transposed operands large enough for the CPU device's tiled walk (partial tiles and partial 8 x 8 blocks at both
    edges, both operands transposed, a negative stride, the number first and second, an offset view, a bool
    result)."""
    if dtype not in device.dtypes:
        pytest.skip(f"{device.id} has no {dtype}")
    x = (rng.standard_normal((301, 203)) * 20).astype(dtype)
    y = (rng.standard_normal((203, 301)) * 20).astype(dtype)
    a, b = hetnn.asarray(x, device=device), hetnn.asarray(y, device=device)
    x64 = x.astype(np.float64)
    np.testing.assert_array_equal(hetnn.add(a.mT, b).numpy(), (x.T + y))
    np.testing.assert_array_equal(hetnn.subtract(b, a.mT).numpy(), (y - x.T))
    np.testing.assert_array_equal(hetnn.maximum(a.mT[::-1], b.mT.mT[::-1]).numpy(), np.maximum(x.T[::-1], y[::-1]))
    np.testing.assert_array_equal(hetnn.multiply(a.mT, b.mT.mT).numpy(), x.T * y)  # one transposed, one dense
    both = hetnn.add(a.mT, hetnn.asarray(np.ascontiguousarray(y.T), device=device).mT)
    np.testing.assert_array_equal(both.numpy(), x.T + y)
    np.testing.assert_array_equal((a.mT * 3).numpy(), x.T * np.array(3, dtype))
    np.testing.assert_array_equal(hetnn.subtract(np.array(3, dtype)[()], a.mT).numpy(), np.array(3, dtype) - x.T)
    # a view with an offset (each column's run starts anywhere in a line), into a poisoned output
    got = hetnn.asarray(np.full((201, 300), 7, dtype=dtype), device=device)
    hetnn.add(a[1:, 2:].mT, b[2:, 1:], out=got)
    np.testing.assert_array_equal(got.numpy(), x[1:, 2:].T + y[2:, 1:])
    np.testing.assert_array_equal(hetnn.less(a.mT, b).numpy(), x.T < y)  # a bool result: the row-by-row walk
    if dtype != "int8":
        np.testing.assert_allclose(hetnn.exp(a.mT / 20).numpy(), np.exp(x64.T / 20), rtol=2e-6)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_strided_calls_of_one_and_two_dimensions_beyond_a_million_elements(device, rng, dtype):
    """Strided operands of one or two dimensions (after merging) with 2^20 elements and more: on CPU-type OpenCL
    devices a two-dimensional range with the op built in (elementwise.cl's ew2, ew_where2); two arrays, a number
    either side, one array, a step and a transpose, an offset view into a poisoned output, where, against NumPy."""
    if dtype not in device.dtypes:
        pytest.skip(f"{device.id} has no {dtype}")
    x = (rng.standard_normal((1031, 1029)) * 4).astype(dtype)
    y = (rng.standard_normal((1029, 1031)) * 4).astype(dtype)
    a, b = hetnn.asarray(x, device=device), hetnn.asarray(y, device=device)
    np.testing.assert_array_equal(hetnn.add(a, b.mT).numpy(), x + y.T)
    np.testing.assert_array_equal(hetnn.subtract(3, a.mT).numpy(), np.array(3, dtype) - x.T)
    np.testing.assert_array_equal(hetnn.multiply(b.mT, 2).numpy(), y.T * np.array(2, dtype))
    np.testing.assert_array_equal(hetnn.negative(a.mT).numpy(), -x.T)
    flat = (rng.standard_normal((1 << 21) + 10) * 4).astype(dtype)  # one dimension with a step: 2^20 + 5 elements
    fb = hetnn.asarray(flat, device=device)
    np.testing.assert_array_equal(hetnn.add(fb[::2], fb[1::2]).numpy(), flat[::2] + flat[1::2])
    np.testing.assert_array_equal(hetnn.abs(fb[::-1]).numpy(), np.abs(flat[::-1]))
    out = hetnn.asarray(np.full((1027, 1030), 5, dtype=dtype), device=device)
    hetnn.add(a[1:, 2:].mT, b[2:, 1:], out=out)
    np.testing.assert_array_equal(out.numpy(), x[1:, 2:].T + y[2:, 1:])
    np.testing.assert_array_equal(hetnn.where(a.mT > b, a.mT, b).numpy(), np.where(x.T > y, x.T, y))
    t = (rng.standard_normal((64, 130, 131)) * 4).astype(dtype)  # three dimensions: the general walk, 1024 a group
    tv = hetnn.permute_dims(hetnn.asarray(t, device=device), (2, 0, 1))
    np.testing.assert_array_equal(hetnn.add(tv, 1).numpy(), np.transpose(t, (2, 0, 1)) + np.array(1, dtype))
    np.testing.assert_array_equal(hetnn.where(fb[::2] > 0, fb[::2], 0).numpy(), np.where(flat[::2] > 0, flat[::2], 0))
    if dtype != "int32":
        np.testing.assert_allclose(hetnn.exp(a.mT / 4).numpy().astype(np.float64),
                                   np.exp(x.T.astype(np.float64) / 4), rtol=2 * np.finfo(dtype).eps)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_reductions_read_views(device, rng, axis):
    x, a = _pair(rng, device, (30, 20), "float32")
    for xv, av in _views(x, a):
        if xv.size == 0:
            continue
        x64 = xv.astype(np.float64)
        if xv.ndim < 2 and axis not in (None, 0):
            continue
        ax = axis if xv.ndim > 1 or axis is None else 0
        np.testing.assert_allclose(hetnn.sum(av, axis=ax).numpy(), x64.sum(axis=ax), rtol=1e-5, atol=1e-4)
        np.testing.assert_array_equal(hetnn.max(av, axis=ax).numpy(), xv.max(axis=ax))
        if ax is None or isinstance(ax, int):
            np.testing.assert_array_equal(hetnn.argmax(av, axis=ax).numpy(), xv.argmax(axis=ax))


def test_other_ops_read_views_through_dense_copies(device, rng):
    x, a = _pair(rng, device, (12, 10))
    w = x[::2].T                                         # (10, 6) transposed view
    got = hetnn.matmul(a[1:5], a[::2].mT)                # (4, 10) @ (10, 6): the transpose read without a copy
    np.testing.assert_allclose(got.numpy(), x[1:5].astype(np.float64) @ w, rtol=1e-5, atol=1e-5)
    got = a[::-1, 1:] @ a[1:10, ::-1]                    # (12, 9) @ (9, 10): flipped views, copied first
    np.testing.assert_allclose(got.numpy(), x[::-1, 1:].astype(np.float64) @ x[1:10, ::-1], rtol=1e-5, atol=1e-5)
    img = a.reshape(1, 1, 12, 10)[..., ::-1, 1:]         # a pooling input that is a view
    pooled = hetnn.max_pool2d(img, 2)
    ref = x[::-1, 1:][:12, :8].reshape(6, 2, 4, 2).max(axis=(1, 3))
    np.testing.assert_array_equal(pooled.numpy()[0, 0], ref)
    np.testing.assert_array_equal(hetnn.sort(a[:, ::-3], axis=0).numpy(), np.sort(x[:, ::-3], axis=0))


def test_matmul_writes_into_a_view_out(device, rng):
    x, a = _pair(rng, device, (8, 8))
    c = hetnn.asarray(np.full((6, 10), np.nan, np.float32), device=device)
    out = c[1:5, ::2]                                     # (4, 5) view of the poisoned array
    hetnn.matmul(a[:4], a[:, :5], out=out)
    want = np.full((6, 10), np.nan, np.float32)
    want[1:5, ::2] = x[:4].astype(np.float64) @ x[:, :5]
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-5, atol=1e-5)


def test_user_kernels_read_and_write_views(device, rng):
    x, a = _pair(rng, device, (10, 12))
    k = hetnn.ElementwiseKernel("T x, T y", "T z", "z = 2 * x + y", "axpy_views")
    got = k(a[::2, 1:], a[1::2, :-1])
    np.testing.assert_allclose(got.numpy(), 2 * x[::2, 1:].astype(np.float64) + x[1::2, :-1], rtol=1e-6)
    c = hetnn.asarray(np.full((12, 10), np.nan, np.float32), device=device)
    k(a[:5, :5], 1.0, c.mT[::2, :5])                      # out: a strided view of a transpose
    want = np.full((12, 10), np.nan, np.float32)
    want.T[::2, :5] = 2 * x[:5, :5] + 1
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-6)
    r = hetnn.ReductionKernel("T x", "T y", "x * x", "a + b", "y = a", "0", "sumsq_views")
    np.testing.assert_allclose(r(a.mT[::-1], axis=1).numpy(), (x.T[::-1].astype(np.float64) ** 2).sum(axis=1),
                               rtol=1e-5)


def test_reshape_views_where_it_can_and_copies_where_it_must(device, rng):
    x, a = _pair(rng, device, (6, 8))
    v = a[:, 1:5]                                         # (6, 4), strides (32, 4), offset 1
    r = v.reshape(3, 2, 4)                                # splits the first axis: still a view
    assert r._a.same_memory(a._a)
    np.testing.assert_array_equal(r.numpy(), x[:, 1:5].reshape(3, 2, 4))
    flat = v.reshape(24)                                  # cannot be a view: a dense copy
    assert not flat._a.same_memory(a._a)
    np.testing.assert_array_equal(flat.numpy(), x[:, 1:5].reshape(24))
    even = a[:, ::2].reshape(24)                          # every other element: one stride, still a view
    assert even._a.same_memory(a._a) and even.strides == x[:, ::2].reshape(24).strides
    with pytest.raises(ValueError, match="without a copy"):
        hetnn.reshape(v, (24,), copy=False)
    assert hetnn.reshape(v, (3, 2, 4), copy=False)._a.same_memory(a._a)


def test_nn_ops_refuse_views_as_outputs(device, rng):
    x, a = _pair(rng, device, (4, 6))
    out = hetnn.zeros((4, 12), device=device)[:, ::2]
    with pytest.raises(ValueError, match="out is a view"):
        hetnn._core.activation(a._a, "relu", out._a)
    with pytest.raises(ValueError, match="out is a view"):
        hetnn.max_pool2d(a.reshape(1, 1, 4, 6), 2, out=hetnn.zeros((1, 1, 2, 6), device=device)[..., ::2])
    y = hetnn._core.activation(a.mT._a, "relu", None)      # a view as the input is read (a dense copy)
    np.testing.assert_array_equal(y.to_numpy(), np.maximum(x.T, 0))


def test_cl_buffer_of_a_view_is_refused(device):
    if device.kind == "cpu":
        pytest.skip("the CPU device has no cl_mem")
    a = hetnn.zeros((4, 4), device=device)
    with pytest.raises(ValueError, match="view"):
        _ = a[1:].cl_buffer
    assert a.cl_buffer


# ---- every op-table row with its arrays uploaded as strided views ---------------------------------------------------
IN_PLACE = {"sgd_update", "adam_update"}  # rows whose arrays are written in place: views refused, by name


def _as_view(upload):
    """An upload whose result is a view holding the same elements: stored reversed along the last axis, every other
    element (the gaps NaN or all-ones bits), read back with stride -2 from an offset."""
    def put(dev, arr, *rest):
        arr = np.asarray(arr)
        if arr.ndim == 0 or arr.size == 0:
            return upload(dev, arr, *rest)
        n = arr.shape[-1]
        big = np.empty(arr.shape[:-1] + (2 * n,), arr.dtype)
        big.view(np.uint8)[...] = 0xFF
        big[..., ::-2] = arr
        v = hetnn._core.getitem(upload(dev, big, *rest), (Ellipsis, slice(None, None, -2)))
        assert not v.is_dense
        return v
    return put


@pytest.mark.parametrize("name", sorted(__import__("op_table").OPS))
def test_every_op_table_row_reads_views(device, rng, monkeypatch, name):
    from conftest import assert_row_matches, supported_dtypes
    from op_table import OPS
    op = OPS[name]
    dtypes = supported_dtypes(device, op.dtypes)
    monkeypatch.setattr(hetnn._core.Array, "from_numpy", staticmethod(_as_view(hetnn._core.Array.from_numpy)))
    monkeypatch.setattr(hetnn._placement, "_numpy_view", _as_view(hetnn._placement._numpy_view))
    for dtype in dtypes[:2]:
        inputs = op.inputs(rng, dtype)
        if name in IN_PLACE:
            with pytest.raises(ValueError, match="is a view of another array's memory"):
                op.run(device, inputs)
            continue
        assert_row_matches(name, op, dtype, op.run(device, inputs), op.reference(inputs))
