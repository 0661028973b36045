"""Builds hetnn's OpenCL kernels for NVIDIA GPUs without one: clang compiles each program to PTX against libclc
(OpenCL's built-in functions for nvptx64, Debian's libclc-15), NVIDIA's ptxas assembles it for sm_80 and sm_90 and
reports what each work item needs. It catches what only a GPU session saw before: inline PTX that ptxas rejects
(mma.sync, ldmatrix, cp.async), functions left as calls to definitions nobody provides, register tiles spilled to
memory, OpenCL C that builds under PoCL but not for another target. It is not NVIDIA's OpenCL compiler (another
front end and built-in library), so a pass is evidence, not proof; the GPU session's check stage runs the kernels.

    python scripts/ptx_check.py [--level all] [--arch sm_80,sm_90]   the GEMM kernels' variants
    HETNN_RECORD_PROGRAMS=DIR python -m pytest tests ...           record every program a run builds
    python scripts/ptx_check.py --programs DIR                     then build each of them

ptxas comes from the `nvidia-cuda-nvcc-cu12` wheel (the test extras install it) or $PTXAS; clang is clang-15 (PoCL
brings it) or $CLANG; libclc from /usr/lib/clc or $LIBCLC. Exit status 1 when something fails to build or
assemble, a GEMM variant leaves a function uninlined, or a member the database gives NVIDIA GPUs spills."""
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
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Tuple

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cpp", "src", "backend", "opencl", "kernels")

# The members the database gives NVIDIA GPUs (gemm_params.cpp): they must keep their tiles in registers.
DATABASE = {"vtiled_large": "-DTS_M=128 -DTS_N=128 -DTS_K=16 -DWPT_M=8 -DWPT_N=8 -DVWM=4 -DVWN=4",
            "vtiled_small": "-DTS_M=32 -DTS_N=64 -DTS_K=16 -DWPT_M=8 -DWPT_N=2 -DVWM=4 -DVWN=2",
            "mma": "-DTS_M=64 -DTS_N=64 -DTS_K=32 -DWM=2 -DWN=2",
            "mma_tf32": "-DTS_M=64 -DTS_N=64 -DTS_K=16 -DWM=2 -DWN=2"}
TYPES = {"half": "-DREAL=float -DSTORE_HALF=1", "bf16": "-DREAL=float -DSTORE_BF16=1",
         "tf32": "-DREAL=float -DMMA_TF32=1", "float": "-DREAL=float",
         "half_f32": "-DREAL=float -DIN_HALF=1"}  # float16 inputs, a float32 result (the split slices)


@dataclass
class Variant:
    name: str
    source: str             # OpenCL C, includes expanded
    options: str            # build options, as hetnn passes them
    database: bool = False  # a database member: spills fail the check
    inlined: bool = True    # every function must be inlined into the kernels (the GEMM loops)
    # "//WG:" comments opened for sm_90a, as hetnn does (False: the PTX as NVIDIA's compiler writes it)
    open_hidden: bool = True


@dataclass
class Result:
    variant: Variant
    arch: str
    ok: bool
    registers: int = 0       # the most any kernel of the program uses
    spill_bytes: int = 0
    smem: int = 0
    message: str = ""
    kernels: Dict[str, int] = field(default_factory=dict)  # registers per kernel
    # how often the matrix-unit and copy instructions appear in the PTX (a path compiled out reads 0)
    instructions: Dict[str, int] = field(default_factory=dict)


@dataclass
class Tools:
    clang: str
    ptxas: str
    libclc: str


def expand(name: str) -> str:
    """A kernel file with its #include "x.cl" lines replaced by the files, as hetnn does before a build."""
    out = []
    with open(os.path.join(KERNELS, name)) as f:
        for line in f:
            out.append(expand(line.split('"')[1]) if line.startswith('#include "') else line)
    return "".join(out)


def _gemm(name: str, file: str, defines: str, database: bool = False) -> Variant:
    return Variant(name, expand(file), "-cl-std=CL1.2 " + defines, database=database)


LEVELS = ("small", "default", "all")


def variants(level: str = "default") -> Iterator[Variant]:
    """The GEMM kernels' variants: "all" every combination below; "default" each option on its own beside the
    database's members; "small" (the test suite's) the database's members and one variant of each other path."""
    small, every = level == "small", level == "all"
    # the mma member: every type, stage count, fragment load, layout and vector path
    for t, st, lm, ta, tb, v in itertools.product(("half", "bf16", "tf32"), (0, 2, 3, 4), (0, 1), (0, 1), (0, 1),
                                                  (0, 1)):
        key = (st, lm, ta, tb, v)
        base = key in ((0, 0, 0, 0, 1), (3, 1, 0, 0, 1)) or (not small and key == (0, 1, 0, 0, 1))
        odd = (t == "half" and (st, lm, v) in ((2, 1, 1), (4, 1, 0), (3, 0, 1)) and (ta, tb) != (0, 0)
               and (not small or (ta, tb, st) == (1, 1, 2)))
        if every or base or odd:
            tile = DATABASE["mma_tf32" if t == "tf32" else "mma"]
            yield _gemm(f"mma {t} st={st} lm={lm} trans={ta}{tb} vec={v}", "gemm_mma.cl",
                        f"{TYPES[t]} -DMMA_PTX=1 {tile} -DST={st} -DLM={lm} -DTRANS_A={ta} -DTRANS_B={tb} "
                        f"-DVA={v} -DVB={v}", database=(st, lm, ta, tb) == (0, 0, 0, 0))
    for t, st in itertools.product(("half", "tf32"), (0, 3)):  # the convolution's gathered B
        if not small or (t, st) == ("half", 3):
            tile = DATABASE["mma_tf32" if t == "tf32" else "mma"]
            yield _gemm(f"mma {t} conv st={st}", "gemm_mma.cl",
                        f"{TYPES[t]} -DMMA_PTX=1 {tile} -DST={st} -DLM=1 -DVA=1 -DVB=0 -DCONV_B=1 -DKH=3 -DKW=3")
    # the weight gradient's gathers (A over images, B^T from x), split slices as float32 sums of 16-bit data
    for t, st, va in itertools.product(("half", "half_f32", "tf32"), (0, 3), (0, 1)):
        if every or (not small and (st, va) in ((0, 1), (3, 0))) or (small and (t, st, va) == ("half", 3, 1)):
            tile = DATABASE["mma_tf32" if t == "tf32" else "mma"]
            yield _gemm(f"mma {t} weight gradient st={st} va={va}", "gemm_mma.cl",
                        f"{TYPES[t]} -DMMA_PTX=1 {tile} -DST={st} -DLM=1 -DTRANS_B=1 -DVA={va} -DVB=0 -DCONV_WG=1 "
                        "-DKH=3 -DKW=3")
    # the warpgroup member (wgmma, sm_90a): each tile width, one and two warpgroups, every layout, both 16-bit types
    for t, tile, ta, tb, v in itertools.product(
            ("half", "bf16"), ("-DTS_M=128 -DTS_N=128 -DTS_K=32 -DWM=1 -DST=3",
                               "-DTS_M=128 -DTS_N=256 -DTS_K=16 -DWM=2 -DST=4",
                               "-DTS_M=64 -DTS_N=64 -DTS_K=64 -DWM=1 -DST=3"), (0, 1), (0, 1), (0, 1)):
        first = "TS_N=128" in tile and t == "half"
        if every or (first and (not small or (ta, tb, v) == (0, 0, 1))) or (not small and (ta, tb, v) == (0, 0, 1)):
            size = "x".join(re.findall(r"TS_[MNK]=(\d+)", tile)) + " wm=" + re.findall(r"WM=(\d)", tile)[0]
            yield _gemm(f"mma wg {t} {size} trans={ta}{tb} vec={v}",
                        "gemm_mma.cl", f"{TYPES[t]} -DMMA_PTX=1 {tile} -DWN=1 -DWG=1 -DLM=0 -DTRANS_A={ta} "
                        f"-DTRANS_B={tb} -DVA={v} -DVB={v}")
    for t in ("half", "bf16"):  # the sm_90 database's pipelined members
        yield _gemm(f"mma {t} 128x128 lm=1 st=2 (database, sm_90)", "gemm_mma.cl",
                    f"{TYPES[t]} -DMMA_PTX=1 -DTS_M=128 -DTS_N=128 -DTS_K=32 -DWM=2 -DWN=2 -DST=2 -DLM=1 -DVA=1 -DVB=1",
                    database=True)
        yield _gemm(f"mma {t} 64x64 lm=1 st=4 (database, sm_90)", "gemm_mma.cl",
                    f"{TYPES[t]} -DMMA_PTX=1 {DATABASE['mma']} -DST=4 -DLM=1 -DVA=1 -DVB=1", database=True)
    # (clang's build spills 16 bytes of it, NVIDIA's ran 1.22-1.26x the 64 x 64 member: not held to the spill rule)
    yield _gemm("mma tf32 128x128 (database, sm_90)", "gemm_mma.cl",
                f"{TYPES['tf32']} -DMMA_PTX=1 -DTS_M=128 -DTS_N=128 -DTS_K=16 -DWM=2 -DWN=2 -DST=0 -DLM=0 "
                "-DVA=1 -DVB=1")
    yield _gemm("mma half sm_75 form (k8) st=3", "gemm_mma.cl",
                f"{TYPES['half']} -DMMA_PTX=1 -DMMA_K8=1 {DATABASE['mma']} -DST=3 -DLM=1 -DVA=1 -DVB=1")
    # the vtiled family: the database's members in every layout, the 16-bit types, the convolution loaders
    for member, ta, tb, va, vb in itertools.product(("vtiled_large", "vtiled_small"), (0, 1), (0, 1), (1, 4), (1, 4)):
        db = (ta, tb, va, vb) == (0, 0, 4, 4)
        if every or db or (not small and ((ta, tb) == (0, 0) or (va, vb) == (4, 4))) or \
                (small and member == "vtiled_large" and (ta, tb, va, vb) == (1, 1, 1, 1)):
            yield _gemm(f"{member} trans={ta}{tb} va={va} vb={vb}", "gemm_vtiled.cl",
                        f"{TYPES['float']} {DATABASE[member]} -DTRANS_A={ta} -DTRANS_B={tb} -DVA={va} -DVB={vb} "
                        f"-DVC=1", database=db)
    yield _gemm("vtiled_large half", "gemm_vtiled.cl", f"{TYPES['half']} {DATABASE['vtiled_large']} -DVA=1 -DVB=1")
    yield _gemm("vtiled_large conv", "gemm_vtiled.cl",
                f"{TYPES['float']} {DATABASE['vtiled_large']} -DVA=4 -DVB=1 -DCONV_B=1 -DKH=3 -DKW=3")
    yield _gemm("vtiled_large weight gradient", "gemm_vtiled.cl",
                f"{TYPES['float']} {DATABASE['vtiled_large']} -DTRANS_B=1 -DVA=4 -DVB=1 -DCONV_WG=1 -DKH=3 -DKW=3")
    if not small:  # 16-bit data's, summed in float32 slices
        yield _gemm("vtiled_large half weight gradient", "gemm_vtiled.cl",
                    f"{TYPES['half']} {DATABASE['vtiled_large']} -DTRANS_B=1 -DVA=1 -DVB=1 -DCONV_WG=1 -DKH=3 -DKW=3 "
                    "-DPARTS_REAL=1")


def recorded(folder: str) -> Iterator[Variant]:
    """The programs a run recorded (HETNN_RECORD_PROGRAMS): KEY.cl, and KEY.opts (options, then the file)."""
    for opts in sorted(glob.glob(os.path.join(folder, "*.opts"))):
        with open(opts) as f:
            options, _, label = f.read().partition("\n")
        with open(opts[:-5] + ".cl") as f:
            source = f.read()
        yield Variant(f"{label.strip()} {os.path.basename(opts)[:-5]}", source, options.strip(), inlined=False)


INSTRUCTIONS = ("mma.sync.aligned.m16n8k16", "mma.sync.aligned.m16n8k8", "ldmatrix.sync", "cp.async.cg",
                "cp.async.wait_group", "wgmma.mma_async")
_FUNC = re.compile(r"^\.(?:visible\s+|extern\s+)?\.func\s+(?:\([^)]*\)\s*)?(\w+)", re.M)


def build(v: Variant, arch: str, tools: Tools, work: str) -> Result:
    stem = os.path.join(work, re.sub(r"\W+", "_", f"{v.name}_{arch}")[:120])
    with open(stem + ".cl", "w") as f:
        f.write(v.source)
    # clang's OpenCL mode knows `asm` only as GNU C's __asm__ (NVIDIA's compiler takes both)
    cmd = [tools.clang, "-x", "cl", "-target", "nvptx64-unknown-nvidiacl", "-O2", "-S", "-Xclang",
           "-finclude-default-header", "-Xclang", "-mlink-builtin-bitcode", "-Xclang", tools.libclc, "-Dasm=__asm__",
           "-Wno-everything", "-o", stem + ".ptx", stem + ".cl", *v.options.split()]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        errors = [ln for ln in r.stderr.splitlines() if "error" in ln]
        return Result(v, arch, False, message="clang: " + "; ".join(errors[:3]))
    with open(stem + ".ptx") as f:
        ptx = f.read()
    # clang writes an old target; the instructions need sm_80 or newer and PTX ISA 7.0 or newer. Instructions hidden
    # as "//WG:" comments (wgmma) are opened for sm_90a, as hetnn's program cache does on the GPU
    if v.open_hidden and "//WG:" in ptx:
        if arch != "sm_90":
            return Result(v, arch, True, message="wgmma: sm_90 only (not built)")
        ptx, arch = ptx.replace("//WG:", ""), "sm_90a"
    ptx = re.sub(r"^\.version .*$", ".version 8.0", ptx, count=1, flags=re.M)
    ptx = re.sub(r"^\.target .*$", f".target {arch}", ptx, count=1, flags=re.M)
    with open(stem + ".ptx", "w") as f:
        f.write(ptx)
    r = subprocess.run([tools.ptxas, "-v", f"-arch={arch}", "-c", "-o", stem + ".cubin", stem + ".ptx"],
                       capture_output=True, text=True)
    if r.returncode:
        return Result(v, arch, False, message="ptxas: " + " ".join(r.stderr.split())[:300])
    kernels = {k: int(n) for k, n in re.findall(r"Compiling entry function '(\w+)'.*?Used (\d+) registers", r.stderr,
                                                 re.S)}
    spills = [int(x) for x in re.findall(r"(\d+) bytes spill stores", r.stderr)]
    smem = [int(x) for x in re.findall(r"(\d+) bytes smem", r.stderr)]
    res = Result(v, arch, True, max(kernels.values(), default=0), max(spills, default=0), max(smem, default=0),
                 kernels=kernels, instructions={i: ptx.count(i) for i in INSTRUCTIONS})
    calls = sorted({m for m in _FUNC.findall(ptx) if not m.startswith(("_Z", "__"))})
    serial = re.findall(r"\(C75\d\d\) Potential Performance Loss: wgmma[^\n]*", r.stderr)
    if serial:  # ptxas waits after every wgmma (a call in the kernel, an accumulator written by another instruction)
        res.ok, res.message = False, serial[0][:300]
    elif v.inlined and calls:  # the GEMM loops' pieces must be inlined: their register tiles would go through memory
        res.ok, res.message = False, "functions not inlined: " + ", ".join(calls)
    elif v.database and res.spill_bytes:
        res.ok, res.message = False, f"a database member spills {res.spill_bytes} bytes"
    return res


def find_tools(clang: Optional[str] = None, ptxas: Optional[str] = None, libclc: Optional[str] = None) -> Tools:
    """The compiler, assembler and built-in library; FileNotFoundError saying what is missing and how to get it."""
    clang = clang or os.environ.get("CLANG") or shutil.which("clang-15") or "clang"
    try:
        r = subprocess.run([clang, "-print-targets"], capture_output=True, text=True, timeout=60)
        targets = r.stdout if r.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        targets = ""
    if "nvptx64" not in targets:
        raise FileNotFoundError(f"{clang} does not target nvptx64 (clang -print-targets); set $CLANG")
    ptxas = ptxas or os.environ.get("PTXAS")
    if not ptxas:
        for path in sys.path:  # the nvidia-cuda-nvcc-cu12 wheel
            hits = glob.glob(os.path.join(path, "nvidia", "cuda_nvcc", "bin", "ptxas"))
            if hits:
                os.chmod(hits[0], os.stat(hits[0]).st_mode | 0o111)  # some installers drop the executable bit
                ptxas = hits[0]
                break
    ptxas = ptxas or shutil.which("ptxas")
    if not ptxas:
        raise FileNotFoundError("ptxas not found: pip install nvidia-cuda-nvcc-cu12, or set $PTXAS")
    libclc = libclc or os.environ.get("LIBCLC") or "/usr/lib/clc/nvptx64--nvidiacl.bc"
    if not os.path.exists(libclc):
        raise FileNotFoundError(f"{libclc} not found: apt-get install libclc-15, or set $LIBCLC")
    return Tools(clang, ptxas, libclc)


def check(level: str = "default", archs: Tuple[str, ...] = ("sm_80", "sm_90"), tools: Optional[Tools] = None,
          programs: Optional[str] = None) -> List[Result]:
    """Builds the GEMM variants of ``level`` (LEVELS), or the programs recorded in ``programs``."""
    tools = tools or find_tools()
    todo = list(recorded(programs) if programs else variants(level))
    jobs = [(v, a) for v in todo for a in archs]
    with tempfile.TemporaryDirectory() as work, ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        return list(pool.map(lambda job: build(job[0], job[1], tools, work), jobs))


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--level", choices=LEVELS, default="default",
                    help="which GEMM variants: small (the tests'), default (40), all (about 230); per architecture")
    ap.add_argument("--programs", metavar="DIR", help="the programs recorded there (HETNN_RECORD_PROGRAMS=DIR)")
    ap.add_argument("--arch", default="sm_80,sm_90")
    ap.add_argument("--clang")
    ap.add_argument("--ptxas")
    ap.add_argument("--libclc")
    args = ap.parse_args()
    try:
        tools = find_tools(args.clang, args.ptxas, args.libclc)
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 2
    results = check(args.level, tuple(args.arch.split(",")), tools, args.programs)
    width = max((len(r.variant.name) for r in results), default=0)
    for r in results:
        state = "ok" if r.ok else "FAILED"
        regs = ", ".join(f"{k} {n}" for k, n in sorted(r.kernels.items()))
        detail = (r.message if not r.ok
                  else f"registers {regs}; {r.spill_bytes} bytes spilled, {r.smem} bytes smem")
        print(f"{r.variant.name:<{width}}  {r.arch}  {state:<6}  {detail}")
    failed = [r for r in results if not r.ok]
    print(f"{len(results) - len(failed)} of {len(results)} built and assembled")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
