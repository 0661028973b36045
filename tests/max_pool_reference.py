"""Float64 NumPy reference of PyTorch's max_pool2d (forward, indices, backward), written from PyTorch's definition:
each window's taps are visited in row-major order, taps outside the input are skipped, a tap replaces the current
maximum when it is greater or NaN, and the index starts at the window's first in-bounds tap."""
import math

import numpy as np


def out_size(n, k, s, p, d, ceil):
    """PyTorch's pooling_output_shape."""
    num = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)
    o = math.floor(num / s) + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def _first_inside(start, d):
    while start < 0:
        start += d
    return start


def max_pool2d(x, k, s, p, d, ceil):
    """(y float64, indices int64) for x of shape (N, C, H, W); k, s, p, d are (h, w) pairs."""
    x = np.asarray(x, dtype=np.float64)
    N, C, H, W = x.shape
    OH, OW = out_size(H, k[0], s[0], p[0], d[0], ceil), out_size(W, k[1], s[1], p[1], d[1], ceil)
    y = np.empty((N, C, OH, OW))
    idx = np.empty((N, C, OH, OW), dtype=np.int64)
    for oh in range(OH):
        hs = oh * s[0] - p[0]
        for ow in range(OW):
            ws = ow * s[1] - p[1]
            best = np.full((N, C), -np.inf)
            where = np.full((N, C), _first_inside(hs, d[0]) * W + _first_inside(ws, d[1]), dtype=np.int64)
            for i in range(k[0]):
                ih = hs + i * d[0]
                if not 0 <= ih < H:
                    continue
                for j in range(k[1]):
                    iw = ws + j * d[1]
                    if not 0 <= iw < W:
                        continue
                    v = x[:, :, ih, iw]
                    take = (v > best) | np.isnan(v)
                    best = np.where(take, v, best)
                    where = np.where(take, ih * W + iw, where)
            y[:, :, oh, ow] = best
            idx[:, :, oh, ow] = where
    return y, idx


def empty_windows(input_shape, k, s, p, d, ceil):
    """(OH, OW) booleans: windows without a single position inside the input (dilation on tiny inputs). Their output
    is -inf and, as hetnn documents, their index carries no gradient (PyTorch's placeholder index would receive it,
    though no input position produced that output)."""
    H, W = input_shape[-2:]
    OH, OW = out_size(H, k[0], s[0], p[0], d[0], ceil), out_size(W, k[1], s[1], p[1], d[1], ceil)

    def hit(o, n, k, s, p, d):
        return any(0 <= o * s - p + i * d < n for i in range(k))
    return np.array([[not (hit(oh, H, k[0], s[0], p[0], d[0]) and hit(ow, W, k[1], s[1], p[1], d[1]))
                      for ow in range(OW)] for oh in range(OH)], dtype=bool).reshape(OH, OW)


def max_pool2d_backward(grad_output, indices, input_shape, empty=None):
    """Scatter-add of grad_output (float64) at the flat indices of each plane; windows marked in ``empty``
    (empty_windows) add nothing."""
    N, C, H, W = input_shape
    go = np.asarray(grad_output, dtype=np.float64)
    if empty is not None:
        go = np.where(empty, 0.0, go)
    per_plane = int(np.prod(go.shape[-2:]))  # explicit: a -1 cannot be inferred when N * C == 0
    g = go.reshape(N * C, per_plane)
    ix = np.asarray(indices).reshape(N * C, per_plane)
    gx = np.zeros((N * C, H * W))
    for plane in range(N * C):
        valid = (ix[plane] >= 0) & (ix[plane] < H * W)
        np.add.at(gx[plane], ix[plane][valid], g[plane][valid])
    return gx.reshape(N, C, H, W)


def max_pool2d_zeros(x, k, s, p, d, ceil):
    """padding_mode="zeros": x padded with p zeros on every side (numpy.pad) and pooled without padding, cropped to
    the unpadded call's output size (with ceil_mode the padded image may hold more windows); indices mapped back
    to the input plane, -1 where the padding won."""
    x = np.asarray(x, dtype=np.float64)
    N, C, H, W = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    y, idx = max_pool2d(xp, k, s, (0, 0), d, ceil)
    OH, OW = out_size(H, k[0], s[0], p[0], d[0], ceil), out_size(W, k[1], s[1], p[1], d[1], ceil)
    y, idx = y[:, :, :OH, :OW], idx[:, :, :OH, :OW]
    r, c = idx // (W + 2 * p[1]), idx % (W + 2 * p[1])
    inside = (r >= p[0]) & (r < H + p[0]) & (c >= p[1]) & (c < W + p[1])
    return y, np.where(inside, (r - p[0]) * W + (c - p[1]), -1)


def backward_error(grad_input, grad_output, indices, input_shape):
    """max|grad_input - the float64 backward| over the largest sum of magnitudes the backward adds at one element:
    overlapping windows add their gradients in the device's type, so the error is bounded by the magnitudes added
    (a norm-wise error of the result failed now and then when the terms cancelled)."""
    go = np.asarray(grad_output, dtype=np.float64)
    want = max_pool2d_backward(go, indices, input_shape)
    scale = float(np.max(max_pool2d_backward(np.abs(go), indices, input_shape), initial=0.0))
    err = float(np.max(np.abs(np.asarray(grad_input, dtype=np.float64) - want), initial=0.0))
    return err / scale if scale else err
