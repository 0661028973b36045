"""Copies between OpenCL devices and ordinary (pageable) NumPy memory staged through page-locked chunks: exact for sizes
around the chunk size, in both directions, beside a stream's work; the path a device takes is measured once per
direction and said in Device.transfer_paths; HETNN_STAGING forces it. The staged path runs in a child process with
HETNN_STAGING=1 (a process measures its device once)."""
import os
import subprocess
import sys
import textwrap

import numpy as np

import hetnn

_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import hetnn

    d = hetnn.device(sys.argv[1])
    rng = np.random.default_rng(int(sys.argv[2]))
    MiB = 1 << 20
    for n in (4 * MiB, 4 * MiB + 3, 9 * MiB, 13 * MiB + 5):
        x = rng.integers(0, 256, n, dtype=np.uint8)
        a = hetnn.asarray(x, device=d)                      # host -> device, staged
        back = np.full(n, 0xAB, np.uint8)                  # poisoned
        a.copy_to_host(out=back)                           # device -> host, staged
        assert np.array_equal(back, x), n
        assert np.array_equal(a.numpy(), x), n
        y = rng.integers(0, 256, n, dtype=np.uint8)
        a[...] = y                                         # an assignment from NumPy
        assert np.array_equal(a.numpy(), y), n
    f = rng.standard_normal((3000, 1500)).astype(np.float32)
    v = hetnn.asarray(f[:, ::3], device=d)                 # a strided source, made contiguous first
    assert np.array_equal(v.numpy(), f[:, ::3])
    # beside a stream: the staged read waits for the kernel that writes what it reads
    spin = hetnn.ElementwiseKernel("float32 x, int32 reps", "float32 y",
                                   "float v = x; for (int j = 0; j < reps; ++j) { v = v * 0.5f + x * 0.5f; } y = v;",
                                   "staging_spin")
    xs = rng.uniform(1, 2, 3 * MiB).astype(np.float32)
    s = hetnn.Stream(d)
    with s:
        ys = spin(hetnn.asarray(xs, device=d), 200)
    assert np.array_equal(ys.numpy(), xs)
    print(d.transfer_paths)
""")


def _run(dev, env_value, seed):
    env = {**os.environ, "HETNN_STAGING": env_value}
    out = subprocess.run([sys.executable, "-c", _CHILD, dev.id, str(seed)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_staged_copies_are_exact(opencl_device, rng):
    paths = _run(opencl_device, "1", int(rng.integers(1 << 30)))
    assert "'h2d': 'staged (HETNN_STAGING=1)'" in paths and "'d2h': 'staged (HETNN_STAGING=1)'" in paths


def test_direct_copies_when_forced(opencl_device, rng):
    paths = _run(opencl_device, "0", int(rng.integers(1 << 30)))
    assert "'h2d': 'direct (HETNN_STAGING=0)'" in paths and "'d2h': 'direct (HETNN_STAGING=0)'" in paths


def test_the_path_is_measured_at_the_first_large_copy(opencl_device, rng):
    paths = _run(opencl_device, "", int(rng.integers(1 << 30)))
    for direction in ("h2d", "d2h"):
        assert f"'{direction}': 'direct (measured" in paths or f"'{direction}': 'staged (measured" in paths, paths
        assert "GB/s, staged" in paths


def test_small_copies_and_the_cpu_device_have_no_staging(opencl_device, rng):
    x = rng.standard_normal(1000).astype(np.float32)
    np.testing.assert_array_equal(hetnn.asarray(x, device=opencl_device).numpy(), x)
    paths = opencl_device.transfer_paths
    assert set(paths) <= {"h2d", "d2h"}
    assert hetnn.device("cpu").transfer_paths == {}
