"""Builds the GPU GEMM kernels (gemm_vtiled.cl, gemm_mma.cl) for NVIDIA without a GPU: clang compiles each
variant to PTX (-target nvptx64-nvidia-nvcl), NVIDIA's ptxas assembles it for sm_80 and sm_90 and reports what
each work item needs. It catches what only a GPU session saw before: inline PTX that ptxas rejects (mma.sync,
ldmatrix, cp.async), helper functions left as calls to definitions nobody provides, and register tiles spilled to
memory. It is not NVIDIA's OpenCL compiler (another front end, and OpenCL's built-in functions are stand-ins
here, PRELUDE), so a pass is evidence, not proof; the GPU session's check stage runs the kernels themselves.

    python scripts/ptx_check.py [--all] [--arch sm_80,sm_90] [--clang clang] [--ptxas PATH]

ptxas comes from the `nvidia-cuda-nvcc-cu12` wheel (the test extras install it) or $PTXAS. Exit status 1 when a
variant fails to build or assemble, or a member the database gives NVIDIA GPUs spills."""
from __future__ import annotations

import argparse
import glob
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cpp", "src", "backend", "opencl", "kernels")

# OpenCL built-ins clang has no library for on this target: work-item functions and barriers as NVVM's own, the
# rest as stand-ins with the right types (what they compute does not matter to the assembler).
PRELUDE = """
#define get_local_id(d) ((d) == 0 ? __nvvm_read_ptx_sreg_tid_x() : (d) == 1 ? __nvvm_read_ptx_sreg_tid_y() \\
                                                                         : __nvvm_read_ptx_sreg_tid_z())
#define get_group_id(d) ((d) == 0 ? __nvvm_read_ptx_sreg_ctaid_x() : (d) == 1 ? __nvvm_read_ptx_sreg_ctaid_y() \\
                                                                           : __nvvm_read_ptx_sreg_ctaid_z())
#define get_local_size(d) ((d) == 0 ? __nvvm_read_ptx_sreg_ntid_x() : (d) == 1 ? __nvvm_read_ptx_sreg_ntid_y() \\
                                                                           : __nvvm_read_ptx_sreg_ntid_z())
#define get_num_groups(d) ((d) == 0 ? __nvvm_read_ptx_sreg_nctaid_x() : (d) == 1 ? __nvvm_read_ptx_sreg_nctaid_y() \\
                                                                             : __nvvm_read_ptx_sreg_nctaid_z())
#define get_global_id(d) (get_group_id(d) * get_local_size(d) + get_local_id(d))
#define barrier(flags) __nvvm_bar_sync(0)
#define vload_half(i, p) as_float((uint)(((const ushort*)(p))[i]) << 16)
#define vstore_half_rte(v, i, p) (((ushort*)(p))[i] = (ushort)(as_uint(v) >> 16))
#define vstore_half(v, i, p) (((ushort*)(p))[i] = (ushort)(as_uint(v) >> 16))
#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))
#define fma(a, b, c) ((a) * (b) + (c))
#define mad(a, b, c) ((a) * (b) + (c))
#define isnan(x) ((x) != (x))
#define vload2(i, p) ((float2)((p)[2 * (i)], (p)[2 * (i) + 1]))
#define vload4(i, p) ((float4)((p)[4 * (i)], (p)[4 * (i) + 1], (p)[4 * (i) + 2], (p)[4 * (i) + 3]))
#define vload8(i, p) ((float8)(vload4(2 * (i), p), vload4(2 * (i) + 1, p)))
"""
MATH = ("exp", "tanh", "log", "log1p", "expm1", "sqrt", "erf", "pow", "fabs", "fmax", "fmin", "exp2", "native_exp")
PRELUDE += "".join(f"#define {f}(...) (0.0f)\n" for f in MATH)

# The members the database gives NVIDIA GPUs (gemm_params.cpp): they must keep their tiles in registers.
DATABASE = {"vtiled_large": "-DTS_M=128 -DTS_N=128 -DTS_K=16 -DWPT_M=8 -DWPT_N=8 -DVWM=4 -DVWN=4",
            "vtiled_small": "-DTS_M=32 -DTS_N=64 -DTS_K=16 -DWPT_M=8 -DWPT_N=2 -DVWM=4 -DVWN=2",
            "mma": "-DTS_M=64 -DTS_N=64 -DTS_K=32 -DWM=2 -DWN=2",
            "mma_tf32": "-DTS_M=64 -DTS_N=64 -DTS_K=16 -DWM=2 -DWN=2"}
TYPES = {"half": "-DREAL=float -DSTORE_HALF=1", "bf16": "-DREAL=float -DSTORE_BF16=1",
         "tf32": "-DREAL=float -DMMA_TF32=1", "float": "-DREAL=float"}


@dataclass
class Variant:
    name: str
    file: str
    defines: str
    database: bool = False  # a database member: spills fail the check


@dataclass
class Result:
    variant: Variant
    arch: str
    ok: bool
    registers: int = 0
    spill_bytes: int = 0
    smem: int = 0
    message: str = ""


def expand(name: str) -> str:
    """A kernel file with its #include "x.cl" lines replaced by the files, as hetnn does before a build."""
    out = []
    with open(os.path.join(KERNELS, name)) as f:
        for line in f:
            out.append(expand(line.split('"')[1]) if line.startswith('#include "') else line)
    return "".join(out)


def variants(everything: bool) -> Iterator[Variant]:
    # the mma member: every type, stage count, fragment load, layout and vector path (the quick set: each option
    # on its own beside the database's member)
    for t, st, lm, ta, tb, v in itertools.product(("half", "bf16", "tf32"), (0, 2, 3, 4), (0, 1), (0, 1), (0, 1),
                                                  (0, 1)):
        base = (st, lm, ta, tb, v) in ((0, 0, 0, 0, 1), (0, 1, 0, 0, 1), (3, 1, 0, 0, 1))
        quick = base or (t == "half" and (st, lm, v) in ((2, 1, 1), (4, 1, 0), (3, 0, 1)) and (ta, tb) != (0, 0))
        if everything or quick:
            tile = DATABASE["mma_tf32" if t == "tf32" else "mma"]
            yield Variant(f"mma {t} st={st} lm={lm} trans={ta}{tb} vec={v}", "gemm_mma.cl",
                          f"{TYPES[t]} -DMMA_PTX=1 {tile} -DST={st} -DLM={lm} -DTRANS_A={ta} -DTRANS_B={tb} "
                          f"-DVA={v} -DVB={v}", database=(st, lm, ta, tb) == (0, 0, 0, 0))
    for t, st in itertools.product(("half", "tf32"), (0, 3)):  # the convolution's gathered B
        tile = DATABASE["mma_tf32" if t == "tf32" else "mma"]
        yield Variant(f"mma {t} conv st={st}", "gemm_mma.cl",
                      f"{TYPES[t]} -DMMA_PTX=1 {tile} -DST={st} -DLM=1 -DVA=1 -DVB=0 -DCONV_B=1 -DKH=3 -DKW=3")
    yield Variant("mma half sm_75 form (k8) st=3", "gemm_mma.cl",
                  f"{TYPES['half']} -DMMA_PTX=1 -DMMA_K8=1 {DATABASE['mma']} -DST=3 -DLM=1 -DVA=1 -DVB=1")
    # the vtiled family: the database's members in every layout, the 16-bit types, the convolution loaders
    for member, ta, tb, va, vb in itertools.product(("vtiled_large", "vtiled_small"), (0, 1), (0, 1), (1, 4), (1, 4)):
        if everything or (ta, tb) == (0, 0) or (va, vb) == (4, 4):
            yield Variant(f"{member} trans={ta}{tb} va={va} vb={vb}", "gemm_vtiled.cl",
                          f"{TYPES['float']} {DATABASE[member]} -DTRANS_A={ta} -DTRANS_B={tb} -DVA={va} -DVB={vb} "
                          f"-DVC=1", database=(ta, tb, va, vb) == (0, 0, 4, 4))
    yield Variant("vtiled_large half", "gemm_vtiled.cl", f"{TYPES['half']} {DATABASE['vtiled_large']} -DVA=1 -DVB=1")
    yield Variant("vtiled_large conv", "gemm_vtiled.cl",
                  f"{TYPES['float']} {DATABASE['vtiled_large']} -DVA=4 -DVB=1 -DCONV_B=1 -DKH=3 -DKW=3")
    yield Variant("vtiled_large weight gradient", "gemm_vtiled.cl",
                  f"{TYPES['float']} {DATABASE['vtiled_large']} -DTRANS_B=1 -DVA=4 -DVB=1 -DCONV_WG=1 -DKH=3 -DKW=3")


_FUNC = re.compile(r"^\.(?:extern\s+)?\.?func\s+(?:\([^)]*\)\s*)?(\w+)", re.M)


def build(v: Variant, arch: str, clang: str, ptxas: str, work: str) -> Result:
    stem = os.path.join(work, re.sub(r"\W+", "_", f"{v.name}_{arch}"))
    with open(stem + ".cl", "w") as f:
        f.write(PRELUDE + expand(v.file))
    # OpenCL C 2.0 for clang's generic address space (the stand-ins cast pointers of any space); `asm` as GNU C's
    cmd = [clang, "-x", "cl", "-cl-std=CL2.0", "-target", "nvptx64-nvidia-nvcl", "-O2", "-S", "-Xclang",
           "-finclude-default-header", "-Dasm=__asm__", "-o", stem + ".ptx", stem + ".cl", *v.defines.split()]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        errors = [ln for ln in r.stderr.splitlines() if "error" in ln]
        return Result(v, arch, False, message="clang: " + "; ".join(errors[:3]))
    with open(stem + ".ptx") as f:
        ptx = f.read()
    # clang writes sm_20; the instructions need sm_80 or newer and PTX ISA 7.0 or newer
    ptx = re.sub(r"^\.version .*$", ".version 8.0", ptx, count=1, flags=re.M)
    ptx = re.sub(r"^\.target .*$", f".target {arch}", ptx, count=1, flags=re.M)
    with open(stem + ".ptx", "w") as f:
        f.write(ptx)
    calls = sorted({m for m in _FUNC.findall(ptx) if not m.startswith("_Z")})
    if calls:  # a helper left as a function: every one must be inlined into the kernels
        return Result(v, arch, False, message="helpers not inlined: " + ", ".join(calls))
    r = subprocess.run([ptxas, "-v", f"-arch={arch}", "-c", "-o", stem + ".cubin", stem + ".ptx"],
                       capture_output=True, text=True)
    if r.returncode:
        return Result(v, arch, False, message="ptxas: " + " ".join(r.stderr.split())[:300])
    regs = [int(x) for x in re.findall(r"Used (\d+) registers", r.stderr)]
    spills = [int(x) for x in re.findall(r"(\d+) bytes spill stores", r.stderr)]
    smem = [int(x) for x in re.findall(r"(\d+) bytes smem", r.stderr)]
    res = Result(v, arch, True, max(regs, default=0), max(spills, default=0), max(smem, default=0))
    if v.database and res.spill_bytes:
        res.ok, res.message = False, f"a database member spills {res.spill_bytes} bytes"
    return res


def find_ptxas(given: Optional[str]) -> Optional[str]:
    if given or os.environ.get("PTXAS"):
        return given or os.environ["PTXAS"]
    for path in sys.path:  # the nvidia-cuda-nvcc-cu12 wheel
        hits = glob.glob(os.path.join(path, "nvidia", "cuda_nvcc", "bin", "ptxas"))
        if hits:
            os.chmod(hits[0], os.stat(hits[0]).st_mode | 0o111)  # some installers drop the executable bit
            return hits[0]
    return shutil.which("ptxas")


def clang_targets_nvptx(clang: str) -> bool:
    try:
        r = subprocess.run([clang, "-print-targets"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and "nvptx64" in r.stdout


def check(everything: bool = False, archs: Tuple[str, ...] = ("sm_80", "sm_90"), clang: str = "clang",
          ptxas: Optional[str] = None) -> List[Result]:
    tool = find_ptxas(ptxas)
    if tool is None:
        raise FileNotFoundError("ptxas not found: pip install nvidia-cuda-nvcc-cu12, or set $PTXAS")
    if not clang_targets_nvptx(clang):
        raise FileNotFoundError(f"{clang} does not target nvptx64 (clang -print-targets)")
    jobs = [(v, a) for v in variants(everything) for a in archs]
    with tempfile.TemporaryDirectory() as work, ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        return list(pool.map(lambda job: build(job[0], job[1], clang, tool, work), jobs))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--all", action="store_true", help="every variant (about 230 per architecture)")
    ap.add_argument("--arch", default="sm_80,sm_90")
    ap.add_argument("--clang", default="clang")
    ap.add_argument("--ptxas")
    args = ap.parse_args()
    try:
        results = check(args.all, tuple(args.arch.split(",")), args.clang, args.ptxas)
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 2
    width = max(len(r.variant.name) for r in results)
    for r in results:
        state = "ok" if r.ok else "FAILED"
        detail = (r.message if not r.ok
                  else f"{r.registers} registers, {r.spill_bytes} bytes spilled, {r.smem} bytes smem")
        print(f"{r.variant.name:<{width}}  {r.arch}  {state:<6}  {detail}")
    failed = [r for r in results if not r.ok]
    print(f"{len(results) - len(failed)} of {len(results)} built and assembled")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
