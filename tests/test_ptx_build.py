"""The GPU GEMM kernels built for NVIDIA without a GPU (scripts/ptx_check.py: clang to PTX, NVIDIA's ptxas for
sm_80 and sm_90): every matrix-unit and vtiled variant assembles, no helper is left as a call, and the database's
members keep their tiles in registers. Needs a clang that targets nvptx64 (Debian's clang, installed by
scripts/setup.sh) and ptxas (the nvidia-cuda-nvcc-cu12 wheel in the test extras)."""
import importlib.util
import os
import sys

import pytest

spec = importlib.util.spec_from_file_location(
    "ptx_check", os.path.join(os.path.dirname(__file__), "..", "scripts", "ptx_check.py"))
ptx_check = importlib.util.module_from_spec(spec)
sys.modules["ptx_check"] = ptx_check  # its dataclasses look their module up
spec.loader.exec_module(ptx_check)

PTXAS = ptx_check.find_ptxas(None)
needs = pytest.mark.skipif(PTXAS is None or not ptx_check.clang_targets_nvptx("clang"),
                           reason="needs ptxas (pip install nvidia-cuda-nvcc-cu12) and a clang targeting nvptx64")


@needs
def test_every_gpu_gemm_variant_assembles_for_nvidia():
    results = ptx_check.check()
    failed = [f"{r.variant.name} {r.arch}: {r.message}" for r in results if not r.ok]
    assert not failed, "\n".join(failed)
    names = {r.variant.name for r in results}
    # the pipelined form's asynchronous copies, ldmatrix, tf32 and the sm_75 form are among them
    assert any("st=3 lm=1" in n and "tf32" in n for n in names) and any("k8" in n for n in names)
    assert any("weight gradient" in n for n in names) and any("vtiled_small" in n for n in names)


def _one(tmp_path, source, name="probe"):
    path = tmp_path / f"{name}.cl"
    path.write_text(source)
    return ptx_check.build(ptx_check.Variant(name, str(path), "-DREAL=float"), "sm_90", "clang", PTXAS,
                           str(tmp_path))


@needs
def test_the_check_fails_on_rejected_ptx_and_on_helpers_left_as_calls(tmp_path):
    ok = _one(tmp_path, "__kernel void k(__global float* p) { p[get_local_id(0)] = 1.0f; }")
    assert ok.ok and ok.registers > 0, ok.message
    bad = _one(tmp_path, '__kernel void k(__global float* p) { asm volatile("mma.sync.bogus;"); }', "bad")
    assert not bad.ok and bad.message.startswith("ptxas"), bad.message
    # a C99 inline function the compiler does not inline (too big for two call sites) is a call to a definition
    # nobody provides: what gemm_vtiled's mac_tile was before it became static and always inlined
    body = "".join(f"  p[i + {k}] = p[i + {k} + 1] * p[i] + {k}.0f;\n" for k in range(400))
    src = (f"inline void helper(__global float* p, int i) {{\n{body}}}\n"
           "__kernel void k(__global float* p) { helper(p, get_local_id(0)); helper(p, 7); }")
    left = _one(tmp_path, src, "left")
    assert not left.ok and "helpers not inlined: helper" in left.message, left.message
