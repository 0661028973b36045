"""hetnn.conv2d: PyTorch's semantics (output size, 'same' with even kernels, unbatched input, groups, dilation,
stride larger than the kernel, an empty batch), both placement paths, out=, and PyTorch itself where installed."""
import importlib.util

import numpy as np
import pytest

import hetnn
from op_table import _conv_ref
from conftest import rel_err


def _inputs(rng, n, c, h, w, o, k, groups=1, dtype=np.float32):
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    weight = rng.standard_normal((o, c // groups, *k)).astype(dtype)
    return x, weight, rng.standard_normal(o).astype(dtype)


CASES = [  # (n, c, h, w, o, k, stride, padding, dilation, groups)
    (2, 3, 8, 9, 4, (3, 3), (1, 1), (1, 1), (1, 1), 1),
    (1, 4, 7, 7, 6, (2, 2), (1, 1), "same", (1, 1), 2),   # even kernel: the extra pad at the bottom/right
    (1, 2, 9, 6, 2, (4, 3), (1, 1), "same", (2, 1), 1),   # dilated 'same'
    (2, 2, 10, 10, 3, (2, 2), (3, 3), (0, 0), (1, 1), 1),  # stride larger than the kernel
    (0, 3, 5, 5, 2, (3, 3), (1, 1), (0, 0), (1, 1), 1),   # an empty batch
    (1, 6, 5, 8, 6, (3, 1), (2, 1), (1, 0), (1, 1), 6),   # depthwise
    (1, 2, 3, 3, 1, (3, 3), (1, 1), "valid", (1, 1), 1),  # the kernel exactly the input
    (3, 5, 4, 6, 3, (1, 1), (1, 1), (0, 0), (1, 1), 1),   # pointwise: a matrix product per image
]


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_conv2d_matches_float64(device, rng, case):
    n, c, h, w, o, k, stride, padding, dilation, groups = case
    x, weight, bias = _inputs(rng, n, c, h, w, o, k, groups)
    ref = _conv_ref((x, weight, bias, stride, padding, dilation, groups, "relu"))[0]
    y = hetnn.conv2d(x, weight, bias, stride, padding, dilation, groups, "relu", device=device)
    assert y.shape == ref.shape
    assert rel_err(y, ref) < 2e-5
    X, Wt, B = (hetnn.asarray(a, device=device) for a in (x, weight, bias))
    out = hetnn.empty(ref.shape, device=device)
    got = hetnn.conv2d(X, Wt, bias=B, stride=stride, padding=padding, dilation=dilation, groups=groups,
                       activation="relu", out=out)
    assert got is out and rel_err(out.numpy(), ref) < 2e-5


def test_unbatched_input_gives_unbatched_output(device, rng):
    x, weight, bias = _inputs(rng, 1, 3, 6, 6, 2, (3, 3))
    y = hetnn.conv2d(x[0], weight, bias, device=device)
    assert y.shape == (2, 4, 4)
    np.testing.assert_allclose(y, hetnn.conv2d(x, weight, bias, device=device)[0], rtol=1e-6)


@pytest.mark.filterwarnings("ignore:Using padding=.same.")
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
@pytest.mark.parametrize("case", CASES[:4] + CASES[5:], ids=[str(i) for i in (0, 1, 2, 3, 5, 6, 7)])
def test_conv2d_agrees_with_pytorch(device, rng, case):
    import torch

    n, c, h, w, o, k, stride, padding, dilation, groups = case
    x, weight, bias = _inputs(rng, n, c, h, w, o, k, groups)
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(weight), torch.from_numpy(bias),
                                      stride, padding, dilation, groups).numpy()
    got = hetnn.conv2d(x, weight, bias, stride=stride, padding=padding, dilation=dilation, groups=groups,
                       device=device)
    assert got.shape == want.shape
    assert rel_err(got, want) < 2e-5


def test_bias_positionally_and_by_keyword_but_not_both(rng):
    x, weight, bias = _inputs(rng, 1, 2, 5, 5, 2, (3, 3))
    a = hetnn.conv2d(x, weight, bias, 1, 1)
    b = hetnn.conv2d(x, weight, bias=bias, stride=1, padding=1)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match="multiple values"):
        hetnn.conv2d(x, weight, bias, bias=bias)
