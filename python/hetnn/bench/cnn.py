"""CNN training benchmark: the convolutional networks of the classic studies, declared once and built in hetnn (on
every device) and in PyTorch (when installed: same layers, same initial weights, same data and hyperparameters, in
this process, with hetnn's thread count).

- LeNet on Fashion-MNIST (28x28x1): conv 6@5x5 pad 2 + ReLU + max pool 2, conv 16@5x5 + ReLU + max pool 2, dense
  120-84-10 with ReLU; Adam lr 1e-3, batch 64, cross-entropy; seconds per epoch and test accuracy.
- The Keras-style CNN on the 50x50 radiation maps (hetnn.datasets.radiation_maps): Conv 32@3x3 ReLU, Conv 64@3x3
  ReLU, max pool 2, Dropout 0.25, Flatten, Dense 128 ReLU, Dropout 0.5, Dense 1 (4,352,641 parameters); Adam, MSE;
  one epoch per batch size, and inference latency per number of samples.
- The AlexNet variant on 32x32 inputs: Fashion-MNIST padded from 28x28 to 32x32 with zeros, one channel (the first
  convolution takes 1 input channel instead of 3); Adam lr 1e-3, batch 256, cross-entropy.

Epoch times are wall clock from the start of the epoch until its loss is on the host (all its work done); the
libraries' epochs run in interleaved rounds after each warmed up on a throw-away copy. GFLOP/s counts what training
computes: per weighted layer, the forward product, the weight gradient and (all but the first layer) the input
gradient, each 2 x multiply-adds.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import datasets, nn, optim
from .._device import Device
from .._threads import get_num_threads
from .._timing import Case, _first_use_totals, interleave
from .keras_peer import KerasTrainer, keras_module
from .matmul import settle
from .mlp import _peaks, _with_peak
from .progress import expect
from .stats import flags_text, no_interval, ratio_interval

# A layer declaration: ("conv", in, out, k, stride, padding, act), ("pool", k), ("relu",), ("flatten",),
# ("dense", in, out, act), ("dropout", p). act: "relu" or None.
Spec = List[Tuple[Any, ...]]

LENET: Spec = [("conv", 1, 6, 5, 1, 2, "relu"), ("pool", 2), ("conv", 6, 16, 5, 1, 0, "relu"), ("pool", 2),
               ("flatten",), ("dense", 400, 120, "relu"), ("dense", 120, 84, "relu"), ("dense", 84, 10, None)]
KERAS_CNN: Spec = [("conv", 1, 32, 3, 1, 0, "relu"), ("conv", 32, 64, 3, 1, 0, "relu"), ("pool", 2),
                   ("dropout", 0.25), ("flatten",), ("dense", 64 * 23 * 23, 128, "relu"), ("dropout", 0.5),
                   ("dense", 128, 1, None)]
ALEXNET32: Spec = [("conv", 1, 64, 3, 2, 1, None), ("pool", 2), ("relu",), ("conv", 64, 192, 3, 1, 1, None),
                   ("pool", 2), ("relu",), ("conv", 192, 384, 3, 1, 1, "relu"), ("conv", 384, 256, 3, 1, 1, "relu"),
                   ("conv", 256, 256, 3, 1, 1, None), ("pool", 2), ("relu",), ("flatten",), ("dropout", 0.5),
                   ("dense", 1024, 4096, "relu"), ("dropout", 0.5), ("dense", 4096, 4096, "relu"),
                   ("dense", 4096, 10, None)]
MODELS: Dict[str, Tuple[Spec, Tuple[int, int, int]]] = {
    "lenet": (LENET, (1, 28, 28)), "keras-cnn": (KERAS_CNN, (1, 50, 50)), "alexnet32": (ALEXNET32, (1, 32, 32))}

CNN_COLUMNS = [
    ("model", "model", ""), ("library", "library", ""), ("device", "device", ""), ("batch", "batch", ""),
    ("samples", "samples", ",", "detail"), ("epochs", "epochs", "", "detail"), ("epoch_s", "s/epoch", ".3f"),
    ("samples_per_s", "samples/s", ",.0f"), ("gflops", "GFLOP/s", ".1f"), ("pct_peak", "% peak", ".0f"),
    ("first_use_s", "first use s", ".2f"), ("test_accuracy", "test acc", ".4f"), ("final_loss", "train loss", ".4f"),
    ("noise", "flags", ""),
]
INFER_COLUMNS = [("model", "model", ""), ("library", "library", ""), ("device", "device", ""),
                 ("samples", "samples", ","), ("latency_ms", "latency ms", ".2f"),
                 ("samples_per_s", "samples/s", ",.0f"), ("noise", "flags", "")]


def build(spec: Spec, device: Any, seed: int) -> nn.Sequential:
    """The declared network as a hetnn model (PyTorch's default initialisation, seeded per layer)."""
    layers: List[nn.Layer] = []
    for i, s in enumerate(spec):
        kind = s[0]
        if kind == "conv":
            layers.append(nn.Conv2d(s[1], s[2], s[3], stride=s[4], padding=s[5], activation=s[6], seed=seed + i))
        elif kind == "dense":
            layers.append(nn.Dense(s[1], s[2], s[3], init="uniform", seed=seed + i))  # torch.nn.Linear's
        elif kind == "pool":
            layers.append(nn.MaxPool2d(s[1]))
        elif kind == "relu":
            layers.append(nn.ReLU())
        elif kind == "flatten":
            layers.append(nn.Flatten())
        elif kind == "dropout":
            layers.append(nn.Dropout(s[1], seed=seed + i))
        else:  # pragma: no cover - the declarations above
            raise ValueError(f"unknown layer {kind!r}")
    return nn.Sequential(layers, device=device)


def train_flops(spec: Spec, sample: Tuple[int, int, int], samples: int) -> float:
    """FLOP of one training epoch over ``samples``: per weighted layer 2 x multiply-adds for the forward product and
    for the weight gradient, and for the input gradient of every weighted layer but the first."""
    _, h, w = sample
    total, first = 0.0, True
    for s in spec:
        macs = 0.0
        if s[0] == "conv":
            k, st, p = s[3], s[4], s[5]
            h, w = (h + 2 * p - k) // st + 1, (w + 2 * p - k) // st + 1
            macs = float(s[2] * h * w * s[1] * k * k)
        elif s[0] == "pool":
            h, w = h // s[1], w // s[1]
        elif s[0] == "dense":
            macs = float(s[1] * s[2])
        if macs:
            total += 2 * macs * (2 if first else 3)
            first = False
    return total * samples


def _torch_model(spec: Spec, weights: Sequence[np.ndarray]) -> Any:
    import torch

    mods: List[Any] = []
    w = iter(weights)
    for s in spec:
        if s[0] in ("conv", "dense"):
            m: Any = torch.nn.Conv2d(s[1], s[2], s[3], stride=s[4], padding=s[5]) if s[0] == "conv" else \
                torch.nn.Linear(s[1], s[2])
            with torch.no_grad():
                m.weight.copy_(torch.from_numpy(next(w)))
                m.bias.copy_(torch.from_numpy(next(w)))
            mods.append(m)
            if s[-1] == "relu":
                mods.append(torch.nn.ReLU())
        elif s[0] == "pool":
            mods.append(torch.nn.MaxPool2d(s[1]))
        elif s[0] == "relu":
            mods.append(torch.nn.ReLU())
        elif s[0] == "flatten":
            mods.append(torch.nn.Flatten())
        elif s[0] == "dropout":
            mods.append(torch.nn.Dropout(s[1]))
    return torch.nn.Sequential(*mods)


class TorchTrainer:
    """The same network, weights, data and optimizer in PyTorch on ``device`` ("cpu", "cuda:0", ...); ``epoch()``
    takes NumPy arrays as hetnn's fit does (the copy to the device is part of the epoch) and returns the mean loss."""

    def __init__(self, spec: Spec, weights: Sequence[np.ndarray], loss: str, lr: float, batch: int,
                 seed: int, device: str = "cpu") -> None:
        import torch

        from .peers import torch_devices

        self.sync = dict(torch_devices(torch))[device]  # waits for the device (the Case's sync)
        torch.manual_seed(seed)
        self.torch, self.batch, self.loss, self.device = torch, batch, loss, device
        self.model = _torch_model(spec, weights).to(device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.gen = torch.Generator().manual_seed(seed)
        self.version = torch.__version__

    def epoch(self, x: np.ndarray, y: np.ndarray) -> float:
        torch, F = self.torch, self.torch.nn.functional
        self.model.train()
        X, Y = torch.from_numpy(x).to(self.device), torch.from_numpy(y).to(self.device)
        perm = torch.randperm(len(x), generator=self.gen).to(self.device)
        total = torch.zeros((), device=self.device)
        for s in range(0, len(x), self.batch):
            i = perm[s:s + self.batch]
            self.opt.zero_grad(set_to_none=True)
            out = self.model(X[i])
            loss = F.cross_entropy(out, Y[i]) if self.loss == "cross_entropy" else F.mse_loss(out, Y[i])
            loss.backward()
            self.opt.step()
            total += loss.detach() * len(i)
        return float(total) / len(x)

    def predict(self, x: np.ndarray) -> np.ndarray:
        self.model.eval()
        with self.torch.no_grad():
            return self.model(self.torch.from_numpy(x).to(self.device)).cpu().numpy()


def _torch_devices(compare: Sequence[str], notes: Optional[List[str]]) -> List[str]:
    """PyTorch's devices to compare with: the CPU and every CUDA device, or none when torch is not asked for or not
    importable."""
    if "torch" not in compare:
        return []
    try:
        import torch

        from .peers import torch_devices
        return [d for d, _ in torch_devices(torch)]
    except ImportError as exc:
        if notes is not None:
            notes.append(f"torch: not used ({type(exc).__name__}: {exc})")
        return []


def _accuracy(pred: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.argmax(pred, axis=1) == y))


def run_training(name: str, devices: Sequence[Device], data: Tuple[np.ndarray, ...], *, batch: int, epochs: int,
                 loss: str, lr: float = 1e-3, compare: Sequence[str] = ("torch",), seed: int = 0,
                 notes: Optional[List[str]] = None) -> List[Dict[str, Any]]:
    """``epochs`` interleaved epochs of model ``name`` per device (and PyTorch), from the same initial weights;
    a row each, with the test accuracy after the last epoch when ``data`` holds a test set with labels."""
    spec, sample = MODELS[name]
    xt, yt = data[0], data[1]
    test = data[2:] if len(data) == 4 else None
    flops = train_flops(spec, sample, len(xt))
    peaks = _peaks(devices)
    cases: List[Case] = []
    finish: List[Callable[[Any], Dict[str, Any]]] = []
    base: Optional[List[np.ndarray]] = None
    warm_n = min(len(xt), 4 * batch)
    common = {"model": name, "batch": batch, "samples": len(xt), "epochs": epochs}
    for dev in devices:
        settle()
        before, t0 = _first_use_totals(), time.perf_counter()
        warm = build(spec, dev, seed)
        warm.fit(xt[:warm_n], yt[:warm_n], loss=loss, optimizer=optim.Adam(warm.parameters(), lr=lr), epochs=1,
                 batch_size=batch, seed=seed)
        first = {"first_use_s": time.perf_counter() - t0,
                 "built": int(_first_use_totals()["built"] - before["built"])}
        model = build(spec, dev, seed)
        if base is None:
            base = [p.numpy() for p in model.parameters()]
        opt = optim.Adam(model.parameters(), lr=lr)
        losses: List[float] = []

        def epoch(model: Any = model, opt: Any = opt, losses: List[float] = losses) -> None:
            hist = model.fit(xt, yt, loss=loss, optimizer=opt, epochs=1, batch_size=batch, seed=seed + len(losses))
            losses.append(hist.history["loss"][-1])

        def row(r: Any, dev: Device = dev, model: Any = model, losses: List[float] = losses,
                first: Dict[str, Any] = first) -> Dict[str, Any]:
            acc = _accuracy(model.predict(test[0]), test[1]) if test is not None and loss == "cross_entropy" else None
            return _row(common, "hetnn", dev.id, r, losses, acc, first, flops, peaks[dev.id],
                        threads=get_num_threads() if dev.kind == "cpu" else None)
        cases.append(Case(f"hetnn {dev.id}", epoch, devices=[dev]))
        finish.append(row)
    weights: List[np.ndarray] = base or []
    for tdev in _torch_devices(compare, notes) if weights else []:
        settle()
        t0 = time.perf_counter()
        TorchTrainer(spec, weights, loss, lr, batch, seed, tdev).epoch(xt[:warm_n], yt[:warm_n])
        tfirst = {"first_use_s": time.perf_counter() - t0}
        tt = TorchTrainer(spec, weights, loss, lr, batch, seed, tdev)
        tlosses: List[float] = []

        def trow(r: Any, tt: TorchTrainer = tt, tlosses: List[float] = tlosses,
                 tfirst: Dict[str, Any] = tfirst) -> Dict[str, Any]:
            acc = _accuracy(tt.predict(test[0]), test[1]) if test is not None and loss == "cross_entropy" else None
            cpu = tt.device == "cpu"
            return _row(common, f"torch {tt.version}", tt.device, r, tlosses, acc, tfirst, flops,
                        peaks[None] if cpu else None, threads=get_num_threads() if cpu else None)

        def tepoch(tt: TorchTrainer = tt, tlosses: List[float] = tlosses) -> None:
            tlosses.append(tt.epoch(xt, yt))
        cases.append(Case(f"torch {tdev}", tepoch, sync=tt.sync))
        finish.append(trow)
    keras = keras_module(notes) if "keras" in compare and weights else None
    if keras is not None:
        settle()
        t0 = time.perf_counter()
        kt = KerasTrainer(keras, spec, sample, weights, loss, lr, batch, seed)
        kt.warm_up(xt, yt)
        kfirst = {"first_use_s": time.perf_counter() - t0}
        klosses: List[float] = []

        def krow(r: Any) -> Dict[str, Any]:
            acc = _accuracy(kt.predict(test[0]), test[1]) if test is not None and loss == "cross_entropy" else None
            return _row(common, f"keras {kt.version}", kt.device, r, klosses, acc, kfirst, flops, peaks[None],
                        threads=None)
        cases.append(Case("keras", lambda: klosses.append(kt.epoch(xt, yt))))
        finish.append(krow)
    # an epoch changes the model: one re-run would train more epochs than the row says (and its accuracy
    # with them), so preempted epochs are flagged, not re-run
    results = interleave(cases, n_warmup=0, n_repeat=epochs, rerun=False)
    return [f(r) for f, r in zip(finish, results)]


def _row(common: Dict[str, Any], library: str, device: str, r: Any, losses: List[float], acc: Optional[float],
         first: Dict[str, Any], flops: float, peak: Optional[float], threads: Optional[int]) -> Dict[str, Any]:
    times = [float(t) for t in r.wall_times]
    med = float(np.median(times))
    return _with_peak({**common, "library": library, "device": device, "epoch_s": med, "times_s": times,
                       "samples_per_s": common["samples"] / med, "test_accuracy": acc,
                       "final_loss": losses[-1] if losses else None, **r.flags, "threads": threads, **first},
                      flops, med, peak)


def run_inference(name: str, devices: Sequence[Device], x: np.ndarray, sizes: Sequence[int], *,
                  compare: Sequence[str] = ("torch",), repeat: int = 5, seed: int = 0,
                  notes: Optional[List[str]] = None) -> List[Dict[str, Any]]:
    """Latency of ``predict`` on the first n samples, per n in ``sizes``, NumPy in and out (transfers included)."""
    spec, _ = MODELS[name]
    models = {dev.id: build(spec, dev, seed) for dev in devices}
    spec_sample = MODELS[name][1]
    weights = [p.numpy() for p in models[devices[0].id].parameters()] if devices else []
    peers: List[Any] = [TorchTrainer(spec, weights, "mse", 1e-3, 1, seed, d)
                        for d in (_torch_devices(compare, notes) if devices else [])]
    keras = keras_module(notes) if "keras" in compare and devices else None
    if keras is not None:
        peers.append(KerasTrainer(keras, spec, spec_sample, weights, "mse", 1e-3, 1, seed))
    rows: List[Dict[str, Any]] = []
    for n in sizes:
        xs = np.ascontiguousarray(x[:n])
        cases = [Case(d.id, _predictor(models[d.id], xs), devices=[d]) for d in devices]
        libs = ["hetnn"] * len(cases) + [f"{'keras' if isinstance(tt, KerasTrainer) else 'torch'} {tt.version}"
                                         for tt in peers]
        cases += [Case(tt.device, _predictor(tt, xs)) for tt in peers]
        for lib, c, r in zip(libs, cases, interleave(cases, n_warmup=1, n_repeat=repeat)):
            med = float(np.median(r.wall_times))
            rows.append({"model": name, "library": lib, "device": c.name, "samples": len(xs),
                         "latency_ms": 1e3 * med, "samples_per_s": len(xs) / med, **r.flags})
    return rows


def _predictor(model: Any, x: np.ndarray) -> Callable[[], Any]:
    return lambda: model.predict(x)


def fashion_images(pad_to: int = 28, n_train: Optional[int] = None,
                   n_test: Optional[int] = None) -> Tuple[np.ndarray, ...]:
    """Fashion-MNIST as (n, 1, s, s) float32 in [0, 1] and int64 labels, zero-padded to ``pad_to``; the first
    ``n_train`` training and ``n_test`` test images when given."""
    (xt, yt), (xe, ye) = datasets.fashion_mnist(images=True)
    if pad_to != 28:
        p = (pad_to - 28) // 2
        pad = ((0, 0), (0, 0), (p, pad_to - 28 - p), (p, pad_to - 28 - p))
        xt, xe = np.pad(xt, pad), np.pad(xe, pad)
    if n_train is not None:
        xt, yt = xt[:n_train], yt[:n_train]
    if n_test is not None:
        xe, ye = xe[:n_test], ye[:n_test]
    return np.ascontiguousarray(xt), yt.astype(np.int64), np.ascontiguousarray(xe), ye.astype(np.int64)


def ratios(rows: List[Dict[str, Any]]) -> List[str]:
    """Per model and batch: hetnn cpu's speed over every other row's, and each other hetnn device's over PyTorch's
    on each CUDA device, with the 95 % bootstrap interval over the interleaved epochs."""
    out = []
    keys = dict.fromkeys((r["model"], r.get("batch")) for r in rows)
    for model, batch in keys:
        sel = [r for r in rows if r["model"] == model and r.get("batch") == batch]
        hetnn = [r for r in sel if r["library"] == "hetnn"]
        cuda = [r for r in sel if r["library"].startswith("torch") and r["device"].startswith("cuda")]
        pairs = [(ref, r) for ref in hetnn if ref["device"] == "cpu" for r in sel if r is not ref]
        pairs += [(ref, r) for ref in hetnn if ref["device"] != "cpu" for r in cuda]
        for ref, r in pairs:
            name = f"{model} batch {batch}: hetnn {ref['device']} / {r['library']} {r['device']} (speed)"
            if any(x.get("flagged") or x.get("unreliable") for x in (r, ref)):
                out.append(f"{name}: left out ({r.get('noise') or ref.get('noise') or 'above the ceiling'})")
                continue
            ci = ratio_interval([(ref["times_s"], r["times_s"])]) if len(r["times_s"]) > 1 else None
            flags = flags_text([ref, r])
            text = ci.text(name, flags) if ci else no_interval(name, r["epoch_s"] / ref["epoch_s"], "one epoch each",
                                                               flags)
            out.append(f"{text} ({ref['epoch_s']:.3f} s vs {r['epoch_s']:.3f} s)")
    return out


__all__ = ["ALEXNET32", "CNN_COLUMNS", "INFER_COLUMNS", "KERAS_CNN", "LENET", "MODELS", "build", "expect",
           "fashion_images", "ratios", "run_inference", "run_training", "train_flops"]
