"""hetnn's public ops: each a core function (cpp/src/python/bind_<op>.cpp, typed in _core.pyi) under the one
placement rule of hetnn._placement. A new op is one line here (docs/adding-an-op.md)."""
from __future__ import annotations

from ._loader import _core
from ._placement import placed

matmul = placed(_core.matmul, "a", "b", optional=("bias",), reads_out=lambda kw: kw.get("beta", 0.0) != 0.0)
max_pool2d = placed(_core.max_pool2d, "x", outs=("out", "indices_out"))
max_pool2d_backward = placed(_core.max_pool2d_backward, "grad_output", "indices")
avg_pool2d = placed(_core.avg_pool2d, "x")
avg_pool2d_backward = placed(_core.avg_pool2d_backward, "grad_output")
conv2d = placed(_core.conv2d, "x", "weight", optional=("bias",), positional_optional=True)
conv2d_backward = placed(_core.conv2d_backward, "grad_output", "x", "weight", outs=())

__all__ = ["avg_pool2d", "avg_pool2d_backward", "conv2d", "conv2d_backward", "matmul", "max_pool2d",
           "max_pool2d_backward"]
