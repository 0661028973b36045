#!/usr/bin/env bash
# Idempotent set-up on a Debian machine (run as root, or with sudo available):
#   1. the system packages hetnn builds and runs with (compiler, CMake, OpenCL ICD loader + headers, PoCL, GoogleTest,
#      CLBlast as a bench peer, clang and its sanitizer/libFuzzer runtime for scripts/sanitize.sh, libclc for the NVIDIA
#      build check scripts/ptx_check.py) and Debian's
#      Fashion-MNIST files (hetnn.datasets.fashion_mnist);
#   2. a virtual environment at .venv in the repository root;
#   3. hetnn itself with its test and bench extras (pip builds the C++ core with CMake; build/ is kept between runs,
#      so a second run only rebuilds what changed);
#   4. with --peers, the peer libraries the benchmarks and studies compare with: PyTorch, JAX, Numba and Keras 3,
#      from PyPI (PyPI's PyTorch wheel brings its CUDA libraries: about 3 GB in all, usable on a CPU-only machine).
set -euo pipefail
PEERS=0
for arg in "$@"; do
  case "$arg" in
    --peers) PEERS=1 ;;
    *) echo "setup: unknown option $arg (known: --peers)" >&2; exit 2 ;;
  esac
done
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PY=${PYTHON:-python3}
PKGS=(g++ make cmake pkg-config ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo libgtest-dev libclblast-dev dataset-fashion-mnist clang libclang-rt-14-dev libclc-15)
if ! "$PY" -c "import venv, ensurepip" >/dev/null 2>&1; then PKGS+=(python3-venv); fi

missing=()
for p in "${PKGS[@]}"; do
  [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == *"ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  echo "setup: installing system packages: ${missing[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ ! -x .venv/bin/python ]]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
fi

# Build requirements first, then hetnn without build isolation so the oneDNN headers keep one path (incremental
# rebuilds). `pip install .` alone (isolated) works as well.
.venv/bin/python -m pip install -q "scikit-build-core>=0.8" "pybind11>=2.11" "onednn-devel-cpu-gomp==2023.2.0"
echo "setup: building and installing hetnn"
EXTRAS="test,bench,distributed"
if ((PEERS)); then EXTRAS+=",peers"; echo "setup: with the peers (PyTorch, JAX, Numba, Keras 3)"; fi
.venv/bin/python -m pip install -q --no-build-isolation ".[$EXTRAS]"
.venv/bin/python -c "import hetnn; print('setup: hetnn', hetnn.__version__, 'devices:', ', '.join(d.id for d in hetnn.devices()))"
