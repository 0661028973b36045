"""How far a 16-bit convolution's weight gradient is from the float64 one rounded once, on an OpenCL device: the
GEMM parameters in force (on a CPU-like device: per-image GEMMs whose partial gradients are rounded to 16 bits, then
added) against one GEMM over the batch on the matrix-unit member (emulated off NVIDIA) and on the vtiled one (float32
sums, one rounding). Prints each error summed over the gradient as a multiple of the float64 gradient's own rounding.
    .venv/bin/python scripts/wgrad_rounding.py [--device opencl]"""
import argparse
import os
import sys

import numpy as np

import hetnn
from hetnn import _core

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from op_table import _conv_bwd_ref  # noqa: E402

MMA = "family=mma ts_m=32 ts_n=64 ts_k=16 wm=2 wn=1"
VTILED = "family=vtiled ts_m=16 ts_n=32 ts_k=8 wpt_m=2 wpt_n=4 vwm=2 vwn=4"

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="opencl")
args = ap.parse_args()
dev = hetnn.device(args.device)
rng = np.random.default_rng(1)
print(f"device {dev.id} ({dev.name}); inputs (N, C, H, H), O outputs, 3x3 kernels, padding 1")
for dtype in ("float16", "bfloat16"):
    for n, c, h, o in ((32, 16, 12, 16), (128, 8, 8, 8)):
        x = rng.standard_normal((n, c, h, h)).astype(dtype)
        w = rng.standard_normal((o, c, 3, 3)).astype(dtype)
        gy = rng.standard_normal((n, o, h, h)).astype(dtype)
        _, ref, _ = _conv_bwd_ref((gy, x, w, (1, 1), (1, 1), (1, 1), 1))
        rounding = np.abs(ref.astype(dtype).astype(np.float64) - ref).sum()
        row = []
        for name, params in (("in force", None), ("batch GEMM", MMA), ("batch GEMM", VTILED)):
            old, source = _core.gemm_params(dev._dev, dtype)
            if params:
                _core.set_gemm_params(dev._dev, dtype, params, "script")
            try:
                _, gw, _ = hetnn.conv2d_backward(gy, x, w, 1, 1, 1, 1, input_grad=False, bias_grad=False, device=dev)
            finally:
                _core.set_gemm_params(dev._dev, dtype, "" if source.startswith(("database", "default")) else old,
                                      source)
            row.append(f"{name} ({(params or _core.gemm_params(dev._dev, dtype)[0]).split()[0]}): "
                       f"{np.abs(gw.astype(np.float64) - ref).sum() / rounding:.2f}x")
        print(f"{dtype:9} {(n, c, h, h)} O={o} K={n * h * h}: " + ", ".join(row))
