"""hetnn opens the OpenCL ICD loader at run time: with none (HETNN_OPENCL_LIBRARY naming nothing that loads, or a
library that is not a loader), `import hetnn` works, the CPU device alone is listed and computes, and the device
table says why there is no OpenCL device; naming the system's loader finds the same devices as the default."""
import json
import os
import shutil
import subprocess
import sys

import pytest

import hetnn

PROBE = r"""
import json, numpy as np, hetnn
rng = np.random.default_rng(int(__import__("sys").argv[1]))
a, b = rng.standard_normal((37, 19)), rng.standard_normal((19, 11))
out = np.asarray(hetnn.matmul(a.astype(np.float32), b.astype(np.float32), device="cpu"), np.float64)
err = float(np.abs(out - a @ b).max() / np.abs(a @ b).max())
print(json.dumps({"devices": [d.id for d in hetnn.devices()], "err": err}))
"""


def _probe(value, seed):
    env = dict(os.environ, HETNN_OPENCL_LIBRARY=value)
    r = subprocess.run([sys.executable, "-c", PROBE, str(seed)], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    r = subprocess.run([sys.executable, "-m", "hetnn", "devices"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    got["table"] = r.stdout
    return got


@pytest.mark.parametrize("value,why", [
    ("none", "HETNN_OPENCL_LIBRARY is 'none'"),
    ("/nonexistent/libOpenCL.so.1", "/nonexistent/libOpenCL.so.1: cannot open shared object file"),
    ("libm.so.6", "libm.so.6 has no clGetPlatformIDs"),
])
def test_without_a_loader_the_cpu_device_works_and_the_table_says_why(value, why, rng):
    got = _probe(value, int(rng.integers(2**31)))
    assert got["devices"] == ["cpu"]
    assert got["err"] < 1e-5
    assert "(OpenCL: OpenCL not loaded: " in got["table"] and why in got["table"]
    assert ("unset it to look for an ICD loader" if value == "none" else "ocl-icd-libopencl1") in got["table"]


@pytest.mark.skipif(not any(d.kind == "opencl" for d in hetnn.devices()), reason="no OpenCL device here")
def test_naming_the_systems_loader_finds_the_same_devices(rng):
    import ctypes.util

    name = ctypes.util.find_library("OpenCL")
    assert name, "an OpenCL device is listed, so a loader is installed"
    got = _probe(name, int(rng.integers(2**31)))
    assert got["devices"] == [d.id for d in hetnn.devices()]


@pytest.mark.skipif(not any("Portable" in d.platform for d in hetnn.devices()), reason="no PoCL device here")
def test_pocl_without_ld_on_path_is_left_out_not_a_crash(rng, tmp_path):
    """PoCL links every kernel with the system's ld and aborts the process building one its cache lacks when ld is
    not on PATH (a venv-only PATH did that): its devices are left out, and the device table says why."""
    env = dict(os.environ, PATH=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", PROBE.replace('device="cpu"', "device=hetnn.devices()[-1]"),
                        str(int(rng.integers(2**31)))], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert json.loads(r.stdout.strip().splitlines()[-1])["devices"] == ["cpu"]
    table = subprocess.run([sys.executable, "-m", "hetnn", "devices"], env=env, capture_output=True, text=True,
                           timeout=120).stdout
    assert "PoCL's devices are left out" in table and "'ld'" in table


def test_module_carries_its_own_cpp_runtime():
    # An OpenCL driver brings its own C++ runtime into the process; a module built by another compiler than the one
    # whose libstdc++.so.6 gets loaded then mixed the two runtimes' locale facets and crashed on the first number it
    # formatted (NVIDIA H200 image, $CXX /opt/gcc/bin/g++). The module links its C++ runtime statically and
    # exports none of it, so it needs no libstdc++.so.6 and lends no std:: runtime symbol to another library.
    readelf, nm = shutil.which("readelf"), shutil.which("nm")
    if not readelf or not nm:
        pytest.skip("binutils (readelf, nm) not installed")
    so = hetnn._core.__file__
    needed = subprocess.run([readelf, "-d", so], capture_output=True, text=True, check=True).stdout
    assert "libstdc++.so" not in needed and "libgcc_s.so" not in needed, needed
    exported = subprocess.run([nm, "-D", "-C", "--defined-only", so], capture_output=True, text=True,
                              check=True).stdout
    runtime = [ln for ln in exported.splitlines() if "std::locale" in ln or "std::basic_ostream" in ln
               or "std::codecvt" in ln or "std::num_put" in ln]
    assert not runtime, runtime[:5]


STATUS = "import hetnn; print([d.id for d in hetnn.devices()]); print(hetnn._core.opencl_status())"


@pytest.mark.parametrize("listed", [True, False], ids=["beside-other-platforms", "no-platform"])
def test_nvidia_driver_without_an_icd_file_is_named(tmp_path, listed):
    """NVIDIA's OpenCL driver installed but named by no ICD file (the GPU machines of docs/gpu.md): the status says
    where the library is and how to list it, beside other platforms and when there is none."""
    libdir = tmp_path / "lib"
    libdir.mkdir()
    (libdir / "libnvidia-opencl.so.1").write_bytes(b"")  # found as a file, never loaded
    env = dict(os.environ, LD_LIBRARY_PATH=f"{libdir}:{os.environ.get('LD_LIBRARY_PATH', '')}")
    if not listed:
        (tmp_path / "vendors").mkdir()
        env["OCL_ICD_VENDORS"] = str(tmp_path / "vendors")  # ocl-icd: no ICD file at all
    r = subprocess.run([sys.executable, "-c", STATUS], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    devices, status = r.stdout.splitlines()[-2:]
    want = f"NVIDIA's OpenCL driver {libdir}/libnvidia-opencl.so.1 is installed but no ICD file names it"
    assert want in status and "/etc/OpenCL/vendors/nvidia.icd" in status and "OCL_ICD_VENDORS" in status, status
    if not listed:
        assert devices == "['cpu']" and status.startswith("no OpenCL platform found: "), (devices, status)


def test_no_nvidia_note_without_the_driver(tmp_path):
    if any(os.path.exists(os.path.join(d, "libnvidia-opencl.so.1")) for d in
           ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/nvidia/lib64"]):
        pytest.skip("NVIDIA's driver is installed here")
    r = subprocess.run([sys.executable, "-c", STATUS], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, LD_LIBRARY_PATH=str(tmp_path)))
    assert r.returncode == 0 and "NVIDIA" not in r.stdout, r.stdout
