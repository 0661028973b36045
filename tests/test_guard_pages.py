"""No op reads outside its inputs: every op-table row on the CPU device (which computes in NumPy's memory without a
copy) with each input array placed against an inaccessible page, once ending where the page begins and once starting
where one ends. A vector load one element past an input's end is invisible in ordinary memory and a segmentation
fault here (max pooling's stride-2 loads once read the float after a row's last tap). Runs in a subprocess, so
that such a fault fails this test instead of taking the worker down; `python tests/test_guard_pages.py` runs it
alone."""
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
    """Every row, dtype, seed and placement; prints one line per mismatch and exits 1 on any."""
    sys.path.insert(0, HERE)
    import hetnn
    from conftest import rel_err, supported_dtypes
    from op_table import OPS
    import max_pool_reference as ref

    libc = ctypes.CDLL(None, use_errno=True)
    dev = next(d for d in hetnn.devices() if d.kind == "cpu")
    bad, runs = [], 0
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
                            bad.append(f"{name} {dtype} seed {seed} at_end {at_end}")
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
                    bad.append(f"max_pool2d width {w} kernel {k} stride {s} indices {idx} at_end {at_end}")
    print("\n".join(bad) or f"guard pages: {runs} calls, every result within its row's tolerance")
    return 1 if bad else 0


def test_no_op_reads_past_its_inputs():
    r = subprocess.run([sys.executable, os.path.abspath(__file__)], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "HETNN_POISON": "1"})
    assert r.returncode == 0, f"exit status {r.returncode} (a negative one is the signal)\n{r.stdout}\n{r.stderr}"


if __name__ == "__main__":
    sys.exit(sweep())
