"""LeNet and the AlexNet variant on Fashion-MNIST on the CPU device and one OpenCL GPU, against PyTorch on the CPU and
on CUDA (the conv suite's part (c), with the GPU devices; docs/gpu.md). Usage:
    python scripts/cnn_epochs_gpu.py [FASHION_MNIST_DIR [N_TRAIN]]    (default: Debian's directory, all 60,000)
Interleaved epochs from the same initial weights; the test accuracy after the last epoch on the 10,000 test images."""
import sys

import numpy as np

import hetnn
from hetnn import datasets
from hetnn.bench import cnn
from hetnn.bench.report import format_table

(xt, yt), (xe, ye) = datasets.fashion_mnist(sys.argv[1] if len(sys.argv) > 1 else None, images=True)
n = int(sys.argv[2]) if len(sys.argv) > 2 else len(xt)
xt, yt, ye = xt[:n], yt[:n].astype(np.int64), ye.astype(np.int64)


def pad(a, s):
    p = (s - 28) // 2
    return np.ascontiguousarray(np.pad(a, ((0, 0), (0, 0), (p, s - 28 - p), (p, s - 28 - p))))


devs = [hetnn.device("cpu"), hetnn.device("gpu")]
rows = cnn.run_training("lenet", devs, (xt, yt, xe, ye), batch=64, epochs=3, loss="cross_entropy",
                        compare=("torch",))
rows += cnn.run_training("alexnet32", devs, (pad(xt[:6400], 32), yt[:6400], pad(xe, 32), ye), batch=256, epochs=2,
                         loss="cross_entropy", compare=("torch",))
print(format_table(rows, cnn.CNN_COLUMNS))
for line in cnn.ratios(rows):
    print("  " + line)
