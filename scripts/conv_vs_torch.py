# conv2d on a GPU: hetnn (OpenCL) vs torch CUDA (cuDNN, TF32 off), interleaved in one run; float32, ResNet-50 layers.
import sys
import numpy as np
import torch
import hetnn
from hetnn import Case, interleave

torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
dev = hetnn.device("gpu")
print("device:", dev.id, dev.name)
for n, c, h, o, k, s, p in [(32, 64, 56, 64, 3, 1, 1), (32, 256, 56, 64, 1, 1, 0), (32, 128, 28, 128, 3, 1, 1),
                            (32, 256, 14, 256, 3, 1, 1), (1, 64, 56, 64, 3, 1, 1)]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c, h, h)).astype(np.float32)
    w = (rng.standard_normal((o, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)
    X, W = hetnn.asarray(x, device=dev), hetnn.asarray(w, device=dev)
    T, TW = torch.from_numpy(x).cuda(), torch.from_numpy(w).cuda()
    y = hetnn.conv2d(X, W, stride=s, padding=p).numpy()
    t = torch.nn.functional.conv2d(T, TW, None, s, p).cpu().numpy()
    err = float(np.abs(y - t).max() / np.abs(t).max())
    Y = hetnn.empty(y.shape, device=dev)
    oh = y.shape[2]
    flops = 2 * n * o * oh * oh * c * k * k
    res = interleave([Case("hetnn", lambda: hetnn.conv2d(X, W, stride=s, padding=p, out=Y), devices=[dev], flops=flops),
                      Case("torch", lambda: torch.nn.functional.conv2d(T, TW, None, s, p), sync=torch.cuda.synchronize,
                           flops=flops)], n_warmup=5, n_repeat=30)
    h_t, t_t = (np.median(r.wall_times) for r in res)
    m = min(len(res[0].wall_times), len(res[1].wall_times))
    ratios = np.array(res[1].wall_times[:m]) / np.array(res[0].wall_times[:m])
    q1, q3 = np.percentile(ratios, [25, 75])
    print(f"{n}x{c}x{h}x{h} k{k} -> {o}: hetnn {h_t*1e3:.3f} ms ({flops/h_t/1e9:.0f} GFLOP/s), torch {t_t*1e3:.3f} ms "
          f"({flops/t_t/1e9:.0f} GFLOP/s); hetnn speed / torch's, per-round median {np.median(ratios):.2f} "
          f"(IQR {q1:.2f}-{q3:.2f}); max rel err {err:.1e}")
    sys.stdout.flush()
