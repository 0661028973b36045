"""The op table (tests/op_table.py) is complete: no op of the public API, of the backend interface or of the C++
ops driver without a row. The rows run in the property tests (values against their float64 references, on every
device: tests/test_properties.py) and in the bad-input sweep (their bad calls: tests/test_bad_inputs.py)."""
import inspect
import re
from pathlib import Path


import hetnn
from op_table import OPS

ROOT = Path(__file__).resolve().parent.parent
BACKEND_H = ROOT / "cpp" / "src" / "backend" / "backend.h"
OPS_DRIVER = ROOT / "cpp" / "tests" / "ops_driver.cpp"


def _backend_ops():
    text = BACKEND_H.read_text()
    ops = text[text.index("#define HETNN_BACKEND_OPS(X)"):text.index("#define HETNN_OP_PURE")]
    return set(re.findall(r"\bX\((\w+), ", ops))


def test_every_backend_op_has_a_row():
    covered = {b for op in OPS.values() for b in op.backend}
    assert _backend_ops() - covered == set(), "backend.h ops without an op-table row"


def test_every_public_op_has_a_row():
    public = {n for n in hetnn.__all__ if inspect.isfunction(getattr(hetnn, n))
              and getattr(hetnn, n).__module__ in ("hetnn._matmul", "hetnn._max_pool")}
    assert public and public - set(OPS) == set(), "public ops without an op-table row"


def test_the_cpp_ops_driver_has_the_same_rows():
    """The C++ ops driver (run normally and under the sanitizers) checks every op-table row: its kOps registry
    names exactly the table's ops."""
    text = OPS_DRIVER.read_text()
    registry = text[text.index("const OpCase kOps[] = {"):]
    names = re.findall(r'\{"(\w+)", ', registry[:registry.index("};")])
    assert len(names) == len(set(names)) and set(names) == set(OPS), (sorted(names), sorted(OPS))
