"""Convolution networks whose activations stay in the CPU device's own layouts between layers (core/blocked.h:
oneDNN's nChw16c / NHWC through convolution, activation and max pooling; NCHW before flatten, dropout, dense):
float32 gradients and outputs against the same network in float64 (NCHW, checked by finite differences in
test_nn_conv.py), the same float32 network with the layouts off, and pooling's NaN and tie rules."""
import numpy as np
import pytest

import hetnn
from hetnn import nn, optim

from conftest import rel_err
from test_nn import grads_after_one_batch

NETS = {
    # 16 and 32 channels: blocks without padding, kept from layer to layer
    "conv-pool-conv-pool": lambda: [nn.Conv2d(3, 16, 3, padding=1, activation="relu", seed=1), nn.MaxPool2d(2),
                                    nn.Conv2d(16, 32, 3, activation="relu", seed=2), nn.MaxPool2d(2),
                                    nn.Flatten(), nn.Dense(32, 5, seed=3)],
    # a ReLU layer before an overlapping padded pool, a tanh layer, a pointwise convolution (NCHW) in the chain,
    # dropout (p = 0: the identity, still taken in NCHW)
    "layers-overlap-pointwise": lambda: [nn.Conv2d(3, 16, 3, padding=1, seed=4), nn.ReLU(),
                                         nn.MaxPool2d(3, stride=2, padding=1), nn.Conv2d(16, 16, 1, seed=5),
                                         nn.Tanh(), nn.Conv2d(16, 32, 3, stride=2, padding=1, seed=6),
                                         nn.MaxPool2d(2, stride=1, dilation=2), nn.Dropout(0.0), nn.Flatten(),
                                         nn.Dense(32 * 1 * 1, 5, seed=7)],
    # 6 channels in a padded block (nChw16c) next to 16
    "lenet-like": lambda: [nn.Conv2d(3, 6, 5, padding=2, activation="relu", seed=8), nn.MaxPool2d(2),
                           nn.Conv2d(6, 16, 3, activation="relu", seed=9), nn.MaxPool2d(2), nn.Flatten(),
                           nn.Dense(16, 5, seed=10)],
    # padded blocks through sigmoid (0.5 in the padding channels) and tanh layers
    "padded-sigmoid-tanh": lambda: [nn.Conv2d(3, 6, 3, padding=1, seed=13), nn.Sigmoid(), nn.MaxPool2d(2),
                                    nn.Conv2d(6, 10, 3, seed=14), nn.Tanh(), nn.Conv2d(10, 4, 2, seed=15),
                                    nn.Flatten(), nn.Dense(4, 5, seed=16)],
}


def _pair(make, layouts=None):
    m64 = nn.Sequential(make(), device="cpu", dtype="float64")
    m32 = nn.Sequential(make(), device="cpu")
    for p32, p64 in zip(m32.parameters(), m64.parameters()):
        p32.value.write_from(p64.numpy().astype(np.float32))
    m32.device_layouts = layouts
    return m32, m64


def _blocked_ops(model, run):
    with hetnn.profile(model.device) as prof:
        run()
    return [r["detail"] for r in prof.records if "block" in (r.get("detail") or "")]


@pytest.mark.parametrize("net", list(NETS))
def test_gradients_in_device_layouts_match_float64(rng, net):
    x = rng.standard_normal((6, 3, 9, 9)).astype(np.float32)
    y = rng.integers(0, 5, 6)
    m32, m64 = _pair(NETS[net])
    for p in m32.parameters():
        p.grad.write_from(np.full(p.shape, np.nan, np.float32))  # poisoned: every gradient must be written
    blocked = _blocked_ops(m32, lambda: grads_after_one_batch(m32, x, y, nn.CrossEntropyLoss()))
    assert blocked, "the network ran without device layouts"
    ref = grads_after_one_batch(m64, x.astype(np.float64), y, nn.CrossEntropyLoss())
    for p, r in zip(m32.parameters(), ref):
        assert rel_err(p.grad_data.numpy(), r) < 1e-4
    out = m32.predict(x)
    assert out.shape == (6, 5) and rel_err(out, m64.predict(x.astype(np.float64))) < 1e-5


@pytest.mark.parametrize("net", list(NETS))
def test_device_layouts_train_as_nchw(rng, net):
    """Three Adam steps with the layouts on and off: the same parameters (the same primitives and exact pooling)."""
    x = rng.standard_normal((24, 3, 9, 9)).astype(np.float32)
    y = rng.integers(0, 5, 24)
    on, _ = _pair(NETS[net], layouts=True)
    off, _ = _pair(NETS[net], layouts=False)
    assert not _blocked_ops(off, lambda: off.predict(x))
    for m in (on, off):
        m.fit(x, y, loss=nn.CrossEntropyLoss(), optimizer=optim.Adam(m.parameters(), lr=1e-2), epochs=1,
              batch_size=8, shuffle=False)
    for a, b in zip(on.parameters(), off.parameters()):
        assert rel_err(a.numpy(), b.numpy()) < 1e-5


def test_a_network_ending_in_a_convolution_returns_nchw(rng):
    x = rng.standard_normal((4, 3, 7, 7)).astype(np.float32)
    m32, m64 = _pair(lambda: [nn.Conv2d(3, 16, 3, activation="relu", seed=11), nn.MaxPool2d(2),
                              nn.Conv2d(16, 32, 2, seed=12)])
    out = m32.predict(x)
    assert out.shape == (4, 32, 1, 1) and rel_err(out, m64.predict(x.astype(np.float64))) < 1e-5


def _copy_conv(layers, layouts, inf_channel=None):
    """A model whose first layer, 16 -> 16 channels 3x3, makes each output channel its input channel (centre tap 1):
    the next layer sees x itself in the convolution's blocked layout. inf_channel: a channel whose centre tap is
    infinity (its output: NaN where x is 0, infinity elsewhere)."""
    m = nn.Sequential([nn.Conv2d(16, 16, 3, padding=1, bias=False, seed=0)] + layers, device="cpu")
    w = np.zeros((16, 16, 3, 3), np.float32)
    w[np.arange(16), np.arange(16), 1, 1] = 1
    if inf_channel is not None:
        w[inf_channel, inf_channel, 1, 1] = np.inf
    m.layers[0].weight.value.write_from(w)
    m.device_layouts = layouts
    return m


@pytest.fixture(params=[2, 1, 0], ids=["avx512", "avx2", "scalar"])
def pool_level(request):
    """Blocked pooling with at most AVX-512, AVX2 or no vector registers (the processor's own where it has fewer)."""
    hetnn._core._force_blocked_pool_level(request.param)
    yield request.param
    hetnn._core._force_blocked_pool_level(-1)


def test_blocked_max_pool_keeps_nan_and_the_first_maximum(rng, pool_level):
    """Max pooling in the blocked layout against NumPy and the NCHW kernel: NaN propagates; a tie takes the first
    maximum in window order, which decides where the gradient goes (small integers make many ties)."""
    x = rng.integers(0, 3, (2, 16, 8, 8)).astype(np.float32)
    x[:, 5, :2, :2], x[:, 5, 2, 2] = 2, 0  # channel 5: a window without a zero (infinity), one with (NaN)
    grads, outs = [], []
    for layouts in (True, False):
        m = _copy_conv([nn.MaxPool2d(2), nn.Conv2d(16, 16, 3, padding=1, seed=1), nn.Flatten(),
                        nn.Dense(16 * 16, 1, seed=2)], layouts)
        assert bool(_blocked_ops(m, lambda: m.predict(x))) == layouts
        grads.append(grads_after_one_batch(m, x, np.zeros((2, 1), np.float32), nn.MSELoss()))
        # the pooled maps themselves (a network ending in the pool returns them in NCHW); channel 5 holds NaN and
        # infinity: NaN wins in any window holding one
        p = _copy_conv([nn.MaxPool2d(2)], layouts, inf_channel=5)
        assert bool(_blocked_ops(p, lambda: p.predict(x))) == layouts
        outs.append(p.predict(x))
    assert all(np.count_nonzero(g) for g in grads[0])
    for a, b in zip(*grads):
        np.testing.assert_array_equal(a, b)
    windows = x.reshape(2, 16, 4, 2, 4, 2)
    ref = windows.max(axis=(3, 5))
    ref[:, 5] = np.where((windows[:, 5] == 0).any(axis=(2, 4)), np.nan, np.inf)
    assert 0 < np.isnan(ref[:, 5]).sum() < ref[:, 5].size
    np.testing.assert_array_equal(outs[0], ref)
    np.testing.assert_array_equal(outs[0], outs[1])
