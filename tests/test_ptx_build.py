"""The GPU GEMM kernels built for NVIDIA without a GPU (scripts/ptx_check.py: clang to PTX against libclc, NVIDIA's
ptxas for sm_90): the database's members and one variant of every other path (the matrix-unit instruction,
ldmatrix, cp.async, tf32, sm_75's form, the convolution loaders) assemble, no function of the GEMM loops is left
as a call, and the database's members keep their tiles in registers. Needs clang-15 and libclc-15 (Debian;
scripts/setup.sh installs them) and ptxas (the nvidia-cuda-nvcc-cu12 wheel in the test extras)."""
import importlib.util
import os
import sys

import pytest

spec = importlib.util.spec_from_file_location(
    "ptx_check", os.path.join(os.path.dirname(__file__), "..", "scripts", "ptx_check.py"))
ptx_check = importlib.util.module_from_spec(spec)
sys.modules["ptx_check"] = ptx_check  # its dataclasses look their module up
spec.loader.exec_module(ptx_check)

try:
    TOOLS = ptx_check.find_tools()
    MISSING = ""
except FileNotFoundError as e:
    TOOLS, MISSING = None, str(e)
needs = pytest.mark.skipif(TOOLS is None, reason=f"the NVIDIA build check's tools: {MISSING}")


@needs
def test_the_gemm_kernels_assemble_for_nvidia():
    results = ptx_check.check("small", ("sm_90",), TOOLS)
    failed = [f"{r.variant.name} {r.arch}: {r.message}" for r in results if not r.ok]
    assert not failed, "\n".join(failed)
    names = " | ".join(r.variant.name for r in results)
    for path in ("st=3 lm=1", "tf32", "k8", "conv", "weight gradient", "mma half weight gradient", "vtiled_small",
                 "trans=11"):
        assert path in names, path


def _one(tmp_path, source, name="probe"):
    # the PTX as NVIDIA's compiler writes it (hidden instructions left as comments)
    return ptx_check.build(ptx_check.Variant(name, source, "-cl-std=CL1.2", open_hidden=False), "sm_90", TOOLS,
                           str(tmp_path))


@needs
def test_the_check_fails_on_rejected_ptx_and_on_functions_left_as_calls(tmp_path):
    ok = _one(tmp_path, "__kernel void k(__global float* p) { p[get_global_id(0)] = exp(p[0]); }")
    assert ok.ok and ok.registers > 0, ok.message
    bad = _one(tmp_path, '__kernel void k(__global float* p) { asm volatile("mma.sync.bogus;"); }', "bad")
    assert not bad.ok and bad.message.startswith("ptxas"), bad.message
    # a function the compiler does not inline (too big for two call sites) stays a call: what gemm_vtiled's
    # mac_tile was (a plain `inline` function) before it was marked always inlined
    body = "".join(f"  p[i + {k}] = p[i + {k} + 1] * p[i] + {k}.0f;\n" for k in range(400))
    src = (f"inline void helper(__global float* p, int i) {{\n{body}}}\n"
           "__kernel void k(__global float* p) { helper(p, get_local_id(0)); helper(p, 7); }")
    left = _one(tmp_path, src, "left")
    assert not left.ok and left.message == "functions not inlined: helper", left.message


def test_a_run_records_the_programs_it_builds(tmp_path, opencl_device):
    """HETNN_RECORD_PROGRAMS=DIR: each program a process builds or loads, once (its source and options), for
    scripts/ptx_check.py --programs; the recorded source and options build for the device as they are."""
    import subprocess

    from hetnn import _core

    code = ("import numpy as np, hetnn, sys; d = hetnn.device(sys.argv[1]); "
            "a = np.ones((33, 17), np.float32); print(hetnn.matmul(a, a.T, device=d)[0, 0])")
    env = dict(os.environ, HETNN_RECORD_PROGRAMS=str(tmp_path), HETNN_CACHE_DIR=str(tmp_path / "cache"))
    for _ in range(2):  # the second process finds them recorded (and loads the binaries from its disk cache)
        r = subprocess.run([sys.executable, "-c", code, opencl_device.id], env=env, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0 and r.stdout.strip() == "17.0", r.stderr
    recorded = list(ptx_check.recorded(str(tmp_path)))
    assert recorded and len({v.name for v in recorded}) == len(recorded)
    assert any(v.name.startswith(("gemm", "pack")) for v in recorded), [v.name for v in recorded]
    for v in recorded:
        assert v.options.startswith("-cl-std=") and "__kernel" in v.source
        assert not any(line.startswith('#include "') for line in v.source.splitlines())  # expanded
        _core._build_opencl(opencl_device._dev, v.source, v.options)  # the device takes them as recorded


@needs
def test_each_variant_compiles_the_instructions_its_parameters_name(tmp_path):
    """A path compiled out by a wrong macro would assemble and pass the emulated tests: the PTX must hold the
    asynchronous copies where st > 0 (and only there), ldmatrix where lm = 1, sm_75's m16n8k8 steps in that form."""
    by_name = {v.name: v for v in ptx_check.variants("small")}

    def ptx(name):
        r = ptx_check.build(by_name[name], "sm_90", TOOLS, str(tmp_path))
        assert r.ok, r.message
        return r.instructions

    db = ptx("mma half st=0 lm=0 trans=00 vec=1")
    assert db["mma.sync.aligned.m16n8k16"] > 0 and db["cp.async.cg"] == db["ldmatrix.sync"] == 0
    piped = ptx("mma half st=3 lm=1 trans=00 vec=1")
    assert piped["cp.async.cg"] > 0 and piped["cp.async.wait_group"] > 0 and piped["ldmatrix.sync"] > 0
    tf32 = ptx("mma tf32 st=3 lm=1 trans=00 vec=1")
    assert tf32["mma.sync.aligned.m16n8k8"] > 0 and tf32["cp.async.cg"] > 0
    gather = ptx("mma half conv st=3")  # A's copies asynchronous, the gathered B's through registers
    assert gather["cp.async.cg"] > 0
    k8 = ptx("mma half sm_75 form (k8) st=3")  # sm_75 has no cp.async: plain copies in the ring
    assert k8["mma.sync.aligned.m16n8k8"] > 0 and k8["mma.sync.aligned.m16n8k16"] == 0 and k8["cp.async.cg"] == 0


@needs
def test_the_wgmma_probe_s_patched_ptx_assembles_for_sm_90a(tmp_path):
    """scripts/wgmma_probe.c (gpu_session.sh's wgmma-probe stage, on a lent H100/H200): wgmma assembles only in an
    sm_90a module, and NVIDIA's OpenCL compiler writes sm_90. The probe's third way builds its kernels with the
    instructions hidden in PTX comments, then opens them and sets the target: that PTX must assemble for sm_90a with
    every operand substituted, while the instructions left in the source are refused for sm_90."""
    import re
    import shutil
    import subprocess

    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    probe = os.path.join(os.path.dirname(__file__), "..", "scripts", "wgmma_probe.c")
    exe = str(tmp_path / "wgmma_probe")
    subprocess.run([cc, "-O2", probe, "-lOpenCL", "-o", exe], check=True, capture_output=True)

    def emit(n, hide):
        return subprocess.run([exe, "--emit", str(n), str(hide)], check=True, capture_output=True, text=True).stdout

    live = _one(tmp_path, emit(8, 0), "live")
    assert not live.ok and "not supported on .target 'sm_90'" in live.message, live.message
    for n in (8, 256):
        hidden = _one(tmp_path, emit(n, 1), f"hidden{n}")
        assert hidden.ok, hidden.message  # comments: an ordinary sm_90 module
        ptx = tmp_path / f"hidden{n}_sm_90.ptx"
        fixed = subprocess.run([exe, "--patch", str(ptx)], check=True, capture_output=True, text=True).stdout
        assert re.search(r"^\.target sm_90a$", fixed, re.M) and "//WG:" not in fixed
        steps = [ln for ln in fixed.splitlines() if f"wgmma.mma_async.sync.aligned.m64n{n}k16" in ln]
        # a tile per layout (K- or MN-major A and B) and four in the rate's loop
        assert len(steps) == 8 and not any(re.search(r"%\d", ln) for ln in steps), steps[:1]
        (tmp_path / f"fixed{n}.ptx").write_text(fixed)
        r = subprocess.run([TOOLS.ptxas, "-arch=sm_90a", "-c", "-o", str(tmp_path / f"fixed{n}.cubin"),
                            str(tmp_path / f"fixed{n}.ptx")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
