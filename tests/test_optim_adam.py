"""hetnn.optim.Adam / AdamW against a float64 NumPy transcription of PyTorch's update (and torch itself when it is
installed): step() over several steps, fit's C++ loop over several minibatches, the step count carried across fit
calls, zero_state, bad arguments."""
import numpy as np
import pytest

from hetnn import nn, optim

from conftest import rel_err
from op_table import adam_reference


def _set_grads(model, rng):
    grads = []
    for p in model.parameters():
        g = rng.standard_normal(p.shape).astype(np.float32)
        p.grad.write_from(g)
        grads.append(g)
    return grads


@pytest.mark.parametrize("cls,kw", [(optim.Adam, {}), (optim.Adam, dict(weight_decay=0.1, amsgrad=True)),
                                    (optim.AdamW, {}), (optim.AdamW, dict(weight_decay=0.3, amsgrad=True))],
                         ids=["adam", "adam-wd-amsgrad", "adamw", "adamw-wd-amsgrad"])
def test_step_matches_numpy_over_several_steps(device, rng, cls, kw):
    model = nn.Sequential([nn.Dense(5, 3, seed=2)], device=device)
    opt = cls(model.parameters(), lr=0.01, betas=(0.8, 0.95), eps=1e-3, **kw)
    wd = opt.weight_decay
    state = [[p.numpy().astype(np.float64), 0.0, 0.0, 0.0] for p in model.parameters()]
    for t in range(1, 5):
        grads = _set_grads(model, rng)
        opt.step()
        for s, g in zip(state, grads):
            shape = s[0].shape
            m, v, vmax = (np.broadcast_to(np.float64(q), shape) if np.isscalar(q) else q for q in s[1:])
            s[:] = adam_reference((s[0], g.astype(np.float64), m, v, vmax, wd, t, opt.amsgrad,
                                   cls is optim.AdamW))
    assert opt.steps == 4
    for p, s in zip(model.parameters(), state):
        assert rel_err(p.numpy(), s[0]) < 1e-5


def test_fit_matches_step_by_step_numpy(device, rng):
    """fit's C++ loop: 3 minibatches of Adam from the gradients of a linear MSE model, computed in NumPy. In float64
    where the device has it: in float32, Adam's normalised steps amplify rounding (up to ~7e-6 of the distance lr *
    steps over 300 seeds), so a tight float32 bound fails on some inputs and a loose one hides little."""
    fp64 = "float64" in device.dtypes
    x = rng.standard_normal((12, 4)).astype(np.float32)
    t = rng.standard_normal((12, 2)).astype(np.float32)
    model = nn.Sequential([nn.Dense(4, 2, seed=3)], device=device, dtype="float64" if fp64 else "float32")
    opt = optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
    w, b = (p.numpy().astype(np.float64) for p in model.parameters())
    st = {"w": [w, np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)],
          "b": [b, np.zeros_like(b), np.zeros_like(b), np.zeros_like(b)]}
    for epoch in range(2):
        model.fit(x, t, loss="mse", optimizer=opt, epochs=1, batch_size=4, shuffle=False)
        for k in range(3):
            xb, tb = x[4 * k:4 * k + 4].astype(np.float64), t[4 * k:4 * k + 4].astype(np.float64)
            w, b = st["w"][0], st["b"][0]
            dz = 2 * (xb @ w.T + b - tb) / tb.size
            step = 3 * epoch + k + 1
            for key, g in (("w", dz.T @ xb), ("b", dz.sum(axis=0))):
                st[key] = list(adam_reference((st[key][0], g, *st[key][1:], 0.1, step, False, True), lr=0.05,
                                              b1=0.9, b2=0.999, eps=1e-8))
    assert opt.steps == 6  # the second fit went on from step 3: bias corrections carried over
    got = [p.numpy() for p in model.parameters()]
    for g, ref in zip(got, (st["w"][0], st["b"][0])):
        # a bias may end near zero: measure against its size plus the distance six steps of lr can move it
        err = np.max(np.abs(g.astype(np.float64) - ref)) / (np.max(np.abs(ref)) + 0.05 * 6)
        assert err < (1e-12 if fp64 else 1e-4)


def test_matches_torch_when_installed(rng):
    torch = pytest.importorskip("torch")
    model = nn.Sequential([nn.Dense(6, 4, seed=5)], device="cpu")
    tp = [torch.nn.Parameter(torch.tensor(p.numpy(), dtype=torch.float64)) for p in model.parameters()]
    for cls, tcls in ((optim.Adam, torch.optim.Adam), (optim.AdamW, torch.optim.AdamW)):
        opt = cls(model.parameters(), lr=0.02, weight_decay=0.05, amsgrad=True)
        topt = tcls(tp, lr=0.02, weight_decay=0.05, amsgrad=True)
        for _ in range(5):
            for p, q, g in zip(model.parameters(), tp, _set_grads(model, rng)):
                q.grad = torch.tensor(g, dtype=torch.float64)
            opt.step()
            topt.step()
        for p, q in zip(model.parameters(), tp):
            assert rel_err(p.numpy(), q.detach().numpy()) < 1e-5


def test_zero_state_restarts_the_bias_correction(rng):
    model = nn.Sequential([nn.Dense(3, 2, seed=1)], device="cpu")
    opt = optim.Adam(model.parameters(), lr=0.1)
    _set_grads(model, rng)
    opt.step()
    opt.step()
    opt.zero_state()
    assert opt.steps == 0
    before = [p.numpy().astype(np.float64) for p in model.parameters()]
    grads = _set_grads(model, rng)
    opt.step()  # a first step again: p moves by lr * g / (|g| + eps), about lr per element
    for p, b, g in zip(model.parameters(), before, grads):
        np.testing.assert_allclose(p.numpy(), b - 0.1 * g / (np.abs(g) + 1e-8), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kw,exc,msg", [(dict(lr=-1), ValueError, "lr"), (dict(betas=(1.0, 0.9)), ValueError,
                                                                          "betas\\[0\\]"),
                                        (dict(betas=(0.9, -0.1)), ValueError, "betas\\[1\\]"),
                                        (dict(betas=0.9), TypeError, "betas"), (dict(eps=-1e-8), ValueError, "eps"),
                                        (dict(weight_decay=float("nan")), ValueError, "weight_decay"),
                                        (dict(amsgrad="yes"), TypeError, "amsgrad"),
                                        (dict(lr="fast"), TypeError, "lr")])
def test_bad_arguments(kw, exc, msg):
    model = nn.Sequential([nn.Dense(3, 2)], device="cpu")
    with pytest.raises(exc, match=msg):
        optim.Adam(model.parameters(), **kw)
    with pytest.raises(exc, match=msg):
        optim.AdamW(model.parameters(), **kw)


def test_fit_refuses_foreign_optimizers():
    model = nn.Sequential([nn.Dense(3, 2)], device="cpu")
    with pytest.raises(TypeError, match="SGD, Adam, AdamW"):
        model.fit(np.zeros((2, 3), np.float32), np.zeros(2, np.int64), loss="cross_entropy", optimizer=object())
