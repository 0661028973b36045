"""Copies between OpenCL devices and ordinary (pageable) NumPy memory staged through page-locked chunks: exact for sizes
around the chunk size, in both directions, beside a stream's work; the path a device takes is measured at its first
large copy and said in Device.transfer_paths(); HETNN_STAGING forces it."""
import os
import subprocess
import sys

import numpy as np
import pytest

import hetnn

MiB = 1 << 20


@pytest.fixture(params=[1, 0], ids=["staged", "direct"])
def staging(request, opencl_device):
    opencl_device._dev._set_transfer_staging(request.param)
    yield request.param
    opencl_device._dev._set_transfer_staging(-1)  # measured again at the next large copy


@pytest.mark.parametrize("n", [4 * MiB, 4 * MiB + 3, 9 * MiB, 13 * MiB + 5])
def test_large_copies_are_exact(opencl_device, staging, rng, n):
    x = rng.integers(0, 256, n, dtype=np.uint8)
    a = hetnn.asarray(x, device=opencl_device)         # host -> device
    back = np.full(n, 0xAB, np.uint8)                  # poisoned
    a.copy_to_host(out=back)                           # device -> host
    np.testing.assert_array_equal(back, x)
    y = rng.integers(0, 256, n, dtype=np.uint8)
    a[...] = y                                         # an assignment from NumPy
    np.testing.assert_array_equal(a.numpy(), y)
    kind = "staged" if staging else "direct"
    assert opencl_device.transfer_paths() == {"h2d": f"{kind} (set for this process)",
                                            "d2h": f"{kind} (set for this process)"}


def test_a_strided_source_and_a_stream(opencl_device, staging, rng):
    f = rng.standard_normal((3000, 1500)).astype(np.float32)
    np.testing.assert_array_equal(hetnn.asarray(f[:, ::3], device=opencl_device).numpy(), f[:, ::3])
    # beside a stream: the read waits for the kernel on the stream that writes what it reads
    spin = hetnn.ElementwiseKernel("float32 x, int32 reps", "float32 y",
                                   "float v = x; for (int j = 0; j < reps; ++j) { v = v * 0.5f + x * 0.5f; } y = v;",
                                   "staging_spin")
    xs = rng.uniform(1, 2, 3 * MiB).astype(np.float32)
    s = hetnn.Stream(opencl_device)
    with s:
        ys = spin(hetnn.asarray(xs, device=opencl_device), 200)
    np.testing.assert_array_equal(ys.numpy(), xs)


def test_the_path_is_measured_at_the_first_large_copy(opencl_device, rng):
    opencl_device._dev._set_transfer_staging(-1)
    x = rng.standard_normal(2 * MiB).astype(np.float32)  # 8 MiB
    a = hetnn.asarray(x, device=opencl_device)
    assert opencl_device.transfer_paths()["d2h"] == "not measured yet"
    np.testing.assert_array_equal(a.numpy(), x)
    paths = opencl_device.transfer_paths()
    for direction in ("h2d", "d2h"):
        assert paths[direction].startswith(("direct (measured", "staged (measured")), paths
        assert "GB/s, staged" in paths[direction]


def test_the_environment_forces_the_path(opencl_device):
    code = ("import numpy as np, hetnn; d = hetnn.device(%r); a = hetnn.asarray(np.ones(1 << 21, np.float32), "
            "device=d); a.numpy(); print(d.transfer_paths())" % opencl_device.id)
    for value, kind in (("0", "direct"), ("1", "staged")):
        out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "HETNN_STAGING": value},
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        assert f"'h2d': '{kind} (HETNN_STAGING={value})'" in out.stdout
        assert f"'d2h': '{kind} (HETNN_STAGING={value})'" in out.stdout


def test_small_copies_and_the_cpu_device_have_no_staging(opencl_device, rng):
    x = rng.standard_normal(1000).astype(np.float32)
    np.testing.assert_array_equal(hetnn.asarray(x, device=opencl_device).numpy(), x)
    assert set(opencl_device.transfer_paths()) <= {"h2d", "d2h"}
    assert hetnn.device("cpu").transfer_paths() == {}
