"""hetnn.tensordot and hetnn.linalg (matmul, matrix_transpose, vecdot, tensordot, outer, diagonal, trace,
vector_norm, matrix_norm) on every device against NumPy in float64 (integers exactly, wrapping as NumPy's), with
zero-size shapes and the refusals."""
import math

import numpy as np
import pytest

import hetnn
from hetnn import linalg

from conftest import rel_err

TOL = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-2}


def _data(rng, dtype, shape):
    if dtype.startswith("int"):
        return rng.integers(-50, 50, shape).astype(dtype)
    return rng.uniform(-1, 1, shape).astype(dtype)


@pytest.mark.parametrize("dtype", ("float32", "float64", "float16", "int32", "int8"))
@pytest.mark.parametrize("sa,sb,axes", [((3, 4, 5), (4, 5, 6), 2), ((3, 4), (4, 2), 1), ((3,), (4,), 0),
                                        ((2, 3, 4), (4, 3, 5), ([1, 2], [1, 0])), ((5, 2), (2, 5), ((0,), (1,))),
                                        ((0, 3), (3, 4), 1), ((3, 0), (0, 4), 1), ((2, 3), (2, 3), 2)])
def test_tensordot_matches_numpy(device, rng, dtype, sa, sb, axes):
    if dtype not in device.dtypes:
        pytest.skip(f"{device.id} has no {dtype}")
    a, b = _data(rng, dtype, sa), _data(rng, dtype, sb)
    want = np.tensordot(a.astype(np.float64), b.astype(np.float64), axes=axes)
    got = hetnn.tensordot(hetnn.asarray(a, device=device), hetnn.asarray(b, device=device), axes=axes)
    assert got.dtype == np.result_type(a, b) and got.shape == want.shape
    if dtype.startswith("int"):  # exact, wrapped to the type as NumPy's
        np.testing.assert_array_equal(got.numpy(), np.tensordot(a, b, axes=axes))
    else:
        assert rel_err(got.numpy(), want) < TOL[dtype]
    assert linalg.tensordot is hetnn.tensordot


def test_tensordot_promotes_and_refuses(device, rng):
    a = hetnn.asarray(_data(rng, "float32", (3, 4)), device=device)
    i = hetnn.asarray(_data(rng, "int32", (4, 2)), device=device)
    assert hetnn.tensordot(a, i, axes=1).dtype == np.float32
    bad = hetnn.asarray(np.ones((5, 2), np.float32), device=device)
    for call, exc, match in ((lambda: hetnn.tensordot(a, bad, axes=1), ValueError, "differ in extent"),
                             (lambda: hetnn.tensordot(a, a, axes=3), ValueError, r"must be in \[0, 2\]"),
                             (lambda: hetnn.tensordot(a, a, axes=([0], [0, 1])), ValueError, "as many summed axes"),
                             (lambda: hetnn.tensordot(a, a, axes=([5], [0])), ValueError, "out of bounds"),
                             (lambda: hetnn.tensordot(a, a, axes=([0, 0], [0, 0])), ValueError, "given twice"),
                             (lambda: hetnn.tensordot(a, a, axes=1.5), TypeError, "axes must be an int"),
                             (lambda: hetnn.tensordot(a, a, axes=([0], [0], [0])), ValueError, "pair"),
                             (lambda: hetnn.tensordot(a > 0, a > 0, axes=1), TypeError, "numeric"),
                             (lambda: hetnn.tensordot(a.numpy(), a, axes=1), TypeError, "hetnn.Array")):
        with pytest.raises(exc, match=match):
            call()
    others = [d for d in hetnn.devices() if d != device]
    if others:
        with pytest.raises(TypeError, match="move one"):
            hetnn.tensordot(a, a.to(others[0]), axes=1)


def test_outer_diagonal_and_trace(device, rng):
    x, y = _data(rng, "float32", (4,)), _data(rng, "float32", (3,))
    x[0], y[1] = -0.0, -1.0  # signed zeros as NumPy's: the products alone (a sum from 0 gave +0.0)
    got = linalg.outer(hetnn.asarray(x, device=device), hetnn.asarray(y, device=device))
    np.testing.assert_array_equal(got.numpy().view(np.uint32), np.outer(x, y).view(np.uint32))
    np.testing.assert_array_equal(hetnn.tensordot(hetnn.asarray(x, device=device), hetnn.asarray(y, device=device),
                                                  axes=0).numpy().view(np.uint32), np.outer(x, y).view(np.uint32))
    m = _data(rng, "int32", (2, 4, 5))
    a = hetnn.asarray(m, device=device)
    for k in (0, 1, 3, 4, 5, -1, -3, -4, -6):
        np.testing.assert_array_equal(linalg.diagonal(a, offset=k).numpy(), np.diagonal(m, k, -2, -1))
        t = linalg.trace(a, offset=k)
        assert t.dtype == np.int64
        np.testing.assert_array_equal(t.numpy(), np.trace(m, k, -2, -1))
    with pytest.raises(ValueError, match="1-d"):
        linalg.outer(a, a)
    with pytest.raises(ValueError, match="at least 2"):
        linalg.diagonal(hetnn.asarray(x, device=device))
    with pytest.raises(TypeError, match="offset must be an int"):
        linalg.diagonal(a, offset=1.0)


def _ref_norm(x, ord, axis, keepdims):
    m = np.abs(x)
    if ord in (math.inf, -math.inf):
        return (np.max if ord > 0 else np.min)(m, axis=axis, keepdims=keepdims)
    if ord == 0:
        return np.sum(x != 0, axis=axis, keepdims=keepdims).astype(np.float64)
    return np.sum(m ** ord, axis=axis, keepdims=keepdims) ** (1 / ord)


@pytest.mark.parametrize("ord", (2, 1, 0, math.inf, -math.inf, 3, 0.5))
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_vector_norm_matches_numpy(device, rng, ord, axis, keepdims):
    x = _data(rng, "float32", (3, 4, 5))
    x[0, 0, :2] = 0  # ord 0 counts them out
    want = _ref_norm(x.astype(np.float64), ord, axis, keepdims)
    got = linalg.vector_norm(hetnn.asarray(x, device=device), axis=axis, keepdims=keepdims, ord=ord)
    assert got.dtype == np.float32 and got.shape == want.shape
    assert rel_err(got.numpy(), want) < 1e-5


@pytest.mark.parametrize("ord", ("fro", 1, -1, math.inf, -math.inf))
@pytest.mark.parametrize("keepdims", (False, True))
def test_matrix_norm_matches_numpy(device, rng, ord, keepdims):
    x = _data(rng, "float32", (2, 3, 4, 5))
    want = np.linalg.norm(x.astype(np.float64), ord=ord, axis=(-2, -1), keepdims=keepdims)
    got = linalg.matrix_norm(hetnn.asarray(x, device=device), keepdims=keepdims, ord=ord)
    assert got.shape == want.shape and rel_err(got.numpy(), want) < 1e-5


def test_norms_of_integers_and_refusals(device, rng):
    i = _data(rng, "int32", (4, 3))
    got = linalg.vector_norm(hetnn.asarray(i, device=device))
    real = hetnn.__array_namespace_info__().default_dtypes(device=device)["real floating"]
    assert got.dtype == real and rel_err(got.numpy(), np.linalg.norm(i.astype(np.float64))) < 1e-6
    a = hetnn.asarray(i, device=device)
    for call, exc, match in ((lambda: linalg.matrix_norm(a, ord=2), ValueError, "singular values"),
                             (lambda: linalg.matrix_norm(a, ord="nuc"), ValueError, "singular values"),
                             (lambda: linalg.matrix_norm(a, ord=3), ValueError, "'fro', 1, -1, inf"),
                             (lambda: linalg.matrix_norm(a[0], ord="fro"), ValueError, "at least 2"),
                             (lambda: linalg.vector_norm(a, ord="x"), TypeError, "real number"),
                             (lambda: linalg.vector_norm(a > 0), TypeError, "numeric")):
        with pytest.raises(exc, match=match):
            call()


def test_the_namespace_has_what_it_names():
    for name in linalg.__all__:
        assert callable(getattr(linalg, name)), name
    assert hetnn.linalg.matmul is hetnn.matmul and hetnn.linalg.vecdot is hetnn.vecdot
