#!/usr/bin/env bash
# A session on a lent NVIDIA GPU machine (the device tool; docs/gpu.md): builds hetnn against NVIDIA's OpenCL, runs
# the GEMM kernels' tests there, then the measurements named by STAGES against cuBLAS (CuPy, PyTorch; TF32 off).
#   bash scripts/gpu_session.sh check,square,resnet50,tune
# The machine is bare: .gpu/ (carried, git-ignored) holds the OpenCL loader and header .debs (apt-get download
# ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers opencl-clhpp-headers) and the oneDNN wheels (pip download
# onednn-cpu-gomp==2023.2.0 onednn-devel-cpu-gomp==2023.2.0). Logs and the tuning cache go to $OUT.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/gpu-out} HETNN_CACHE_DIR=/tmp/hetnn-cache
STAGES=${1:-check,square,resnet50}
mkdir -p "$OUT" "$HETNN_CACHE_DIR"
SECONDS=0
if ! python3 -c "import hetnn" 2>/dev/null; then
  for f in .gpu/*.deb; do dpkg -x "$f" /; done
  ldconfig
  mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 >/etc/OpenCL/vendors/nvidia.icd
  python3 -m pip install -q --no-index --no-deps .gpu/*.whl
  CMAKE_BUILD_PARALLEL_LEVEL=16 python3 -m pip install -q --no-build-isolation --no-deps . >"$OUT/build.log" 2>&1 ||
    { tail -40 "$OUT/build.log"; exit 1; }
fi
export OCL_ICD_VENDORS=/etc/OpenCL/vendors/nvidia.icd  # NVIDIA's platform alone (not a host PoCL)
echo "[$SECONDS s] built"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
python3 -c "import hetnn; [print(d.id, d.name, d.arch, d.driver_version, d.compute_units) for d in hetnn.devices()]"

V=family=vtiled
LARGE="db=;v128k16=$V ts_m=128 ts_n=128 ts_k=16 wpt_m=8 wpt_n=8 vwm=4 vwn=4;v128k8=$V ts_m=128 ts_n=128 ts_k=8 wpt_m=8 wpt_n=8 vwm=4 vwn=4"
LARGE+=";v128x64=$V ts_m=128 ts_n=64 ts_k=16 wpt_m=8 wpt_n=4 vwm=4 vwn=4;v64x128=$V ts_m=64 ts_n=128 ts_k=16 wpt_m=4 wpt_n=8 vwm=4 vwn=4"
LARGE+=";v256x128=$V ts_m=256 ts_n=128 ts_k=8 wpt_m=8 wpt_n=8 vwm=4 vwn=4;v128vw2=$V ts_m=128 ts_n=128 ts_k=16 wpt_m=8 wpt_n=8 vwm=2 vwn=2"
SMALL="db=;v64=$V ts_m=64 ts_n=64 ts_k=16 wpt_m=4 wpt_n=4 vwm=4 vwn=4;v32x64=$V ts_m=32 ts_n=64 ts_k=32 wpt_m=4 wpt_n=2 vwm=2 vwn=2"
SMALL+=";v64x32=$V ts_m=64 ts_n=32 ts_k=32 wpt_m=4 wpt_n=2 vwm=4 vwn=2;v64w8=$V ts_m=64 ts_n=64 ts_k=16 wpt_m=8 wpt_n=4 vwm=4 vwn=4"
SMALL+=";v128x64=$V ts_m=128 ts_n=64 ts_k=16 wpt_m=8 wpt_n=4 vwm=4 vwn=4"
run() {  # name, seconds, command...
  local name=$1 limit=$2
  shift 2
  echo "[$SECONDS s] $name: $*"
  timeout "$limit" "$@" 2>&1 | tee "$OUT/$name.log"
}
for s in ${STAGES//,/ }; do
  case $s in
    check) run check 120 python3 -m pytest -x -q -n 8 -p no:cacheprovider tests/test_tuning.py \
      -k "family_member or split_k or database or bad_param" ;;
    square) run square 180 python3 scripts/gemm_vs_vendor.py --shapes 1024,2048,4096 --rounds 15 --params "$LARGE" ;;
    square-short) run square 100 python3 scripts/gemm_vs_vendor.py --shapes 1024,2048,4096 --rounds 15 \
      --params "${LARGE%%;v128x64*};v128vw2=${LARGE##*;v128vw2=}" ;;
    resnet50) run resnet50 180 python3 scripts/gemm_vs_vendor.py --shapes resnet50 --rounds 10 --params "$SMALL" ;;
    tune) run tune 250 python3 -m hetnn tune gemm --device gpu --budget 200 -v \
      --sizes 1024,2048,4096,3136x64x576,784x128x1152,196x256x2304,49x512x4608,12544x64x147 ;;
    bench) run bench 120 python3 -m hetnn bench matmul --shapes resnet50 --device gpu --compare cupy,torch ;;
    conv) run conv 180 python3 scripts/conv_vs_torch.py --algorithms auto,winograd,im2col ;;
    conv-check) run conv-check 150 python3 -m pytest -x -q -n 8 -p no:cacheprovider tests/test_conv_implicit.py \
      tests/test_conv_winograd.py tests/test_conv2d.py -k "opencl or implicit or winograd" ;;
    *) echo "unknown stage $s" ;;
  esac
done
tar czf "$OUT/cache.tgz" -C "$HETNN_CACHE_DIR" . 2>/dev/null
echo "[$SECONDS s] done"
