#!/usr/bin/env bash
# Memory-safety checks of the C++ core (run by scripts/test.sh after the unit tests; alone after scripts/setup.sh):
#   1. the core, the GoogleTest unit tests and the ops driver built with clang under AddressSanitizer +
#      UndefinedBehaviorSanitizer (no recovery: the first report fails), run on every device, with LeakSanitizer
#      checking at exit;
#   2. the libFuzzer target cpp/tests/fuzz_shapes.cpp (random shapes and parameters into the matmul and pooling
#      validation, shape logic and small ops, checked against naive references) for HETNN_FUZZ_SECONDS (default 30).
# HETNN_SANITIZE_SKIP=1 skips all of it (for a quick local test run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [[ "${HETNN_SANITIZE_SKIP:-0}" == 1 ]]; then echo "sanitize: skipped (HETNN_SANITIZE_SKIP=1)"; exit 0; fi

B=build/asan
echo "sanitize: building the core, unit tests, ops driver and fuzz target with clang, ASan + UBSan"
CC=clang CXX=clang++ cmake -S . -B "$B" -DHETNN_BUILD_TESTS=ON -DHETNN_BUILD_PYTHON=OFF -DHETNN_BUILD_FUZZ=ON \
  -DHETNN_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE=-O1 \
  -DCMAKE_CXX_FLAGS=-Wno-pass-failed \
  -DPython_EXECUTABLE="$PWD/.venv/bin/python" >/dev/null
cmake --build "$B" -j "$(nproc)" >/dev/null

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0"
export LSAN_OPTIONS="suppressions=$PWD/cpp/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
echo "sanitize: unit tests"
"$B/hetnn_cpp_tests" --gtest_brief=1
echo "sanitize: ops driver (every op on every device)"
"$B/hetnn_ops_driver" 3

SECS=${HETNN_FUZZ_SECONDS:-30}
echo "sanitize: fuzzing matmul/pooling shapes and parameters for ${SECS} s"
CORPUS=$(mktemp -d)
cp cpp/tests/fuzz_seeds/* "$CORPUS"/ 2>/dev/null || true
set +e
"$B/hetnn_fuzz_shapes" -max_total_time="$SECS" -print_final_stats=1 -rss_limit_mb=4096 -timeout=20 \
  -artifact_prefix="$B/" "$CORPUS" > "$B/fuzz.log" 2>&1
rc=$?
set -e
grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$B/fuzz.log" | sed 's/^/sanitize: fuzz /'
if [[ $rc -ne 0 ]]; then
  tail -40 "$B/fuzz.log"
  echo "sanitize: the fuzzer found a failure (input saved under $B/crash-*)"
  exit 1
fi
rm -rf "$CORPUS"
echo "sanitize: clean"
