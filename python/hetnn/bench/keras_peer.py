"""Keras 3 as a training peer (any backend): the networks of hetnn.bench.cnn's declarations (and dense stacks) built
in Keras from the same initial weights, trained with the same optimizer (Adam, or plain SGD), loss, batch size and data.

Layouts: images stay NCHW (``data_format="channels_first"``), Flatten keeps (C, H, W) order as hetnn and PyTorch
do, convolution kernels are transposed from (O, C, kh, kw) to Keras's (kh, kw, C, O) and dense ones from (out, in)
to (in, out); padding is an explicit ZeroPadding2D. Adam's epsilon is PyTorch's and hetnn's 1e-8 (Keras's default
is 1e-7). The backend is KERAS_BACKEND when set, else the first installed of jax, torch and tensorflow; Keras's own
compilation happens in an untimed warm-up on the model itself (covering the full and the last, partial batch
shapes), after which its weights and optimizer state are restored to their initial values.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

Spec = List[Tuple[Any, ...]]
BACKENDS = ("jax", "torch", "tensorflow")


def keras_module(notes: Optional[List[str]] = None) -> Any:
    """Keras 3, importing it with a backend that is installed; None (and a note) when it cannot be used."""
    if "keras" not in sys.modules and not os.environ.get("KERAS_BACKEND"):
        found = next((b for b in BACKENDS if importlib.util.find_spec(b) is not None), None)
        if found is None:
            if notes is not None:
                notes.append("keras: not used (no backend installed: jax, torch or tensorflow)")
            return None
        os.environ["KERAS_BACKEND"] = found
    try:
        import keras

        if int(keras.__version__.split(".")[0]) < 3:
            raise ImportError(f"Keras {keras.__version__}: the peer needs Keras 3")
        return keras
    except Exception as exc:  # ImportError, or a backend failing to start
        if notes is not None:
            notes.append(f"keras: not used ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})")
        return None


def _model(keras: Any, spec: Spec, sample: Tuple[int, ...], weights: Sequence[np.ndarray]) -> Any:
    layers: List[Any] = [keras.Input(shape=sample)]
    for s in spec:
        if s[0] == "conv":
            if s[5]:
                layers.append(keras.layers.ZeroPadding2D(s[5], data_format="channels_first"))
            layers.append(keras.layers.Conv2D(s[2], s[3], strides=s[4], activation=s[6],
                                              data_format="channels_first"))
        elif s[0] == "dense":
            layers.append(keras.layers.Dense(s[2], activation=s[3]))
        elif s[0] == "pool":
            layers.append(keras.layers.MaxPooling2D(s[1], data_format="channels_first"))
        elif s[0] == "relu":
            layers.append(keras.layers.ReLU())
        elif s[0] == "flatten":
            layers.append(keras.layers.Flatten(data_format="channels_last"))  # (C, H, W) order, no permutation
        elif s[0] == "dropout":
            layers.append(keras.layers.Dropout(s[1]))
    model = keras.Sequential(layers)
    model.set_weights(_model_weights(spec, weights))
    return model


def _model_weights(spec: Spec, weights: Sequence[np.ndarray]) -> List[np.ndarray]:
    """hetnn's parameters (conv (O, C, kh, kw), dense (out, in), biases) in Keras's layouts."""
    mine, it = [], iter(weights)
    for s in spec:
        if s[0] in ("conv", "dense"):
            w, b = next(it), next(it)
            mine += [w.transpose(2, 3, 1, 0) if s[0] == "conv" else w.T, b]
    return [np.ascontiguousarray(w, dtype=np.float32) for w in mine]


class KerasTrainer:
    """The TorchTrainer interface (epoch, predict, sync, version, device) on Keras 3."""

    def __init__(self, keras: Any, spec: Spec, sample: Tuple[int, ...], weights: Sequence[np.ndarray], loss: str,
                 lr: float, batch: int, seed: int, optimizer: str = "adam") -> None:
        keras.utils.set_random_seed(seed)
        self.keras, self.batch, self.spec = keras, batch, spec
        self.model = _model(keras, spec, sample, weights)
        lossf = keras.losses.SparseCategoricalCrossentropy(from_logits=True) if loss == "cross_entropy" else \
            keras.losses.MeanSquaredError()
        opt = keras.optimizers.SGD(learning_rate=lr) if optimizer == "sgd" else \
            keras.optimizers.Adam(learning_rate=lr, epsilon=1e-8)
        self.model.compile(optimizer=opt, loss=lossf)
        self.version = f"{keras.__version__} ({keras.backend.backend()})"
        self.device = "cpu"
        self._initial = self.model.get_weights()

    def sync(self) -> None:  # fit and predict return host values: nothing is left running
        pass

    def warm_up(self, x: np.ndarray, y: np.ndarray) -> None:
        """Compiles the train and predict steps for the shapes an epoch over (x, y) uses (a full batch and the last,
        partial one), then restores the initial weights and a fresh optimizer state."""
        rest = len(x) % self.batch
        n = min(len(x), self.batch + rest)
        self.model.fit(x[:n], y[:n], batch_size=self.batch, epochs=1, shuffle=False, verbose=0)
        self.reset()

    def reset(self, weights: Optional[Sequence[np.ndarray]] = None) -> None:
        """Back to the initial weights (or to ``weights``, hetnn-ordered as the constructor's) with a fresh
        optimizer state, keeping the compiled steps."""
        if weights is not None:
            self._initial = _model_weights(self.spec, weights)
        self.model.set_weights(self._initial)
        opt = self.model.optimizer
        for v in opt.variables:  # the step count and the moments; the learning rate is a variable too: kept
            if v is not opt._learning_rate and not str(v.path).endswith("learning_rate"):
                v.assign(np.zeros(v.shape, dtype=v.dtype))

    def epoch(self, x: np.ndarray, y: np.ndarray) -> float:
        return self.fit(x, y, 1)

    def fit(self, x: np.ndarray, y: np.ndarray, epochs: int, shuffle: bool = True) -> float:
        """``epochs`` epochs in one Keras fit call; the last epoch's loss."""
        hist = self.model.fit(x, y, batch_size=self.batch, epochs=epochs, shuffle=shuffle, verbose=0)
        return float(hist.history["loss"][-1])

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.model.predict_on_batch(x))
