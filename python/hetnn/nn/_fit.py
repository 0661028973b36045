"""Sequential.fit: checks the arguments, uploads the data once, builds the core Trainer and runs the epochs (one
C++ call each); the host reads the loss and metric accumulators back once per epoch."""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._array import Array
from .._check import is_int
from .._loader import _core
from .._timing import _Capture
from ._steps import StepHooks, step_hooks
from ._callbacks import Callback, History
from ._layers import Softmax
from ._losses import CrossEntropyLoss, Loss, as_loss


def batch_size_arg(v: Any, what: str) -> int:
    if not is_int(v) or v <= 0:
        raise ValueError(f"{what}: batch_size must be a positive int, got {v!r}")
    if v > 2**63 - 1:  # the core counts in int64 (2**63 once surfaced as pybind11's "incompatible arguments")
        raise ValueError(f"{what}: batch_size must be at most 2**63-1, got {v!r}")
    return int(v)


def seed_arg(v: Any, what: str) -> Optional[int]:
    """A seed: None (drawn) or an int >= 0 (NumPy's SeedSequence refused others in words naming no argument)."""
    if v is None:
        return None
    if not is_int(v):
        raise TypeError(f"{what}: seed must be an int >= 0 or None, got {type(v).__name__} ({v!r})")
    if v < 0:
        raise ValueError(f"{what}: seed must be an int >= 0 or None, got {v!r}")
    return int(v)


def _check_args(model: Any, loss: Any, optimizer: Any, epochs: Any, batch_size: Any, metrics: Any,
                callbacks: Optional[Sequence[Callback]]) -> Tuple[Loss, int, Tuple[str, ...], List[Callback]]:
    what = "fit"
    loss_obj = as_loss(loss)
    if isinstance(model.layers[-1], Softmax) and not isinstance(loss_obj, CrossEntropyLoss):
        raise ValueError(f"{what}: a final Softmax layer trains only with CrossEntropyLoss (it is folded into "
                         f"the loss); for {type(loss_obj).__name__} end the model with Dense or an activation")
    bs = batch_size_arg(batch_size, what)
    if not is_int(epochs) or epochs < 0:
        raise ValueError(f"{what}: epochs must be an int >= 0, got {epochs!r}")
    from ..optim import Optimizer
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{what}: optimizer must be a hetnn.optim optimizer (SGD, Adam, AdamW), got "
                        f"{type(optimizer).__name__}")
    own = {id(p) for p in model.parameters()}
    if not own or any(id(p) not in own for p in optimizer.params):
        raise ValueError(f"{what}: the optimizer's parameters are not this model's (build it from "
                         f"model.parameters())")
    cbs = list(callbacks or [])
    for cb in cbs:
        if not hasattr(cb, "on_epoch_end"):
            raise TypeError(f"{what}: callbacks must have an on_epoch_end(epoch, logs, model) method")
    return loss_obj, bs, (metrics,) if isinstance(metrics, str) else tuple(metrics), cbs


def split_validation(x: Any, y: Any, validation_split: Any, validation_data: Any) -> Tuple[Any, Any, Any]:
    """(x, y, validation_data) with the last ``validation_split`` of the samples held out (Keras's rule: the last
    samples, before any shuffling)."""
    if validation_split is None or validation_split == 0:
        return x, y, validation_data
    if isinstance(validation_split, bool) or not isinstance(validation_split, (int, float, np.floating)) \
            or not 0.0 < float(validation_split) < 1.0:
        raise ValueError(f"fit: validation_split must be a fraction in [0, 1), got {validation_split!r}")
    if validation_data is not None:
        raise ValueError("fit: pass validation_data or validation_split, not both")
    xs, ys = (v.numpy() if isinstance(v, Array) else np.asarray(v) for v in (x, y))
    if xs.ndim == 0 or ys.ndim == 0 or len(xs) != len(ys):
        return x, y, None  # the model's own checks name the mismatch
    n_val = int(len(xs) * float(validation_split))
    if n_val == 0 or n_val == len(xs):
        raise ValueError(f"fit: validation_split={validation_split} of {len(xs)} samples leaves "
                         f"{'no validation' if n_val == 0 else 'no training'} samples")
    cut = len(xs) - n_val
    return xs[:cut], ys[:cut], (xs[cut:], ys[cut:])


def _validation(model: Any, validation_data: Any, out_shape: Tuple[int, ...], loss_obj: Loss) -> Optional[Tuple]:
    if validation_data is None:
        return None
    if not isinstance(validation_data, (tuple, list)) or len(validation_data) != 2:
        raise ValueError("fit: validation_data must be a pair (x_val, y_val)")
    vx, vy = validation_data
    VX, _, keep_vx = model._x(vx, "fit (validation_data)")
    if VX.shape[0] == 0:  # its means would be over no samples: once a ZeroDivisionError after an epoch's training
        raise ValueError("fit: validation_data has no samples; pass at least one, or none")
    VY, vlabels, keep_vy = model._y(vy, VX.shape[0], out_shape, loss_obj, "fit (validation_data)")
    return VX, VY, vlabels, keep_vx, keep_vy


def _trainer(model: Any, loss_obj: Loss, plan: Sequence[Tuple[str, str]], accs: Sequence[Any],
             optimizer: Any) -> Any:
    """The core Trainer: gather, forward, fused loss, metrics, backward and the update per step, in C++ (no update
    without an optimizer: a replica that takes its weights from another)."""
    trainer, softmax_last = model._trainer_layers(training=True)  # a final Softmax is folded into the loss
    trainer.set_loss(loss_obj.kind)
    for (_, kind), a in zip(plan, accs):  # the logits' argmax is the probabilities' argmax
        trainer.add_metric(kind, a, softmax_last and kind != "correct_argmax")
    if optimizer is not None:
        optimizer._to_trainer(trainer)
    return trainer


def run_fit(model: Any, x: Any, y: Any, *, loss: Any, optimizer: Any, epochs: int, batch_size: int, shuffle: bool,
            validation_data: Optional[Tuple[Any, Any]], validation_split: Optional[float], metrics: Sequence[str],
            callbacks: Optional[Sequence[Callback]], verbose: bool, seed: Optional[int],
            distributed: bool = False, devices: Any = None, device_split: Any = "even",
            transform: Any = None, strategy: str = "central", step_times: bool = False) -> History:
    loss_obj, bs, metric_names, cbs = _check_args(model, loss, optimizer, epochs, batch_size, metrics, callbacks)
    seed = seed_arg(seed, "fit")
    if not isinstance(distributed, (bool, np.bool_)):
        raise TypeError(f"fit: distributed must be a bool, got {distributed!r}")
    x, y, validation_data = split_validation(x, y, validation_split, validation_data)
    X, out_shape, keep_x = model._x(x, "fit")
    host_x = _augmented(model, X, transform, distributed, devices)
    if host_x is not None:  # the epochs' images go to a buffer of their own: the user's array is never written
        X = _core.Array.from_numpy(model._device._dev, host_x)
    n = X.shape[0]
    if n == 0:
        raise ValueError("fit: x has no samples")
    Y, labels, keep_y = model._y(y, n, out_shape, loss_obj, "fit")
    plan = model._metric_plan(metric_names, out_shape[0], labels, "fit", y_is_labels=len(Y.shape) == 1)
    val = _validation(model, validation_data, out_shape, loss_obj)
    model.loss = loss_obj
    model.stop_training = False
    how, seed = _strategy(model, optimizer, (x, y, X, Y, labels), out_shape, loss_obj, plan,
                          (bs, shuffle, seed, epochs), (distributed, devices, device_split, strategy), val is not None)
    hooks = step_hooks(cbs, step_times, model, how)
    hist = History()
    hist.params = {"epochs": epochs, "batch_size": bs, "samples": n, "device": model._device.id, **how.params}
    keys = ["loss", *(nm for nm, _ in plan)]
    keys += [f"val_{k}" for k in keys] if val is not None else []
    for cb in cbs:
        if hasattr(cb, "on_train_begin"):
            cb.on_train_begin(keys + ["epoch_time"] + how.extra_logs, model)
    bars = _progress(verbose and how.reports, epochs, n, bs)
    capture = _Capture([model._device])
    capture.open(details=False)
    try:
        _epochs(model, (how, hooks), optimizer, hist, cbs, bars, (plan, val, loss_obj, out_shape[0]),
                (X, host_x, transform), epochs, seed)
    finally:
        trainer = getattr(how, "trainer", None)
        if trainer is not None and model.dtype == np.float16:  # the scale the next fit starts from
            model.loss_scale = float(trainer.loss_scale)
            hist.params.update(loss_scale=model.loss_scale, skipped_steps=int(trainer.skipped_steps))
        hist.device_time = capture.close_totals()
        how.close()
        if bars:
            bars.close()
        for cb in cbs:
            if hasattr(cb, "on_train_end"):
                cb.on_train_end(model)
    return hist


def _strategy(model: Any, optimizer: Any, data: Tuple[Any, ...], out_shape: Tuple[int, ...], loss_obj: Loss,
              plan: Sequence[Tuple[str, str]], loop: Tuple[int, bool, Optional[int], int], spread: Tuple[Any, ...],
              validating: bool) -> Tuple[Any, Optional[int]]:
    """How the epochs run (hetnn.nn._strategies: one device, several devices, MPI ranks), with its trainer built
    and ready; and the seed of the row order (the ranks agree on one)."""
    from ._mirrored import Mirrored, resolve_devices, strategy_arg
    from ._strategies import Devices, OneDevice, Ranks

    x, y, X, Y, labels = data
    bs, shuffle, seed, epochs = loop
    distributed, devices, device_split, strategy = spread
    strategy = strategy_arg(strategy)
    if devices is None and strategy != "central":
        raise ValueError(f"fit: strategy={strategy!r} applies to training on several devices; pass devices= too")
    devs = None
    if devices is not None:
        if distributed:
            raise ValueError("fit: distributed=True with devices= is not supported (one device per rank: launch a "
                             "rank per device)")
        devs = resolve_devices(model, devices)
    mirror = Mirrored(model, devs, device_split, bs, strategy) if devs is not None and len(devs) > 1 else None
    dp = None
    if distributed:
        from ._data_parallel import DataParallel
        dp = DataParallel(model, optimizer, X.shape[0], bs, shuffle, seed,
                          _fingerprint(model, loss_obj, optimizer, epochs, plan, validating))
        seed = dp.seed
    dev = model._device._dev
    accs = [_core.Array.zeros(dev, [1], "float32") for _ in range(1 + len(plan))]  # the loss's, then the metrics'
    trainer = _trainer(model, loss_obj, plan, accs[1:], optimizer)
    step_labels = labels if any(k == "correct_argmax" for _, k in plan) else None
    args = (model, trainer, (X, Y, step_labels), accs, X.shape[0], bs, shuffle)
    how: OneDevice = Ranks(dp, *args) if dp is not None else Devices(mirror, *args) if mirror is not None else \
        OneDevice(*args)
    if isinstance(how, Devices):
        how.build(x, y, out_shape, loss_obj, plan, lambda replica, raccs, opt: _trainer(replica, loss_obj, plan, raccs,
                                                                                         opt), optimizer, strategy)
    how.begin(optimizer)
    return how, seed


def _epochs(model: Any, how_hooks: Tuple[Any, Optional[StepHooks]], optimizer: Any, hist: History,
            cbs: List[Callback], bars: Any, logs_of: Tuple[Any, ...], images: Tuple[Any, Optional[np.ndarray], Any],
            epochs: int, seed: Optional[int]) -> None:
    """The epoch loop, the same for every strategy: the row order, the steps, the logs, the callbacks."""
    how, hooks = how_hooks
    plan, val, loss_obj, c = logs_of
    X, host_x, transform = images
    rng = np.random.default_rng(seed)
    trng = np.random.default_rng(None if seed is None else [seed, 1])  # the transforms' draws: a stream of their own
    for epoch in range(epochs):
        t0 = time.perf_counter()
        if hasattr(optimizer, "_begin_epoch"):
            optimizer._begin_epoch(epoch)
        if host_x is not None:
            X.write_from(_transformed(transform, host_x, trng))
        samples, scale = how.rows(rng)
        how.zero_sums()
        report = bars.within_epoch(epoch, scale) if bars else None
        steps = how.steps()
        lrs = optimizer._epoch_lrs(steps)  # a Schedule's rate for each step, checked before any runs
        if hooks:
            hooks.begin_epoch(lrs)
        try:
            sums = how.run(lrs, report)
        finally:  # the moments saw the steps taken, even when the epoch was cut short
            optimizer._after_epoch(how.trainer)
        optimizer._epoch_done(lrs, steps)
        if hooks:
            hooks.end_epoch(hist)
        if sums is None:
            sums = how.sums()
        sums, epoch_time, samples, extra = how.reduce(sums, time.perf_counter() - t0, samples)
        logs = _epoch_logs(model, samples, c, plan, sums, val, loss_obj)
        logs["epoch_time"] = epoch_time
        logs.update(extra)
        for k, v in logs.items():
            hist._add(k, v)
        hist.epochs.append(epoch)
        if bars:
            bars.set_postfix({k: f"{v:.4f}" for k, v in logs.items() if k != "epoch_time"})
        stop = False
        for cb in cbs:
            stop = bool(cb.on_epoch_end(epoch, dict(logs), model)) or stop
        if how.stop(stop or bool(model.stop_training)):
            break


def _augmented(model: Any, X: Any, transform: Any, distributed: Any, devices: Any) -> Optional[np.ndarray]:
    """The training images on the host, for ``transform`` to draw each epoch's from (None without one)."""
    if transform is None:
        return None
    if not callable(transform):
        raise TypeError(f"fit: transform must be callable as t(x, rng) -> x (hetnn.transforms), got "
                        f"{type(transform).__name__}")
    if distributed or devices is not None:
        raise ValueError("fit: transform is applied on one device; it does not combine with distributed=True or "
                         "devices=")
    return np.array(X.to_numpy())


def _transformed(transform: Any, host_x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    out = np.asarray(transform(host_x, rng))
    if out.shape != host_x.shape:
        raise ValueError(f"fit: transform returned shape {out.shape}; the training images are {host_x.shape} (a "
                         f"transform that changes the size belongs before fit, e.g. Resize when loading)")
    if out.dtype.kind == "f" and not np.isfinite(out).all():
        raise ValueError("fit: transform returned NaN or infinity")
    return np.require(out.astype(host_x.dtype, copy=False), requirements=["C", "A"])


def _fingerprint(model: Any, loss_obj: Loss, optimizer: Any, epochs: int, plan: Sequence[Tuple[str, str]],
                 validation: bool) -> Dict[str, Any]:
    """What every rank of a distributed fit must agree on, besides the data size and batch."""
    # every layer's configuration: ranks whose models differ only in an activation or a dropout rate have the same
    # parameter shapes and would average the gradients of two functions. Not the dropout seed (each rank draws its
    # own masks) nor the initialiser (rank 0's weights are broadcast).
    layers = [(type(layer).__name__, {k: v for k, v in layer.config().items() if k not in ("seed", "init")})
              for layer in model.layers]
    return {"layers": layers, "loss": loss_obj.kind, "epochs": epochs,
            "metrics": list(plan), "validation": validation, "optimizer": repr(optimizer),
            "optimizer steps": getattr(optimizer, "steps", None)}


def _epoch_logs(model: Any, n: int, c: int, plan: Sequence[Tuple[str, str]], sums: Sequence[float],
                val: Optional[Tuple], loss_obj: Loss) -> Dict[str, float]:
    """The epoch's means from the loss and metric sums over its n samples."""
    logs = {"loss": sums[0] / n}
    for (name, kind), v in zip(plan, sums[1:]):
        logs[name] = v / n if kind == "correct_argmax" else v / (n * c)
    if val is not None:
        vres = model._evaluate(val[0], val[1], val[2], loss_obj, [nm for nm, _ in plan], 1024)
        logs.update({f"val_{k}": v for k, v in vres.items()})
    return logs


class _Bar:
    """fit's progress bar (tqdm.auto: a widget in Jupyter, text elsewhere) over epochs x samples, advanced from
    inside each epoch's C++ loop."""

    def __init__(self, epochs: int, n: int) -> None:
        from .._bars import tqdm_class

        self.n, self.bar = n, tqdm_class()(total=epochs * n, unit="sample", desc="fit", dynamic_ncols=True)

    def within_epoch(self, epoch: int, scale: float = 1.0) -> Callable[[int], None]:
        def report(done: int) -> None:  # done: this replica's samples (x scale: all replicas', roughly)
            self.bar.set_description(f"fit, epoch {epoch + 1}", refresh=False)
            self.bar.update(epoch * self.n + min(int(done * scale), self.n) - self.bar.n)
        return report

    def set_postfix(self, logs: Dict[str, str]) -> None:
        self.bar.set_postfix(logs)

    def close(self) -> None:
        self.bar.close()


def _progress(verbose: bool, epochs: int, n: int, bs: int) -> Optional[_Bar]:
    if not verbose:
        return None
    try:
        return _Bar(epochs, n)
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return None
