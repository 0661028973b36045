"""The capability check of conftest.py: every device test that takes a dtype the device may lack goes through it,
and it skips exactly the cases a device cannot run."""
import platform

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
