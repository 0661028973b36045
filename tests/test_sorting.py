"""hetnn.sort / hetnn.argsort on every device against the reference (tests/sort_reference.py): every dtype, any
axis, both orders, ties (stability), NaN (the largest value), signed zeros, lines from 1 to a few thousand."""
import numpy as np
import pytest

import hetnn
import sort_reference as ref

DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool"]


def _data(rng, shape, dtype):
    """Values with many ties; floats also with NaN, +0.0 and -0.0; exact in every dtype."""
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype in ("int8", "uint8", "int32", "int64"):
        info = np.iinfo(dtype)
        x = rng.integers(max(info.min, -5), min(info.max, 5) + 1, shape).astype(dtype)
        if x.size:
            x.flat[rng.integers(x.size)] = info.min
            x.flat[rng.integers(x.size)] = info.max
        return x
    x = (rng.integers(-6, 6, shape) / 2).astype(np.float32)
    if x.size:
        for v in (np.nan, -0.0, 0.0, np.inf, -np.inf):
            x.flat[rng.integers(x.size, size=max(1, x.size // 10))] = v
    return x


def _upload(x, dtype, device):
    a = hetnn.asarray(x, device=device)
    return a if str(a.dtype) == dtype else a.astype(dtype)


def _host(a):
    return a.astype("float32").numpy() if str(a.dtype) in ("float16", "bfloat16") else a.numpy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_match_the_reference(device, rng, dtype, descending):
    if dtype not in device.dtypes:
        pytest.skip(f"{device} has no {dtype}")
    for shape in ((1,), (2,), (5,), (17,), (3, 64), (4, 100, 3), (2, 3, 7), (1000,), (2, 2049)):
        x = _data(rng, shape, dtype)
        axis = int(rng.integers(-len(shape), len(shape)))
        a = _upload(x, dtype, device)
        want_i = ref.argsort(x, axis, descending)
        got_i = hetnn.argsort(a, axis=axis, descending=descending)
        assert got_i.dtype == "int64" and got_i.shape == shape
        np.testing.assert_array_equal(got_i.numpy(), want_i, err_msg=f"{shape} axis {axis}")
        got = hetnn.sort(a, axis=axis, descending=descending)
        assert str(got.dtype) == dtype and got.shape == shape
        want = np.take_along_axis(x, want_i, axis=axis)
        np.testing.assert_array_equal(_host(got), want.astype(_host(got).dtype))
        if want.dtype.kind == "f":  # -0.0 and 0.0 keep their own bits and order
            np.testing.assert_array_equal(np.signbit(_host(got)), np.signbit(want))


def test_a_long_line_and_many_lines(device, rng):
    x = rng.standard_normal((3, 5000)).astype(np.float32)
    a = hetnn.asarray(x, device=device)
    np.testing.assert_array_equal(hetnn.sort(a).numpy(), np.sort(x, axis=-1))
    np.testing.assert_array_equal(hetnn.argsort(a, axis=0).numpy(), np.argsort(x, axis=0, kind="stable"))


def test_empty_axes_give_empty_results(device):
    a = hetnn.asarray(np.zeros((3, 0), np.float32), device=device)
    assert hetnn.sort(a).shape == (3, 0) and hetnn.argsort(a, axis=0).shape == (3, 0)


def test_the_input_is_left_as_it_was(device, rng):
    x = rng.standard_normal(50).astype(np.float32)
    a = hetnn.asarray(x, device=device)
    hetnn.sort(a, descending=True)
    np.testing.assert_array_equal(a.numpy(), x)


@pytest.mark.parametrize("call,exc,match", [
    (lambda a: hetnn.sort(a[0, 0]), ValueError, "0-d"),
    (lambda a: hetnn.sort(a, axis=2), ValueError, "axis 2 is out of bounds for an array of 2 dimensions"),
    (lambda a: hetnn.argsort(a, axis=-3), ValueError, "axis -3 is out of bounds"),
    (lambda a: hetnn.sort(a, axis=1.0), TypeError, "axis must be an int, got float"),
    (lambda a: hetnn.sort(a, axis=True), TypeError, "axis must be an int"),
    (lambda a: hetnn.argsort(a, descending="yes"), TypeError, "descending"),
    (lambda a: hetnn.sort(a, stable=None), TypeError, "stable"),
    (lambda a: hetnn.sort(np.zeros(3)), TypeError, r"hetnn.asarray"),
])
def test_bad_calls_name_the_argument(device, call, exc, match):
    a = hetnn.asarray(np.zeros((2, 3), np.float32), device=device)
    with pytest.raises(exc, match=match):
        call(a)


@pytest.mark.parametrize("descending", [False, True])
def test_a_line_long_enough_to_be_split_over_threads(device, rng, descending):
    """One line of 20,001 (the CPU device sorts chunks on its threads, then merges them, ties left chunk first)."""
    x = _data(rng, (20_001,), "float32")
    a = hetnn.asarray(x, device=device)
    with hetnn.num_threads(2):
        got_i = hetnn.argsort(a, descending=descending).numpy()
        got = hetnn.sort(a, descending=descending).numpy()
    want_i = ref.argsort(x, 0, descending)
    np.testing.assert_array_equal(got_i, want_i)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(x[want_i]))
    np.testing.assert_array_equal(got, x[want_i])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_matches_numpy(device, rng, dtype, side):
    """Insertion points of x2 in the ascending x1 (ties, NaN last, values beyond both ends), given sorted or
    through a sorter; NumPy orders NaN last as well."""
    if dtype not in device.dtypes:
        pytest.skip(f"{device} has no {dtype}")
    for n, shape in ((0, (3,)), (1, (4,)), (7, (2, 5)), (300, (40,)), (1000, (3, 3, 3))):
        raw = _data(rng, (n,), dtype)
        a1 = _upload(raw, dtype, device)
        x1 = _host(a1)  # the values hetnn holds (16-bit floats rounded once)
        q = _data(rng, shape, dtype)
        a2 = _upload(q, dtype, device)
        x2 = _host(a2)
        s1 = hetnn.sort(a1)
        got = hetnn.searchsorted(s1, a2, side=side)
        assert got.dtype == "int64" and got.shape == shape
        np.testing.assert_array_equal(got.numpy(), np.searchsorted(np.sort(x1), x2, side=side))
        got_s = hetnn.searchsorted(a1, a2, side=side, sorter=hetnn.argsort(a1))
        np.testing.assert_array_equal(got_s.numpy(), got.numpy())


@pytest.mark.parametrize("call,exc,match", [
    (lambda a, b: hetnn.searchsorted(hetnn.reshape(a, (2, 3)), b), ValueError, r"x1 must be 1-D"),
    (lambda a, b: hetnn.searchsorted(a, b, side="middle"), ValueError, r"side must be 'left' or 'right'"),
    (lambda a, b: hetnn.searchsorted(a, b, side=1), TypeError, r"side must be 'left' or 'right'"),
    (lambda a, b: hetnn.searchsorted(a, b.astype("float64")), TypeError, r"x1 is float32 but x2 is float64"),
    (lambda a, b: hetnn.searchsorted(a, b, sorter=hetnn.argsort(a).astype("int32")), ValueError, "sorter must be"),
    (lambda a, b: hetnn.searchsorted(a, b, sorter=np.arange(6)), TypeError, "sorter must be None or a hetnn.Array"),
    (lambda a, b: hetnn.searchsorted(a, b, sorter=hetnn.full((6,), 9, device=a.device)), (IndexError, ValueError),
     "9"),
    (lambda a, b: hetnn.searchsorted(a, np.zeros(2, np.float32)), TypeError, "hetnn.asarray"),
])
def test_searchsorted_bad_calls_name_the_argument(device, call, exc, match):
    a = hetnn.asarray(np.arange(6, dtype=np.float32), device=device)
    b = hetnn.asarray(np.ones(4, np.float32), device=device)
    with pytest.raises(exc, match=match):
        call(a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_nonzero_matches_numpy(device, rng, dtype):
    """Coordinates of the non-zero elements, one int64 array per dimension, row-major (NaN counts, -0.0 does not)."""
    if dtype not in device.dtypes:
        pytest.skip(f"{device} has no {dtype}")
    for shape in ((1,), (9,), (3, 4), (2, 3, 5), (4, 0), (70, 31)):
        x = _data(rng, shape, dtype)
        if x.size and dtype != "bool":
            x.flat[rng.integers(x.size, size=max(1, x.size // 3))] = 0
        a = _upload(x, dtype, device)
        got = hetnn.nonzero(a)
        want = np.nonzero(_host(a))
        assert isinstance(got, tuple) and len(got) == len(shape)
        for g, w in zip(got, want):
            assert g.dtype == "int64"
            np.testing.assert_array_equal(g.numpy(), w)
    zeros = hetnn.asarray(np.zeros((2, 3), np.float32), device=device)
    assert [c.shape for c in hetnn.nonzero(zeros)] == [(0,), (0,)]
    with pytest.raises(ValueError, match="0-d"):
        hetnn.nonzero(zeros[0, 0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_unique_functions_match_numpy(device, rng, dtype):
    """values ascending, first-occurrence indices, inverse indices (x's shape) and counts, as np.unique gives them
    with equal_nan=False (each NaN its own value)."""
    if dtype not in device.dtypes:
        pytest.skip(f"{device} has no {dtype}")
    for shape in ((1,), (9,), (3, 4), (2, 3, 5), (0,), (40, 30)):
        x = _data(rng, shape, dtype)
        a = _upload(x, dtype, device)
        held = _host(a)
        vals, idx, inv, cnt = np.unique(held.ravel(), return_index=True, return_inverse=True, return_counts=True,
                                        equal_nan=False)
        r = hetnn.unique_all(a)
        np.testing.assert_array_equal(_host(r.values), vals)
        np.testing.assert_array_equal(r.indices.numpy(), idx)
        assert r.inverse_indices.shape == shape
        np.testing.assert_array_equal(r.inverse_indices.numpy().ravel(), inv.ravel())
        np.testing.assert_array_equal(r.counts.numpy(), cnt)
        np.testing.assert_array_equal(_host(hetnn.unique_values(a)), vals)
        c = hetnn.unique_counts(a)
        np.testing.assert_array_equal(c.counts.numpy(), cnt)
        i = hetnn.unique_inverse(a)
        np.testing.assert_array_equal(_host(i.values)[i.inverse_indices.numpy()], held)  # values[inverse] == x
