"""Indexing, manipulation and the creation functions (a[key], a[key] = v, hetnn.permute_dims, matrix_transpose,
flip, concat, stack, expand_dims, squeeze, take, vecdot, moveaxis, roll, tile, repeat, unstack, meshgrid, tril,
triu, arange, linspace, eye) on every device and every dtype it holds, against NumPy on fresh random data: the
elements moved are compared bit for bit (the copies move raw bits), and every refusal is an exception naming the
call."""
import numpy as np
import pytest

import hetnn

from conftest import rel_err

DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool")


def _host(rng, dtype, shape):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in ("int8", "uint8", "int32", "int64"):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, endpoint=True, dtype=dtype)
    x = rng.standard_normal(shape)
    if dtype == "bfloat16":
        from ml_dtypes import bfloat16
        return x.astype(bfloat16)
    return x.astype(dtype)


def _pair(rng, device, dtype, shape):
    if dtype not in device.dtypes:
        pytest.skip(f"{device.id} has no {dtype}")
    x = _host(rng, dtype, shape)
    return x, hetnn.asarray(x, device=device)


def _same(got, want):
    assert isinstance(got, hetnn.Array)
    g = got.numpy()
    assert g.shape == want.shape and g.dtype == want.dtype, (g.shape, g.dtype, want.shape, want.dtype)
    np.testing.assert_array_equal(np.atleast_1d(g).view(np.uint8), np.ascontiguousarray(want).view(np.uint8))


KEYS = [0, -1, 3, slice(None), slice(1, 4), slice(None, None, 2), slice(None, None, -1), slice(5, 0, -2),
        slice(-2, None), slice(4, 2), slice(0, 100, 3), (2, 1), (slice(None), 0), (slice(None), slice(None, None, -3)),
        (Ellipsis, 1), (1, Ellipsis), (None, 2), (slice(1, 5, 2), None, slice(None), -1), (Ellipsis,), (), (None,),
        (-6, slice(2, 3), 3), (slice(None, None, 4), slice(None, None, 2), slice(None, None, -1))]


@pytest.mark.parametrize("dtype", DTYPES)
def test_getitem_matches_numpy_for_every_dtype(device, rng, dtype):
    x, a = _pair(rng, device, dtype, (6, 5, 4))
    for key in KEYS:
        _same(a[key], x[key])
    assert [r.shape for r in a] == [(5, 4)] * 6  # iteration stops at the IndexError of a[6]


@pytest.mark.parametrize("dtype", ("float32", "int8", "float16", "int64"))
def test_setitem_matches_numpy(device, rng, dtype):
    x, a = _pair(rng, device, dtype, (6, 5, 4))
    x = x.copy()
    for key in ((1,), (slice(None, None, 2), 3), (Ellipsis, slice(None, None, -2)), (slice(4, 1, -1), None, 0),
                (slice(None), slice(1, 3), slice(None, None, 3))):
        v = _host(rng, dtype, x[key].shape)
        a[key] = hetnn.asarray(v, device=device)
        x[key] = v
        _same(a, x)
    a[2] = 7  # a Python number, on the device
    x[2] = 7
    a[:, 0] = np.ones(4, x.dtype)  # a NumPy value, broadcast over the rows
    x[:, 0] = 1
    _same(a, x)


def test_setitem_converts_the_value_and_reads_an_overlapping_source_first(device, rng):
    x, a = _pair(rng, device, "float32", (7, 3))
    x = x.copy()
    a[1:] = a[:-1]  # the same memory: read before written
    x[1:] = x[:-1].copy()
    _same(a, x)
    other = "float64" if "float64" in device.dtypes else "int32"
    v = _host(rng, other, (3,))
    a[0] = hetnn.asarray(v, device=device)  # converted to the array's dtype, as NumPy does
    x[0] = v
    _same(a, x)


@pytest.mark.parametrize("dtype", ("float32", "int8", "bfloat16", "bool", "int64"))
@pytest.mark.parametrize("shape,mask_dims", [((7,), 1), ((5, 4), 1), ((5, 4), 2), ((3, 4, 2), 2), ((3, 0, 2), 1),
                                             ((0, 3), 1), ((), 0), ((4, 3), 0)])
def test_boolean_masks_select_and_assign_as_numpy(device, rng, dtype, shape, mask_dims):
    x, a = _pair(rng, device, dtype, shape)
    for p_true in (0.0, 0.4, 1.0):
        m = rng.random(shape[:mask_dims]) < p_true
        mask = hetnn.asarray(m, device=device)
        _same(a[mask], x[m])
        # one value for all, a row broadcast over the selection, one row per true element
        rest = shape[mask_dims:]
        n = int(m.sum())
        for v in (_host(rng, dtype, ()), _host(rng, dtype, rest), _host(rng, dtype, (1,) + rest),
                  _host(rng, dtype, (n,) + rest)):
            y, b = np.array(x, copy=True), hetnn.asarray(x, device=device)
            y[m] = v
            b[mask] = hetnn.asarray(v, device=device) if np.ndim(v) else v.item()
            _same(b, y)


def test_boolean_mask_refusals(device, rng):
    _, a = _pair(rng, device, "float32", (4, 3))
    good = hetnn.asarray(np.array([True, False, True, False]), device=device)
    for key, exc, match in ((hetnn.asarray(np.ones(3, bool), device=device), IndexError, "along axis 0"),
                            (hetnn.asarray(np.ones((4, 3, 1), bool), device=device), IndexError, "more dimensions"),
                            ((good, 0), IndexError, "whole index"), (np.ones(4, bool), IndexError, "hetnn.asarray")):
        with pytest.raises(exc, match=match):
            a[key]
    with pytest.raises(ValueError, match="cannot be broadcast"):
        a[good] = hetnn.zeros((2, 2), "float32", device=device)
    with pytest.raises(ValueError, match="3 rows for the mask's 2 true elements"):
        a[good] = hetnn.zeros((3, 3), "float32", device=device)
    others = [d for d in hetnn.devices() if d != device]
    if others:
        with pytest.raises(TypeError, match="move it with .to"):
            a[hetnn.asarray(np.ones(4, bool), device=others[0])]


def test_bad_indices_raise_index_errors_naming_the_problem(device, rng):
    _, a = _pair(rng, device, "float32", (6, 3, 2))
    for bad, match in ((6, "out of bounds for axis 0 with size 6"), (-7, "out of bounds"), ((0, 3), "axis 1"),
                       ((0, 1, 2, 0), "too many indices"), ((Ellipsis, Ellipsis), "single ellipsis"),
                       (1.0, "valid indices"), (True, "not indices"), ([0, 1], "hetnn.take"),
                       (np.array([0, 1]), "hetnn.take"), ("a", "valid indices")):
        with pytest.raises(IndexError, match=match):
            a[bad]
    with pytest.raises(ValueError, match="step cannot be zero"):
        a[::0]
    with pytest.raises(TypeError, match="slice bounds"):
        a[0.5:]
    with pytest.raises(IndexError):
        hetnn.asarray(np.float32(1.0), device=device)[0]
    with pytest.raises(ValueError, match="broadcast"):
        a[0:2] = np.zeros((3, 3), np.float32)
    with pytest.raises(ValueError, match="convert"):
        a[0] = "text"
    i = hetnn.asarray(np.int64(2), device=device)  # a 0-d integer array is an index
    _same(a[i], a.numpy()[2])


@pytest.mark.parametrize("dtype", ("float32", "float16", "int64", "bool", "uint8"))
def test_permute_transpose_and_flip(device, rng, dtype):
    x, a = _pair(rng, device, dtype, (3, 4, 5, 2))
    for axes in ((0, 1, 2, 3), (3, 2, 1, 0), (1, 0, 3, 2), (2, 0, 3, 1), (-1, 0, 1, 2)):
        _same(hetnn.permute_dims(a, axes), np.transpose(x, axes))
    _same(hetnn.matrix_transpose(a), np.swapaxes(x, -1, -2))
    _same(a.mT, np.swapaxes(x, -1, -2))
    for axis in (None, 0, -1, (1, 2), (0, 1, 2, 3)):
        _same(hetnn.flip(a, axis=axis), np.flip(x, axis=axis))
    y, b = _pair(rng, device, dtype, (0, 3))
    _same(hetnn.flip(b), np.flip(y))
    _same(hetnn.permute_dims(b, (1, 0)), y.T)


def test_large_copies_split_over_threads_match(device, rng):
    x, a = _pair(rng, device, "float32", (300, 257, 3))
    _same(hetnn.permute_dims(a, (2, 0, 1)), np.transpose(x, (2, 0, 1)))
    _same(a[::-2, 5:200:3], x[::-2, 5:200:3])
    _same(hetnn.concat([a, a[:, :7]], axis=1), np.concatenate([x, x[:, :7]], axis=1))


@pytest.mark.parametrize("dtype", ("float32", "int8", "bfloat16", "float64"))
def test_concat_and_stack(device, rng, dtype):
    x, a = _pair(rng, device, dtype, (2, 3, 4))
    y, b = _pair(rng, device, dtype, (2, 5, 4))
    z, c = _pair(rng, device, dtype, (2, 0, 4))
    _same(hetnn.concat([a, b, c], axis=1), np.concatenate([x, y, z], axis=1))
    _same(hetnn.concat((a, a), axis=-1), np.concatenate([x, x], axis=-1))
    _same(hetnn.concat([a, b], axis=None), np.concatenate([x.ravel(), y.ravel()]))
    _same(hetnn.concat([a]), x)
    for axis in (0, 1, 3, -1, -4):
        _same(hetnn.stack([a, a, a], axis=axis), np.stack([x, x, x], axis=axis))


def test_concat_promotes_dtypes(device, rng):
    x, a = _pair(rng, device, "int8", (3, 2))
    y, b = _pair(rng, device, "int32", (1, 2))
    got = hetnn.concat([a, b])
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.numpy(), np.concatenate([x.astype(np.int32), y]))


def test_expand_dims_and_squeeze_are_views(device, rng):
    x, a = _pair(rng, device, "float32", (3, 1, 4))
    e = hetnn.expand_dims(a, axis=-1)
    assert e.shape == (3, 1, 4, 1) and e._a.same_memory(a._a)
    assert hetnn.expand_dims(a, axis=0).shape == (1, 3, 1, 4)
    s = hetnn.squeeze(a, 1)
    assert s.shape == (3, 4) and s._a.same_memory(a._a)
    _same(s, x[:, 0])
    assert hetnn.squeeze(hetnn.expand_dims(a, axis=0), (0, 2)).shape == (3, 4)
    assert hetnn.reshape(a, (4, 3)).shape == (4, 3) and hetnn.reshape(a, (-1,), copy=True).shape == (12,)
    with pytest.raises(ValueError, match="extent 4"):
        hetnn.squeeze(a, 2)
    assert hetnn.expand_dims(a, axis=3).shape == (3, 1, 4, 1) and hetnn.expand_dims(a, axis=-4).shape == (1, 3, 1, 4)
    for axis in (4, -5):
        with pytest.raises(np.exceptions.AxisError, match="new axis goes at -4 to 3"):
            hetnn.expand_dims(a, axis=axis)


def test_axes_out_of_range_are_axis_errors(device, rng):
    """NumPy's AxisError, a ValueError and an IndexError (the Array API's tests ask the latter) from every check."""
    _, a = _pair(rng, device, "float32", (3, 4))
    calls = [lambda: hetnn.sum(a, axis=2), lambda: hetnn.max(a, axis=(0, -3)), lambda: hetnn.flip(a, axis=2),
             lambda: hetnn.sort(a, axis=-3), lambda: hetnn.squeeze(a, 5), lambda: hetnn.expand_dims(a, axis=9),
             lambda: hetnn.tensordot(a, a, axes=([2], [0])), lambda: hetnn.vecdot(a, a, axis=3),
             lambda: hetnn.cumulative_sum(a, axis=4)]
    for call in calls:
        with pytest.raises(np.exceptions.AxisError, match="out of bounds") as info:
            call()
        assert isinstance(info.value, ValueError) and isinstance(info.value, IndexError)


def test_a_zero_length_mask_axis_selects_nothing(device, rng):
    """As NumPy: x[mask] with a mask axis of length 0 where x's is longer selects nothing (an IndexError before)."""
    x, a = _pair(rng, device, "float32", (2, 3, 4))
    for shape in ((0,), (2, 0), (0, 0)):
        m = np.zeros(shape, bool)
        got = a[hetnn.asarray(m, device=device)]
        assert got.shape == x[m].shape
        b = a.copy()
        b[hetnn.asarray(m, device=device)] = 7.0
        _same(b, x)


def test_eye_takes_any_diagonal(device):
    for k in (2**63, -2**80, 3, -3):
        _same(hetnn.eye(3, k=k, dtype="float32", device=device), np.zeros((3, 3), np.float32))


@pytest.mark.parametrize("dtype", ("float32", "int64", "uint8", "float16"))
def test_take_along_each_axis(device, rng, dtype):
    x, a = _pair(rng, device, dtype, (5, 6, 3))
    for axis in (0, 1, 2, -1):
        n = x.shape[axis]
        idx = rng.integers(-n, n, 9)
        for idt in ("int64", "int32", "uint8") if axis == 0 else ("int64",):
            if idt == "uint8":
                idx = np.abs(idx) % n
            i = hetnn.asarray(idx.astype(idt), device=device)
            _same(hetnn.take(a, i, axis=axis), np.take(x, idx, axis=axis))
    y, b = _pair(rng, device, dtype, (7,))
    idx = np.array([6, 0, -1, 3, 3])
    _same(hetnn.take(b, hetnn.asarray(idx, device=device)), y[idx])
    _same(hetnn.take(b, hetnn.asarray(np.zeros(0, np.int64), device=device)), y[:0])


def test_take_refuses_bad_indices(device, rng):
    _, a = _pair(rng, device, "float32", (4, 3))
    for idx, exc, match in (([0, 4], IndexError, "index 4 is out of bounds for axis 0 with size 4"),
                            ([-5], IndexError, "index -5"), ([0.5], TypeError, "integer"),
                            ([[0]], ValueError, "1-d")):
        with pytest.raises(exc, match=match):
            hetnn.take(a, hetnn.asarray(np.array(idx), device=device), axis=0)
    with pytest.raises(ValueError, match="axis may be omitted only"):
        hetnn.take(a, hetnn.asarray(np.array([0]), device=device))
    with pytest.raises(TypeError, match="indices"):
        hetnn.take(a, [0, 1], axis=0)


def test_vecdot_matches_float64(device, rng):
    x, a = _pair(rng, device, "float32", (4, 1, 30))
    y, b = _pair(rng, device, "float32", (5, 30))
    got = hetnn.vecdot(a, b).numpy()
    want = np.sum(x.astype(np.float64) * y.astype(np.float64), axis=-1)
    assert got.shape == want.shape and rel_err(got, want) < 1e-5
    _, c = _pair(rng, device, "float32", (5, 29))
    with pytest.raises(ValueError, match="one extent along axis -1"):
        hetnn.vecdot(a, c)


def test_arange_linspace_and_eye_match_numpy(device):
    real = "float64" if "float64" in device.dtypes else "float32"
    for args, kw in (((5,), {}), ((2, 11, 3), {}), ((10, 0, -2), {}), ((3, 3), {}), ((-4, 4), {"dtype": "int8"}),
                     ((0.5, 3.0, 0.25), {}), ((1, 2, 0.1), {}), ((5,), {"dtype": "float32"}), ((0, -1), {})):
        got = hetnn.arange(*args, device=device, **kw)
        want = np.arange(*args, dtype=kw.get("dtype"))
        if want.dtype.kind == "f" and "dtype" not in kw:
            want = want.astype(real)
        assert got.dtype == want.dtype and got.device is device
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-7 if real == "float64" else 1e-6)
    for args, kw in (((0, 1, 5), {}), ((2, -3, 7), {"endpoint": False}), ((1, 2, 1), {}), ((1, 2, 0), {}),
                     ((0, 10, 4), {"dtype": "float32"})):
        got = hetnn.linspace(*args, device=device, **kw)
        want = np.linspace(*args, **kw).astype(kw.get("dtype", real))
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-7 if got.dtype == np.float64 else 1e-6)
    for args, kw in (((3,), {}), ((3, 5), {"k": 1}), ((4, 2), {"k": -1}), ((2, 3), {"k": 9}), ((0,), {}),
                     ((3,), {"dtype": "int32"}), ((3, 4), {"k": -2, "dtype": "bool"})):
        got = hetnn.eye(*args, device=device, **kw)
        want = np.eye(*args, k=kw.get("k", 0), dtype=kw.get("dtype", real))
        _same(got, want)


def test_creation_refusals(device):
    for call, exc, match in ((lambda: hetnn.arange(0, 5, 0, device=device), ValueError, "step must not be zero"),
                             (lambda: hetnn.arange(True, device=device), TypeError, "bools"),
                             (lambda: hetnn.arange(0, float("inf"), device=device), ValueError, "finite"),
                             (lambda: hetnn.arange(0, 2**62, device=device), ValueError, "too many"),
                             (lambda: hetnn.linspace(0, 1, -1, device=device), ValueError, "non-negative"),
                             (lambda: hetnn.linspace(0, 1, 3, dtype="int32", device=device), TypeError, "floating"),
                             (lambda: hetnn.eye(-1, device=device), ValueError, "non-negative"),
                             (lambda: hetnn.eye(2.5, device=device), TypeError, "n_rows must be an int")):
        with pytest.raises(exc, match=match):
            call()


def test_manipulation_refusals_name_the_call(device, rng):
    _, a = _pair(rng, device, "float32", (2, 3))
    _, b = _pair(rng, device, "float32", (3, 3))
    cases = ((lambda: hetnn.permute_dims(a, (0,)), ValueError, "permute_dims: axes must list"),
             (lambda: hetnn.permute_dims(a, (0, 0)), ValueError, "given twice"),
             (lambda: hetnn.permute_dims(a, (0, 2)), ValueError, "out of bounds"),
             (lambda: hetnn.matrix_transpose(hetnn.zeros((3,), device=device)), ValueError, "at least 2"),
             (lambda: hetnn.flip(a, axis=(1, -1)), ValueError, "given twice"),
             (lambda: hetnn.concat([a, b], axis=1), ValueError, "same shape except along axis 1"),
             (lambda: hetnn.concat([]), ValueError, "at least one"),
             (lambda: hetnn.concat(a), TypeError, "tuple or list"),
             (lambda: hetnn.concat([a, a.numpy()]), TypeError, "hetnn.Array"),
             (lambda: hetnn.stack([a, b]), ValueError, "one shape"),
             (lambda: hetnn.concat([hetnn.zeros((), device=device)]), ValueError, "0-d"))
    for call, exc, match in cases:
        with pytest.raises(exc, match=match):
            call()
    nine = hetnn.zeros((2,) * 9, device=device)
    reversed_axes = hetnn.permute_dims(nine, tuple(range(8, -1, -1)))  # a view: nothing moved yet
    for use in (reversed_axes.numpy, lambda: reversed_axes + 1, reversed_axes.copy):
        with pytest.raises(ValueError, match="more than the 8 supported"):
            use()


def test_mixing_devices_is_a_type_error_naming_both():
    devs = hetnn.devices()
    if len(devs) < 2:
        pytest.skip("one device")
    a = hetnn.zeros((2, 2), device=devs[0])
    b = hetnn.zeros((2, 2), device=devs[1])
    with pytest.raises(TypeError, match=f"{devs[0].id}.*{devs[1].id}|{devs[1].id}.*{devs[0].id}"):
        hetnn.concat([a, b])
    with pytest.raises(TypeError, match="move it"):
        a[0] = b[0]
    with pytest.raises(TypeError, match="indices are on"):
        hetnn.take(a, hetnn.asarray(np.array([0]), device=devs[1]), axis=0)


@pytest.mark.parametrize("dtype", ("float32", "int8", "bfloat16", "float64", "bool"))
def test_moveaxis_roll_tile_repeat_unstack_meshgrid(device, rng, dtype):
    x, a = _pair(rng, device, dtype, (3, 4, 5))
    _same(hetnn.moveaxis(a, 0, -1), np.moveaxis(x, 0, -1))
    _same(hetnn.moveaxis(a, (0, 2), (2, 0)), np.moveaxis(x, (0, 2), (2, 0)))
    for shift, axis in ((7, None), (-3, None), (2, 1), ((1, -2), (0, 2)), (4, (0, 1)), (0, 2), (9, -1)):
        _same(hetnn.roll(a, shift, axis=axis), np.roll(x, shift, axis=axis))
    for reps in ((2,), (1, 3, 1), (2, 1, 1, 2), (0, 1, 1), ()):
        _same(hetnn.tile(a, reps), np.tile(x, reps))
    for repeats, axis in ((2, 1), (3, None), ([1, 0, 2], 0), (0, 2), ([2, 1, 0, 3, 1], -1)):
        _same(hetnn.repeat(a, repeats, axis=axis), np.repeat(x, repeats, axis=axis))
    _same(hetnn.repeat(a, hetnn.asarray(np.array([2, 0, 1]), device=device), axis=0),
          np.repeat(x, [2, 0, 1], axis=0))
    for axis in (0, 1, -1):
        parts = hetnn.unstack(a, axis=axis)
        assert isinstance(parts, tuple) and len(parts) == x.shape[axis]
        for i, p in enumerate(parts):
            _same(p, np.take(x, i, axis=axis))
    g = [_pair(rng, device, dtype, (n,)) for n in (3, 4, 2)]
    for indexing in ("xy", "ij"):
        for got, want in zip(hetnn.meshgrid(*[b for _, b in g], indexing=indexing),
                             np.meshgrid(*[h for h, _ in g], indexing=indexing)):
            _same(got, want)


def test_moveaxis_roll_tile_repeat_unstack_meshgrid_refusals(device, rng):
    _, a = _pair(rng, device, "float32", (2, 3))
    cases = ((lambda: hetnn.moveaxis(a, (0, 1), 0), ValueError, "as many axes"),
             (lambda: hetnn.moveaxis(a, (0, 0), (0, 1)), ValueError, "source names an axis twice"),
             (lambda: hetnn.moveaxis(a, 2, 0), ValueError, "source axis 2 is out of bounds"),
             (lambda: hetnn.roll(a, (1, 2)), ValueError, "without an axis the shift must be one int"),
             (lambda: hetnn.roll(a, (1, 2, 3), axis=(0, 1)), ValueError, "one entry each or as many"),
             (lambda: hetnn.roll(a, 1.5, axis=0), TypeError, "roll: shift must be an int"),
             (lambda: hetnn.tile(a, (2, -1)), ValueError, "repetitions must be >= 0"),
             (lambda: hetnn.repeat(a, [1, 2], axis=1), ValueError, "one per element along axis 1"),
             (lambda: hetnn.repeat(a, -1), ValueError, "repeats must be >= 0"),
             (lambda: hetnn.unstack(hetnn.zeros((), device=device)), ValueError, "0-d array"),
             (lambda: hetnn.unstack(a, axis=2), ValueError, "out of bounds"),
             (lambda: hetnn.meshgrid(a), ValueError, "must be 1-D"),
             (lambda: hetnn.meshgrid(hetnn.zeros((2,), device=device), indexing="yx"), ValueError, "'xy' or 'ij'"))
    for call, exc, match in cases:
        with pytest.raises(exc, match=match):
            call()


@pytest.mark.parametrize("dtype", ("float32", "int8", "bool", "bfloat16", "uint8"))
def test_tril_and_triu_keep_the_dtype_and_match_numpy(device, rng, dtype):
    for shape in ((4, 6), (2, 3, 5, 4), (0, 3), (1, 1)):
        x, a = _pair(rng, device, dtype, shape)
        for k in (-3, -1, 0, 2, 9):
            _same(hetnn.tril(a, k=k), np.tril(x, k))
            _same(hetnn.triu(a, k=k), np.triu(x, k))
    with pytest.raises(ValueError, match="tril: x must have at least 2 dimensions"):
        hetnn.tril(hetnn.zeros((3,), device=device))
    with pytest.raises(TypeError, match="triu: k must be an int"):
        hetnn.triu(a, k=0.5)
