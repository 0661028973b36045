"""Sequential models: fit / evaluate / predict on one device, save / load (the file format: _saving.py).

Training keeps everything on the device: the data is uploaded once, each epoch uploads one shuffled index vector
and gathers minibatches from it on the device (take_rows), the loss and the metrics are summed into one-element
device accumulators, and the host reads them back once per epoch. The steps themselves run in C++
(hetnn._core.Trainer, cpp/src/core/train/trainer.cpp): one call per epoch, no per-step Python, NumPy work or
synchronisation."""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from .._array import Array, _foreign_to_host, _numpy_view
from .._check import is_int
from .._device import Device, DeviceLike, device as _resolve_device, get_default_device
from .._loader import _core
from ._callbacks import Callback, History
from ._fit import batch_size_arg, run_fit
from ._layers import Layer, Parameter, Softmax, check_sequence, edits, layer_from_config
from ._losses import CrossEntropyLoss, Loss, MSELoss, as_loss
from ._saving import FORMAT, read_model, write_model
from ._summary import format_summary

_METRICS = ("accuracy", "mae")


def _numeric(dtype: np.dtype) -> bool:
    return dtype.kind in "fiub" or dtype.name == "bfloat16"  # ml_dtypes' bfloat16 has kind "V"



def _finfo(dtype: Any) -> Any:
    """np.finfo, or ml_dtypes' for bfloat16 (NumPy's own does not know it)."""
    try:
        return np.finfo(dtype)
    except ValueError:
        import ml_dtypes

        return ml_dtypes.finfo(dtype)


def _operand(arr: np.ndarray, dtype: np.dtype, what: str, name: str) -> np.ndarray:
    """``arr`` as the C-contiguous, aligned ``dtype`` array the core reads (a copy where needed: a view at an odd
    offset into a buffer, a memory-mapped file with an odd header). NaN, infinity and finite values beyond
    ``dtype``'s range (which the conversion would make infinite) are refused, naming the first index."""
    if arr.dtype.kind in "fc" and arr.size:
        finite = np.isfinite(arr)
        if not finite.all():
            bad = np.argwhere(~finite)[0]
            raise ValueError(f"{what}: {name} holds NaN or infinity (first at index {tuple(int(i) for i in bad)})")
        top = float(_finfo(dtype).max)
        if arr.dtype.itemsize > np.dtype(dtype).itemsize and float(np.max(np.abs(arr))) > top:
            bad = np.argwhere(np.abs(arr) > top)[0]
            at, value = tuple(int(i) for i in bad), float(arr[tuple(bad)])
            raise ValueError(f"{what}: {name} holds {value!r} at index {at}, beyond {np.dtype(dtype).name}'s "
                             f"range (+-{top:.4g}), the model's dtype")
    return np.require(arr, dtype=dtype, requirements=["C", "A"])

class Sequential:
    """Layers applied in order, on one device (``device``: the default device when None)::

        model = hetnn.nn.Sequential([hetnn.nn.Flatten(), hetnn.nn.Dense(784, 128, "relu"),
                                     hetnn.nn.Dense(128, 10)], device="cpu")
        opt = hetnn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        hist = model.fit(x, y, loss=hetnn.nn.CrossEntropyLoss(), optimizer=opt, epochs=10, batch_size=64)

    Parameters are float32 (``dtype="float64"`` on devices with fp64). ``dtype="float16"`` or ``"bfloat16"`` is mixed
    precision, as ``torch.autocast`` with ``GradScaler``: the parameters, their gradients and the optimizer's state
    stay float32 (master weights); the layers compute in the 16-bit type on copies of them (on the GPU's matrix units
    where ``Device.float16_mode`` says tensor cores; elsewhere 16-bit storage computed in float32), inputs and
    activations are 16-bit, and each step's gradients reach the float32 ones unscaled. float16 scales the loss's
    gradient (dynamic, from 2**16: halved with the update skipped when a gradient overflows, doubled after 2000 clean
    steps; ``fit``'s history says the scale and the skipped steps); bfloat16 has float32's range and needs none.
    """

    def __init__(self, layers: Sequence[Layer], device: DeviceLike = None, dtype: Any = "float32") -> None:
        if not isinstance(layers, (list, tuple)) or not layers:
            raise ValueError("Sequential: layers must be a non-empty list of hetnn.nn layers")
        self.layers = check_sequence(layers)
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = repr(dtype)
        if name not in ("float32", "float64", "float16", "bfloat16"):
            raise TypeError(f"Sequential: dtype must be float32, float64, float16 or bfloat16, got {name}")
        self.dtype = np.dtype(name)
        self.loss_scale = 65536.0  # float16: the loss scale the next fit starts from (each fit leaves its last here)
        self.stop_training = False
        self.loss: Optional[Loss] = None
        # Convolution chains keep activations in the device's preferred layouts (oneDNN's blocked nChw16c on the
        # CPU device) between layers; False: NCHW between all layers (to measure what the layouts give). None: the
        # core's default (on where the device offers them).
        self.device_layouts: Optional[bool] = None
        self._device: Device = _resolve_device("cpu")  # replaced by to() at once
        # predict and evaluate run on one trainer kept from call to call (_kept_trainer): the key it was built
        # under, the layers, the trainer and whether the last Softmax was left out
        self._kept: Optional[Tuple[Any, List[Layer], Any, bool]] = None
        self._kept_lock = threading.Lock()
        self.to(device)

    # -- placement and parameters
    @property
    def device(self) -> Device:
        return self._device

    def to(self, device: DeviceLike) -> "Sequential":
        """Moves the parameters to ``device`` (values kept; an optimizer's state moves with its next step)."""
        dev = _resolve_device(device) if device is not None else get_default_device()
        if self.dtype == np.float64 and "float64" not in dev.dtypes:
            raise TypeError(f"Sequential: {dev.id} has no float64; use dtype='float32'")
        for layer in self.layers:
            layer._place(dev._dev, self.param_dtype)
        self._device = dev
        self._kept = None  # its arrays were the old device's
        return self

    def _replica(self, device: DeviceLike) -> "Sequential":
        """The same architecture on ``device`` (its own parameters: values as built, not copied)."""
        replica = Sequential([layer_from_config(layer.kind, layer.config()) for layer in self.layers], device=device,
                             dtype=self.dtype)
        replica.device_layouts = self.device_layouts
        return replica

    @property
    def param_dtype(self) -> np.dtype:
        """The parameters' dtype: the model's, or float32 (the master weights) for a float16 / bfloat16 model."""
        return np.dtype("float32") if self.dtype.name in ("float16", "bfloat16") else self.dtype

    def parameters(self) -> List[Parameter]:
        return [p for layer in self.layers for p in layer.parameters()]

    def count_params(self) -> int:
        return int(sum(np.prod(p.shape) for p in self.parameters()))

    def input_shape(self) -> Optional[Tuple[int, ...]]:
        """Per-sample input shape the first layer fixes (Dense: its in_features), else None."""
        from ._layers import Dense, Flatten
        for layer in self.layers:
            if isinstance(layer, Dense):
                return (layer.in_features,) if layer is self.layers[0] else None
            if not isinstance(layer, Flatten):
                return None
        return None

    def _output_shape(self, sample_shape: Tuple[int, ...]) -> Tuple[int, ...]:
        s = tuple(sample_shape)
        for i, layer in enumerate(self.layers):
            try:
                s = layer.output_shape(s)
            except ValueError as exc:
                raise ValueError(f"layer {i} ({type(layer).__name__}): {exc}") from None
        return s

    # -- container protocol (as torch.nn.Sequential)
    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self) -> Iterator[Layer]:
        return iter(self.layers)

    def __getitem__(self, key: Union[int, slice]) -> Union[Layer, "Sequential"]:
        """``model[i]`` is layer i; ``model[i:j]`` a Sequential of those layers, sharing their parameters."""
        if isinstance(key, slice):
            layers = self.layers[key]
            if not layers:
                raise IndexError(f"Sequential[{key.start}:{key.stop}]: no layers in that range")
            sub = object.__new__(Sequential)
            sub.__dict__.update(self.__dict__)
            sub.layers, sub.loss = check_sequence(layers), None
            return sub
        if not is_int(key):
            raise TypeError(f"Sequential indices must be ints or slices, got {type(key).__name__}")
        return self.layers[int(key)]

    def __call__(self, x: Any) -> Any:
        """``model(x)`` is ``model.predict(x)``."""
        return self.predict(x)

    # -- state (PyTorch's names: "<layer index>.<parameter>", e.g. "0.weight", "0.bias"; PyTorch's layouts)
    def state_dict(self) -> "OrderedDict[str, np.ndarray]":
        """The parameters as NumPy arrays (copies) under PyTorch's names: a model of Dense layers loads into the
        torch.nn.Sequential of the same Linear layers and back."""
        return OrderedDict((f"{i}.{p.name}", p.numpy()) for i, layer in enumerate(self.layers)
                           for p in layer.parameters())

    def load_state_dict(self, state: Mapping[str, Any], strict: bool = True) -> Tuple[List[str], List[str]]:
        """Writes the values in ``state`` (arrays, PyTorch tensors or anything NumPy converts) into the parameters.
        ``strict``: every key must match (else KeyError naming the missing and unexpected keys). Shapes must match
        (ValueError); values are converted to the model's dtype. Returns (missing keys, unexpected keys). Nothing is
        written unless every entry checks out."""
        if not isinstance(state, Mapping):
            raise TypeError(f"load_state_dict: state must be a mapping of names to arrays, got "
                            f"{type(state).__name__}")
        params = {f"{i}.{p.name}": p for i, layer in enumerate(self.layers) for p in layer.parameters()}
        missing = [k for k in params if k not in state]
        unexpected = [k for k in state if k not in params]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing keys {missing}, unexpected keys {unexpected} (this model's: "
                           f"{list(params)})")
        values = {}
        for k, p in params.items():
            if k not in state:
                continue
            try:
                v = np.asarray(_foreign_to_host(state[k]))
            except (ValueError, TypeError) as exc:  # a ragged nested list: NumPy's words named no key
                raise ValueError(f"load_state_dict: {k} cannot be read as an array of shape {p.shape} "
                                 f"({type(exc).__name__}: {exc})") from None
            if v.shape != p.shape:
                raise ValueError(f"load_state_dict: {k} has shape {v.shape}, the parameter {p.shape}")
            if not _numeric(v.dtype):
                raise TypeError(f"load_state_dict: {k} has dtype {v.dtype}, not numeric")
            values[k] = np.require(v.astype(self.param_dtype), requirements=["C", "A"])  # NaN kept: a diverged model
        for k, v in values.items():
            params[k].value.write_from(v)
        return missing, unexpected

    def __getstate__(self) -> Dict[str, Any]:  # pickle / deepcopy: architecture, values, device id
        return {"layers": [(layer.kind, layer.config()) for layer in self.layers], "dtype": self.dtype.name,
                "state": self.state_dict(), "device": self._device.id,
                "loss": None if self.loss is None else self.loss.kind}

    def __setstate__(self, st: Dict[str, Any]) -> None:
        Sequential.__init__(self, [layer_from_config(kind, cfg) for kind, cfg in st["layers"]],
                            device=st["device"], dtype=st["dtype"])
        self.load_state_dict(st["state"])
        self.loss = None if st["loss"] is None else as_loss(st["loss"])

    def summary(self, input_shape: Optional[Sequence[int]] = None, print_fn: Any = print) -> None:
        """Prints a Keras-style table (layer, output shape, parameters) and the totals. ``input_shape``: the
        per-sample input shape, needed when the first layer does not fix it (Flatten of images, pooling)."""
        print_fn(format_summary(self, input_shape))

    def __repr__(self) -> str:
        inner = ",\n  ".join(repr(layer) for layer in self.layers)
        return f"Sequential([\n  {inner}\n], device={self._device.id!r}, params={self.count_params()})"

    # -- data checks and upload
    def _x(self, x: Any, what: str) -> Tuple[Any, Tuple[int, ...], Any]:
        """(device array, per-sample output shape, host array kept alive for zero-copy views)."""
        if isinstance(x, Array):
            if x.device.id != self._device.id:
                raise ValueError(f"{what}: x is on {x.device.id} but the model is on {self._device.id}; move one "
                                 f"with .to(device)")
            x = x.numpy()
        arr = np.asarray(x)
        if not _numeric(arr.dtype):
            raise TypeError(f"{what}: x must be numeric, got dtype {arr.dtype}")
        if arr.ndim < 2:
            raise ValueError(f"{what}: x must have a batch dimension and features, got shape {arr.shape}")
        arr = _operand(arr, self.dtype, what, "x")
        out_shape = self._output_shape(arr.shape[1:])
        dev = self._device._dev
        if self._device.kind == "cpu":
            return _numpy_view(dev, arr), out_shape, arr
        return _core.Array.from_numpy(dev, arr), out_shape, None

    def _y(self, y: Any, n: int, out_shape: Tuple[int, ...], loss: Loss, what: str) -> Tuple[Any, Any, Any]:
        """(device target array, device int64 labels for accuracy or None, host array kept alive)."""
        if isinstance(y, Array):
            y = y.numpy()
        arr = np.asarray(y)
        if arr.ndim == 0 or arr.shape[0] != n:
            raise ValueError(f"{what}: x has {n} samples but y has "
                             f"{'no batch dimension' if arr.ndim == 0 else arr.shape[0]}")
        if len(out_shape) != 1:
            raise ValueError(f"{what}: the model's output has per-sample shape {out_shape}; losses take (N, C) "
                             f"outputs (end the model with a Dense layer)")
        c = out_shape[0]
        dev = self._device._dev
        labels = None
        if isinstance(loss, CrossEntropyLoss) and c == 1:
            raise ValueError(f"{what}: CrossEntropyLoss needs 2 or more outputs (the softmax of one output is "
                             f"always 1, so nothing trains); use 2 outputs with class labels, or MSELoss")
        if isinstance(loss, CrossEntropyLoss) and arr.dtype.kind in "iub":
            if arr.ndim != 1:
                raise ValueError(f"{what}: integer class labels must have shape ({n},), got {arr.shape}")
            if arr.size and (arr.min() < 0 or arr.max() >= c):
                bad = int(arr[(arr < 0) | (arr >= c)][0])
                raise ValueError(f"{what}: label {bad} is out of range for {c} classes (expected 0..{c - 1})")
            t = np.require(arr, dtype=np.int64, requirements=["C", "A"])
            dev_t = _core.Array.from_numpy(dev, t)
            return dev_t, dev_t, t
        if not _numeric(arr.dtype):
            raise TypeError(f"{what}: y must be numeric, got dtype {arr.dtype}")
        t = _operand(arr, self.dtype, what, "y")
        if t.ndim == 1 and c == 1:
            t = t.reshape(n, 1)
        if t.shape != (n, c):
            raise ValueError(f"{what}: targets must have shape ({n}, {c}) for this model's output, got {arr.shape}")
        one_hot = c > 1 and bool(np.all((t == 0) | (t == 1))) and bool(np.all(t.sum(axis=1) == 1))
        if isinstance(loss, CrossEntropyLoss) or one_hot:  # accuracy against the targets' argmax
            lab = np.require(np.argmax(t, axis=1), dtype=np.int64, requirements=["C", "A"])
            labels = _core.Array.from_numpy(dev, lab)
        return _core.Array.from_numpy(dev, t), labels, t

    # -- the step pieces
    def _trainer_layers(self, training: bool = False) -> Tuple[Any, bool]:
        """A core Trainer holding the layers (a final Softmax left out: fit folds it into the loss), and whether
        there was one. ``training``: the trainer of a fit, after which each Dropout layer's masks move on to a new
        stream (a predict or evaluate in between must not change what the next fit draws)."""
        softmax_last = isinstance(self.layers[-1], Softmax)
        trainer = _core.Trainer()
        trainer.set_compute_dtype(self.dtype.name)  # 16-bit: the layers compute on copies of the float32 parameters
        if training and self.dtype == np.float16:
            trainer.loss_scale = self.loss_scale
        if self.device_layouts is not None:
            trainer.device_layouts = bool(self.device_layouts)
        for layer in (self.layers[:-1] if softmax_last else self.layers):
            layer._to_trainer(trainer)
        if training:
            for layer in self.layers:
                layer._fit_begins()
        return trainer, softmax_last

    @contextmanager
    def _kept_trainer(self) -> Iterator[Tuple[Any, bool]]:
        """The trainer of predict and evaluate, built once and kept with its buffers (those of the last two batch
        sizes) until a layer or parameter is edited, the layer list changes or the model moves. A second thread
        predicting while the kept one is in use gets a trainer of its own."""
        if not self._kept_lock.acquire(blocking=False):
            yield self._trainer_layers()
            return
        try:
            key = (edits(), self._device, self.device_layouts)
            kept = self._kept
            if kept is None or kept[0] != key or kept[1] != self.layers:
                trainer, softmax_last = self._trainer_layers()
                kept = self._kept = (key, list(self.layers), trainer, softmax_last)
            yield kept[2], kept[3]
        finally:
            self._kept_lock.release()

    def _metric_plan(self, metrics: Sequence[str], out_cols: int, labels: Any, what: str,
                     y_is_labels: bool = False) -> List[Tuple[str, str]]:
        plan = []
        for m in metrics:
            if m not in _METRICS:
                raise ValueError(f"{what}: unknown metric {m!r} (known: {', '.join(_METRICS)})")
            if m == "accuracy":
                if out_cols > 1 and labels is None:
                    raise ValueError(f"{what}: accuracy with {out_cols} outputs needs class labels, one-hot "
                                     f"targets, or CrossEntropyLoss")
                plan.append((m, "correct_argmax" if out_cols > 1 else "correct_threshold"))
            else:
                if y_is_labels:
                    raise ValueError(f"{what}: mae needs targets of the output's shape (one-hot rows or MSELoss "
                                     f"targets), not class labels")
                plan.append((m, "abs_error"))
        return plan

    # -- public API
    def fit(self, x: Any, y: Any, *, loss: Any, optimizer: Any, epochs: int = 1, batch_size: int = 32,
            shuffle: bool = True, validation_data: Optional[Tuple[Any, Any]] = None,
            validation_split: Optional[float] = None, metrics: Sequence[str] = (),
            callbacks: Optional[Sequence[Callback]] = None, verbose: bool = False,
            seed: Optional[int] = None, distributed: bool = False, devices: Any = None,
            device_split: Any = "even", transform: Any = None, strategy: str = "central",
            step_times: bool = False) -> History:
        """Trains on (x, y) and returns a :class:`History`. ``loss``: CrossEntropyLoss() (integer labels or
        one-hot / probability rows) or MSELoss(); ``optimizer``: a hetnn.optim optimizer over this model's
        parameters; ``metrics``: any of "accuracy" (argmax of the outputs against the labels; one output: a 0.5
        threshold; MSELoss with one-hot targets counts too), "mae"; ``validation_data`` (x_val, y_val) or
        ``validation_split`` (the last fraction of x and y, held out before shuffling) adds "val_*" entries;
        ``seed`` fixes the shuffling (the run is then reproducible on a device).

        ``distributed=True`` (after hetnn.distributed.init(), under ``mpirun -np N``): data-parallel training, every
        rank calling fit with the same model, data and arguments. Rank 0's weights and optimizer state start every
        replica; ``batch_size`` is per rank (a step trains on ``batch_size * N`` rows of a permutation all ranks
        share); gradients are averaged across ranks in every step; the History (loss, metrics, the slowest rank's
        "epoch_time", the mean "comm_time" spent reducing gradients) is the same on every rank; only rank 0 shows
        progress. A step equals a step of single-process training on the global batch.

        ``devices`` (a list of devices including the model's, or "all"): one replica per device in this process,
        each step's ``batch_size`` rows split across them (``device_split``: "even", "measured" in proportion to each
        device's speed on one step, or one weight per device, the model's first), their passes run at once, the
        gradients summed weighted by rows. ``strategy="central"`` (TensorFlow's central storage): the model's own
        device holds the variables and takes the update, the replicas copy its weights before each step, so the
        result equals training on the model's device alone (to its rounding). ``strategy="mirrored"``: every
        device holds a copy of the variables and of the optimizer state and applies the summed gradient itself
        (no weights travel; the copies agree to the rounding of each device's update; the model keeps its own).

        ``transform`` (one device): ``t(x, rng) -> x`` applied to the training images at the start of every epoch
        (hetnn.transforms: flips, crops, rotations, Compose), drawing from a generator of its own (seeded by
        ``seed``); ``x`` itself is never written.

        ``step_times`` (one device): each step's seconds, synchronised, in ``History.step_times`` (one list per
        epoch); with it, or a callback that defines ``on_batch_end``, the loop waits for every step."""
        return run_fit(self, x, y, loss=loss, optimizer=optimizer, epochs=epochs, batch_size=batch_size,
                       shuffle=shuffle, validation_data=validation_data, validation_split=validation_split,
                       metrics=metrics, callbacks=callbacks, verbose=verbose, seed=seed, distributed=distributed,
                       devices=devices, device_split=device_split, transform=transform, strategy=strategy,
                       step_times=step_times)

    def _evaluate(self, X: Any, Y: Any, labels: Any, loss_obj: Optional[Loss], metrics: Sequence[str],
                  batch_size: int) -> Dict[str, float]:
        dev = self._device._dev
        n, c = X.shape[0], self._output_shape(tuple(X.shape[1:]))[0]
        plan = self._metric_plan(metrics, c, labels, "evaluate", y_is_labels=len(Y.shape) == 1)
        acc_loss = _core.Array.zeros(dev, [1], "float32")
        accs = [_core.Array.zeros(dev, [1], "float32") for _ in plan]
        # the batch loop, the forward passes, the loss and the metrics in C++ (Trainer.evaluate_rows)
        with self._kept_trainer() as (trainer, softmax_last):
            if loss_obj is not None:
                trainer.set_loss(loss_obj.kind)
            trainer.clear_metrics()
            for (_, kind), a in zip(plan, accs):
                trainer.add_metric(kind, a, softmax_last and kind != "correct_argmax")
            trainer.evaluate_rows(X, Y, labels, batch_size, acc_loss if loss_obj is not None else None)
        out: Dict[str, float] = {}
        if loss_obj is not None:
            out["loss"] = float(acc_loss.to_numpy()[0]) / n
        for (name, kind), a in zip(plan, accs):
            v = float(a.to_numpy()[0])
            out[name] = v / n if kind == "correct_argmax" else v / (n * c)
        return out

    def evaluate(self, x: Any, y: Any, *, loss: Any = None, metrics: Optional[Sequence[str]] = None,
                 batch_size: int = 256) -> Dict[str, float]:
        """{"loss": ..., <metric>: ...} over (x, y). ``loss`` defaults to the one the model was last fitted with
        (saved with it; no "loss" entry when there is none). ``metrics`` default to what suits the loss:
        "accuracy" for CrossEntropyLoss, "mae" for MSELoss."""
        loss_obj = as_loss(loss) if loss is not None else self.loss
        bs = batch_size_arg(batch_size, "evaluate")
        if metrics is None:
            metrics = ("mae",) if isinstance(loss_obj, MSELoss) else ("accuracy",)
        elif isinstance(metrics, str):
            metrics = (metrics,)
        X, out_shape, keep_x = self._x(x, "evaluate")
        if X.shape[0] == 0:
            raise ValueError("evaluate: x has no samples")
        Y, labels, keep_y = self._y(y, X.shape[0], out_shape, loss_obj or CrossEntropyLoss(), "evaluate")
        return self._evaluate(X, Y, labels, loss_obj, metrics, bs)

    def predict(self, x: Any, batch_size: int = 256) -> Any:
        """The model's outputs for x (NumPy in -> NumPy out; a hetnn Array in -> an Array on the model's device)."""
        bs = batch_size_arg(batch_size, "predict")
        as_array = isinstance(x, Array)
        X, out_shape, keep = self._x(x, "predict")
        result = np.empty((X.shape[0], *out_shape), dtype=self.dtype)
        if X.shape[0]:
            # the batch loop and the forward passes in C++ (Trainer.predict_rows), one download at the end
            with self._kept_trainer() as (trainer, softmax_last):
                out = trainer.predict_rows(X, bs, softmax_last)
            if as_array:
                return Array(out)
            out.read_into(result)
        if as_array:
            return Array(_core.Array.from_numpy(self._device._dev, result))
        return result

    # -- persistence
    def save(self, path: Union[str, os.PathLike]) -> None:
        """Writes the architecture (JSON) and the parameters to an .npz file (loaded without pickle)."""
        arch = {"format": FORMAT, "dtype": self.dtype.name,
                "layers": [{"kind": layer.kind, "config": layer.config()} for layer in self.layers],
                "loss": None if self.loss is None else self.loss.kind}
        write_model(path, arch, [p.numpy() for p in self.parameters()])


def load(path: Union[str, os.PathLike], device: DeviceLike = None) -> Sequential:
    """A model saved by :meth:`Sequential.save`, on ``device``. A file that is not such a model raises
    ValueError naming the file and what is wrong in it; every entry's shape and dtype is checked from the .npy
    headers before a layer is built, and nothing is ever unpickled."""
    dtype, entries, params, loss = read_model(path)
    try:
        layers = [layer_from_config(e["kind"], e["config"]) for e in entries]
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"hetnn.nn.load: {path}: malformed layer configuration ({exc})") from None
    model = Sequential(layers, device=device, dtype=dtype)
    for p, v in zip(model.parameters(), params):
        p.value.write_from(np.ascontiguousarray(v.astype(model.dtype)))
    model.loss = None if loss is None else as_loss(loss)
    return model
