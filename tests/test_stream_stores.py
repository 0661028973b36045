"""Streaming stores for large outputs on the CPU device (cpp/src/backend/cpu/stream_store.h): on processors whose
table entry says so, element-wise outputs from a measured size are computed into a chunk and written with
non-temporal stores, and the STREAM-style ceilings are measured the same way. Forced on for every size here, so
that the path runs on any x86-64: every op and dtype gives the same bits as with regular stores, the ceilings'
kernels compute what they say, and the hook refuses what it does not take."""
import numpy as np
import pytest

import hetnn
from hetnn import _core

from test_elementwise import FLOATS, INTS, OPS, _host, _takes, _upload

N = 2 * (1 << 16) + 777  # two of the threads' pieces and a ragged end of a chunk
NEVER = 1 << 62


@pytest.fixture
def cpu():
    return hetnn.device("cpu")


def _with(threshold, fn):
    _core._set_stream_store_threshold(threshold)
    try:
        return fn()
    finally:
        _core._set_stream_store_threshold(-1)


def _poisoned(want):
    """An output whose every element differs from ``want`` (each byte inverted; a bool negated)."""
    if want.dtype == np.bool_:
        return np.logical_not(want)
    return (want.view(np.uint8) ^ 0xFF).view(want.dtype)


@pytest.mark.parametrize("op", sorted(OPS))
def test_every_op_streams_the_bits_regular_stores_write(cpu, rng, op):
    arity = OPS[op][0]
    for dtype in FLOATS + INTS + ("bool",):
        if dtype not in cpu.dtypes or not _takes(op, dtype):
            continue
        args = [_upload(cpu, _host(rng, op, dtype, (N,)), dtype) for _ in range(arity)]
        regular = _with(NEVER, lambda: getattr(hetnn, op)(*args))
        want = regular.numpy()
        out = _upload(cpu, _poisoned(want), regular.dtype.name)
        got = _with(0, lambda: getattr(hetnn, op)(*args, out=out))
        assert got is out
        np.testing.assert_array_equal(out.numpy().view(np.uint8), want.view(np.uint8), err_msg=f"{op} {dtype}")


@pytest.mark.parametrize("src", ["float32", "float64", "int32", "bool", "float16"])
def test_casts_stream_the_bits_regular_stores_write(cpu, rng, src):
    x = _upload(cpu, _host(rng, "add", src, (N,)), src)
    for dst in FLOATS + INTS + ("bool",):
        if dst not in cpu.dtypes:
            continue
        want = _with(NEVER, lambda: x.astype(dst)).numpy()
        got = _with(0, lambda: x.astype(dst)).numpy()
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8), err_msg=f"{src} -> {dst}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "bool", "bfloat16"])
def test_where_streams_the_bits_regular_stores_write(cpu, rng, dtype):
    if dtype not in cpu.dtypes:
        pytest.skip(f"cpu has no {dtype}")
    cond = hetnn.asarray(rng.integers(0, 2, N).astype(bool), device=cpu)
    x, y = (_upload(cpu, _host(rng, "add", dtype, (N,)), dtype) for _ in range(2))
    want = _with(NEVER, lambda: hetnn.where(cond, x, y)).numpy()
    got = _with(0, lambda: hetnn.where(cond, x, y)).numpy()
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    np.testing.assert_array_equal(got, np.where(cond.numpy(), x.numpy(), y.numpy()))


def test_a_streamed_add_matches_numpy_and_overwrites_a_poisoned_output(cpu, rng):
    a, b = rng.random(N, dtype=np.float32), rng.random(N, dtype=np.float32)
    out = hetnn.asarray(np.full(N, np.nan, dtype=np.float32), device=cpu)
    _with(0, lambda: hetnn.add(hetnn.asarray(a, device=cpu), hetnn.asarray(b, device=cpu), out=out))
    np.testing.assert_array_equal(out.numpy(), a + b)


@pytest.mark.parametrize("kind", ["triad", "copy"])
def test_the_ceilings_kernels_compute_what_they_time_when_streamed(rng, kind):
    n = N
    a = np.full(n, np.nan, dtype=np.float32)
    b, c = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    _with(0, lambda: _core._stream_kernel(kind, a, b, c, 3.0))
    want = b.astype(np.float64) + 3.0 * c if kind == "triad" else b
    np.testing.assert_allclose(a, want, rtol=1e-6)
    copy, triad = _with(0, lambda: _core._stream(1 << 20, 2))
    assert copy > 0 and triad > 0


def test_the_threshold_hook_refuses_what_it_does_not_take():
    with pytest.raises(ValueError, match="bytes must be -1"):
        _core._set_stream_store_threshold(-2)
    assert _with(0, lambda: _core._stream_output(1)) and not _with(NEVER, lambda: _core._stream_output(1 << 40))
    assert _core._stream_store_rule()


def test_a_user_kernel_streams_every_output_and_keeps_outputs_it_reads(cpu, rng):
    """Two outputs of different sizes (float32, int64), one using the index i, a number and a float16 input:
    the same bits as regular stores, over poisoned outputs; an output the code reads (y = y * 2 + x) is read
    as it was."""
    k = hetnn.ElementwiseKernel("float32 x, float16 h, float32 s", "float32 z, int64 w",
                                "z = x * s + (float)h; w = i * 3 - (int64_t)(x * 100)", "two_outs")
    x = hetnn.asarray(rng.standard_normal(N).astype(np.float32), device=cpu)
    h = hetnn.asarray(rng.standard_normal(N).astype(np.float16), device=cpu)
    z0, j0 = _with(NEVER, lambda: k(x, h, 1.5))
    z = hetnn.asarray(_poisoned(z0.numpy()), device=cpu)
    j = hetnn.asarray(_poisoned(j0.numpy()), device=cpu)
    _with(0, lambda: k(x, h, 1.5, z, j))
    np.testing.assert_array_equal(z.numpy().view(np.uint32), z0.numpy().view(np.uint32))
    np.testing.assert_array_equal(j.numpy(), j0.numpy())
    np.testing.assert_array_equal(j.numpy(), np.arange(N) * 3 - (x.numpy() * np.float32(100)).astype(np.int64))
    twice = hetnn.ElementwiseKernel("float32 x", "float32 y", "y = y * 2 + x", "twice_plus")
    y0 = rng.standard_normal(N).astype(np.float32)
    y = hetnn.asarray(y0, device=cpu)
    _with(0, lambda: twice(x, y))
    np.testing.assert_array_equal(y.numpy(), y0 * np.float32(2) + x.numpy())
