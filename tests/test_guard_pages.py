"""No op reads or writes outside its arrays: every op-table row on the CPU device (which computes in NumPy's memory
without a copy) and on the first OpenCL device (its transfers) with each input array placed against an inaccessible
page, once ending where the page begins and once starting where one ends; the NN ops' NumPy `out=` arrays so
placed; and every element-wise function and reduction of the Array API namespace on Arrays viewing such memory
(`asarray(..., copy=False)`), inputs and `out`, at lengths around whole vectors, against the same call on ordinary
memory. A vector load one element past an array's end is invisible in ordinary memory and a segmentation fault here
(max pooling's stride-2 loads once read the float after a row's last tap). Runs in a subprocess, so that such a
fault fails this test instead of taking the worker down; `python tests/test_guard_pages.py` runs it alone."""
import ctypes
import mmap
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SEEDS = 12  # per row, dtype and placement


def _guarded(x, at_end, libc):
    """A copy of the C-contiguous array x in fresh pages, an inaccessible page right after its last byte (at_end)
    or right before its first; anything else returned as it is."""
    if isinstance(x, (list, tuple)):
        return type(x)(_guarded(v, at_end, libc) for v in x)
    if not isinstance(x, np.ndarray) or x.nbytes == 0 or not x.flags.c_contiguous:
        return x
    page = mmap.PAGESIZE
    data = -(-x.nbytes // page)
    mm = mmap.mmap(-1, (data + 2) * page)
    base = np.frombuffer(mm, np.uint8).ctypes.data
    for at in (base, base + (data + 1) * page):
        if libc.mprotect(ctypes.c_void_p(at), page, 0) != 0:
            raise OSError(ctypes.get_errno(), "mprotect")
    offset = page + (data * page - x.nbytes if at_end else 0)
    g = np.frombuffer(mm, x.dtype, x.size, offset).reshape(x.shape)  # keeps mm alive as long as g and its views
    g[...] = x
    return g


def sweep():
    """Every row, dtype, seed and placement on the CPU device and the first OpenCL device (whose uploads read the
    NumPy inputs and whose downloads write the NumPy outputs), the Array API functions on the CPU device; prints one
    line per mismatch and exits 1 on any."""
    sys.path.insert(0, HERE)
    import hetnn

    libc = ctypes.CDLL(None, use_errno=True)
    devs = hetnn.devices()
    cpu = next(d for d in devs if d.kind == "cpu")
    bad, runs = [], 0
    for dev in [cpu] + [d for d in devs if d.kind == "opencl"][:1]:
        runs += _op_rows(hetnn, dev, libc, bad)
    runs += _array_functions(hetnn, cpu, libc, bad)
    print("\n".join(bad) or f"guard pages: {runs} calls, every result within its row's tolerance")
    return 1 if bad else 0


def _op_rows(hetnn, dev, libc, bad):
    """The op table's rows with guarded inputs, pooling rows around whole vectors, and the NN ops' NumPy out=
    arrays guarded. Returns the number of calls."""
    from conftest import rel_err, supported_dtypes
    from op_table import OPS
    import max_pool_reference as ref

    runs = 0
    for name, op in sorted(OPS.items()):
        for dtype in supported_dtypes(dev, op.dtypes):
            for seed in range(SEEDS):
                for at_end in (True, False):
                    inputs = op.inputs(np.random.default_rng(seed), dtype)
                    want = op.reference(inputs)
                    got = op.run(dev, _guarded(inputs, at_end, libc))
                    runs += 1
                    for g, w in zip(got, want):
                        if np.shape(g) != np.shape(w) or rel_err(g, w) > op.tol[dtype]:
                            bad.append(f"{dev.id}: {name} {dtype} seed {seed} at_end {at_end}")
    # Row lengths around whole 16-float vectors for the pooling kernels' vector loads (the row generator's random
    # shapes rarely end a stride-2 chunk on a row's last column).
    rng = np.random.default_rng()
    for w in (31, 32, 33, 47, 48, 63, 64, 65, 96, 97):
        for k, s, idx in ((2, 2, False), (2, 2, True), (3, 2, False), (3, 2, True), (3, 1, False), (2, 1, True)):
            for at_end in (True, False):
                x = rng.standard_normal((2, 3, 4, w)).astype(np.float32)
                want_y, want_i = ref.max_pool2d(x, (k, k), (s, s), (0, 0), (1, 1), False)
                got = hetnn.max_pool2d(_guarded(x, at_end, libc), k, stride=s, return_indices=idx, device=dev)
                runs += 1
                y, i = got if idx else (got, want_i)
                if not (np.array_equal(np.asarray(y), want_y) and np.array_equal(np.asarray(i), want_i)):
                    bad.append(f"{dev.id}: max_pool2d width {w} kernel {k} stride {s} indices {idx} at_end {at_end}")
    # The NN ops' NumPy outputs, written in place.
    for w in (63, 64, 65):
        for at_end in (True, False):
            x = rng.standard_normal((2, 3, 4, w)).astype(np.float32)
            y = _guarded(np.zeros((2, 3, 2, (w - 2) // 2 + 1), np.float32), at_end, libc)
            i = _guarded(np.zeros(y.shape, np.int64), not at_end, libc)
            hetnn.max_pool2d(x, 2, stride=2, return_indices=True, out=y, indices_out=i, device=dev)
            want_y, want_i = ref.max_pool2d(x, (2, 2), (2, 2), (0, 0), (1, 1), False)
            a = _guarded(np.zeros(y.shape, np.float32), at_end, libc)
            hetnn.avg_pool2d(x, 2, stride=2, out=a, device=dev)
            b = rng.standard_normal((w, 17)).astype(np.float32)
            m = _guarded(np.zeros((5, 17), np.float32), at_end, libc)
            hetnn.matmul(x[0, 0, :, :], b, out=m[:4], device=dev)
            runs += 3
            if not (np.array_equal(y, want_y) and np.array_equal(i, want_i)
                    and np.allclose(a, x.reshape(2, 3, 2, 2, -1)[..., : 2 * y.shape[3]].reshape(2, 3, 2, 2, -1, 2)
                                    .mean(axis=(3, 5)), atol=1e-6)
                    and np.allclose(m[:4], x[0, 0].astype(np.float64) @ b, atol=1e-4) and not m[4].any()):
                bad.append(f"{dev.id}: NN ops' out= arrays, width {w}, at_end {at_end}")
    return runs


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    return got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want, equal_nan=got.dtype.kind
                                                                                  in "fc")


def _array_functions(hetnn, dev, libc, bad):
    """Every element-wise function and reduction on Arrays viewing guarded NumPy memory, and into guarded `out`
    Arrays, against the same call on ordinary memory (the same code: bit for bit). Returns the number of calls."""
    from hetnn._elementwise import OPS as EW

    rng = np.random.default_rng()
    view = lambda x: hetnn.asarray(x, copy=False, device=dev)  # noqa: E731
    runs = 0
    for n in (1, 7, 15, 16, 17, 31, 33, 63, 64, 65, 100, 1000, 4097):
        for dtype in ("float32", "float64", "int32"):
            x = (rng.uniform(0.05, 0.95, n) if dtype != "int32" else rng.integers(1, 50, n)).astype(dtype)
            z = (rng.uniform(0.05, 0.95, n) if dtype != "int32" else rng.integers(1, 5, n)).astype(dtype)
            for at_end in (True, False):
                gx, gz = view(_guarded(x, at_end, libc)), view(_guarded(z, not at_end, libc))
                ox, oz = hetnn.asarray(x, device=dev), hetnn.asarray(z, device=dev)
                for op, arity in sorted(EW.items()):
                    f = getattr(hetnn, op)
                    try:
                        want = f(ox) if arity == 1 else f(ox, oz)
                    except TypeError:  # an op this dtype does not take
                        continue
                    got = f(gx) if arity == 1 else f(gx, gz)
                    out = view(_guarded(np.zeros(n, np.asarray(want.numpy()).dtype), at_end, libc))
                    (f(gx, out=out) if arity == 1 else f(gx, gz, out=out))
                    runs += 2
                    if not (_same(got.numpy(), want.numpy()) and _same(out.numpy(), want.numpy())):
                        bad.append(f"{op} {dtype} n {n} at_end {at_end}")
                for red in ("sum", "prod", "max", "min", "mean", "argmax", "argmin", "any", "all", "cumulative_sum",
                            "sort", "argsort"):
                    f = getattr(hetnn, red)
                    for shape, axis in (((n,), None), ((n, 1), 0), ((1, n), -1)):
                        try:
                            want = f(hetnn.reshape(ox, shape), axis=axis)
                        except TypeError:
                            continue
                        got = f(hetnn.reshape(gx, shape), axis=axis)
                        runs += 1
                        if not _same(got.numpy(), want.numpy()):
                            bad.append(f"{red} {dtype} shape {shape} axis {axis} at_end {at_end}")
    return runs


def test_no_op_reads_past_its_inputs():
    r = subprocess.run([sys.executable, os.path.abspath(__file__)], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "HETNN_POISON": "1"})
    assert r.returncode == 0, f"exit status {r.returncode} (a negative one is the signal)\n{r.stdout}\n{r.stderr}"


if __name__ == "__main__":
    sys.exit(sweep())
