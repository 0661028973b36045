"""The conv suite's pieces (hetnn.bench.conv, hetnn.bench.cnn): the layer table against the matmul suite's GEMM
shapes, im2col against a direct convolution, FLOP counts, the declared networks (parameter counts, PyTorch's copy
computing the same function), a tiny run of each part with its results checked."""
import numpy as np
import pytest

import hetnn
from hetnn.bench import cnn, conv

from conftest import rel_err


def test_layer_table_is_the_gemm_table():
    conv._check_table()
    assert len(conv.RESNET50_CONVS) == 20


def test_im2col_gemm_is_the_convolution(rng):
    x = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    for s, p in ((1, 1), (2, 0), (2, 1)):
        oh = conv.out_size(9, 3, s, p)
        cols = conv.im2col(x.astype(np.float64), 3, s, p)
        y = (cols @ w.reshape(4, -1).T.astype(np.float64)).reshape(2, oh, oh, 4).transpose(0, 3, 1, 2)
        np.testing.assert_allclose(y, hetnn.conv2d(x, w, stride=s, padding=p, device="cpu"), rtol=1e-4, atol=1e-4)


def test_declared_networks_have_the_studies_sizes():
    assert cnn.build(cnn.KERAS_CNN, "cpu", 0).count_params() == 4_352_641
    assert cnn.build(cnn.LENET, "cpu", 0).count_params() == 61_706
    assert cnn.build(cnn.ALEXNET32, "cpu", 0).predict(np.zeros((1, 1, 32, 32), np.float32)).shape == (1, 10)
    # LeNet: per sample, 117,600 + 240,000 + 48,000 + 10,080 + 840 multiply-adds; training 2x each for the
    # forward and the weight gradient, and 2x more for the input gradient of all but the first layer
    macs = [117_600, 240_000, 48_000, 10_080, 840]
    assert cnn.train_flops(cnn.LENET, (1, 28, 28), 10) == 10 * (4 * macs[0] + 6 * sum(macs[1:]))


@pytest.mark.parametrize("name", ["lenet", "keras-cnn"])
def test_the_pytorch_copy_computes_the_same_function(name, rng):
    pytest.importorskip("torch")
    spec, sample = cnn.MODELS[name]
    model = cnn.build(spec, "cpu", 3)
    tt = cnn.TorchTrainer(spec, [p.numpy() for p in model.parameters()], "mse", 1e-3, 4, 0)
    x = rng.standard_normal((3, *sample)).astype(np.float32)
    np.testing.assert_allclose(tt.predict(x), model.predict(x), rtol=1e-4, atol=1e-4)


def test_a_tiny_run_of_each_part(rng):
    devs = hetnn.devices()
    rows = conv.run_layers(devs, batches=(1,), layers=(1,), compare=("im2col", "onednn", "clblast"), n_warmup=1,
                           n_repeat=2, max_duration=0.5)
    assert {r["library"] for r in rows} >= {"hetnn", "hetnn layouts", "hetnn im2col+matmul", "onednn-c++"}
    assert all(r["max_rel_err"] < 1e-4 for r in rows), [(r["library"], r["max_rel_err"]) for r in rows]
    assert len(conv.summary(rows)) >= 3 and any("device layouts" in line for line in conv.summary(rows))
    (x, y), _ = hetnn.datasets.radiation_maps(n_samples=40, size=50, seed=0)
    t = cnn.run_training("keras-cnn", devs[:1], (x, y), batch=16, epochs=1, loss="mse", compare=())
    assert t[0]["samples"] == len(x) and t[0]["epoch_s"] > 0 and np.isfinite(t[0]["final_loss"])
    inf = cnn.run_inference("keras-cnn", devs[:1], x, (2,), compare=(), repeat=2)
    assert inf[0]["samples"] == 2 and inf[0]["latency_ms"] > 0


@pytest.mark.parametrize("shape,wshape,stride,padding", [((2, 16, 9, 9), (32, 16, 3, 3), 1, 1),
                                                          ((3, 6, 8, 8), (16, 6, 5, 5), 2, 2),
                                                          ((2, 3, 7, 7), (8, 3, 1, 1), 1, 0)])
def test_a_resident_convolution_is_the_convolution(rng, shape, wshape, stride, padding):
    """The "hetnn layouts" row: the layer with its input in the layout it reads, against float64 NumPy."""
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(wshape).astype(np.float32)
    cpu = hetnn.device("cpu")
    r = hetnn._core._ResidentConv(hetnn.asarray(x, device=cpu)._a, hetnn.asarray(w, device=cpu)._a, stride, padding)
    with pytest.raises(ValueError, match="run"):
        r.fetch()
    r.run()
    k = wshape[2]
    ref = np.einsum("nchwij,ocij->nohw", _windows(x.astype(np.float64), k, stride, padding), w.astype(np.float64))
    assert rel_err(r.fetch().to_numpy(), ref) < 1e-5
    with pytest.raises(ValueError, match="float32"):
        hetnn._core._ResidentConv(hetnn.asarray(x.astype(np.float64), device=cpu)._a,
                                  hetnn.asarray(w.astype(np.float64), device=cpu)._a, stride, padding)


def _windows(x, k, s, p):
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    oh = (xp.shape[2] - k) // s + 1
    ow = (xp.shape[3] - k) // s + 1
    out = np.empty(x.shape[:2] + (oh, ow, k, k))
    for i in range(k):
        for j in range(k):
            out[..., i, j] = xp[:, :, i:i + s * oh:s, j:j + s * ow:s]
    return out


def test_conv_tuning_sizes_are_the_convolution_products():
    from hetnn.bench.matmul import RESNET50_BS1

    assert set(conv.conv_gemm_sizes()) == {(n, m, k) for m, n, k in RESNET50_BS1}


def test_the_aggregates_leave_out_unreliable_layers():
    def row(layer, lib, t, **kw):
        return {"layer": layer, "batch": 1, "library": lib, "device": "cpu", "times_s": [t] * 3, "max_rel_err": 0.0,
                **kw}
    rows = [row("a", "hetnn", 1.0), row("a", "onednn-c++", 2.0), row("b", "hetnn", 1.0, unreliable=True),
            row("b", "onednn-c++", 100.0)]
    (line,) = conv.summary(rows)
    assert "2.00x" in line and "1 of 2 layers left out" in line
    rows[0]["unreliable"] = True
    assert "left out (no layer" in conv.summary(rows)[0]
    t = [{"model": "m", "batch": 8, "library": "hetnn", "device": "cpu", "epoch_s": 1.0, "times_s": [1.0]},
         {"model": "m", "batch": 8, "library": "torch", "device": "cpu", "epoch_s": 2.0, "times_s": [2.0],
          "unreliable": True, "noise": "preempted in 1 of 1 repeats"}]
    assert cnn.ratios(t) == ["m batch 8: hetnn cpu / torch cpu (speed): left out (preempted in 1 of 1 repeats)"]


def test_gpu_rows_are_compared_with_pytorch_on_cuda():
    # hetnn cpu against every row; another hetnn device against PyTorch's CUDA rows only (not its CPU row)
    def row(lib, dev, t):
        return {"model": "m", "batch": 8, "library": lib, "device": dev, "epoch_s": t, "times_s": [t, t, t]}
    t = [row("hetnn", "cpu", 1.0), row("hetnn", "opencl:0:0", 0.5), row("torch 2.0", "cpu", 2.0),
         row("torch 2.0", "cuda:0", 0.25)]
    names = [line.split(":", 1)[1].split("(speed)")[0].strip() for line in cnn.ratios(t)]
    assert names == ["hetnn cpu / hetnn opencl:0:0", "hetnn cpu / torch 2.0 cpu", "hetnn cpu / torch 2.0 cuda:0",
                     "hetnn opencl:0:0 / torch 2.0 cuda:0"]
    assert "0.50x" in cnn.ratios(t)[-1]

    def layer(lib, dev, t):
        return {"layer": "a", "batch": 1, "library": lib, "device": dev, "times_s": [t] * 3, "max_rel_err": 0.0}
    lines = conv.summary([layer("hetnn", "cpu", 1.0), layer("hetnn", "opencl:0:0", 0.5),
                          layer("torch 2.0", "cuda:0", 0.25)])
    assert any("hetnn opencl:0:0 / torch cuda:0 (speed)" in s and "0.50x" in s for s in lines), lines
