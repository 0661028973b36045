#!/usr/bin/env bash
# A session on a lent NVIDIA GPU machine (the device tool; docs/gpu.md): builds hetnn against NVIDIA's OpenCL, runs
# the GEMM kernels' tests there, then the measurements named by STAGES against cuBLAS (CuPy, PyTorch; TF32 off).
#   bash scripts/gpu_session.sh check,square,resnet50,tune
#   bash scripts/gpu_session.sh mma-check,half,bf16,tune-half,conv   (float16/bfloat16 on the matrix units; issue 39)
#   bash scripts/gpu_session.sh mma-check,tf32,tune-tf32   (float32 at precision "high" against cuBLAS with TF32 on)
#   bash scripts/gpu_session.sh mma-check,half-st   (float16 with the pipelined form, st = 2-4 slices filled by cp.async)
#   bash scripts/gpu_session.sh mma-k8-check   (float16 as sm_75's m16n8k8 steps, on an sm_80+ GPU)
#   bash scripts/gpu_session.sh mixed,mixed-alexnet   (mixed-precision LeNet / AlexNet epochs against float32)
#   bash scripts/gpu_session.sh conv-half,conv-tf32   (ResNet-50 convolutions in float16 / TF32 against cuDNN's)
#   bash scripts/gpu_session.sh precision   (the bench's precision study: float32, tf32, float16, bfloat16 rows)
#   bash scripts/gpu_session.sh streamk   (stream-K members (sk=1, 2) beside the database's on ResNet-50's GEMMs and
#                                          2048^3 / 4096^3, against cuBLAS)
#   bash scripts/gpu_session.sh conv   (float32 ResNet-50 convolutions: the device's choice, Winograd F(4x4, 3x3) and the
#                                       implicit GEMM, each against cuDNN)
#   bash scripts/gpu_session.sh conv-bench (per layer: "benchmark" and each algorithm forced against "auto"; which
#                                           "auto" should pick per layer on this GPU)
#   bash scripts/gpu_session.sh conv-train (AlexNet-variant epochs, "benchmark" against "auto", interleaved)
#   bash scripts/gpu_session.sh conv-bwd   (the data gradient as a forward convolution and the weight gradient as
#                                           one implicit GEMM ("auto") against GEMM + col2im / im2col + per-image GEMMs)
#   bash scripts/gpu_session.sh conv-strided (ResNet-50's stride-2 data gradients: forward convolutions per class
#                                             of input positions against GEMM + col2im; decides GPU's "auto")
#   bash scripts/gpu_session.sh conv-wgrad (the weight gradient alone, "auto" and im2col, against cuDNN's)
#   bash scripts/gpu_session.sh conv-wgrad-half (the same in float16: one matrix-unit GEMM over the batch, split
#                                                along K in float32, against per-image GEMMs and cuDNN's)
#   bash scripts/gpu_session.sh transfer   (pageable and page-locked copies against CuPy's; issue 43)
#   bash scripts/gpu_session.sh arrays     (element-wise ops, reductions and pi by Monte Carlo against CuPy; issue 42)
#   bash scripts/gpu_session.sh wait       (small synchronised ops with hetnn's waits blocking or polling first, against
#                                           CuPy's and torch's; whether GPUs should poll by default; issues 38/42)
#   bash scripts/gpu_session.sh ew-check   (the element-wise, strided-view and user-kernel tests on the GPU)
#   bash scripts/gpu_session.sh wg-check,wg,wg-bf16   (the warpgroup members, wg=1: their tests with wgmma itself,
#                                             then float16 / bfloat16 against cuBLAS and the mma.sync members)
#   bash scripts/gpu_session.sh wgmma-probe   (whether an OpenCL kernel reaches Hopper's wgmma: as built, with
#                                              -cl-nv-arch sm_90a, or as PTX patched to sm_90a; a tile checked and
#                                              the instruction's rate; scripts/wgmma_probe.c; issue 39)
#   bash scripts/gpu_session.sh icd   (the device table without /etc/OpenCL/vendors/nvidia.icd: the note naming
#                                      NVIDIA's driver library and the fix; issue 40)
# The machine is bare: .gpu/ (carried, git-ignored; `bash scripts/gpu_prepare.sh` fetches it) holds the OpenCL loader and header .debs (apt-get download
# ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers opencl-clhpp-headers) and the oneDNN wheels (pip download
# onednn-cpu-gomp==2023.2.0 onednn-devel-cpu-gomp==2023.2.0). Logs and the tuning cache go to $OUT.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/gpu-out} HETNN_CACHE_DIR=/tmp/hetnn-cache
STAGES=${1:-check,square,resnet50}
mkdir -p "$OUT" "$HETNN_CACHE_DIR"
SECONDS=0
build() {  # extra pip arguments...
  # the toolchain the module is built with (the image's default compiler, or GPU_CXX)
  { env | grep -E "^(CC|CXX|CFLAGS|CXXFLAGS|LDFLAGS|CMAKE_[A-Z_]*)=" ; command -v c++ g++ gcc; c++ --version | head -1
    ls /usr/bin/g++* 2>/dev/null; echo "extra: $*"; } 2>&1 | tee -a "$OUT/toolchain.log"
  [ -n "${GPU_CXX:-}" ] && export CXX="$GPU_CXX"
  CMAKE_BUILD_PARALLEL_LEVEL=16 python3 -m pip install -q --no-build-isolation --no-deps "$@" . >"$OUT/build.log" 2>&1 ||
    { tail -40 "$OUT/build.log"; exit 1; }
  echo "[$SECONDS s] built"
  { grep -E "CMAKE_CXX_COMPILER:|CMAKE_TOOLCHAIN_FILE|CMAKE_MODULE_LINKER_FLAGS:|CMAKE_CXX_FLAGS:" build/*/CMakeCache.txt
    so=$(python3 -c "import hetnn._core as c; print(c.__file__)" 2>/dev/null)
    readelf -d "$so" | grep -E "NEEDED|RPATH|RUNPATH"; echo "std:: symbols exported: $(nm -D -C --defined-only "$so" | grep -c "std::")"
    nm -D -C --defined-only "$so" | grep "std::" | head -5; } 2>&1 | tee -a "$OUT/toolchain.log"
}
# Which ICD loader and vendor list give a working NVIDIA device (hetnn opens the loader at run time: the first
# libOpenCL.so.1 on the library path, which may be the driver's own rather than the ocl-icd unpacked above): each
# combination runs a small float32 product in a child process; the first that computes it is kept.
SMOKE='import os, numpy as np, hetnn
print([(d.id, d.name) for d in hetnn.devices()], [ln.split()[-1] for ln in open("/proc/self/maps") if "OpenCL" in ln][:1], flush=True)
d = hetnn.device(os.environ.get("SMOKE_DEVICE", "gpu")); a = hetnn.asarray(np.ones((64, 64), np.float32), device=d)
print("params", hetnn._core.gemm_params(d._dev, "float32", 64 ** 3), flush=True)
print("add", float((a + a).numpy()[0, 0]), flush=True)
print("matmul", float(hetnn.matmul(a, a).numpy()[0, 0]), flush=True)'
pick() {
  picked=
  for lib in "" /usr/lib/x86_64-linux-gnu/libOpenCL.so.1 preload; do
    for vend in /etc/OpenCL/vendors/nvidia.icd none; do
      echo "== HETNN_OPENCL_LIBRARY='$lib' OCL_ICD_VENDORS=$vend"
      args=(env -u OCL_ICD_VENDORS); [ "$vend" != none ] && args=(env OCL_ICD_VENDORS="$vend")
      if [ "$lib" = preload ]; then args+=(LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libOpenCL.so.1)
      elif [ -n "$lib" ]; then args+=(HETNN_OPENCL_LIBRARY="$lib"); fi
      if "${args[@]}" timeout 60 python3 -c "$SMOKE"; then picked="$lib|$vend"; break 2; fi
    done
  done
  echo "picked: '$picked'"
  [ -n "$picked" ]
}
if ! python3 -c "import hetnn" 2>/dev/null; then
  for f in .gpu/*.deb; do dpkg -x "$f" /; done
  ldconfig
  mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 >/etc/OpenCL/vendors/nvidia.icd
  python3 -m pip install -q --no-index --no-deps .gpu/*.whl
  build
fi
{ ls -l /etc/OpenCL/vendors; ldconfig -p | grep -i libopencl; } 2>&1 | tee "$OUT/loader.log"
if ! pick 2>&1 | tee -a "$OUT/loader.log" | grep -v "^\s*File\|^Extension"; then
  # GPU_STATIC=1: a module with its own private C++ runtime (another copy in the process, loaded with NVIDIA's
  # driver, crashed hetnn's iostreams in the first call that formatted a number)
  if [ -n "${GPU_STATIC:-}" ]; then
    build --config-settings=cmake.define.CMAKE_MODULE_LINKER_FLAGS="-static-libstdc++ -static-libgcc -Wl,--exclude-libs,ALL"
    pick 2>&1 | tee -a "$OUT/loader.log" | grep -v "^\s*File\|^Extension"
  fi
fi
picked=$(sed -n "s/^picked: '\(.*\)'$/\1/p" "$OUT/loader.log" | grep . | tail -1)
if [ -z "$picked" ]; then
  OCL_ICD_VENDORS=/etc/OpenCL/vendors/nvidia.icd timeout 60 cuda-gdb -batch -ex run -ex bt -ex 'x/4i $pc' \
    --args python3 -c "$SMOKE" 2>&1 | grep -v "New Thread" | tail -30
  echo "no working OpenCL set-up for the GPU"; exit 1
fi
case "${picked%%|*}" in preload) export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libOpenCL.so.1 ;; "") ;;
  *) export HETNN_OPENCL_LIBRARY="${picked%%|*}" ;; esac
if [ "${picked##*|}" != none ]; then export OCL_ICD_VENDORS="${picked##*|}"; else unset OCL_ICD_VENDORS; fi
echo "[$SECONDS s] HETNN_OPENCL_LIBRARY=${HETNN_OPENCL_LIBRARY:-} OCL_ICD_VENDORS=${OCL_ICD_VENDORS:-}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
python3 -c "import hetnn; [print(d.id, d.name, d.arch, d.driver_version, d.compute_units, "local_mem", d.local_mem) for d in hetnn.devices()]"

V=family=vtiled
LARGE="db=;v128k16=$V ts_m=128 ts_n=128 ts_k=16 wpt_m=8 wpt_n=8 vwm=4 vwn=4;v128k8=$V ts_m=128 ts_n=128 ts_k=8 wpt_m=8 wpt_n=8 vwm=4 vwn=4"
LARGE+=";v128x64=$V ts_m=128 ts_n=64 ts_k=16 wpt_m=8 wpt_n=4 vwm=4 vwn=4;v64x128=$V ts_m=64 ts_n=128 ts_k=16 wpt_m=4 wpt_n=8 vwm=4 vwn=4"
LARGE+=";v256x128=$V ts_m=256 ts_n=128 ts_k=8 wpt_m=8 wpt_n=8 vwm=4 vwn=4;v128vw2=$V ts_m=128 ts_n=128 ts_k=16 wpt_m=8 wpt_n=8 vwm=2 vwn=2"
SMALL="db=;v64=$V ts_m=64 ts_n=64 ts_k=16 wpt_m=4 wpt_n=4 vwm=4 vwn=4;v32x64=$V ts_m=32 ts_n=64 ts_k=32 wpt_m=4 wpt_n=2 vwm=2 vwn=2"
SMALL+=";v64x32=$V ts_m=64 ts_n=32 ts_k=32 wpt_m=4 wpt_n=2 vwm=4 vwn=2;v64w8=$V ts_m=64 ts_n=64 ts_k=16 wpt_m=8 wpt_n=4 vwm=4 vwn=4"
SMALL+=";v128x64=$V ts_m=128 ts_n=64 ts_k=16 wpt_m=8 wpt_n=4 vwm=4 vwn=4"
# float16 / bfloat16 on the matrix units (family=mma), with the converted path's default ("cvt") in the same run
M=family=mma
HALF="cvt=family=tiled ts_m=64 ts_n=64 ts_k=16 wpt_m=4 wpt_n=4;db=;w4=$M ts_m=128 ts_n=128 ts_k=32 wm=2 wn=2"
HALF+=";t256x128=$M ts_m=256 ts_n=128 ts_k=16 wm=4 wn=2;t128x256=$M ts_m=128 ts_n=256 ts_k=16 wm=2 wn=4"
HALF+=";t64=$M ts_m=64 ts_n=64 ts_k=32 wm=2 wn=2;t64lm=$M ts_m=64 ts_n=64 ts_k=32 wm=2 wn=2 lm=1"
HALF+=";w4lm=$M ts_m=128 ts_n=128 ts_k=32 wm=2 wn=2 lm=1"
# the pipelined form (st: a ring of st slices filled by cp.async) beside the same tiles without it
PIPE="db=;t64lm=$M ts_m=64 ts_n=64 ts_k=32 wm=2 wn=2 lm=1;t64lmst3=$M ts_m=64 ts_n=64 ts_k=32 wm=2 wn=2 lm=1 st=3"
PIPE+=";t64lmst4=$M ts_m=64 ts_n=64 ts_k=32 wm=2 wn=2 lm=1 st=4;t64st3=$M ts_m=64 ts_n=64 ts_k=32 wm=2 wn=2 st=3"
PIPE+=";w4lm=$M ts_m=128 ts_n=128 ts_k=32 wm=2 wn=2 lm=1;w4lmst2=$M ts_m=128 ts_n=128 ts_k=32 wm=2 wn=2 lm=1 st=2"
PIPE+=";w4k16st3=$M ts_m=128 ts_n=128 ts_k=16 wm=2 wn=2 lm=1 st=3"
# the warpgroup members (wg=1: wgmma from local memory, every one within NVIDIA OpenCL's 48 KiB of local memory) beside
# the database's mma member and the best pipelined mma.sync member of 2026-11-30
W="family=mma wn=1 wg=1"
WGP="db=;mmast2=$M ts_m=128 ts_n=128 ts_k=32 wm=2 wn=2 lm=1 st=2;wA=$W ts_m=128 ts_n=128 ts_k=32 wm=1 st=3"
WGP+=";wB=$W ts_m=128 ts_n=128 ts_k=32 wm=2 st=3;wC=$W ts_m=128 ts_n=128 ts_k=16 wm=1 st=6"
WGP+=";wD=$W ts_m=128 ts_n=256 ts_k=16 wm=2 st=4;wE=$W ts_m=256 ts_n=128 ts_k=16 wm=2 st=4"
WGP+=";wF=$W ts_m=64 ts_n=256 ts_k=16 wm=1 st=4;wG=$W ts_m=128 ts_n=64 ts_k=32 wm=1 st=4"
WGP+=";wH=$W ts_m=64 ts_n=128 ts_k=32 wm=1 st=4;wI=$W ts_m=64 ts_n=128 ts_k=16 wm=1 st=8"
# tf32 (float32 at precision "high"): the same tiles with slices half as deep (4-byte values)
TF32="db=;t64=$M ts_m=64 ts_n=64 ts_k=16 wm=2 wn=2;t64lm=$M ts_m=64 ts_n=64 ts_k=16 wm=2 wn=2 lm=1"
TF32+=";t128=$M ts_m=128 ts_n=128 ts_k=16 wm=2 wn=2;t128x64=$M ts_m=128 ts_n=64 ts_k=16 wm=2 wn=2"
TF32+=";t128w8=$M ts_m=128 ts_n=128 ts_k=16 wm=2 wn=4;t256x128=$M ts_m=256 ts_n=128 ts_k=8 wm=4 wn=2"
tensor_cores() {  # the probe's verdict (Device.float16_mode); on a failure, the full build log of the kernel
  python3 - <<'PY'
import sys, hetnn
from hetnn import _core
d = hetnn.device("gpu")
print("float16:", d.float16_mode, "| bfloat16:", d.bfloat16_mode, "| tf32:", d.tf32_mode, flush=True)
if d.float16_mode.startswith("tensor cores"):
    sys.exit(0)
sys.path.insert(0, "scripts")
from ptx_check import expand  # the kernel file with its includes, as hetnn builds it
try:
    _core._build_opencl(d._dev, expand("gemm_mma.cl"), "-cl-std=CL1.2 -DREAL=float -DSTORE_HALF=1 -DMMA_PTX=1")
    print("gemm_mma.cl with MMA_PTX=1 builds")
except Exception as e:
    print(str(e)[:6000])
sys.exit(1)
PY
}
run() {  # name, seconds, command...
  local name=$1 limit=$2
  shift 2
  echo "[$SECONDS s] $name: $*"
  timeout "$limit" "$@" 2>&1 | tee "$OUT/$name.log"
}
for s in ${STAGES//,/ }; do
  case $s in
    check) run check 120 python3 -m pytest -x -q -n 8 -p no:cacheprovider tests/test_tuning.py \
      tests/test_gemm_streamk.py -k "family_member or split_k or database or bad_param or stream_k" ;;
    square) run square 180 python3 scripts/gemm_vs_vendor.py --shapes 1024,2048,4096 --rounds 15 --params "$LARGE" ;;
    square-short) run square 100 python3 scripts/gemm_vs_vendor.py --shapes 1024,2048,4096 --rounds 15 \
      --params "${LARGE%%;v128x64*};v128vw2=${LARGE##*;v128vw2=}" ;;
    streamk) run streamk 240 python3 scripts/gemm_vs_vendor.py --shapes resnet50,2048,4096 --rounds 8 --params \
      "db=;v128sk1=$V ts_m=128 ts_n=128 ts_k=16 wpt_m=8 wpt_n=8 vwm=4 vwn=4 sk=1;v32x64sk2=$V ts_m=32 ts_n=64 ts_k=16 wpt_m=8 wpt_n=2 vwm=4 vwn=2 sk=2" ;;
    resnet50) run resnet50 180 python3 scripts/gemm_vs_vendor.py --shapes resnet50 --rounds 10 --params "$SMALL" ;;
    tune) run tune 250 python3 -m hetnn tune gemm --device gpu --budget 200 -v \
      --sizes 1024,2048,4096,3136x64x576,784x128x1152,196x256x2304,49x512x4608,12544x64x147 ;;
    tune-half) tensor_cores && run tune-half 200 python3 -m hetnn tune gemm --device gpu --dtype float16 --budget 150 \
      -v --sizes 1024,2048,4096,3136x64x576,784x128x1152 ;;
    bench) run bench 120 python3 -m hetnn bench matmul --shapes resnet50 --device gpu --compare cupy,torch ;;
    conv) run conv 180 python3 scripts/conv_vs_torch.py --algorithms auto,winograd4,implicit ;;
    transfer) run transfer 120 python3 scripts/transfer_vs_cupy.py ;;
    arrays) run arrays 150 python3 scripts/arrays_vs_cupy.py ;;
    wait) run wait 120 python3 scripts/wait_latency.py --device gpu --rounds 30 ;;
    conv-bench) run conv-bench 200 python3 scripts/conv_algorithms.py --device gpu --batch 32 --rounds 15 \
      --algorithms winograd,winograd4,implicit ;;
    conv-train) run conv-train 240 python3 scripts/conv_algorithms.py --device gpu --train alexnet32 --samples 8192 \
      --batch 256 --rounds 5 ;;
    icd) run icd 60 bash -c 'mv /etc/OpenCL/vendors/nvidia.icd /tmp/nvidia.icd.off
      env -u OCL_ICD_VENDORS -u HETNN_OPENCL_LIBRARY -u LD_PRELOAD python3 -m hetnn devices; s=$?
      mv /tmp/nvidia.icd.off /etc/OpenCL/vendors/nvidia.icd; exit $s' ;;
    conv-bwd) run conv-bwd 150 python3 scripts/conv_vs_torch.py --backward --algorithms auto,im2col --layers 5 ;;
    conv-strided) run conv-strided 150 python3 scripts/conv_algorithms.py --strided --device gpu --batch 32 \
      --rounds 9 ;;
    conv-wgrad) run conv-wgrad 150 python3 scripts/conv_vs_torch.py --backward --grads weight \
      --algorithms auto,im2col --layers 5 ;;
    conv-wgrad-half) tensor_cores && run conv-wgrad-half 150 python3 scripts/conv_vs_torch.py --backward \
      --grads weight --dtype float16 --algorithms auto,im2col --layers 5 ;;
    conv-check) run conv-check 150 python3 -m pytest -x -q -n 8 -p no:cacheprovider tests/test_conv_implicit.py \
      tests/test_conv_winograd.py tests/test_conv2d.py tests/test_conv_benchmark.py \
      -k "opencl or implicit or winograd or benchmark or algorithm" ;;
    ew-check) run ew-check 90 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_views.py \
      tests/test_user_kernels.py tests/test_elementwise.py -k opencl ;;  # element-wise, strided and user kernels
    mma-check) run mma-check 150 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_tuning.py \
      tests/test_precision.py tests/test_gemm_mma_pipeline.py \
      -k "mma or matrix_unit or precision_mode or tf32 or precision_in_force or pipelined or stage" ;;
    mma-k8-check) run mma-k8-check 90 env HETNN_MMA_K8=1 python3 -m pytest -q -n 8 -p no:cacheprovider \
      tests/test_tuning.py -k "family_member and float16" ;;  # sm_75's float16 form, checked on this GPU
    conv-half) run conv-half 180 python3 scripts/conv_vs_torch.py --dtype float16 --algorithms auto,im2col --layers 5 ;;
    conv-tf32) run conv-tf32 180 python3 scripts/conv_vs_torch.py --dtype tf32 --algorithms auto,im2col --layers 5 ;;
    precision) run precision 200 python3 -m hetnn bench matmul --device gpu --shapes square --compare cupy,torch \
      --dtype float32,tf32,float16,bfloat16 --repeat 10 --processes 1 ;;
    mixed) run mixed 240 python3 scripts/mixed_precision_lenet.py --device gpu --epochs 3 ;;
    mixed-alexnet) run mixed-alexnet 300 python3 scripts/mixed_precision_lenet.py --device gpu --epochs 2 \
      --model alexnet32 --dtypes float32,bfloat16 ;;
    tf32) tensor_cores && run tf32 130 python3 scripts/gemm_vs_vendor.py --dtype tf32 --shapes 1024,2048,4096 \
      --rounds 10 --params "$TF32" ;;
    tune-tf32) tensor_cores && run tune-tf32 150 python3 -m hetnn tune gemm --device gpu --dtype tf32 --budget 120 \
      -v --sizes 1024,2048,4096,3136x64x576,784x128x1152 ;;
    half) tensor_cores && run half 130 python3 scripts/gemm_vs_vendor.py --dtype float16 --shapes 1024,2048,4096 \
      --rounds 10 --params "$HALF" ;;
    half-st) tensor_cores && run half-st 130 python3 scripts/gemm_vs_vendor.py --dtype float16 --shapes 1024,2048,4096 \
      --rounds 10 --params "$PIPE" ;;
    half-short) tensor_cores && run half 60 python3 scripts/gemm_vs_vendor.py --dtype float16 --shapes 1024,4096 \
      --rounds 10 --params "${HALF%%;w4=*}" ;;
    bf16) tensor_cores && run bf16 70 python3 scripts/gemm_vs_vendor.py --dtype bfloat16 --shapes 2048,4096 \
      --rounds 10 --params "${HALF%%;t256x128*}" ;;
    wg-check) run wg-check 150 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_tuning.py \
      -k "family_member or bad_param or precision_mode or matrix_unit" ;;  # the wg=1 members with wgmma itself
    wg) tensor_cores && run wg 200 python3 scripts/gemm_vs_vendor.py --dtype float16 --shapes 4096,8192 \
      --rounds 8 --params "$WGP" ;;
    wg-bf16) tensor_cores && run wg-bf16 90 python3 scripts/gemm_vs_vendor.py --dtype bfloat16 --shapes 8192 \
      --rounds 8 --params "$WGP" ;;
    wgmma-probe) gcc -O2 scripts/wgmma_probe.c -lOpenCL -o /tmp/wgmma_probe && run wgmma-probe 60 /tmp/wgmma_probe ;;
    *) echo "unknown stage $s" ;;
  esac
done
tar czf "$OUT/cache.tgz" -C "$HETNN_CACHE_DIR" . 2>/dev/null
echo "[$SECONDS s] done"
