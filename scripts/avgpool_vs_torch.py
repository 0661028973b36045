# avg_pool2d on a GPU: hetnn (OpenCL) vs torch CUDA, interleaved in one run; float32. Needs torch with CUDA.
import sys
import numpy as np
import torch
import hetnn
from hetnn import Case, interleave

dev = hetnn.device("gpu")
print("device:", dev.id, dev.name)
for shape, k, s, p in [((32, 64, 112, 112), 3, 2, 1), ((32, 64, 224, 224), 2, 2, 0), ((1, 64, 56, 56), 3, 1, 1),
                       ((8, 1, 8192, 1024), 2, 2, 0)]:
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    X = hetnn.asarray(x, device=dev)
    T = torch.from_numpy(x).cuda()
    y = hetnn.avg_pool2d(X, k, s, p).numpy()
    t = torch.nn.functional.avg_pool2d(T, k, s, p).cpu().numpy()
    err = float(np.abs(y - t).max())
    Y = hetnn.empty(y.shape, "float32", device=dev)
    nbytes = x.nbytes + y.nbytes
    res = interleave([Case("hetnn", lambda: hetnn.avg_pool2d(X, k, s, p, out=Y), devices=[dev], nbytes=nbytes),
                      Case("torch", lambda: torch.nn.functional.avg_pool2d(T, k, s, p), sync=torch.cuda.synchronize,
                           nbytes=nbytes)], n_warmup=5, n_repeat=40)
    h, tt = (np.median(r.wall_times) for r in res)
    ratios = np.array(res[1].wall_times[:len(res[0].wall_times)]) / np.array(res[0].wall_times[:len(res[1].wall_times)])
    q1, q3 = np.percentile(ratios, [25, 75])
    print(f"{shape} k{k} s{s} p{p}: hetnn {h*1e3:.3f} ms ({nbytes/h/1e9:.0f} GB/s), torch {tt*1e3:.3f} ms "
          f"({nbytes/tt/1e9:.0f} GB/s); torch/hetnn per round median {np.median(ratios):.2f} (IQR {q1:.2f}-{q3:.2f}); "
          f"max |err| {err:.2e}")
    sys.stdout.flush()
