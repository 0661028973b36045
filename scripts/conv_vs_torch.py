"""conv2d forward on a GPU: hetnn (OpenCL) with each of its algorithms against torch CUDA (cuDNN, TF32 off),
interleaved in one run; float32, ResNet-50 layers (NCHW both). Each algorithm's result is checked against cuDNN's
first. --dtype float16 / bfloat16: both in that type (cuDNN on the tensor cores; hetnn on the matrix-unit member where
Device.float16_mode says tensor cores); --dtype tf32: float32 data, hetnn at precision "high", cuDNN with TF32 on.

    python scripts/conv_vs_torch.py [--algorithms auto,winograd,im2col] [--backward [--grads both|data|weight]]
        [--dtype float32]

auto: the device's own choice (implicit GEMM where the GEMM parameters in force are vtiled); winograd: F(2x2, 3x3)
for the 3x3 stride-1 layers, winograd4: F(4x4, 3x3); im2col: the column buffer and a GEMM. --grads data / weight
times one gradient alone (torch: aten.convolution_backward with that output mask, cuDNN's pass for it)."""
import argparse
import sys

import numpy as np
import torch

import hetnn
from hetnn import Case, _core, interleave
from hetnn.bench import ratio

ap = argparse.ArgumentParser()
ap.add_argument("--algorithms", default="auto,winograd")
ap.add_argument("--rounds", type=int, default=30)
ap.add_argument("--device", default="gpu")
ap.add_argument("--layers", type=int, default=6, help="the first LAYERS of the list")
ap.add_argument("--backward", action="store_true",
                help="time the gradients of x and w (hetnn.conv2d_backward; torch: autograd of the forward) instead")
ap.add_argument("--grads", default="both", choices=["both", "data", "weight"],
                help="with --backward: which gradients to time")
ap.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16", "tf32"])
args = ap.parse_args()
tf32 = args.dtype == "tf32"
torch.backends.cudnn.allow_tf32 = tf32
torch.backends.cuda.matmul.allow_tf32 = tf32
dt = "float32" if tf32 else args.dtype  # the data's type
tdt = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[dt]
precision = "high" if tf32 else "highest"
dev = hetnn.device(args.device)
print("device:", dev.id, dev.name, dev.arch, "| dtype", args.dtype, "| float16", dev.float16_mode, "| tf32",
      dev.tf32_mode)
for n, c, h, o, k, s, p in [(32, 64, 56, 64, 3, 1, 1), (32, 256, 56, 64, 1, 1, 0), (32, 128, 28, 128, 3, 1, 1),
                            (32, 256, 14, 256, 3, 1, 1), (32, 512, 7, 512, 3, 1, 1),
                            (1, 64, 56, 64, 3, 1, 1)][:args.layers]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c, h, h)).astype(np.float32)
    w = (rng.standard_normal((o, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)
    T, TW = torch.from_numpy(x).cuda().to(tdt), torch.from_numpy(w).cuda().to(tdt)
    X, W = (hetnn.asarray(v.float().cpu().numpy(), device=dev).astype(dt) for v in (T, TW))  # the same rounding
    t = torch.nn.functional.conv2d(T, TW, None, s, p).float().cpu().numpy()
    oh = t.shape[2]
    Y = hetnn.empty(t.shape, dt, device=dev)
    flops = 2 * n * o * oh * oh * c * k * k
    cases = []
    if args.backward:  # data + weight gradients; the algorithm decides how the data gradient runs on stride 1
        g = rng.standard_normal(t.shape).astype(np.float32)
        TG = torch.from_numpy(g).cuda().to(tdt)
        G = hetnn.asarray(TG.float().cpu().numpy(), device=dev).astype(dt)
        TX, TWg = T.clone().requires_grad_(True), TW.clone().requires_grad_(True)

        want_x, want_w = args.grads in ("both", "data"), args.grads in ("both", "weight")
        passes = want_x + want_w

        def torch_bwd():
            if args.grads == "both":
                return torch.autograd.grad(torch.nn.functional.conv2d(TX, TWg, None, s, p), (TX, TWg), TG)
            return torch.ops.aten.convolution_backward(TG, T, TW, None, [s, s], [p, p], [1, 1], False, [0, 0], 1,
                                                       [want_x, want_w, False])[:2]

        refs = [None if v is None else v.float().cpu().numpy() for v in torch_bwd()]
        for algo in args.algorithms.split(","):
            def run_bwd(algo=algo):
                _core._set_conv_algorithm(dev._dev, "" if algo == "auto" else algo)
                return hetnn.conv2d_backward(G, X, W, s, p, input_grad=want_x, weight_grad=want_w, bias_grad=False,
                                             precision=precision)

            err = max(float(np.abs(got.astype("float32").numpy() - ref).max() / np.abs(ref).max())
                      for got, ref in zip(run_bwd()[:2], refs) if ref is not None)
            print(f"  {algo} backward ({args.grads}): max rel err against cuDNN {err:.1e}")
            cases.append(Case(algo, run_bwd, devices=[dev], flops=passes * flops))
        cases.append(Case("torch", torch_bwd, sync=torch.cuda.synchronize, flops=passes * flops))
    for algo in args.algorithms.split(",") if not args.backward else ():
        if algo.startswith("winograd") and (k != 3 or s != 1):
            continue

        def run(algo=algo):
            _core._set_conv_algorithm(dev._dev, "" if algo == "auto" else algo)
            return hetnn.conv2d(X, W, stride=s, padding=p, out=Y, precision=precision)

        err = float(np.abs(run().astype("float32").numpy() - t).max() / np.abs(t).max())
        print(f"  {algo}: max rel err against cuDNN {err:.1e}")
        cases.append(Case(algo, run, devices=[dev], flops=flops))
    cases.append(Case("torch", lambda: torch.nn.functional.conv2d(T, TW, None, s, p), sync=torch.cuda.synchronize,
                      flops=flops))
    res = {r.name: r for r in interleave(cases, n_warmup=5, n_repeat=args.rounds)}
    _core._set_conv_algorithm(dev._dev, "")
    times = ", ".join(f"{name} {np.median(r.wall_times) * 1e3:.3f} ms" for name, r in res.items())
    print(f"{n}x{c}x{h}x{h} k{k} s{s} -> {o}: {times}")
    for name in res:
        if name != "torch":
            print("   ", ratio(f"hetnn {name} / cuDNN", res[name], res["torch"]))
    sys.stdout.flush()
