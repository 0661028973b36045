"""Element-wise ops and a sum on the CPU device at sizes from 64 KiB to 256 MiB, this build against an earlier one,
interleaved (scripts/build_ab.py): float32 add, negative and exp into out=, the sum of an array (EW_OPS: other
hetnn functions, comma-separated, NAME_axis0 over the leading axis of rows of 1024; EW_SIZES_KIB: other sizes per
operand; EW_DEVICE: another device, e.g. opencl:0:0; EW_RANGE: the inputs' interval, default -1,1; EW_DTYPE:
float64). Each workload: the median over 7 repeats of a timed loop's time per call.
"""
import sys

from build_ab import main

PROBE = r"""


dev = hetnn.device(os.environ.get("EW_DEVICE", "cpu"))
lo, hi = (float(v) for v in os.environ.get("EW_RANGE", "-1,1").split(","))
dtype = np.dtype(os.environ.get("EW_DTYPE", "float32"))
sizes = [int(s) for s in os.environ.get("EW_SIZES_KIB", "64,1024,16384,262144").split(",")]
for kib in sizes:
    n = kib * 1024 // dtype.itemsize
    x = hetnn.asarray(rng.uniform(lo, hi, n).astype(dtype), device=dev)
    y = hetnn.asarray(rng.uniform(lo, hi, n).astype(dtype), device=dev)
    z = hetnn.empty((n,), dtype=dtype.name, device=dev)
    size = f"{kib // 1024} MiB" if kib >= 1024 else f"{kib} KiB"
    for name in os.environ.get("EW_OPS", "add,negative,exp,sum").split(","):
        f = getattr(hetnn, name.removesuffix("_axis0"))
        if name.endswith("_axis0"):  # over the leading axis of the array as rows of 1024
            xm = hetnn.reshape(x, (n // 1024, 1024))
            fn = lambda f=f, xm=xm: f(xm, axis=0)  # noqa: E731
        elif name in ("sum", "max", "min", "mean", "prod", "argmax", "argmin", "all", "any"):
            fn = lambda f=f: f(x)  # noqa: E731
        elif name in ("add", "subtract", "multiply", "divide", "maximum", "minimum", "pow", "atan2", "hypot",
                      "logaddexp", "copysign", "floor_divide", "remainder"):
            fn = lambda f=f: f(x, y, out=z)  # noqa: E731
        else:
            fn = lambda f=f: f(x, out=z)  # noqa: E731
        out[f"{name} {size}"] = per_call(fn, dev)
    del x, y, z
print(json.dumps(out))
"""

if __name__ == "__main__":
    sys.exit(main("import os\n" + PROBE, __doc__, "ew_sizes_vs_build.py"))
