#!/usr/bin/env bash
# Installs wheelhouse/hetnn-*manylinux*.whl (scripts/build_wheel.sh) into a fresh virtual environment, with no
# compiler on PATH and run from outside the source tree, and runs the smoke checks of scripts/wheel_smoke.py: with
# OpenCL as this machine has it, then without any ICD loader (HETNN_OPENCL_LIBRARY=none: the CPU-only path), then
# as on a machine with OpenCL drivers but no loader installed (the system's libOpenCL files hidden in a private mount
# namespace: the wheel's own loader must serve; needs root and util-linux's unshare, else said and skipped).
# Prints the wheel's size, the install and import times.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
whls=("$root"/wheelhouse/hetnn-*manylinux*.whl)  # no pipe into head: an early reader's SIGPIPE ends set -e scripts
whl=${whls[0]}
[ -e "$whl" ] || whl=
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
# the system's loader files (every name ldconfig knows, and their targets) bound to /dev/null in this namespace alone
mapfile -t libs < <(ldconfig -p | awk '/libOpenCL\.so/ {print $NF}' | xargs -r readlink -f | sort -u)
if [ "${#libs[@]}" -gt 0 ] && unshare -m --propagation private true 2>/dev/null; then
  PATH="$env_dir/venv/bin:$env_dir/bin" "$(command -v unshare)" -m --propagation private "$(command -v bash)" -c \
    'set -e; for f in "${@:4}"; do "$3" --bind /dev/null "$f"; done; exec "$1" -I "$2" --bundled-loader' \
    hide "$env_dir/venv/bin/python" "$root/scripts/wheel_smoke.py" "$(command -v mount)" "${libs[@]}"
else
  echo "test_wheel: the wheel's own loader not tried: no system loader to hide, or no unshare -m here (root)"
fi
