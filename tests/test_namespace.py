"""The Array API namespace's dtypes, constants and inspection functions (hetnn.float32 ..., e, pi, inf, nan,
newaxis, finfo, iinfo, isdtype, can_cast, __array_namespace_info__), checked against NumPy / ml_dtypes and against
the core's own promotion and defaults."""
import math

import numpy as np
import pytest

import hetnn

NAMES = ("bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64")


def test_dtype_attributes_are_the_arrays_dtypes(device):
    for name in NAMES:
        if name not in device.dtypes:
            continue
        dt = getattr(hetnn, name)
        assert hetnn.zeros((2,), dtype=dt, device=device).dtype == dt and dt.name == name
    assert (hetnn.e, hetnn.pi, hetnn.newaxis) == (math.e, math.pi, None)
    assert math.isinf(hetnn.inf) and hetnn.inf > 0 and math.isnan(hetnn.nan)
    a = hetnn.zeros((2,), device=device)
    assert a.__array_namespace__().float32 is hetnn.float32


def test_isdtype_and_can_cast_follow_the_core():
    kinds = {"bool": {"bool"}, "signed integer": {"int8", "int32", "int64"}, "unsigned integer": {"uint8"},
             "real floating": {"float16", "bfloat16", "float32", "float64"}, "complex floating": set()}
    for kind, members in kinds.items():
        assert {n for n in NAMES if hetnn.isdtype(getattr(hetnn, n), kind)} == members, kind
    assert {n for n in NAMES if hetnn.isdtype(getattr(hetnn, n), "numeric")} == set(NAMES) - {"bool"}
    assert hetnn.isdtype(hetnn.int8, ("bool", hetnn.int8)) and not hetnn.isdtype(hetnn.int8, hetnn.int32)
    for a in NAMES:
        for b in NAMES:
            promoted = hetnn.result_type(getattr(hetnn, a), getattr(hetnn, b))
            assert hetnn.can_cast(getattr(hetnn, a), getattr(hetnn, b)) == (promoted == getattr(hetnn, b)), (a, b)
    assert hetnn.can_cast(hetnn.zeros((1,), dtype="int8"), hetnn.float32)
    with pytest.raises(ValueError, match="isdtype: kind must be"):
        hetnn.isdtype(hetnn.int8, "integer")
    with pytest.raises(TypeError, match="can_cast: to"):
        hetnn.can_cast(hetnn.int8, "complex64")


def test_finfo_and_iinfo_match_numpy():
    from ml_dtypes import finfo as mfinfo
    for name in ("float16", "bfloat16", "float32", "float64"):
        f, ref = hetnn.finfo(getattr(hetnn, name)), (mfinfo if name == "bfloat16" else np.finfo)(getattr(hetnn, name))
        assert (f.bits, f.eps, f.max, f.min, f.smallest_normal) == (ref.bits, float(ref.eps), float(ref.max),
                                                                   float(ref.min), float(ref.smallest_normal))
    for name in ("int8", "uint8", "int32", "int64"):
        i, ref = hetnn.iinfo(getattr(hetnn, name)), np.iinfo(name)
        assert (i.bits, i.min, i.max) == (ref.bits, ref.min, ref.max)
    assert hetnn.finfo(hetnn.zeros((1,), dtype="float16")).eps == float(np.finfo(np.float16).eps)
    with pytest.raises(TypeError, match="finfo: int8 is not a floating dtype"):
        hetnn.finfo(hetnn.int8)
    with pytest.raises(TypeError, match="iinfo: float32 is not an integer dtype"):
        hetnn.iinfo(hetnn.float32)


def test_namespace_info_describes_the_devices(device):
    info = hetnn.__array_namespace_info__()
    assert set(info.capabilities()) == {"boolean indexing", "data-dependent shapes", "max dimensions"}
    assert [d.id for d in info.devices()] == [d.id for d in hetnn.devices()]
    assert info.default_device().id == hetnn.get_default_device().id
    defaults = info.default_dtypes(device=device)
    assert defaults["real floating"] == hetnn.asarray(1.5, device=device).dtype
    assert defaults["integral"] == hetnn.asarray(1, device=device).dtype == hetnn.int64
    held = info.dtypes(device=device)
    # the Array API's types only (its own suite refuses others); Device.dtypes lists float16 and bfloat16 too
    assert set(held) == {n for n in NAMES if n in device.dtypes} - {"float16", "bfloat16"}
    assert set(info.dtypes(device=device, kind="real floating")) == {n for n in held if "float" in n}


def test_every_creation_function_takes_the_one_default_real_type(device):
    """zeros/ones/empty gave float32 while full, asarray(1.0), arange, linspace and eye gave the default real type
    the namespace reports: one default, the device's (float64 where it has it, as NumPy's and CuPy's)."""
    real = hetnn.__array_namespace_info__().default_dtypes(device=device)["real floating"]
    assert real == (hetnn.float64 if "float64" in device.dtypes else hetnn.float32)
    made = {"zeros": hetnn.zeros((2, 3), device=device), "ones": hetnn.ones((2,), device=device),
            "empty": hetnn.empty((0, 2), device=device), "full": hetnn.full((2,), 0.5, device=device),
            "asarray": hetnn.asarray(1.5, device=device), "arange": hetnn.arange(0.0, 2.0, device=device),
            "linspace": hetnn.linspace(0, 1, 5, device=device), "eye": hetnn.eye(3, device=device)}
    assert {k: a.dtype for k, a in made.items()} == {k: real for k in made}
    np.testing.assert_array_equal(made["zeros"].numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(made["ones"].numpy(), np.ones(2))
    assert hetnn.zeros((2,), "int32", device=device).dtype == hetnn.int32  # an explicit dtype still wins


def test_the_complex_functions_on_real_arrays_are_numpys(device):
    """hetnn has no complex types; conj, real and imag of its real arrays are NumPy's (copies and zeros), and
    complex() of a 0-d array is its element."""
    x = np.array([1.5, -0.0, np.inf, np.nan], np.float32)
    a = hetnn.asarray(x, device=device)
    for fn, want in ((hetnn.conj, np.conj(x)), (hetnn.real, np.real(x)), (hetnn.imag, np.imag(x))):
        got = fn(a)
        assert got is not a and got.dtype == a.dtype
        np.testing.assert_array_equal(got.numpy(), want)
    assert complex(hetnn.asarray(np.float32(2.5), device=device)) == 2.5 + 0j
    with pytest.raises(TypeError):
        complex(a)
