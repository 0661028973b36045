"""The op table (tests/op_table.py) is complete: no op of the public API, of the backend interface or of the C++
ops driver without a row. The rows run in the property tests (values against their float64 references, on every
device: tests/test_properties.py) and in the bad-input sweep (their bad calls: tests/test_bad_inputs.py)."""
import re
from pathlib import Path


import hetnn
from op_table import OPS

ROOT = Path(__file__).resolve().parent.parent
OPS_H = ROOT / "cpp" / "src" / "core" / "ops.h"
OPS_DRIVER = ROOT / "cpp" / "tests" / "ops_driver.cpp"


def _backend_ops():
    text = OPS_H.read_text()
    start = text.index("#define HETNN_BACKEND_OPS(X)")
    end = text.index("\n\n", start)  # the list ends at the first blank line
    return set(re.findall(r"\bX\((\w+), ", text[start:end]))


def test_every_backend_op_has_a_row():
    covered = {b for op in OPS.values() for b in op.backend}
    assert _backend_ops() - covered == set(), "core/ops.h backend ops without an op-table row"


def test_every_public_op_has_a_row():
    public = set(hetnn._ops.__all__)
    assert "max_pool2d" in public and public - set(OPS) == set(), "public ops without an op-table row"
    assert public <= set(hetnn.__all__), "hetnn._ops.__all__ names ops hetnn does not export"


def test_every_op_is_typed():
    """Every public op's core function has a signature in _core.pyi, and the public op overloads on its input type
    in _ops.pyi (hetnn Arrays -> Array, NumPy -> ndarray), for mypy and editors."""
    stub = (ROOT / "python" / "hetnn" / "_core.pyi").read_text()
    missing = [n for n in hetnn._ops.__all__ if not re.search(rf"^def {n}\(", stub, re.M)]
    assert not missing, missing
    ops_stub = (ROOT / "python" / "hetnn" / "_ops.pyi").read_text()
    for n in hetnn._ops.__all__:
        sigs = re.findall(rf"^@overload\ndef {n}\((?:.|\n)*?\) -> ([^:]+): \.\.\.", ops_stub, re.M)
        assert any("Array" in r for r in sigs) and any("np.ndarray" in r for r in sigs), (n, sigs)


def test_the_cpp_ops_driver_has_the_same_rows():
    """The C++ ops driver (run normally and under the sanitizers) checks every op-table row: its kOps registry
    names exactly the table's ops."""
    text = OPS_DRIVER.read_text()
    registry = text[text.index("const OpCase kOps[] = {"):]
    names = re.findall(r'\{"(\w+)", ', registry[:registry.index("};")])
    assert len(names) == len(set(names)) and set(names) == set(OPS), (sorted(names), sorted(OPS))
