#!/usr/bin/env bash
# Sets up (scripts/setup.sh, idempotent) and runs the whole test suite: the C++ unit tests (GoogleTest via CTest)
# and the ops driver (every op on every device, with a leak check), the sanitizer and fuzzing step
# (scripts/sanitize.sh), ruff and mypy, the Python tests (pytest) on every device found, then the binary wheel:
# built (scripts/build_wheel.sh) and tried in a fresh virtual environment (scripts/test_wheel.sh: with this machine's
# OpenCL, without any, and through the wheel's own ICD loader with the system's hidden).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
last=$SECONDS
took() { echo "test: $1 took $((SECONDS - last)) s"; last=$SECONDS; }  # each step's time in the log (CI's budget)
bash scripts/setup.sh
took "set-up"

echo "test: building the C++ unit tests"
# in the folder where set-up built the module (its core library compiled once for both); pyproject.toml sets
# HETNN_BUILD_TESTS=OFF again on the next `pip install`, so the module's own builds stay as they were
B=""
for cache in build/*/CMakeCache.txt; do
  if grep -qx "Python_EXECUTABLE:PATH=$PWD/.venv/bin/python" "$cache" && grep -q "^HETNN_BUILD_PYTHON:BOOL=ON" "$cache"
  then B=$(dirname "$cache"); fi
done
if [[ -z "$B" ]]; then  # not found (a build folder moved or removed): a folder of their own
  B=build/cpp-tests
  cmake -S . -B "$B" -DHETNN_BUILD_PYTHON=OFF -DPython_EXECUTABLE="$PWD/.venv/bin/python" \
    -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake -S . -B "$B" -DHETNN_BUILD_TESTS=ON >/dev/null
cmake --build "$B" -j "$(nproc)" --target hetnn_cpp_tests hetnn_ops_driver >/dev/null
took "building the C++ unit tests"
ctest --test-dir "$B" --output-on-failure
took "the C++ unit tests"

# AddressSanitizer + UBSan build of the core, unit tests and ops driver; a bounded libFuzzer run (scripts/sanitize.sh)
bash scripts/sanitize.sh
took "the sanitizer and fuzzing step"

echo "test: ruff and mypy (configured in pyproject.toml)"
.venv/bin/ruff check python tests scripts
.venv/bin/python -m mypy
took "ruff and mypy"

echo "test: Python tests"
# spread over the CPUs (pytest-xdist; at most 4 workers: many tests start processes of their own): on CI's 2 vCPUs
# the suite took 20 min in one process and 15 in two
workers=$(( $(nproc) < 4 ? $(nproc) : 4 ))
.venv/bin/python -m pytest tests -n "$workers" --durations=25 "$@"
took "the Python tests"

echo "test: the binary wheel"
bash scripts/build_wheel.sh
took "building the wheel"
bash scripts/test_wheel.sh
took "trying the wheel"
