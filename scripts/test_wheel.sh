#!/usr/bin/env bash
# Installs wheelhouse/hetnn-*manylinux*.whl (scripts/build_wheel.sh) into a fresh virtual environment, with no
# compiler on PATH and run from outside the source tree, and runs the smoke checks of scripts/wheel_smoke.py: with
# OpenCL as this machine has it, then without any ICD loader (HETNN_OPENCL_LIBRARY=none: the CPU-only path).
# Prints the wheel's size, the install and import times.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
whl=$(ls "$root"/wheelhouse/hetnn-*manylinux*.whl 2>/dev/null | head -1)
if [ -z "$whl" ]; then
  echo "test_wheel: no wheel in wheelhouse/: run 'bash scripts/build_wheel.sh' first" >&2
  exit 2
fi
PY=${PYTHON:-python3}
env_dir=$(mktemp -d /tmp/hetnn-wheel-XXXXXX)
trap 'rm -rf "$env_dir"' EXIT
"$PY" -m venv "$env_dir/venv"
echo "test_wheel: $(basename "$whl"), $(du -k "$whl" | cut -f1) KiB"
t0=$(date +%s.%N)
"$env_dir/venv/bin/python" -m pip install -q "$whl"
t1=$(date +%s.%N)
echo "test_wheel: installed in $(echo "$t1 - $t0" | bc) s"
# PATH: the venv and a folder of its own, with no compiler; `ld` stays because PoCL links its kernels with it at run
# time (without it PoCL aborts the process in clBuildProgram)
mkdir "$env_dir/bin"
for tool in bash env date ld; do ln -s "$(command -v $tool)" "$env_dir/bin/$tool"; done
cd "$env_dir"
PATH="$env_dir/venv/bin:$env_dir/bin" "$env_dir/venv/bin/python" -I "$root/scripts/wheel_smoke.py"
PATH="$env_dir/venv/bin:$env_dir/bin" HETNN_OPENCL_LIBRARY=none "$env_dir/venv/bin/python" -I \
  "$root/scripts/wheel_smoke.py" --cpu-only
