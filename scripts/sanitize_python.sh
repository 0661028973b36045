#!/usr/bin/env bash
# The Python test suite against a module built with GCC's AddressSanitizer + UndefinedBehaviorSanitizer: the
# bindings, the Python-facing paths of every op and NumPy memory viewed without a copy, which the C++ sanitizer
# step (scripts/sanitize.sh: clang, the C++ tests and ops driver) does not reach. GCC's UBSan also checks vector
# lanes' integer arithmetic, which clang's does not. Too slow for CI (about 25 minutes for the whole suite on 2
# vCPUs; the module's first build about 20 more); run it after changes to kernels or bindings:
#   bash scripts/sanitize_python.sh                      # the whole suite
#   bash scripts/sanitize_python.sh tests/test_max_pool.py tests/test_guard_pages.py
# Needs scripts/setup.sh's venv. Builds in build/pyasan (unstripped, so reports name files and lines), runs pytest
# with the sanitizer runtimes preloaded (ASan's reports under build/pyasan/reports, the rest in
# build/pyasan/pytest.log), then lists the reports; exit status 1 if any names a memory error or undefined
# behaviour. Tests that cannot hold under the sanitizers are deselected (below, with why).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=build/pyasan
PY="$PWD/.venv/bin/python"
cmake -S . -B "$B" -DHETNN_SANITIZE=address,undefined -DCMAKE_STRIP=/bin/true -DPython_EXECUTABLE="$PY" \
  -Dpybind11_DIR="$("$PY" -m pybind11 --cmakedir)" >/dev/null
echo "sanitize_python: building the module with ASan + UBSan in $B"
cmake --build "$B" -j "$(nproc)" --target _core >/dev/null
PKG="$B/package"
rm -rf "$PKG" "$B/reports"
mkdir -p "$PKG" "$B/reports"
cp -r python/hetnn "$PKG/"
cp "$B"/_core.*.so "$PKG/hetnn/"
[[ $# -gt 0 ]] || set -- tests
set +e
LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:log_path=$PWD/$B/reports/asan" \
UBSAN_OPTIONS="print_stacktrace=1:log_path=$PWD/$B/reports/ubsan" \
PYTHONPATH="$PWD/$PKG" "$PY" -m pytest -n "$(nproc)" -q -s -p no:cacheprovider "$@" \
  `# the module links its C++ runtime dynamically under the sanitizers` \
  --deselect tests/test_opencl_loader.py::test_module_carries_its_own_cpp_runtime \
  `# the host's FMA loop runs instrumented: PoCL's kernel then reads 2-3x its rate, and oneDNN's products rise above` \
  `# that ceiling and are flagged` \
  --deselect tests/test_bench_peak.py::test_run_peak_stores_and_reads_back \
  --deselect "tests/test_notebooks.py::test_notebook_runs[02_matmul_gflops]" \
  `# ASan reserves terabytes of shadow address space: an RLIMIT_AS case cannot start` \
  --deselect "tests/test_adversarial.py::test_case[resources/address-space-limit/cpu]" \
  `# ASan's per-thread shadow stacks: the many-threads case's process limit is met sooner` \
  --deselect "tests/test_adversarial.py::test_case[resources/many-threads/opencl:0:0]" \
  `# g++ run by these tests inherits the preloaded runtimes` \
  -k "not float_lane_functions and not vector_forms_do_nothing_undefined" > "$B/pytest.log" 2>&1
rc=$?
tail -5 "$B/pytest.log"
set -e
# Reports of hetnn's code only: ASan's own complaints when a test's limits stop it unmapping, and the harness's
# deliberate crash (ctypes.string_at(0)), have no hetnn frame. UBSan writes to stderr whatever log_path says, hence
# -s above (no capture, so a report survives the worker it stops) and the log searched for its reports.
found=""
for f in "$B"/reports/*; do
  [[ -e "$f" ]] || continue
  if grep -qE "ERROR: AddressSanitizer: [A-Za-z-]+ " "$f" && grep -qE "hetnn/_core|cpp/src/" "$f"; then found+=" $f"; fi
done
if grep -qE "cpp/src/[^ ]*: runtime error:" "$B/pytest.log"; then found+=" $B/pytest.log"; fi
if [[ -n "$found" ]]; then
  for f in $found; do
    echo "== $f"
    grep -m1 -E "ERROR: AddressSanitizer|cpp/src/[^ ]*: runtime error:" "$f"
    grep -m6 -E "cpp/src/" "$f" || true
  done
  echo "sanitize_python: $(echo "$found" | wc -w) report(s) of memory errors or undefined behaviour (above)"
  exit 1
fi
echo "sanitize_python: no memory error or undefined behaviour reported (pytest exit status $rc)"
exit "$rc"
