"""Per-call cost of small ops and the CPU device's max pooling, this build against an earlier one, interleaved
(scripts/build_ab.py: rounds of one timing process per build, earlier / this per workload with its 95 % interval).
Small ops: hetnn.matmul of two 8x8 Arrays and of two 8x8 NumPy arrays, max_pool2d of a 4x4 image, conv2d of a
4x4 image with a 3x3 filter, an add of two 1 KiB Arrays. Max pooling: the bench's AlexNet and ResNet-50 layers at
batch 1, LeNet's two pools at batch 64, the large k3s2 layer; values only and with indices (the training forward).
On each OpenCL device: an add, a multiply by a number and an exp over 64 MiB float32 arrays, into out=; a sum and a
max of such an array, and its sum over the leading axis as 4096 x 4096. Each
workload: the median over 7 repeats of a timed loop's time per call (the CPU device unless named).
"""
import os
import sys

from build_ab import main

PROBE = r"""


dev = hetnn.device("cpu")
a = rng.standard_normal((8, 8), dtype=np.float32)
A = hetnn.asarray(a, device=dev)
img = hetnn.asarray(rng.standard_normal((1, 1, 4, 4), dtype=np.float32), device=dev)
w = hetnn.asarray(rng.standard_normal((1, 1, 3, 3), dtype=np.float32), device=dev)
v = hetnn.asarray(rng.standard_normal(256, dtype=np.float32), device=dev)
work = {
    "matmul 8x8 Arrays": lambda: hetnn.matmul(A, A),
    "matmul 8x8 NumPy in, NumPy out": lambda: hetnn.matmul(a, a),
    "max_pool2d 1x1x4x4 k2": lambda: hetnn.max_pool2d(img, 2),
    "conv2d 1x1x4x4, 3x3 filter": lambda: hetnn.conv2d(img, w),
    "add 1 KiB Arrays": lambda: v + v,
}
for shape, k, s, p in [((1, 256, 13, 13), 3, 2, 0), ((1, 256, 27, 27), 3, 2, 0), ((1, 96, 55, 55), 3, 2, 0),
                       ((1, 64, 112, 112), 3, 2, 1), ((64, 6, 28, 28), 2, 2, 0), ((64, 16, 10, 10), 2, 2, 0),
                       ((32, 64, 112, 112), 3, 2, 0)]:
    X = hetnn.asarray(rng.standard_normal(shape, dtype=np.float32), device=dev)
    name = f"max_pool2d {'x'.join(map(str, shape))} k{k}s{s}p{p}"
    work[name] = lambda X=X, k=k, s=s, p=p: hetnn.max_pool2d(X, k, s, p)
    work[name + " +indices"] = lambda X=X, k=k, s=s, p=p: hetnn.max_pool2d(X, k, s, p, return_indices=True)
for cl in [d for d in hetnn.devices() if d.kind == "opencl"]:  # element-wise ops over 64 MiB, results into out=
    big = [hetnn.asarray(rng.standard_normal(1 << 24, dtype=np.float32), device=cl) for _ in range(3)]

    def ew(fn, cl=cl):
        return lambda: (fn(), hetnn.synchronize([cl]))
    work[f"add 64 MiB [{cl.id}]"] = ew(lambda b=big: hetnn.add(b[0], b[1], out=b[2]))
    work[f"multiply by 2 64 MiB [{cl.id}]"] = ew(lambda b=big: hetnn.multiply(b[0], 2.0, out=b[2]))
    work[f"exp 64 MiB [{cl.id}]"] = ew(lambda b=big: hetnn.exp(b[0], out=b[2]))
    m = big[0].reshape((4096, 4096))
    work[f"sum 64 MiB [{cl.id}]"] = ew(lambda: hetnn.sum(big[0]))
    work[f"max 64 MiB [{cl.id}]"] = ew(lambda: hetnn.max(big[0]))
    work[f"sum over axis 0, 4096x4096 [{cl.id}]"] = ew(lambda m=m: hetnn.sum(m, axis=0))
for name, fn in work.items():
    out[name] = per_call(fn)
print(json.dumps(out))
"""

if __name__ == "__main__":
    sys.exit(main(PROBE, __doc__, os.path.basename(__file__)))
