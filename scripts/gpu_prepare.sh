#!/usr/bin/env bash
# What a lent GPU machine (bare, no network) needs from this one for scripts/gpu_session.sh, fetched into .gpu/
# (git-ignored; name it in the device tool's carry): the OpenCL ICD loader and header .debs and the oneDNN wheels
# hetnn builds against (about 38 MB); then checks that the GPU GEMM kernels build for NVIDIA (scripts/ptx_check.py),
# so that the GPU's minutes do not go to a build failure.
#   bash scripts/gpu_prepare.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mkdir -p .gpu
debs=(ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers opencl-clhpp-headers)
(cd .gpu && { apt-get download "${debs[@]}" 2>/dev/null || { apt-get update -qq && apt-get download "${debs[@]}"; }; })
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
"$PY" -m pip download -q --no-deps -d .gpu onednn-cpu-gomp==2023.2.0 onednn-devel-cpu-gomp==2023.2.0
du -sh .gpu
"$PY" scripts/ptx_check.py --level default | tail -1 ||
  echo "gpu_prepare: a GPU GEMM kernel does not build for NVIDIA (python scripts/ptx_check.py lists it): fix it first"
