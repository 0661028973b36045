import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import hetnn

DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "int8"]


def _random(rng, shape, dtype):
    if dtype == "bfloat16" or np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


@pytest.mark.all_dtypes  # a device that does not take a dtype must refuse it
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 5), (2, 3, 4), (0,), (4, 0, 2)])
def test_roundtrip_preserves_values_shape_dtype(device, rng, dtype, shape):
    if dtype not in device.dtypes:
        with pytest.raises(TypeError, match=dtype):
            hetnn.asarray(np.zeros(shape, dtype), device=device)
        return
    x = _random(rng, shape, dtype)
    a = hetnn.asarray(x, device=device)
    assert a.shape == shape and a.dtype == np.dtype(dtype) and a.device is device
    assert a.ndim == len(shape) and a.size == x.size and a.nbytes == x.nbytes
    y = a.numpy()
    assert y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(np.array(a, copy=True), x)  # an explicit copy (np.asarray: CPU device only)


def test_non_contiguous_and_byteswapped_input_is_converted_not_misread(device, rng):
    base = rng.standard_normal((6, 8)).astype(np.float32)
    for view in (base.T, base[::2, 1::3], base[:, ::-1]):
        np.testing.assert_array_equal(hetnn.asarray(view, device=device).numpy(), view)
    swapped = base.astype(base.dtype.newbyteorder(">"))
    out = hetnn.asarray(swapped, device=device)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), base)


def test_python_lists_and_dtype_argument(device):
    a = hetnn.asarray([[1.5, 2.0], [3.0, 4.0]], dtype="float32", device=device)
    assert a.dtype == np.float32
    np.testing.assert_array_equal(a.numpy(), [[1.5, 2.0], [3.0, 4.0]])
    b = hetnn.asarray([1, 2, 3], device=device)
    assert b.dtype == np.int64


@pytest.mark.parametrize("bad", [np.array([1 + 2j]), np.array(["a"]), np.array([1], np.int16), np.array([object()]),
                                 np.array([1], dtype="datetime64[s]")])
def test_unsupported_dtypes_raise_type_error(device, bad):
    with pytest.raises(TypeError, match="not supported"):
        hetnn.asarray(bad, device=device)


def test_unconvertible_object_raises_type_error(device):
    with pytest.raises(TypeError, match="asarray"):
        hetnn.asarray([[1.0, 2.0], [3.0]], device=device)


@pytest.mark.parametrize("dtype", ["complex64", "int16", "U3", "bfloat17"])  # bool is an array dtype (comparisons)
def test_empty_with_bad_dtype_raises_type_error(dtype):
    with pytest.raises(TypeError):
        hetnn.empty((2, 2), dtype=dtype)


def test_a_dtype_in_any_form_gives_the_same_array_every_time(device):
    """Creation functions remember the dtype specifications they have seen (NumPy's dtype.name costs more than a
    small array): every form, asked twice, gives the same dtype, and a refused one is refused every time."""
    for _ in range(2):
        for spec in ("float32", "f4", np.float32, np.dtype("float32")):
            for make in (hetnn.empty, hetnn.zeros):
                assert make((3,), dtype=spec, device=device).dtype == np.float32
        assert hetnn.ones((2,), dtype=int, device=device).dtype == np.int64
        assert hetnn.zeros_like(hetnn.zeros((2,), dtype="int8", device=device)).dtype == np.int8
        for bad in ("int16", np.complex64, [("a", "f4")]):
            with pytest.raises(TypeError):
                hetnn.empty((2,), dtype=bad, device=device)


@pytest.mark.parametrize("shape,exc", [((-1, 2), ValueError), ((2.5, 3), TypeError), ("abc", TypeError),
                                       ((True, 2), TypeError), (None, TypeError), ([[2]], TypeError)])
def test_bad_shapes(device, shape, exc):
    with pytest.raises(exc, match="shape"):
        hetnn.empty(shape, device=device)


def test_zeros_and_empty(device):
    z = hetnn.zeros((3, 4), device=device)
    np.testing.assert_array_equal(z.numpy(), np.zeros((3, 4), np.float32))
    e = hetnn.empty(5, dtype="int32", device=device)
    assert e.shape == (5,) and e.dtype == np.int32
    assert hetnn.zeros((0, 3), device=device).numpy().shape == (0, 3)


def test_absurd_allocation_raises_memory_error_and_next_call_works(device):
    n = device.global_mem * 4 // 4 + 1024
    with pytest.raises(MemoryError):
        hetnn.empty((n,), dtype="float32", device=device)
    with pytest.raises((MemoryError, ValueError)):
        hetnn.empty((2**40, 2**30), dtype="float64", device=device)
    a = hetnn.asarray(np.arange(6, dtype=np.float32), device=device)
    np.testing.assert_array_equal(a.numpy(), np.arange(6, dtype=np.float32))


@pytest.mark.skipif(not os.path.exists("/proc/meminfo"), reason="needs Linux's /proc/meminfo")
def test_a_cpu_allocation_the_machine_cannot_back_raises_instead_of_being_killed_later():
    """Linux overcommits: an allocation above the memory still available succeeded and the process was killed
    (SIGKILL, results lost) when its pages were written. Held to MemAvailable + free swap now: MemoryError naming
    what is available, and the device goes on working. Run in a child process: nothing of it is written."""
    code = ("import os, hetnn\n"
            "info = dict(l.split(':', 1) for l in open('/proc/meminfo'))\n"
            "kb = lambda k: int(info[k].split()[0]) * 1024\n"
            "avail = kb('MemAvailable') + kb('SwapFree')\n"
            "total = os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE')\n"
            "n = avail + max(256 << 20, (total - avail) // 2)\n"
            "if n >= total: print('SKIP'); raise SystemExit\n"
            "try:\n"
            "    hetnn.empty((n,), dtype='uint8', device='cpu')\n"
            "    print('ALLOCATED', n)\n"
            "except MemoryError as e:\n"
            "    print('REFUSED', e)\n"
            "print(hetnn.asarray([1.0, 2.0], device='cpu').numpy().sum())\n")
    env = {k: v for k, v in os.environ.items() if k != "HETNN_POISON"}  # poisoning would write the block
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    if r.stdout.startswith("SKIP"):
        pytest.skip("swap or memory too large to ask for more than is available")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("REFUSED") and "bytes available now" in r.stdout, r.stdout
    assert r.stdout.rstrip().endswith("3.0")


def test_to_and_copy_between_devices(device, rng):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    a = hetnn.asarray(x, device="cpu")
    b = a.to(device)
    assert b.device is device
    np.testing.assert_array_equal(b.numpy(), x)
    assert b.to(device) is b
    c = b.copy()
    assert c.device is device and c is not b
    np.testing.assert_array_equal(c.numpy(), x)
    back = c.to("cpu")
    np.testing.assert_array_equal(back.numpy(), x)


def test_asarray_of_array_identity_move_and_cast(device, rng):
    x = rng.standard_normal((3,)).astype(np.float32)
    a = hetnn.asarray(x, device=device)
    assert hetnn.asarray(a) is a
    assert hetnn.asarray(a, dtype="float32", device=device) is a
    i = hetnn.asarray(a, dtype="int32")
    assert i.dtype == np.int32 and i.device is device
    np.testing.assert_array_equal(i.numpy(), x.astype(np.int32))


def test_copy_is_independent(device):
    a = hetnn.asarray(np.ones((1, 4), np.float32), device=device)
    b = a.copy()
    zeros = hetnn.zeros((1, 1), "float32", device=device)
    hetnn.matmul(zeros, hetnn.zeros((1, 4), "float32", device=device), out=a)  # overwrite a in place
    np.testing.assert_array_equal(a.numpy(), np.zeros((1, 4), np.float32))
    np.testing.assert_array_equal(b.numpy(), np.ones((1, 4), np.float32))


def test_repr_len_bool_pickle(device):
    a = hetnn.asarray(np.arange(6, dtype=np.float32).reshape(2, 3), device=device)
    r = repr(a)
    assert r.startswith("hetnn.Array(shape=(2, 3), dtype=float32") and device.id in r and "5." in r
    big = hetnn.zeros((100, 100), "float32", device=device)
    assert "\n" not in repr(big)
    assert len(a) == 2
    with pytest.raises(TypeError):
        bool(a)
    with pytest.raises(TypeError):
        len(hetnn.asarray(np.float32(1.0), device=device))
    b = pickle.loads(pickle.dumps(a))
    assert b.device is device
    np.testing.assert_array_equal(b.numpy(), a.numpy())


def test_array_array_protocol_dtype_and_copy_false(device):
    a = hetnn.asarray(np.arange(3, dtype=np.float32), device=device)
    assert np.array(a, dtype=np.float64, copy=True).dtype == np.float64
    if device.kind == "cpu":  # host memory: NumPy views it
        view = np.asarray(a, copy=False)
        view[0] = 5
        assert a.numpy()[0] == 5
    else:
        with pytest.raises(ValueError, match="copy"):
            np.asarray(a, copy=False)


def test_array_is_not_constructible_directly():
    with pytest.raises(TypeError, match="asarray"):
        hetnn.Array(np.zeros(3))


def test_poisoned_allocations_are_nan():
    assert hetnn._core.poison_enabled()
    e = hetnn.empty((4,), dtype="float32", device="cpu").numpy()
    assert np.isnan(e).all()


def test_empty_cache_frees_blocks_kept_for_reuse(device):
    a = hetnn.empty((1024, 1024), dtype="float32", device=device)  # 4 MiB: a pooled size
    del a
    freed = hetnn.empty_cache(device)
    assert freed >= 4 << 20
    assert hetnn.empty_cache(device) == 0
    b = hetnn.zeros((1024, 1024), dtype="float32", device=device)  # allocation still works afterwards
    assert float(b.numpy().sum()) == 0.0


def test_bool_scalars_and_lists_upload_as_bool(device):
    """A bool array uploaded, but a bool scalar or list was refused ("dtype bool is not supported")."""
    for obj, ref in ((True, np.array(True)), (np.bool_(False), np.array(False)),
                     ([True, False], np.array([1, 0], bool))):
        a = hetnn.asarray(obj, device=device)
        assert a.dtype == np.dtype(bool) and a.shape == ref.shape
        np.testing.assert_array_equal(a.numpy(), ref)


def test_full_ones_and_likes_on_every_dtype(device):
    real = "float64" if "float64" in device.dtypes else "float32"
    for fill, dtype, ref_dtype in ((2.5, None, real), (7, None, "int64"), (True, None, "bool"), (3, "uint8", "uint8"),
                                   (-1.5, "float16", "float16"), (2.5, "int32", "int32"), (1, "bfloat16", "bfloat16")):
        if ref_dtype not in device.dtypes:
            continue
        a = hetnn.full((2, 3), fill, dtype=dtype, device=device)
        assert a.device == device and a.dtype.name == ref_dtype and a.shape == (2, 3)
        ref = np.full((2, 3), fill, dtype=np.float32 if ref_dtype == "bfloat16" else ref_dtype)
        np.testing.assert_array_equal(a.numpy().astype(np.float64), ref.astype(np.float64))
    np.testing.assert_array_equal(hetnn.ones((4,), "int8", device=device).numpy(), np.ones(4, np.int8))
    assert hetnn.full((), 3, device=device).shape == () and hetnn.full((0, 2), 1.0, "float32", device=device).size == 0
    x = hetnn.asarray(np.arange(6, dtype=np.int32).reshape(2, 3), device=device)
    for fn, val in ((hetnn.zeros_like, 0), (hetnn.ones_like, 1)):
        y = fn(x)
        assert y.shape == x.shape and y.dtype == x.dtype and y.device == device
        np.testing.assert_array_equal(y.numpy(), np.full((2, 3), val, np.int32))
    z = hetnn.full_like(x, 9, dtype="float32")
    assert z.dtype.name == "float32" and float(z.numpy()[1, 2]) == 9.0
    assert hetnn.empty_like(x).shape == (2, 3)
    with pytest.raises(ValueError, match="out of range for uint8"):
        hetnn.full((2,), 300, dtype="uint8", device=device)
    with pytest.raises(TypeError, match="x must be a hetnn.Array"):
        hetnn.zeros_like(np.zeros(3))


def test_broadcast_to_and_asarray_with_another_dtype(device, rng):
    x = rng.standard_normal((3, 1)).astype(np.float32)
    a = hetnn.asarray(x, device=device)
    for shape in ((3, 4), (2, 3, 4), (3, 1)):
        b = hetnn.broadcast_to(a, shape)
        assert b.device == device
        np.testing.assert_array_equal(b.numpy(), np.broadcast_to(x, shape))
    for bad in ((4, 4), (3,), (-1, 3)):
        with pytest.raises(ValueError, match="broadcast_to"):
            hetnn.broadcast_to(a, bad)
    i = hetnn.asarray(a, dtype="int32")  # converted on the device
    assert i.device == device and i.dtype.name == "int32"
    np.testing.assert_array_equal(i.numpy(), x.astype(np.int32))


def test_asarray_copy_keyword_follows_the_array_api(device):
    a = hetnn.asarray(np.arange(4, dtype=np.float32), device=device)
    same, fresh = hetnn.asarray(a), hetnn.asarray(a, copy=True)
    assert same is a and fresh is not a and fresh.device == a.device
    fresh[0] = hetnn.asarray(np.float32(9), device=device)
    assert a.numpy()[0] == 0  # a copy, not the same memory
    with pytest.raises(ValueError, match="copy=False.*without a copy"):
        hetnn.asarray(a, dtype="float64" if "float64" in device.dtypes else "float16", copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        hetnn.asarray([1.0, 2.0], device=device, copy=False)
    with pytest.raises(TypeError, match="copy must be None or a bool"):
        hetnn.asarray(a, copy="yes")
    if device.kind == "cpu":  # host memory shared with the CPU device
        h = np.ones(3, np.float32)
        v = hetnn.asarray(h, device=device, copy=False)
        h[0] = 5
        assert v.numpy()[0] == 5
    else:
        with pytest.raises(ValueError, match="copy=False"):
            hetnn.asarray(np.ones(3, np.float32), device=device, copy=False)


def test_asarray_of_a_list_of_arrays_stays_on_their_device(device, rng):
    """A nested list of an OpenCL device's Arrays was refused (its host conversion is an implicit copy); it is now
    stacked on the device, numbers beside the Arrays uploaded, dtypes promoted as stack's."""
    x = rng.standard_normal((2, 3)).astype(np.float32)
    a = hetnn.asarray(x, device=device)
    prev = hetnn.set_implicit_host_copies(False)  # the default: an OpenCL Array is never read by NumPy
    try:
        t = hetnn.asarray([[a[i, j] for i in range(2)] for j in range(3)])
        assert t.device == device and t.shape == (3, 2) and t.dtype == np.float32
        np.testing.assert_array_equal(t.numpy(), x.T)
        rows = hetnn.asarray([a[0], a[1], [7, 8, 9]], dtype="float32")
        np.testing.assert_array_equal(rows.numpy(), np.vstack([x, [7, 8, 9]]))
    finally:
        hetnn.set_implicit_host_copies(prev)
    with pytest.raises(ValueError, match="ragged.*\\(2,\\) and \\(3,\\)"):
        hetnn.asarray([a[0], a[1, :2]])
    others = [d for d in hetnn.devices() if d != device]
    if others:
        with pytest.raises(TypeError, match="move them to one device"):
            hetnn.asarray([a[0], hetnn.asarray(x[0], device=others[0])])
        assert hetnn.asarray([a[0], a[1]], device=others[0]).device == others[0]
