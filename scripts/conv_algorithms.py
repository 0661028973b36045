"""Convolution algorithms per layer on one OpenCL device: the device's own rule ("auto") against "benchmark"
(Device.set_conv_algorithm: per layer shape, the fastest algorithm timed at its first call) and each algorithm
forced, interleaved in one run (hetnn.interleave), float32, ResNet-50-like layers (NCHW), with the choices made.

    python scripts/conv_algorithms.py [--device opencl] [--batch 8] [--rounds 9] [--algorithms im2col,winograd4]
    python scripts/conv_algorithms.py --train keras-cnn [--samples 512] [--batch 64] [--rounds 5]

--train: training epochs of a model of the cnn bench (hetnn.bench.cnn: keras-cnn, alexnet32, lenet) on random data
instead, one epoch with "auto" and one with "benchmark" per round (a warm-up epoch each first, where "benchmark"
makes its choices), interleaved; forward and both gradients follow the setting.

--strided: the data gradients of ResNet-50's stride-2 layers instead (3x3 and the 1x1 shortcut), as stride-1
forward convolutions per class of input positions ("implicit") against a GEMM into columns and col2im ("im2col"),
interleaved:
    python scripts/conv_algorithms.py --strided [--device opencl] [--batch 2] [--rounds 9]
"""
import argparse

import numpy as np

import hetnn
from hetnn import Case, interleave
from hetnn.bench import ratio

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="opencl")
ap.add_argument("--batch", type=int, default=8)
ap.add_argument("--rounds", type=int, default=9)
ap.add_argument("--algorithms", default="", help="comma-separated algorithms also timed forced for every layer")
ap.add_argument("--train", default=None, help="a cnn bench model: time training epochs instead")
ap.add_argument("--samples", type=int, default=512, help="--train: samples an epoch")
ap.add_argument("--strided", action="store_true", help="time stride-2 layers' data gradients instead")
args = ap.parse_args()
dev = hetnn.device(args.device)
print("device:", dev.id, dev.name)
rng = np.random.default_rng(0)
if args.train:
    from hetnn import optim
    from hetnn.bench import cnn

    spec, sample = cnn.MODELS[args.train]
    x = rng.standard_normal((args.samples, *sample)).astype(np.float32)
    outputs = spec[-1][2]
    y = (rng.standard_normal((args.samples, 1)).astype(np.float32) if outputs == 1
         else rng.integers(0, outputs, args.samples).astype(np.int64))
    loss = "mse" if outputs == 1 else "cross_entropy"
    models = {a: cnn.build(spec, dev, 0) for a in ("auto", "benchmark")}
    opts = {a: optim.Adam(m.parameters(), lr=1e-3) for a, m in models.items()}

    def epoch(a):
        dev.set_conv_algorithm(a)
        models[a].fit(x, y, loss=loss, optimizer=opts[a], epochs=1, batch_size=args.batch, seed=0)
        dev.synchronize()

    cases = [Case(a, lambda a=a: epoch(a), devices=[dev]) for a in ("auto", "benchmark")]
    res = {r.name: r for r in interleave(cases, n_warmup=1, n_repeat=args.rounds)}
    dev.set_conv_algorithm("auto")
    print(f"{args.train}, {args.samples} samples, batch {args.batch}:",
          ", ".join(f"{a} {np.median(r.wall_times):.2f} s/epoch" for a, r in res.items()))
    print("   ", ratio("benchmark / auto", res["benchmark"], res["auto"]))
    for ch in dev.conv_choices():
        print(f"  {ch['shape']}: {ch['algorithm']}", {a: round(t, 2) for a, t in ch["ms"].items()}, ch["flags"])
    raise SystemExit(0)
if args.strided:  # (C, H, O, k, padding): outputs at H / 2
    for c, h, o, k, p in [(128, 56, 128, 3, 1), (256, 28, 256, 3, 1), (512, 14, 512, 3, 1), (256, 56, 512, 1, 0)]:
        oh = (h + 2 * p - k) // 2 + 1
        x = hetnn.asarray(rng.standard_normal((args.batch, c, h, h)).astype(np.float32), device=dev)
        w = hetnn.asarray((rng.standard_normal((o, c, k, k)) / np.sqrt(k * k * c)).astype(np.float32), device=dev)
        gy = hetnn.asarray(rng.standard_normal((args.batch, o, oh, oh)).astype(np.float32), device=dev)

        def grad(a):
            dev.set_conv_algorithm(a)
            return hetnn.conv2d_backward(gy, x, w, 2, p, weight_grad=False, bias_grad=False)

        flops = 2 * args.batch * o * oh * oh * c * k * k
        algs = [a for a in (args.algorithms or "implicit,im2col").split(",") if a]
        cases = [Case(a, lambda a=a: grad(a), devices=[dev], flops=flops) for a in algs]
        res = {r.name: r for r in interleave(cases, n_warmup=1, n_repeat=args.rounds)}
        dev.set_conv_algorithm("auto")
        times = [f"{a} {np.median(r.wall_times) * 1e3:.1f} ms" + (f" ({r.noise['noise']})" if r.noise.get("noise")
                                                                  else "") for a, r in res.items()]
        print(f"data gradient {args.batch}x{c}x{h}^2 -> {o} k{k} s2:", ", ".join(times))
        for a in algs[1:]:
            print("   ", ratio(f"{algs[0]} / {a}", res[algs[0]], res[a]))
    raise SystemExit(0)
n = args.batch
layers = [(64, 56, 64, 3), (128, 28, 128, 3), (256, 14, 256, 3), (512, 7, 512, 3), (256, 56, 64, 1), (3, 32, 32, 5)]
names = ["auto", "benchmark"] + [a for a in args.algorithms.split(",") if a]
for c, h, o, k in layers:
    x = hetnn.asarray(rng.standard_normal((n, c, h, h)).astype(np.float32), device=dev)
    w = hetnn.asarray((rng.standard_normal((o, c, k, k)) / np.sqrt(k * k * c)).astype(np.float32), device=dev)
    y = hetnn.empty((n, o, h, h), "float32", device=dev)  # padding k // 2: the input's size

    def run(a):
        dev.set_conv_algorithm(a)
        return hetnn.conv2d(x, w, None, 1, k // 2, out=y)

    cases = [Case(a, lambda a=a: run(a), devices=[dev], flops=2 * n * o * h * h * c * k * k) for a in names]
    res = {r.name: r for r in interleave(cases, n_warmup=1, n_repeat=args.rounds)}
    dev.set_conv_algorithm("auto")
    print(f"{n}x{c}x{h}^2 -> {o} k{k}:", ", ".join(f"{a} {np.median(r.wall_times) * 1e3:.1f} ms"
                                                for a, r in res.items()))
    for a in names[1:]:
        print("   ", ratio(f"{a} / auto", res[a], res["auto"]))
print("benchmark's choices (the fastest of each candidate's calls, ms):")
for ch in dev.conv_choices():
    print(f"  {ch['shape']}: {ch['algorithm']}", {a: round(t, 2) for a, t in ch["ms"].items()},
          f"{ch['calls']} calls", ch["flags"])
