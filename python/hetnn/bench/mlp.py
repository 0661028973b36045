"""MLP benchmark: training and inference time of dense networks per device.

(a) Topology study: 50 inputs (hetnn.datasets.solar_irradiance), 1-3 hidden ReLU layers of widths w, w/2 and
    13w/50 for w in 50, 100, 200, ... (the published pyramids 50*2^k, 25*2^k, 13*2^k), one output (MSE); one
    epoch of plain SGD and one inference pass over the data per device and batch size. Time and parameter count
    per model.
(b) Fashion-MNIST table: 784 inputs, hidden ReLU layers of 16..256 in 1-3 layers, 10 outputs, softmax
    cross-entropy, SGD lr 0.1 momentum 0.9, batch 64: seconds per epoch and test accuracy per device, with PyTorch
    (when installed: same data, same initial weights, same hyperparameters, in this process) and a hand-written
    NumPy loop as comparison rows.

Epoch times are wall clock from the start of the epoch until its loss has been read back from the device (so all of
its work has finished); inference times until the predictions are on the host.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import _workers, datasets, nn, optim
from .._device import Device
from .._threads import get_num_threads
from .._oscounters import Watch
from .._timing import Case, _first_use_totals, interleave
from .progress import expect
from .matmul import blas_threads, settle
from .stats import flags_text, no_interval, ratio_interval
from .peak import check_ceiling, fp32_peak_gflops, host_peak_gflops, share

MLP_TOPOLOGY_COLUMNS = [
    ("layers", "hidden", ""), ("widths", "widths", ""), ("params", "params", ","), ("library", "library", ""),
    ("device", "device", ""), ("batch", "batch", ""), ("train_s", "train s/epoch", ".3f"),
    ("infer_s", "infer s", ".4f"), ("train_samples_per_s", "train samples/s", ",.0f"),
    ("gflops", "train GFLOP/s", ".1f"), ("pct_peak", "% peak", ".0f"),
]
MLP_MNIST_COLUMNS = [
    ("widths", "hidden", ""), ("params", "params", ","), ("batch", "batch", ""), ("library", "library", ""),
    ("device", "device", ""), ("epochs", "epochs", ""), ("epoch_s", "s/epoch", ".3f"), ("gflops", "GFLOP/s", ".1f"),
    ("pct_peak", "% peak", ".0f"), ("first_epoch_s", "1st epoch s", ".3f", "detail"),
    ("first_use_s", "first use s", ".3f"), ("built", "built", "", "detail"), ("disk_hits", "disk hits", "", "detail"),
    ("test_accuracy", "test acc", ".4f"), ("final_loss", "train loss", ".4f"),
    ("device_s", "device s/epoch", ".3f", "detail"), ("host_us_per_step", "host us/step", ".1f", "detail"),
    ("noise", "flags", ""),
]


def train_flops(sizes: Sequence[int], samples: int) -> float:
    """FLOP one training epoch needs: per sample, 2 x multiply-adds of every layer for the forward pass and 2 x for
    the weight gradients, plus 2 x for the input gradients of every layer but the first (no one needs the gradient
    of the data). 24.7 GFLOP for 784-128-10 over 60,000 samples; the classic "6 x multiply-adds" count (36.6 GFLOP)
    includes the first layer's input gradient, which no library computes, and would overstate every rate by up to
    1.5x (the above-ceiling check caught that on wide one-layer models)."""
    macs = [a * b for a, b in zip(sizes, sizes[1:])]
    return (4.0 * sum(macs) + 2.0 * sum(macs[1:])) * samples


def _peaks(devices: Sequence[Device]) -> Dict[Optional[str], Optional[float]]:
    """FP32 ceilings by device id (None: the host, for the NumPy and PyTorch rows), read once per run."""
    return {None: host_peak_gflops(), **{d.id: fp32_peak_gflops(d) for d in devices}}


def _with_peak(row: Dict[str, Any], flops: float, seconds: float, peak: Optional[float]) -> Dict[str, Any]:
    """Adds GFLOP/s and the share of the measured FP32 ceiling ``peak``; flags a figure above it."""
    g = flops / seconds / 1e9 if seconds > 0 else float("nan")
    row.update(gflops=g, pct_peak=100 * share(g, peak), peak_gflops=peak)
    check_ceiling(row, "gflops", peak, "FP32 FMA ceiling", "pct_peak")
    return row


def topology_widths(max_width: int, min_width: int = 50) -> List[int]:
    out, w = [], min_width
    while w <= max_width:
        out.append(w)
        w *= 2
    return out


def _hidden(first: int, layers: int) -> List[int]:
    """The published pyramid's widths from the first: w, w/2, then 13/50 of w (50*2^k, 25*2^k, 13*2^k)."""
    return [max(1, first * r // 50) for r in (50, 25, 13)[:layers]]


def _mlp(inputs: int, hidden: Sequence[int], outputs: int, device: Device, seed: int,
         out_act: Optional[str] = None) -> nn.Sequential:
    sizes = [inputs, *hidden]
    layers: List[nn.Layer] = [nn.Dense(a, b, "relu", seed=seed + i) for i, (a, b) in enumerate(zip(sizes, sizes[1:]))]
    layers.append(nn.Dense(sizes[-1], outputs, out_act, seed=seed + len(hidden)))
    return nn.Sequential(layers, device=device)


def run_topology(devices: Sequence[Device], *, max_width: int = 6400, batches: Sequence[int] = (100, 500, 1000),
                 depths: Sequence[int] = (1, 2, 3), n_samples: int = 5000, seed: int = 0, epochs: int = 3,
                 progress: Optional[Callable[[str], None]] = None,
                 widths: Optional[Sequence[int]] = None, max_duration: Optional[float] = None,
                 processes: int = 1, notes: Optional[List[str]] = None) -> List[Dict[str, Any]]:
    """Training (``epochs`` timed epochs per point: the median, and ``times_s`` for the spread) and inference time of
    the MLP topology study per depth, width, device and batch; ``widths``: the first hidden widths (default: 50
    doubling up to ``max_width``). The devices' epochs of a point run in interleaved rounds (:func:`interleave`:
    A B, B A, ...; preempted epochs re-run), ``max_duration`` seconds of epochs per device and point at most;
    ``processes``: the epochs spread over that many processes run one after another (hetnn._workers), ``notes``
    getting a line per worker that failed."""
    if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 1:
        raise ValueError(f"run_topology: epochs must be an int >= 1, got {epochs!r}")
    if processes != 1:
        args = dict(devices=devices, max_width=max_width, batches=batches, depths=depths, n_samples=n_samples,
                    seed=seed, epochs=epochs, progress=progress, widths=widths, max_duration=max_duration,
                    notes=notes)
        return _workers.spread_call("hetnn.bench.mlp:run_topology", args, processes, repeats="epochs")
    (x, y), _ = datasets.solar_irradiance(n_samples=n_samples, seed=seed, test_fraction=0.01)
    # whole batches only: a last, smaller batch is a new matrix shape, and a new shape may compile an OpenCL
    # kernel variant inside the timed epoch
    whole = len(x) // max(batches) * max(batches) or len(x)
    x, y = x[:whole], y[:whole]
    peaks = _peaks(devices)
    rows: List[Dict[str, Any]] = []
    firsts = list(widths) if widths else topology_widths(max_width)
    expect(progress, len(depths) * len(firsts) * len(batches))
    for depth in depths:
        for w in firsts:
            hidden = _hidden(w, depth)
            for bs in batches:
                settle(0.1)
                if progress:
                    progress(f"topology {hidden}, batch {bs}")
                cases, models = [], []
                for dev in devices:
                    model = _mlp(50, hidden, 1, dev, seed)
                    opt = optim.SGD(model.parameters(), lr=0.01)
                    # warm-up: two batches (kernels compiled, buffers allocated), not timed
                    model.fit(x[:2 * bs], y[:2 * bs], loss=nn.MSELoss(), optimizer=opt, epochs=1, batch_size=bs)
                    model.predict(x[:bs], batch_size=bs)
                    cases.append(Case(f"topology {'-'.join(map(str, hidden))} batch {bs} {dev.id}",
                                      _epoch(model, opt, x, y, bs, seed)))
                    models.append((dev, model))
                # an epoch's time does not depend on the weights, so a preempted epoch is re-run (unlike the
                # Fashion-MNIST table, whose accuracy would count the extra epoch)
                results = interleave(cases, n_warmup=0, n_repeat=epochs, max_duration=max_duration)
                for (dev, model), r in zip(models, results):
                    rows.append(_topology_row(dev, model, r, x, bs, depth, hidden, peaks[dev.id]))
                del models, cases
    ids = [d.id for d in devices]  # the table's order: depth, width, device, batch
    rows.sort(key=lambda r: (list(depths).index(r["layers"]), firsts.index(int(r["widths"].split("-")[0])),
                             ids.index(r["device"])))
    return rows


def _epoch(model: nn.Sequential, opt: Any, x: np.ndarray, y: np.ndarray, bs: int, seed: int) -> Callable[[], None]:
    """One training epoch of ``model``, its shuffle seeded by the epoch's number (whatever process runs it)."""
    done = [0]

    def epoch() -> None:
        model.fit(x, y, loss=nn.MSELoss(), optimizer=opt, epochs=1, batch_size=bs, seed=seed + done[0])
        done[0] += 1
    return epoch


def _topology_row(dev: Device, model: nn.Sequential, r: Any, x: np.ndarray, bs: int, depth: int,
                  hidden: Sequence[int], peak: Optional[float]) -> Dict[str, Any]:
    """A topology row from its epochs (``r``, a BenchmarkResult) and one inference pass timed here (not in a worker
    process, whose rows are not reported)."""
    watch = Watch()
    with watch.block() as inference:
        if not _workers.in_worker():
            model.predict(x, batch_size=bs)
    watch.close()
    times = [float(t) for t in r.wall_times]
    train = float(np.median(times))
    return _with_peak(
        {"layers": depth, "widths": "-".join(map(str, hidden)), "params": model.count_params(), "library": "hetnn",
         "device": dev.id, "batch": bs, "samples": len(x), "train_s": train, "times_s": times,
         "rounds": [int(v) for v in r.rounds], "infer_s": watch.walls[-1],
         "train_samples_per_s": len(x) / train if train > 0 else float("nan"), **r.flags,
         "infer_noise": watch.flags([inference.counters] if inference.counters else [])["noise"]},
        train_flops([50, *hidden, 1], len(x)), train, peak)


def mnist_topologies(quick: bool) -> List[Tuple[int, ...]]:
    if quick:
        return [(128,)]
    return [(16,), (64,), (128,), (256,), (128, 64), (256, 128), (256, 128, 64)]


def _load_fashion() -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    (xt, yt), (xe, ye) = datasets.fashion_mnist()
    return (xt.reshape(len(xt), -1).astype(np.float32) / 255, yt.astype(np.int64),
            xe.reshape(len(xe), -1).astype(np.float32) / 255, ye.astype(np.int64))


class NumpyMLP:
    """The hand-written NumPy loop users write: ReLU MLP, softmax cross-entropy, SGD with momentum (PyTorch's
    definition), float32. ``epoch()`` trains one epoch in place and returns its mean loss; momentum carries over."""

    def __init__(self, weights: List[Tuple[np.ndarray, np.ndarray]], batch: int, lr: float, momentum: float,
                 seed: int) -> None:
        self.weights, self.batch, self.lr, self.momentum = weights, batch, lr, momentum
        self.rng = np.random.default_rng(seed)
        self.vel = [(np.zeros_like(w), np.zeros_like(b)) for w, b in weights]

    def epoch(self, xt: np.ndarray, yt: np.ndarray) -> float:
        weights, vel, batch, lr, momentum = self.weights, self.vel, self.batch, self.lr, self.momentum
        n = len(xt)
        rows = np.arange(batch)
        perm = self.rng.permutation(n)
        total = 0.0
        for s in range(0, n, batch):
            i = perm[s:s + batch]
            acts = [xt[i]]
            for k, (w, b) in enumerate(weights):
                z = acts[-1] @ w.T + b
                acts.append(np.maximum(z, 0) if k < len(weights) - 1 else z)
            z = acts[-1] - acts[-1].max(axis=1, keepdims=True)
            p = np.exp(z)
            p /= p.sum(axis=1, keepdims=True)
            m = len(i)
            total += float(-np.log(p[rows[:m], yt[i]]).sum())
            p[rows[:m], yt[i]] -= 1
            g = p / m
            for k in range(len(weights) - 1, -1, -1):
                w, b = weights[k]
                gw, gb = g.T @ acts[k], g.sum(axis=0)
                if k:
                    g = (g @ w) * (acts[k] > 0)
                for param, grad, v in ((w, gw, vel[k][0]), (b, gb, vel[k][1])):
                    v *= momentum
                    v += grad
                    param -= lr * v
        return total / n


def numpy_mlp_epochs(weights: List[Tuple[np.ndarray, np.ndarray]], xt: np.ndarray, yt: np.ndarray, epochs: int,
                     batch: int, lr: float, momentum: float, seed: int) -> Tuple[List[float], List[float]]:
    """:class:`NumpyMLP` for ``epochs`` epochs: (epoch times, epoch mean losses); updates ``weights`` in place."""
    net = NumpyMLP(weights, batch, lr, momentum, seed)
    times, losses = [], []
    for _ in range(epochs):
        t0 = time.perf_counter()
        losses.append(net.epoch(xt, yt))
        times.append(time.perf_counter() - t0)
    return times, losses


def _numpy_accuracy(weights: List[Tuple[np.ndarray, np.ndarray]], xe: np.ndarray, ye: np.ndarray) -> float:
    a = xe
    for k, (w, b) in enumerate(weights):
        a = a @ w.T + b
        if k < len(weights) - 1:
            a = np.maximum(a, 0)
    return float(np.mean(np.argmax(a, axis=1) == ye))


class TorchMLP:
    """The same model, data, initial weights and hyperparameters in PyTorch (CPU, hetnn's thread count);
    ``epoch()`` trains one epoch and returns its mean loss, with no per-step host sync (as hetnn)."""

    def __init__(self, weights: List[Tuple[np.ndarray, np.ndarray]], batch: int, lr: float, momentum: float,
                 seed: int) -> None:
        import torch

        torch.set_num_threads(get_num_threads())  # the CPUs this process may use, or --threads
        torch.manual_seed(seed)
        mods: List[Any] = []
        for k, (w, b) in enumerate(weights):
            lin = torch.nn.Linear(w.shape[1], w.shape[0])
            with torch.no_grad():
                lin.weight.copy_(torch.from_numpy(w))
                lin.bias.copy_(torch.from_numpy(b))
            mods.append(lin)
            if k < len(weights) - 1:
                mods.append(torch.nn.ReLU())
        self.torch, self.batch = torch, batch
        self.model = torch.nn.Sequential(*mods)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=momentum)
        self.lossf = torch.nn.CrossEntropyLoss()
        self.gen = torch.Generator().manual_seed(seed)
        self.version = torch.__version__

    def epoch(self, xt: np.ndarray, yt: np.ndarray) -> float:
        torch = self.torch
        X, Y = torch.from_numpy(xt), torch.from_numpy(yt)
        perm = torch.randperm(len(xt), generator=self.gen)
        total = torch.zeros(())
        for s in range(0, len(xt), self.batch):
            i = perm[s:s + self.batch]
            self.opt.zero_grad(set_to_none=True)
            loss = self.lossf(self.model(X[i]), Y[i])
            loss.backward()
            self.opt.step()
            total += loss.detach() * len(i)
        return float(total) / len(xt)

    def accuracy(self, xe: np.ndarray, ye: np.ndarray) -> float:
        with self.torch.no_grad():
            return float((self.model(self.torch.from_numpy(xe)).argmax(1).numpy() == ye).mean())


def _warm_up(hidden: Sequence[int], dev: Device, seed: int, xt: np.ndarray, yt: np.ndarray, batch: int,
             lr: float, momentum: float) -> Dict[str, Any]:
    """One untimed epoch over 16 batches of a throw-away copy of the model: kernels compiled or loaded from the disk
    cache, primitives created, memory first touched. Its cost is the row's first-use figure, never part of an
    epoch time (a one-epoch PoCL run once read 6.8 s/epoch against 0.68 s of device time)."""
    before = _first_use_totals()
    t0 = time.perf_counter()
    warm = _mlp(784, hidden, 10, dev, seed)
    n = min(len(xt), 16 * batch)
    warm.fit(xt[:n], yt[:n], loss=nn.CrossEntropyLoss(),
             optimizer=optim.SGD(warm.parameters(), lr=lr, momentum=momentum), epochs=1, batch_size=batch, seed=seed)
    after = _first_use_totals()
    return {"first_use_s": time.perf_counter() - t0, "built": int(after["built"] - before["built"]),
            "disk_hits": int(after["disk_hits"] - before["disk_hits"])}


def _peer_warm_up(make: Callable[[], Any], xt: np.ndarray, yt: np.ndarray, batch: int) -> Dict[str, Any]:
    """A peer's untimed first use (16 batches on a throw-away copy): its cost, kept apart from the epochs."""
    t0 = time.perf_counter()
    n = min(len(xt), 16 * batch)
    make().epoch(xt[:n], yt[:n])
    return {"first_use_s": time.perf_counter() - t0}


def _hetnn_mnist_case(dev: Device, hidden: Sequence[int],
                      ctx: Dict[str, Any]) -> Tuple[Case, Callable[[Any], Dict[str, Any]], Any]:
    """hetnn on one device, warmed up on a throw-away copy: (its epoch as a case, its row maker, its model)."""
    xt, yt, batch, seed = ctx["xt"], ctx["yt"], ctx["batch"], ctx["seed"]
    settle()
    first = _warm_up(hidden, dev, seed, xt, yt, batch, ctx["lr"], ctx["momentum"])
    model = _mlp(784, hidden, 10, dev, seed)
    opt = optim.SGD(model.parameters(), lr=ctx["lr"], momentum=ctx["momentum"])
    state: Dict[str, Any] = {"epoch": 0, "losses": [], "device_s": []}

    def epoch() -> None:
        hist = model.fit(xt, yt, loss=nn.CrossEntropyLoss(), optimizer=opt, epochs=1, batch_size=batch,
                         seed=seed + state["epoch"])
        state["epoch"] += 1
        state["losses"].append(hist.history["loss"][-1])
        state["device_s"].append(sum(hist.device_time.values()))

    def row(r: Any) -> Dict[str, Any]:
        times = r.wall_times
        device_s = float(np.mean(state["device_s"]))
        return _with_peak(
            {"widths": ctx["widths"], "batch": ctx["batch"], "params": model.count_params(), "library": "hetnn",
             "device": dev.id,
             "epochs": ctx["epochs"], "epoch_s": float(np.median(times)), "first_epoch_s": float(times[0]),
             "times_s": [float(t) for t in times],
             "test_accuracy": model.evaluate(ctx["xe"], ctx["ye"], metrics=("accuracy",))["accuracy"],
             "final_loss": state["losses"][-1], "device_s": device_s,
             "host_us_per_step": max(0.0, float(np.mean(times)) - device_s) / ctx["steps"] * 1e6,
             **r.flags, "threads": get_num_threads() if dev.kind == "cpu" else None, **first},
            ctx["flops"], float(np.median(times)), ctx["peaks"][dev.id])
    return Case(f"hetnn {dev.id}", epoch, devices=[dev]), row, model


def _peer_mnist_case(name: str, make: Callable[[], Any], params: int,
                     ctx: Dict[str, Any]) -> Tuple[Case, Callable[[Any], Dict[str, Any]]]:
    """A peer (NumPy loop, PyTorch) from the same initial weights, warmed up on a throw-away copy."""
    xt, yt = ctx["xt"], ctx["yt"]
    settle()
    first = _peer_warm_up(make, xt, yt, ctx["batch"])
    net = make()
    losses: List[float] = []

    def row(r: Any) -> Dict[str, Any]:
        times = r.wall_times
        acc = _numpy_accuracy(net.weights, ctx["xe"], ctx["ye"]) if name == "numpy" else net.accuracy(ctx["xe"],
                                                                                                      ctx["ye"])
        return _with_peak(
            {"widths": ctx["widths"], "batch": ctx["batch"], "params": params,
             "library": "numpy" if name == "numpy" else f"torch {net.version}",
             "device": "host" if name == "numpy" else "cpu", "epochs": ctx["epochs"],
             "epoch_s": float(np.median(times)), "first_epoch_s": float(times[0]),
             "times_s": [float(t) for t in times], "test_accuracy": acc, "final_loss": losses[-1], **r.flags,
             "threads": get_num_threads() if name == "torch" else blas_threads(), **first},
            ctx["flops"], float(np.median(times)), ctx["peaks"][None])
    return Case(name, lambda: losses.append(net.epoch(xt, yt))), row


def run_mnist(devices: Sequence[Device], *, epochs: int = 1, quick: bool = False, compare: Sequence[str] = ("numpy",),
              seed: int = 0, progress: Optional[Callable[[str], None]] = None,
              notes: Optional[List[str]] = None, batches: Sequence[int] = (64,)) -> List[Dict[str, Any]]:
    """Per topology and batch size, hetnn on every device and each peer (NumPy loop, PyTorch) train from the same
    initial weights; their epochs run in interleaved rounds (epoch 1 of each, then epoch 2 in reverse order, ...)
    after each warmed up on a throw-away copy, so a drift of the machine reaches all alike."""
    rows: List[Dict[str, Any]] = []
    for batch in batches:
        rows += _run_mnist_batch(devices, batch, epochs=epochs, quick=quick, compare=compare, seed=seed,
                                 progress=progress, notes=notes)
    return rows


def _run_mnist_batch(devices: Sequence[Device], batch: int, *, epochs: int, quick: bool, compare: Sequence[str],
                     seed: int, progress: Optional[Callable[[str], None]],
                     notes: Optional[List[str]]) -> List[Dict[str, Any]]:
    xt, yt, xe, ye = _load_fashion()
    ctx: Dict[str, Any] = {"xt": xt, "yt": yt, "xe": xe, "ye": ye, "batch": batch, "lr": 0.1, "momentum": 0.9,
                           "seed": seed, "epochs": epochs, "steps": -(-len(xt) // batch), "peaks": _peaks(devices)}
    use_torch = False
    if "torch" in compare:
        try:
            import torch  # noqa: F401
            use_torch = True
        except ImportError as exc:
            if notes is not None:
                notes.append(f"torch: not used ({type(exc).__name__}: {exc})")
    rows: List[Dict[str, Any]] = []
    expect(progress, len(mnist_topologies(quick)))
    for hidden in mnist_topologies(quick):
        ctx["widths"] = "-".join(map(str, hidden))
        ctx["flops"] = train_flops([784, *hidden, 10], len(xt))
        if progress:
            progress(f"fashion-mnist {ctx['widths']} batch {batch}")
        cases: List[Case] = []
        finish: List[Callable[[Any], Dict[str, Any]]] = []
        models = []
        for dev in devices:
            case, row, model = _hetnn_mnist_case(dev, hidden, ctx)
            cases.append(case)
            finish.append(row)
            models.append(model)
        ps = [p.numpy() for p in models[0].parameters()]  # every library starts from these weights
        base = [(ps[i].copy(), ps[i + 1].copy()) for i in range(0, len(ps), 2)]
        params = sum(w.size + b.size for w, b in base)
        lr, momentum = ctx["lr"], ctx["momentum"]
        peers: List[Tuple[str, Callable[[], Any]]] = []
        if "numpy" in compare:
            peers.append(("numpy", lambda: NumpyMLP([(a.copy(), b.copy()) for a, b in base], batch, lr, momentum,
                                                    seed)))
        if use_torch:
            peers.append(("torch", lambda: TorchMLP([(a.copy(), b.copy()) for a, b in base], batch, lr, momentum,
                                                    seed)))
        for name, make in peers:
            case, row = _peer_mnist_case(name, make, params, ctx)
            cases.append(case)
            finish.append(row)
        # an epoch changes the model: one re-run would train more epochs than the row says (and its accuracy
        # with them), so preempted epochs are flagged, not re-run
        results = interleave(cases, n_warmup=0, n_repeat=epochs, rerun=False)
        rows.extend(f(r) for f, r in zip(finish, results))
    return rows


def mnist_ratios(rows: List[Dict[str, Any]]) -> List[str]:
    """The comparisons the README reports, for the 784-128-10 model (one run): epoch time of each row over hetnn
    cpu's, with the 95 % bootstrap interval over the interleaved epochs (one epoch: no interval)."""
    out = []
    batches = list(dict.fromkeys(r.get("batch") for r in rows))
    for batch in batches:
        out += _mnist_ratios([r for r in rows if r["widths"] == "128" and r.get("batch") == batch],
                             f" batch {batch}" if batch != 64 or len(batches) > 1 else "")
    return out


def _mnist_ratios(sel: List[Dict[str, Any]], at: str) -> List[str]:
    out = []
    hetnn_cpu = next((r for r in sel if r["library"] == "hetnn" and r["device"] == "cpu"), None)
    for r in sel:
        if r is hetnn_cpu or hetnn_cpu is None:
            continue
        name = f"784-128-10 epoch{at}: hetnn cpu / {r['library']} {r['device']} (speed)"
        if any(x.get("flagged") or x.get("unreliable") for x in (r, hetnn_cpu)):
            out.append(f"{name}: left out ({r.get('noise') or hetnn_cpu.get('noise') or 'above the ceiling'})")
            continue
        ci = ratio_interval([(hetnn_cpu["times_s"], r["times_s"])]) if len(r.get("times_s", [])) > 1 else None
        flags = flags_text([hetnn_cpu, r])
        text = ci.text(name, flags) if ci else no_interval(name, r["epoch_s"] / hetnn_cpu["epoch_s"], "one epoch each",
                                                           flags)
        out.append(f"{text} ({hetnn_cpu['epoch_s']:.3f} s vs {r['epoch_s']:.3f} s)")
    return out
