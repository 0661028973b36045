"""Convolutions on the OpenCL devices, this build against an earlier one, interleaved (scripts/build_ab.py: rounds of
one timing process per build, earlier / this per workload with its 95 % interval). Per layer, float32, on each
OpenCL device: the forward (bias and ReLU), the weight and bias gradient, and the data gradient, each by
hetnn.conv2d / hetnn.conv2d_backward on Arrays already on the device, the device synchronised after each timed
loop. Layers: LeNet's two at batch 64, the Keras-style CNN's two at batch 32, AlexNet-32's first three at batch 64,
ResNet-50's 7x7 stem and three of its 3x3 layers (stride 1 and 2) at batch 1. Then training epochs on each OpenCL
device: LeNet on 4096 random 28x28 images at batch 64, the Keras-style CNN on 512 random 50x50 maps at batch 32
(Adam; one warm-up epoch). Each workload: the median over 5 repeats of a timed loop's time per call (per epoch).
"""
import os
import sys

from build_ab import main

PROBE = r"""


def timed(fn, dev, budget=0.1):
    return per_call(fn, dev, budget=budget, repeats=5, max_calls=1 << 12, grow=2)


LAYERS = [("lenet conv1", 64, 1, 28, 6, 5, 1, 2), ("lenet conv2", 64, 6, 14, 16, 5, 1, 0),
          ("keras conv1", 32, 1, 50, 32, 3, 1, 0), ("keras conv2", 32, 32, 48, 64, 3, 1, 0),
          ("alexnet32 conv1", 64, 1, 32, 64, 3, 2, 1), ("alexnet32 conv2", 64, 64, 8, 192, 3, 1, 1),
          ("alexnet32 conv3", 64, 192, 4, 384, 3, 1, 1), ("resnet50 7x7 s2", 1, 3, 224, 64, 7, 2, 3),
          ("resnet50 3x3 64@56", 1, 64, 56, 64, 3, 1, 1), ("resnet50 3x3 s2 128@56", 1, 128, 56, 128, 3, 2, 1),
          ("resnet50 3x3 256@14", 1, 256, 14, 256, 3, 1, 1)]
for dev in [d for d in hetnn.devices() if d.kind == "opencl"]:
    for name, n, c, h, o, k, s, p in LAYERS:
        x = hetnn.asarray(rng.standard_normal((n, c, h, h), dtype=np.float32), device=dev)
        w = hetnn.asarray(rng.standard_normal((o, c, k, k), dtype=np.float32) / np.float32(np.sqrt(c * k * k)),
                          device=dev)
        b = hetnn.asarray(rng.standard_normal(o, dtype=np.float32), device=dev)
        y = hetnn.conv2d(x, w, b, s, p, activation="relu")
        gy = hetnn.asarray(rng.standard_normal(y.shape, dtype=np.float32), device=dev)
        tag = f"{dev.name[:14]} {name} b{n}"
        out[tag + " fwd"] = timed(lambda: hetnn.conv2d(x, w, b, s, p, activation="relu", out=y), dev)
        out[tag + " wgrad"] = timed(lambda: hetnn.conv2d_backward(gy, x, w, s, p, input_grad=False), dev)
        out[tag + " dgrad"] = timed(
            lambda: hetnn.conv2d_backward(gy, x, w, s, p, weight_grad=False, bias_grad=False), dev)
    from hetnn import optim
    from hetnn.bench.cnn import KERAS_CNN, LENET, build

    for name, spec, shape, count, batch, loss in [("lenet", LENET, (1, 28, 28), 4096, 64, "cross_entropy"),
                                                   ("keras-cnn", KERAS_CNN, (1, 50, 50), 512, 32, "mse")]:
        model = build(spec, dev, 0)
        opt = optim.Adam(model.parameters(), lr=1e-3)
        xs = rng.random((count,) + shape, dtype=np.float32)
        ys = rng.integers(0, 10, count) if loss == "cross_entropy" else rng.random((count, 1), dtype=np.float32)
        out[f"{dev.name[:14]} {name} epoch, {count} samples, batch {batch}"] = timed(
            lambda: model.fit(xs, ys, loss=loss, optimizer=opt, epochs=1, batch_size=batch, verbose=0), dev, 0.5)
print(json.dumps(out))
"""

if __name__ == "__main__":
    sys.exit(main(PROBE, __doc__, os.path.basename(__file__), runs=6))
