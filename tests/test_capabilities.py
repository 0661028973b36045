"""The capability check of conftest.py: every device test that takes a dtype the device may lack goes through it,
and it skips exactly the cases a device cannot run."""
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

import hetnn
from conftest import CAPABILITY_DTYPES, DEVICE_FIXTURES, dtype_name, missing_capability


def test_device_tests_take_dtypes_only_through_the_capability_check(request):
    """A parameter holding float64/float16/bfloat16 under another name than `dtype` would bypass the check (and
    fail, not skip, on a device without that dtype)."""
    offenders = []
    for item in request.session.items:
        if not any(f in getattr(item, "fixturenames", ()) for f in DEVICE_FIXTURES):
            continue
        for name, value in getattr(getattr(item, "callspec", None), "params", {}).items():
            if name != "dtype" and dtype_name(value) in CAPABILITY_DTYPES:
                offenders.append(f"{item.nodeid} ({name}={value!r})")
    assert not offenders, "name these parameters `dtype` (conftest.py checks the device): " + ", ".join(offenders)


class _FakeDevice:
    id = "fake"
    dtypes = ["float32", "int32"]
    fp64 = False
    local_mem = 65536


@pytest.mark.parametrize("params,requires,expect", [
    ({"dtype": "float32"}, (), None),
    ({"dtype": np.float16}, (), "does not take float16"),
    ({"dtype": "bfloat16"}, (), "does not take bfloat16"),
    ({"dtype": np.dtype("float64")}, (), "does not take float64"),
    ({}, ("float64",), "does not take float64"),
    ({}, ("fp64",), "has no fp64"),
    ({}, ("local_mem",), None),
    ({"shape": (3, 4)}, (), None),
])
def test_missing_capability_decides_from_the_device(params, requires, expect):
    why = missing_capability(_FakeDevice(), params, requires)
    assert (why is None) if expect is None else (expect in why)
    assert missing_capability(_FakeDevice(), params, (), check_dtype=False) is None


def test_cpu_device_takes_16_bit_floats_on_every_x86_processor():
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("x86-64 only")
    cpu = hetnn.device("cpu")
    assert "float16" in cpu.dtypes and "bfloat16" in cpu.dtypes
    for mode in (cpu.float16_mode, cpu.bfloat16_mode):
        assert mode.startswith(("native (", "converted (")), mode


def _onednn_execs(code):
    """The lines `ONEDNN_VERBOSE=1` prints for the primitives a fresh process running ``code`` executes."""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "ONEDNN_VERBOSE": "1"})
    assert r.returncode == 0, r.stderr[-2000:]
    return [ln for ln in r.stdout.splitlines() if ln.startswith("onednn_verbose") and ",exec," in ln]


def test_cpu_converted_16_bit_modes_run_float32_products():
    """A converted mode (no native kernel, or one measured slower than converting: bfloat16 on Intel AVX512-FP16
    cores without AMX) must be what runs: oneDNN sees float32 products only, never a 16-bit one."""
    cpu = hetnn.device("cpu")
    converted = [dt for dt, mode in (("float16", cpu.float16_mode), ("bfloat16", cpu.bfloat16_mode))
                 if mode.startswith("converted (")]
    if not converted:
        pytest.skip(f"both 16-bit types native here ({cpu.float16_mode}; {cpu.bfloat16_mode})")
    for dtype in converted:
        code = ("import numpy as np, hetnn; "
                f"a = hetnn.asarray(np.ones((512, 512), np.float32), device='cpu').astype('{dtype}'); "
                "c = hetnn.matmul(a, a); hetnn.synchronize(); assert float(c.astype('float32').numpy()[0, 0]) == 512")
        execs = _onednn_execs(code)
        assert execs and not any("bf16" in ln or "f16:" in ln for ln in execs), (dtype, execs[:3])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cpu_16_bit_products_never_run_onednns_reference_loop(dtype):
    """Where oneDNN has a 16-bit kernel for the type but not for a combination, it falls back to 'ref:any': float16
    with transposed weights and a bias (a Dense layer's forward) took 10.6 ms for 64 x 120 x 84 on an Emerald Rapids
    Xeon and a LeNet float16 epoch 61 s against float32's 1.8. Such products take the converted path instead."""
    code = ("import numpy as np, hetnn; rng = np.random.default_rng(0); "
            f"x = rng.uniform(-1, 1, (64, 120)).astype('{dtype}'); "
            f"w = rng.uniform(-1, 1, (84, 120)).astype('{dtype}'); "
            f"b = rng.uniform(-1, 1, 84).astype('{dtype}'); "
            "c = hetnn.matmul(x, w, transpose_b=True, bias=b, device='cpu').astype('float64'); "
            "ref = x.astype(np.float64) @ w.astype(np.float64).T + b.astype(np.float64); "
            "assert np.max(np.abs(c - ref)) < 0.05 * np.max(np.abs(ref)), np.max(np.abs(c - ref))")
    refs = [ln for ln in _onednn_execs(code) if ",ref:" in ln]
    assert not refs, refs[:2]


def test_cpu_native_16_bit_modes_name_what_onednn_runs():
    """A native 16-bit mode names the implementation oneDNN runs for a product in that type (as ONEDNN_VERBOSE
    reports it), not the processor's best ISA: on an Intel Xeon with AMX for bfloat16 and int8 only, float16 was
    labelled "native (oneDNN avx512_core_amx)" and ran at 0.88x float32 on the AVX-512 units."""
    cpu = hetnn.device("cpu")
    natives = [(dt, mode) for dt, mode in (("float16", cpu.float16_mode), ("bfloat16", cpu.bfloat16_mode))
               if mode.startswith("native (")]
    if not natives:
        pytest.skip(f"oneDNN has no 16-bit kernels for this processor ({cpu.float16_mode}; {cpu.bfloat16_mode})")
    for dtype, mode in natives:
        code = ("import numpy as np, hetnn; "
                f"a = hetnn.asarray(np.ones((512, 512), np.float32), device='cpu').astype('{dtype}'); "
                "hetnn.matmul(a, a); hetnn.synchronize()")
        execs = _onednn_execs(code)
        impls = {parts[parts.index("matmul") + 1] for parts in (ln.split(",") for ln in execs) if "matmul" in parts}
        assert len(impls) == 1, (dtype, impls, execs[-5:])
        assert f"oneDNN {impls.pop()}" in mode, (dtype, mode)
