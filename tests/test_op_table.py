"""The op table (tests/op_table.py) on every device: each op against its float64 reference on fresh random inputs
(new hetnn arrays start as NaN bytes: HETNN_POISON), each bad call a typed error naming what is wrong; and no op of
the public API or of the backend interface without a row."""
import inspect
import re
from pathlib import Path

import numpy as np
import pytest

import hetnn
from conftest import rel_err
from op_table import OPS

BACKEND_H = Path(__file__).resolve().parent.parent / "cpp" / "src" / "backend" / "backend.h"


def _backend_ops():
    text = BACKEND_H.read_text()
    ops = text[text.index("// Ops."):text.index("// Device-time capture")]
    return set(re.findall(r"virtual void (\w+)\(", ops))


def test_every_backend_op_has_a_row():
    covered = {b for op in OPS.values() for b in op.backend}
    assert _backend_ops() - covered == set(), "backend.h ops without an op-table row"


def test_every_public_op_has_a_row():
    public = {n for n in hetnn.__all__ if inspect.isfunction(getattr(hetnn, n))
              and getattr(hetnn, n).__module__ in ("hetnn._matmul", "hetnn._max_pool")}
    assert public and public - set(OPS) == set(), "public ops without an op-table row"


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_op_matches_its_float64_reference(device, rng, name, dtype):
    op = OPS[name]
    if dtype not in op.dtypes:
        pytest.skip(f"{name} is not registered for {dtype}")
    for _ in range(4):
        inputs = op.inputs(rng, dtype)
        got = op.run(device, inputs)
        want = op.reference(inputs)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            g = np.asarray(g)
            assert g.shape == np.shape(w), (name, g.shape, np.shape(w))
            assert not np.isnan(g).any() or np.isnan(w).any(), f"{name}: unwritten (NaN-poisoned) output"
            assert rel_err(g, w) <= op.tol[dtype], (name, dtype, rel_err(g, w))


BAD = [(name, label, call, exc, msg) for name, op in sorted(OPS.items()) for label, call, exc, msg in op.bad]


@pytest.mark.parametrize("name,label,call,exc,msg", BAD, ids=[f"{b[0]}-{b[1]}" for b in BAD])
def test_op_bad_call_is_a_typed_error(device, name, label, call, exc, msg):
    with pytest.raises(exc, match=msg):
        call(device)
