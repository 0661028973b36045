"""GEMMs on an NVIDIA GPU: hetnn with each of several GEMM parameter sets against cuBLAS through CuPy and PyTorch
(float32 with TF32 off; or --dtype float16 / bfloat16, where cuBLAS uses the tensor cores; or --dtype tf32, float32
data at hetnn's precision "high" against cuBLAS with TF32 on: torch allow_tf32, CUPY_TF32=1), interleaved round by
round per shape, in one run. Each parameter set is checked against a float64 product of the same (rounded) inputs
first (on the GPU, through CuPy). Prints, per shape, GFLOP/s and each set's ratio to CuPy and torch
with its interval and flags; then the geometric mean over the shapes.

    python scripts/gemm_vs_vendor.py --shapes 1024,2048,4096 --params "db=;v128=family=vtiled ts_m=128 ..."

--params: ';'-separated LABEL=PARAMS ('LABEL=' alone: the parameters the database or the tuning cache give)."""
import argparse
import os
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--shapes", default="1024,2048,4096", help="N or MxNxK list; resnet50 in it: its 20 shapes")
ap.add_argument("--params", default="db=")
ap.add_argument("--rounds", type=int, default=20)
ap.add_argument("--device", default="gpu")
ap.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16", "tf32"])
args = ap.parse_args()
tf32 = args.dtype == "tf32"
os.environ["CUPY_TF32"] = "1" if tf32 else "0"  # read by CuPy at import
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import hetnn  # noqa: E402
from hetnn import Case, _core, interleave  # noqa: E402
from hetnn.bench import ratio  # noqa: E402
from hetnn.bench.matmul import resnet50_shapes  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = tf32

dev = hetnn.device(args.device)
print("device:", dev.id, dev.name, dev.arch, dev.driver_version, "| torch", torch.__version__, "cupy", cp.__version__)
sets = [tuple(s.split("=", 1)) for s in args.params.split(";") if s]
shapes = []
for s in args.shapes.split(","):  # "resnet50" among them: its 20 shapes at batch 1
    if s == "resnet50":
        shapes += [(f"{m}x{n}x{k}", m, n, k) for _, m, n, k in resnet50_shapes(1)]
        continue
    m, n, k = (int(s),) * 3 if "x" not in s else map(int, s.split("x"))
    shapes.append((f"{m}x{n}x{k}", m, n, k))
rng = np.random.default_rng(0)
logs = {label: [] for label, _ in sets}
logs.update(cupy=[], torch=[])
key = args.dtype  # the GEMM parameters' type; the data's is float32 for tf32
dt = "float32" if tf32 else key
tol = {"float32": 1e-5, "float16": 5e-3, "bfloat16": 2e-2, "tf32": 5e-3}[key]
tdt = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[dt]
precision = "high" if tf32 else "highest"
print("precision:", precision, "| tf32 mode:", dev.tf32_mode if tf32 else "-")
for name, m, n, k in shapes:
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    ta, tb = torch.from_numpy(a).cuda().to(tdt), torch.from_numpy(b).cuda().to(tdt)
    a, b = ta.float().cpu().numpy(), tb.float().cpu().numpy()  # the inputs as rounded to the data type
    A, B = hetnn.asarray(a, device=dev).astype(dt), hetnn.asarray(b, device=dev).astype(dt)
    C = hetnn.empty((m, n), dtype=dt, device=dev)
    ca, cb = cp.asarray(a), cp.asarray(b)
    ref = cp.asnumpy(ca.astype(cp.float64) @ cb.astype(cp.float64))
    if dt != "float32":  # CuPy in float16 (cuBLAS's tensor cores); it has no bfloat16
        ca, cb = (ca.astype(cp.float16), cb.astype(cp.float16)) if dt == "float16" else (None, None)
    fl = 2.0 * m * n * k

    def run(params):
        return lambda: (_core.set_gemm_params(dev._dev, key, params, "script"),
                        hetnn.matmul(A, B, out=C, precision=precision))

    cases = []
    for label, params in sets:
        try:
            run(params)()
            err = np.max(np.abs(C.astype("float32").numpy() - ref)) / np.max(np.abs(ref))
            if not err < tol:
                print(f"  {name} {label}: WRONG (relative error {err:.1e})", file=sys.stderr)
                continue
        except Exception as exc:  # a set the driver refuses is reported, the others still run
            print(f"  {name} {label}: {type(exc).__name__}: {str(exc).splitlines()[0][:150]}", file=sys.stderr)
            continue
        cases.append(Case(label, run(params), devices=[dev], flops=fl))
    sync = torch.cuda.synchronize
    if ca is not None:
        cases.append(Case("cupy", lambda: ca @ cb, sync=cp.cuda.Device().synchronize, flops=fl))
    cases.append(Case("torch", lambda: ta @ tb, sync=sync, flops=fl))
    res = {r.name: r for r in interleave(cases, n_warmup=3, n_repeat=args.rounds)}
    _core.set_gemm_params(dev._dev, key, "", "")
    line = ", ".join(f"{lab} {fl / np.median(r.wall_times) / 1e9:,.0f}" for lab, r in res.items())
    print(f"{name}: GFLOP/s {line}", flush=True)
    for label, _ in sets:
        for peer in ("cupy", "torch"):
            if label in res and peer in res:
                print("   ", ratio(f"{label}/{peer}", res[label], res[peer]))
    for lab, r in res.items():
        logs[lab].append(np.median(r.wall_times))
if len(shapes) > 1:
    g = lambda v: float(np.exp(np.mean(np.log(v))))  # noqa: E731
    for label, _ in sets:
        t = np.array(logs[label])
        if len(t) == len(shapes):
            peers = ", ".join(f"{label}/{peer} {g(np.array(logs[peer]) / t):.2f}x" for peer in ("cupy", "torch")
                              if len(logs[peer]) == len(shapes))
            print(f"geometric mean over {len(shapes)} shapes: {peers}")
