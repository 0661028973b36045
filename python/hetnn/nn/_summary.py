"""Sequential.summary(): the Keras-style table of layers, per-sample output shapes and parameter counts."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np


def format_summary(model: Any, input_shape: Optional[Sequence[int]] = None) -> str:
    shape: Optional[Tuple[int, ...]] = tuple(int(d) for d in input_shape) if input_shape is not None \
        else model.input_shape()
    rows: List[Tuple[str, str, str]] = []
    for i, layer in enumerate(model.layers):
        if shape is not None:
            try:
                shape = layer.output_shape(shape)
            except ValueError as exc:
                raise ValueError(f"summary: layer {i} ({type(layer).__name__}): {exc}") from None
        n = sum(int(np.prod(p.shape)) for p in layer.parameters())
        out = "?" if shape is None else str((None,) + tuple(shape))
        rows.append((f"{i}: {type(layer).__name__}", out, f"{n:,}"))
    head = ("Layer (type)", "Output Shape", "Param #")
    w = [max(len(r[c]) for r in rows + [head]) for c in range(3)]
    line = lambda r: f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:>{w[2]}}"  # noqa: E731
    rule = "-" * (w[0] + w[1] + w[2] + 4)
    total = model.count_params()
    lines = [f"Sequential on {model.device.id} ({model.dtype.name})", rule, line(head), rule]
    lines += [line(r) for r in rows]
    lines += [rule, f"Total params: {total:,} ({total * model.param_dtype.itemsize / 1024:.1f} KiB)"]
    if shape is None:
        lines.append("(output shapes unknown: pass summary(input_shape=...), the per-sample input shape)")
    return "\n".join(lines)
