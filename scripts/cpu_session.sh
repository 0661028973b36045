#!/usr/bin/env bash
# The CPU device's evidence on one processor (issue 37: the ceiling on every processor of the cpp-kernels kind, AMD
# Zen 4/5 and the Intel Xeon with AMX): the tables docs/results/cpp-kernels.md keeps per processor, in one run, with
# the machine's facts beside them. Run after `bash scripts/setup.sh` (`--peers` for the PyTorch columns).
#   bash scripts/cpu_session.sh                      every stage (about 30 minutes on 2 vCPUs)
#   bash scripts/cpu_session.sh facts,gemm,verbose   some of them
# Stages: facts (processor, caches, oneDNN's ISA and 16-bit modes), doctor, sharing (NumPy beside hetnn:
# scripts/blas_sharing.py), gemm (ResNet-50 shapes and 2048^3 against NumPy and a raw oneDNN loop, the FMA ceiling),
# verbose (the implementation oneDNN picks per ResNet-50 shape, ONEDNN_VERBOSE), paths (oneDNN's matmul primitive
# against its dnnl_sgemm per shape, with the FMA loop in the same rounds: scripts/onednn_gemm_paths.cpp), layouts
# (the weights in plain order against oneDNN's preferred layout: scripts/onednn_weight_layouts.cpp), half
# (float32/float16/bfloat16), conv, pool, mlp (against PyTorch CPU where installed), scaling (2 MPI ranks against 1,
# and the reduction's parts: scripts/reduction_in_training.py), stores (streaming against regular stores per output
# size, for stream_store.cpp's table: scripts/stream_store_sizes.py; then bench arrays). Logs go to $OUT.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PY:-.venv/bin/python}
STAGES=${1:-facts,doctor,sharing,gemm,verbose,paths,layouts,half,conv,pool,mlp,scaling,stores}
OUT=${OUT:-/tmp/cpu-session-$(hostname)-$(date +%Y%m%d-%H%M)}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
SECONDS=0
torch=$("$PY" -c "import torch" 2>/dev/null && echo ",torch")
stage() {  # name command...: the command's output to $OUT/name.log and the terminal
  local name=$1; shift
  echo "== [$SECONDS s] $name: $*" | tee -a "$OUT/session.log"
  "$@" 2>&1 | tee "$OUT/$name.log"
  echo "== [$SECONDS s] $name: exit ${PIPESTATUS[0]}" | tee -a "$OUT/session.log"
}
facts() {
  lscpu | grep -E "Model name|CPU family|^Model:|Thread|MHz|L1d|L2|L3"
  echo "flags: $(grep -o -w -E "avx512[a-z0-9_]*|amx[a-z0-9_]*|avx2|fma|f16c" /proc/cpuinfo | sort -u | tr '\n' ' ')"
  "$PY" - <<'EOF'
import platform, numpy as np, hetnn
from hetnn._loader import _core
cpu = hetnn.device("cpu")
print("hetnn", hetnn.__version__, "| Python", platform.python_version(), "| NumPy", np.__version__)
for k in ("name", "driver_version", "isa", "threads", "local_mem", "cache_size"):
    print(f"{k}: {cpu.info().get(k)}")
print("float16:", cpu.float16_mode, "| bfloat16:", cpu.bfloat16_mode)
print("float32 GEMM paths:", _core._cpu_gemm_rule())
print("element-wise outputs:", _core._stream_store_rule())
print("OpenBLAS on hetnn's threads:", [(l["path"], l["shared"], l["why"]) for l in _core.blas_libraries()])
EOF
}
verbose() {  # per ResNet-50 shape: the implementation and layouts oneDNN picks, and its time for one call (indicative)
  "$PY" - <<'EOF'
import os, subprocess, sys
from hetnn.bench import RESNET50_BS1
code = """import numpy as np, hetnn, sys
m, n, k = map(int, sys.argv[1:])
a = hetnn.asarray(np.random.rand(m, k).astype(np.float32)); b = hetnn.asarray(np.random.rand(k, n).astype(np.float32))
for _ in range(3): hetnn.matmul(a, b)
hetnn.synchronize()"""
for m, n, k in RESNET50_BS1 + [(2048, 2048, 2048)]:
    r = subprocess.run([sys.executable, "-c", code, str(m), str(n), str(k)], capture_output=True, text=True,
                       env={**os.environ, "ONEDNN_VERBOSE": "1"}, timeout=300)
    lines = [ln.split(",") for ln in r.stdout.splitlines() if ln.startswith("onednn_verbose") and ",exec," in ln]
    if not lines:
        print(f"{m}x{n}x{k}: no oneDNN matmul ran ({r.stderr.strip()[-300:]})")
        continue
    last = lines[-1]
    at = last.index("matmul")
    ms = float(last[-1])
    print(f"{m}x{n}x{k}: {last[at + 1]} {' '.join(last[at + 3].split()[:2])} {ms:.3f} ms "
          f"{2 * m * n * k / ms / 1e6:.0f} GFLOP/s")
EOF
}
onednn_program() {  # stage name, program: scripts/PROGRAM.cpp built against the venv's oneDNN and run on every CPU
  g++ -O2 -fopenmp -std=c++17 -I.venv/include "scripts/$2.cpp" -L.venv/lib -ldnnl -Wl,-rpath,"$PWD/.venv/lib" \
    -o "$OUT/$2" && stage "$1" env OMP_NUM_THREADS="$(nproc)" "$OUT/$2"
}
for s in ${STAGES//,/ }; do
  case $s in
    facts) stage facts facts ;;
    doctor) stage doctor "$PY" -m hetnn doctor ;;
    sharing) stage sharing "$PY" scripts/blas_sharing.py ;;
    gemm) stage gemm "$PY" -m hetnn bench matmul --device cpu --shapes resnet50 --compare "numpy,onednn$torch" \
            --output "$OUT/gemm"
          stage gemm-square "$PY" -m hetnn bench matmul --device cpu --shapes 2048x2048x2048 \
            --compare "numpy,onednn$torch" --output "$OUT/gemm-square"
          stage peak "$PY" -m hetnn bench peak --device cpu --output "$OUT/peak" ;;
    verbose) stage verbose verbose ;;
    paths) onednn_program paths onednn_gemm_paths ;;
    layouts) onednn_program layouts onednn_weight_layouts ;;
    half) stage half "$PY" -m hetnn bench matmul --device cpu --shapes square --dtype float32,float16,bfloat16 \
            --compare none --output "$OUT/half" ;;  # NumPy's float16 has no BLAS: 50 s a 2048^3 call
    conv) stage conv "$PY" -m hetnn bench conv --device cpu --compare "onednn$torch" --output "$OUT/conv" ;;
    pool) stage pool "$PY" -m hetnn bench maxpool --quick --device cpu --output "$OUT/pool" ;;
    mlp) stage mlp "$PY" -m hetnn bench mlp --quick --device cpu --output "$OUT/mlp" ;;
    scaling) stage scaling "$PY" -m hetnn bench scaling --output "$OUT/scaling"
             for ranks in 2 1; do  # the reduction's parts inside training, and the step without it (the ceiling)
               stage "reduction-$ranks" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
                 .venv/bin/mpirun -np "$ranks" --bind-to core "$PY" scripts/reduction_in_training.py
             done ;;
    stores) stage stores "$PY" scripts/stream_store_sizes.py
            stage arrays "$PY" -m hetnn bench arrays --device cpu --repeat 20 --output "$OUT/arrays" ;;
    *) echo "unknown stage '$s'"; exit 2 ;;
  esac
done
echo "[$SECONDS s] logs and tables in $OUT"
