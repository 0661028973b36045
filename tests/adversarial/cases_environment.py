"""Environment: no OpenCL platform, broken ICD files, unwritable or odd cache locations, garbage HETNN_DEVICE,
thread and OpenMP variables, optimised Python, a deleted working directory."""
import os
from typing import List

from .harness import Case, fill

# Every environment case ends here: CPU ops correct, each OpenCL device either correct or refused with a
# HetnnError/ValueError that says what is wrong, never a crash.
OPS = """
import warnings, numpy as np, hetnn
warnings.simplefilter("ignore")
rng = np.random.default_rng()
a, b = rng.random((67, 45), dtype=np.float32), rng.random((45, 29), dtype=np.float32)
check_close(hetnn.matmul(a, b, device="cpu"), a.astype(np.float64) @ b, what="CPU matmul")
x = rng.random((2, 3, 11, 11), dtype=np.float32)
ref = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3))[:, :, ::2, ::2].max(axis=(4, 5))
for d in hetnn.devices():
    check_close(hetnn.matmul(a, b, device=d), a.astype(np.float64) @ b, what=f"matmul on {d.id}")
    check_close(hetnn.max_pool2d(x, 3, 2, device=d), ref, what=f"max_pool2d on {d.id}")
%s
done()
"""

NO_OPENCL = """
if any(d.kind == "opencl" for d in hetnn.devices()):
    bad_error("an OpenCL device is listed although no platform should load")
with expect_error((ValueError, hetnn.HetnnError), "opencl"):
    hetnn.device("opencl")
"""

POCL_CACHE = """
if any(d.kind == "opencl" for d in hetnn.devices()):
    pass  # PoCL may still run without its cache on another version: fine if it computes (checked above)
else:
    import hetnn._core as c
    with expect_error((ValueError, hetnn.HetnnError), "(?i)pocl|cache"):
        hetnn.device("opencl")
"""

DEFAULT_DEVICE = """
spec = os.environ.get("HETNN_DEVICE", "")
try:
    got = hetnn.matmul(a, b)
except ValueError as exc:
    if "HETNN_DEVICE" not in str(exc):
        bad_error(f"HETNN_DEVICE={spec!r}: the error does not name the variable: {exc}")
else:
    check_close(got, a.astype(np.float64) @ b, what=f"matmul on HETNN_DEVICE={spec!r}")
"""

OPTIMISED = """
with expect_error(ValueError, "(?i)shape|inner|dimension"):
    hetnn.matmul(np.ones((3, 4), np.float32), np.ones((5, 6), np.float32))
with expect_error(ValueError, "kernel_size"):
    hetnn.max_pool2d(np.ones((1, 1, 4, 4), np.float32), 0)
"""

CWD_GONE = """
import os, tempfile
d = tempfile.mkdtemp(dir=TMP)
os.chdir(d)
os.rmdir(d)
from hetnn import nn
m = nn.Sequential([nn.Dense(4, 2)])
m.save(os.path.join(TMP, "m.npz"))
"""



def cases(devs: List[str]) -> List[Case]:
    out: List[Case] = []

    def add(name, env, extra="", setup=None, timeout=90):
        out.append(Case(f"environment/{name}", "environment", fill(OPS, extra), env=env,
                        setup=setup, timeout=timeout))

    def icd_dir(text):
        def setup(tmp):
            (tmp / "vendors").mkdir()
            if text is not None:
                (tmp / "vendors" / "x.icd").write_text(text)
        return setup

    add("no-opencl-platform", {"OCL_ICD_VENDORS": "{tmp}/vendors", "OPENCL_VENDOR_PATH": "{tmp}/vendors"},
        NO_OPENCL, icd_dir(None))
    add("icd-names-a-missing-library", {"OCL_ICD_VENDORS": "{tmp}/vendors"}, NO_OPENCL,
        icd_dir("/nonexistent/libOpenCL-driver.so\n"))
    add("icd-names-a-library-that-is-not-a-driver", {"OCL_ICD_VENDORS": "{tmp}/vendors"}, NO_OPENCL,
        icd_dir("libm.so.6\n"))
    add("icd-file-is-garbage", {"OCL_ICD_VENDORS": "{tmp}/vendors"}, NO_OPENCL, icd_dir("\x00\xff" * 100))
    add("icd-file-starts-with-nul", {"OCL_ICD_VENDORS": "{tmp}/vendors"}, NO_OPENCL, icd_dir("\x00libpocl.so.2"))
    add("icd-file-is-empty", {"OCL_ICD_VENDORS": "{tmp}/vendors"}, NO_OPENCL, icd_dir(""))

    def icd_fifo(tmp):
        (tmp / "vendors").mkdir()
        os.mkfifo(tmp / "vendors" / "x.icd")
    add("icd-file-is-a-fifo", {"OCL_ICD_VENDORS": "{tmp}/vendors"}, NO_OPENCL, icd_fifo)
    add("icd-vendors-names-one-fifo", {"OCL_ICD_VENDORS": "{tmp}/vendors/x.icd"}, NO_OPENCL, icd_fifo)
    add("icd-filenames-missing", {"OCL_ICD_FILENAMES": "/nonexistent.so", "OCL_ICD_VENDORS": "{tmp}/vendors"},
        NO_OPENCL, icd_dir(None))
    add("pocl-devices-garbage", {"POCL_DEVICES": "nosuchdriver"})
    add("pocl-devices-basic", {"POCL_DEVICES": "basic"})
    add("pocl-cache-dir-unwritable", {"POCL_CACHE_DIR": "{tmp}/file/pocl", "POCL_KERNEL_CACHE": None}, POCL_CACHE,
        lambda tmp: (tmp / "file").write_text("x"))
    for spec in ("fpga", "opencl:9:9", "", "  cpu  ", "opencl:x", "cpu:1", "opencl:0:0:0", "x" * 5000, "opencl",
                 "cpu,opencl", "\u00e9t\u00e9"):
        add(f"hetnn-device-{spec[:20]!r}", {"HETNN_DEVICE": spec}, DEFAULT_DEVICE)
    cache_cases = {
        "under-a-file": ("{tmp}/file/cache", lambda tmp: (tmp / "file").write_text("x")),
        "relative": ("rel/cache", None),
        "path-too-long": ("{tmp}/" + "/".join(["d" * 200] * 25), None),
        "in-proc": ("/proc/self/hetnn", None),
        "off": ("off", None),
        "empty": ("", None),
        "odd-characters": ("{tmp}/ca che/\u00e9\n\tx", None),
    }
    for name, (path, setup) in cache_cases.items():
        add(f"hetnn-cache-dir-{name}", {"HETNN_CACHE_DIR": path}, setup=setup)
    add("no-home-no-xdg", {"HOME": None, "XDG_CACHE_HOME": None, "HETNN_CACHE_DIR": None})
    add("home-nonexistent", {"HOME": "/nonexistent/home", "XDG_CACHE_HOME": None, "HETNN_CACHE_DIR": None})
    add("xdg-cache-under-a-file", {"XDG_CACHE_HOME": "{tmp}/file/x", "HETNN_CACHE_DIR": None},
        setup=lambda tmp: (tmp / "file").write_text("x"))
    for var, vals in {"OMP_NUM_THREADS": ("0", "-1", "abc", "100000", "2,1", ""),
                      "GOMP_SPINCOUNT": ("abc", "-5", "infinite"), "OMP_WAIT_POLICY": ("bogus", "active"),
                      "OMP_PROC_BIND": ("true", "spread"), "OMP_DYNAMIC": ("true",),
                      "ONEDNN_MAX_CPU_ISA": ("SSE41", "AVX2", "garbage"),
                      "ONEDNN_PRIMITIVE_CACHE_CAPACITY": ("0", "-3"), "OPENBLAS_NUM_THREADS": ("0", "64")}.items():
        for v in vals:
            add(f"{var.lower()}-{v!r}", {var: v})
    add("omp-dynamic-with-more-threads-than-cpus", {"OMP_DYNAMIC": "true", "OMP_NUM_THREADS": "8"})
    add("python-optimised", {"PYTHONOPTIMIZE": "2"}, OPTIMISED)
    add("tmpdir-missing", {"TMPDIR": "/nonexistent/tmp"})
    add("c-locale", {"LC_ALL": "C", "LANG": "C"})
    add("working-directory-deleted", {}, CWD_GONE)
    out.append(Case("environment/cli-optimised-python-help", "environment", argv=["bench", "--help"],
                    env={"PYTHONOPTIMIZE": "2"}, stdout="--repeat"))
    out.append(Case("environment/cli-devices-without-opencl", "environment", argv=["devices"],
                    env={"OCL_ICD_VENDORS": "{tmp}/vendors"}, setup=icd_dir(None), stdout="cpu"))
    out.append(Case("environment/cli-bench-opencl-without-opencl", "environment",
                    argv=["bench", "matmul", "--device", "opencl", "--no-output"], rc=2,
                    env={"OCL_ICD_VENDORS": "{tmp}/vendors"}, setup=icd_dir(None), stderr="opencl", within=20))
    out.append(Case("environment/cli-stdout-closed", "environment", code="""
import subprocess, sys
r = subprocess.run(f"'{sys.executable}' -m hetnn devices >&-", shell=True, capture_output=True, text=True, timeout=60)
if r.returncode < 0 or "Traceback" in r.stderr:
    bad_error(f"devices with stdout closed: exit {r.returncode}: {r.stderr[-500:]}")
r = subprocess.run(f"'{sys.executable}' -m hetnn devices | head -c 10 > /dev/null", shell=True, capture_output=True,
                   text=True, timeout=60)
if "Traceback" in r.stderr:
    bad_error(f"devices into a closed pipe: {r.stderr[-500:]}")
done()
"""))
    return out
