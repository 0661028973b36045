"""Layers of hetnn.nn: their configuration, parameters and shapes. Each describes itself to the core's layer stack
(``_to_trainer``): hetnn._core.Trainer runs the forward pass of predict and evaluate and the forward and backward
passes of fit, so inference and training run the same code."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._loader import _core
from .._array import Array
from .._check import is_int

_GENERATOR = np.random.default_rng()
# Bumped whenever an attribute of any layer or parameter is set (a weight array replaced, an activation or a pool
# size changed, a model moved): a model's kept trainer (Sequential._kept_trainer) was built from the layers as they
# were, and is rebuilt when this has moved on since.
_EDITS = [0]


def edits() -> int:
    return _EDITS[0]


def manual_seed(seed: int) -> None:
    """Seeds the generator that initialises layers created without their own ``seed`` (as torch.manual_seed)."""
    global _GENERATOR
    if not is_int(seed):
        raise TypeError(f"manual_seed: seed must be an int, got {type(seed).__name__}")
    _GENERATOR = np.random.default_rng(int(seed))


class Parameter:
    """A trainable array on the model's device with its gradient. ``data`` is a :class:`hetnn.Array`;
    ``numpy()`` copies the values to the host."""

    def __setattr__(self, key: str, value: Any) -> None:
        object.__setattr__(self, key, value)
        _EDITS[0] += 1

    def __init__(self, name: str, value: np.ndarray) -> None:
        self.name = name
        self._host = np.ascontiguousarray(value)  # until the model is placed on a device
        self.value: Any = None  # _core.Array once placed
        self.grad: Any = None

    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(self._host.shape) if self.value is None else tuple(self.value.shape)

    @property
    def data(self) -> Array:
        if self.value is None:
            raise RuntimeError(f"parameter {self.name} is not on a device yet (add its layer to a Sequential)")
        return Array(self.value)

    @property
    def grad_data(self) -> Optional[Array]:
        return None if self.grad is None else Array(self.grad)

    @property
    def dtype(self) -> np.dtype:
        return self._host.dtype if self.value is None else np.dtype(self.value.dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def numpy(self) -> np.ndarray:
        return self._host.copy() if self.value is None else self.value.to_numpy()

    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> np.ndarray:
        if self.value is None:
            return np.array(self._host, dtype=dtype, copy=copy)
        return self.data.__array__(dtype, copy)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d parameter")
        return self.shape[0]

    def _place(self, dev: Any, dtype: np.dtype) -> None:
        host = self.numpy().astype(dtype, copy=False)
        self.value = _core.Array.from_numpy(dev, np.ascontiguousarray(host))
        self.grad = _core.Array.zeros(dev, self.value.shape, self.value.dtype)
        self._host = host

    def __repr__(self) -> str:
        return f"Parameter({self.name}, shape={self.shape})"


class Layer:
    """Base class. Subclasses set ``kind`` (the JSON name) and implement the hooks."""

    kind = "layer"

    def __setattr__(self, key: str, value: Any) -> None:
        object.__setattr__(self, key, value)
        _EDITS[0] += 1

    def __init__(self) -> None:
        self._dev: Any = None

    # -- model plumbing
    def output_shape(self, input_shape: Tuple[int, ...]) -> Tuple[int, ...]:
        """Per-sample output shape for a per-sample input shape; raises ValueError when the input does not fit."""
        return input_shape

    @staticmethod
    def param_shapes(cfg: Dict[str, Any]) -> List[Tuple[int, ...]]:
        """The shapes of the parameters a layer built from ``cfg`` has, without building it (model files are
        checked against them before anything is allocated)."""
        return []

    def parameters(self) -> List[Parameter]:
        return []

    def config(self) -> Dict[str, Any]:
        return {}

    def _place(self, dev: Any, dtype: np.dtype) -> None:
        self._dev = dev
        for p in self.parameters():
            p._place(dev, dtype)



    def _to_trainer(self, trainer: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} cannot be trained")

    def _fit_begins(self) -> None:
        """A fit built its trainer from this layer: what moves on from one fit to the next moves here (not in
        _to_trainer, which predict and evaluate call too)."""

    def _fit_progress(self) -> Any:
        """What _fit_begins moved on (None: nothing), so that a trial run of fits can be undone (lr_find)."""
        return None

    def _restore_fit_progress(self, value: Any) -> None:
        return None

    def __repr__(self) -> str:
        cfg = ", ".join(f"{k}={v!r}" for k, v in self.config().items())
        return f"{type(self).__name__}({cfg})"


_INITS = ("glorot_uniform", "glorot_normal", "he_uniform", "he_normal", "uniform", "zeros")
_ACTS = (None,) + tuple(_core.activations())


def _positive_int(v: Any, what: str) -> int:
    if not is_int(v):
        raise TypeError(f"{what} must be a positive int, got {type(v).__name__} {v!r}")
    if v <= 0:
        raise ValueError(f"{what} must be a positive int, got {v!r}")
    return int(v)


class Dense(Layer):
    """``y = activation(x @ W.T + b)``: W has shape (out_features, in_features), as torch.nn.Linear. The bias and
    the activation (None, "relu", "sigmoid", "tanh") are fused into the matrix product (oneDNN post-ops, the OpenCL
    GEMM epilogue). ``init``: "glorot_uniform" (default), "glorot_normal", "he_uniform", "he_normal", "uniform"
    (torch.nn.Linear's U(-1/sqrt(in), 1/sqrt(in))) or "zeros"; biases start at zero except with "uniform".
    ``seed`` makes the initial weights reproducible (else hetnn.nn.manual_seed's generator)."""

    kind = "dense"

    def __init__(self, in_features: int, out_features: int, activation: Optional[str] = None, bias: bool = True,
                 init: str = "glorot_uniform", seed: Optional[int] = None) -> None:
        super().__init__()
        self.in_features = _positive_int(in_features, "Dense: in_features")
        self.out_features = _positive_int(out_features, "Dense: out_features")
        if activation not in _ACTS:
            raise ValueError(f"Dense: activation must be one of {_ACTS}, got {activation!r}")
        if bias not in (True, False):
            raise TypeError(f"Dense: bias must be a bool, got {bias!r}")
        if init not in _INITS:
            raise ValueError(f"Dense: init must be one of {_INITS}, got {init!r}")
        self.activation, self.use_bias, self.init = activation, bool(bias), init
        rng = np.random.default_rng(seed) if seed is not None else _GENERATOR
        fan_in, fan_out = self.in_features, self.out_features
        shape = (fan_out, fan_in)
        if init == "glorot_uniform":
            lim = math.sqrt(6.0 / (fan_in + fan_out))
            w = rng.uniform(-lim, lim, shape)
        elif init == "glorot_normal":
            w = rng.normal(0.0, math.sqrt(2.0 / (fan_in + fan_out)), shape)
        elif init == "he_uniform":
            lim = math.sqrt(6.0 / fan_in)
            w = rng.uniform(-lim, lim, shape)
        elif init == "he_normal":
            w = rng.normal(0.0, math.sqrt(2.0 / fan_in), shape)
        elif init == "uniform":
            lim = 1.0 / math.sqrt(fan_in)
            w = rng.uniform(-lim, lim, shape)
        else:
            w = np.zeros(shape)
        self.weight = Parameter("weight", w.astype(np.float32))
        b = rng.uniform(-1.0 / math.sqrt(fan_in), 1.0 / math.sqrt(fan_in), fan_out) if init == "uniform" \
            else np.zeros(fan_out)
        self.bias = Parameter("bias", b.astype(np.float32)) if self.use_bias else None

    def parameters(self) -> List[Parameter]:
        return [self.weight] + ([self.bias] if self.bias is not None else [])

    def config(self) -> Dict[str, Any]:
        return {"in_features": self.in_features, "out_features": self.out_features, "activation": self.activation,
                "bias": self.use_bias, "init": self.init}

    @staticmethod
    def param_shapes(cfg: Dict[str, Any]) -> List[Tuple[int, ...]]:
        n_in: Any = cfg.get("in_features")
        n_out: Any = cfg.get("out_features")
        if not all(is_int(v) and v >= 1 for v in (n_in, n_out)):
            raise ValueError(f"Dense: in_features and out_features must be ints >= 1, got {n_in!r}, {n_out!r}")
        rows, cols = int(n_out), int(n_in)
        return [(rows, cols)] + ([(rows,)] if cfg.get("bias", True) else [])

    def output_shape(self, input_shape: Tuple[int, ...]) -> Tuple[int, ...]:
        if input_shape != (self.in_features,):
            raise ValueError(f"Dense({self.in_features}, {self.out_features}) takes {self.in_features} features per "
                             f"sample, got per-sample shape {input_shape}")
        return (self.out_features,)


    def _to_trainer(self, trainer: Any) -> None:
        b = self.bias
        trainer.add_dense(self.weight.value, b.value if b else None, self.weight.grad, b.grad if b else None,
                          self.activation or "")


class Conv2d(Layer):
    """``y = activation(conv2d(x, weight, bias, stride, padding, dilation, groups))`` on (N, C, H, W) input, as
    torch.nn.Conv2d: weight (out_channels, in_channels/groups, kh, kw). ``padding``: an int, a pair, "same" or
    "valid". ``init``: "uniform" (default: torch.nn.Conv2d's U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and
    bias), "glorot_uniform", "he_uniform", "he_normal" (biases zero); ``seed`` as for Dense."""

    kind = "conv2d"

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, activation: Optional[str] = None, bias: bool = True,
                 init: str = "uniform", seed: Optional[int] = None) -> None:
        super().__init__()
        self.in_channels = _positive_int(in_channels, "Conv2d: in_channels")
        self.out_channels = _positive_int(out_channels, "Conv2d: out_channels")
        self.groups = _positive_int(groups, "Conv2d: groups")
        kh, kw = _core.pool2d_window("Conv2d", kernel_size, None, 0, 1, False)[0]
        self.kernel_size = (kh, kw)
        self.stride, self.padding, self.dilation = stride, padding, dilation
        if activation not in _ACTS:
            raise ValueError(f"Conv2d: activation must be one of {_ACTS}, got {activation!r}")
        if bias not in (True, False):
            raise TypeError(f"Conv2d: bias must be a bool, got {bias!r}")
        if init not in ("uniform", "glorot_uniform", "he_uniform", "he_normal"):
            raise ValueError(f"Conv2d: init must be 'uniform', 'glorot_uniform', 'he_uniform' or 'he_normal', "
                             f"got {init!r}")
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise ValueError(f"Conv2d: groups={self.groups} must divide in_channels ({self.in_channels}) and "
                             f"out_channels ({self.out_channels})")
        self.activation, self.use_bias, self.init = activation, bool(bias), init
        shape = (self.out_channels, self.in_channels // self.groups, kh, kw)
        # the core checks stride, padding and dilation now (and names them), on the smallest input the kernel
        # spans (a larger probe would meet the 2^31-element plane limit)
        dh, dw = _core.pool2d_window("Conv2d", kernel_size, None, 0, dilation, False)[3]  # (h, w), checked
        self._out((self.in_channels, dh * (kh - 1) + 1, dw * (kw - 1) + 1))
        rng = np.random.default_rng(seed) if seed is not None else _GENERATOR
        fan_in, fan_out = shape[1] * kh * kw, self.out_channels * kh * kw // self.groups
        if init == "uniform":
            w = rng.uniform(-1, 1, shape) / math.sqrt(fan_in)
        elif init == "glorot_uniform":
            w = rng.uniform(-1, 1, shape) * math.sqrt(6.0 / (fan_in + fan_out))
        elif init == "he_uniform":
            w = rng.uniform(-1, 1, shape) * math.sqrt(6.0 / fan_in)
        else:
            w = rng.normal(0.0, math.sqrt(2.0 / fan_in), shape)
        self.weight = Parameter("weight", w.astype(np.float32))
        b = rng.uniform(-1, 1, self.out_channels) / math.sqrt(fan_in) if init == "uniform" \
            else np.zeros(self.out_channels)
        self.bias = Parameter("bias", b.astype(np.float32)) if self.use_bias else None

    def _out(self, sample: Tuple[int, ...]) -> Tuple[int, ...]:
        return tuple(_core.conv2d_output_shape("Conv2d", list(sample), [self.out_channels,
                                                                       self.in_channels // self.groups,
                                                                       *self.kernel_size],
                                               self.stride, self.padding, self.dilation, self.groups))

    def parameters(self) -> List[Parameter]:
        return [self.weight] + ([self.bias] if self.bias is not None else [])

    def config(self) -> Dict[str, Any]:
        def plain(v: Any) -> Any:
            return list(v) if isinstance(v, tuple) else v
        return {"in_channels": self.in_channels, "out_channels": self.out_channels,
                "kernel_size": list(self.kernel_size), "stride": plain(self.stride), "padding": plain(self.padding),
                "dilation": plain(self.dilation), "groups": self.groups, "activation": self.activation,
                "bias": self.use_bias, "init": self.init}

    @staticmethod
    def param_shapes(cfg: Dict[str, Any]) -> List[Tuple[int, ...]]:
        c: Any = cfg.get("in_channels")
        o: Any = cfg.get("out_channels")
        g: Any = cfg.get("groups", 1)
        k: Any = cfg.get("kernel_size")
        if not all(is_int(v) and v >= 1 for v in (c, o, g)) or not isinstance(k, list) or len(k) != 2 or \
                not all(is_int(v) and v >= 1 for v in k) or c % g or o % g:
            raise ValueError(f"Conv2d: bad channels, groups or kernel_size in {cfg!r}")
        shapes: List[Tuple[int, ...]] = [(int(o), int(c) // int(g), int(k[0]), int(k[1]))]
        return shapes + ([(int(o),)] if cfg.get("bias", True) else [])

    def output_shape(self, input_shape: Tuple[int, ...]) -> Tuple[int, ...]:
        if len(input_shape) != 3:
            raise ValueError(f"Conv2d takes (N, C, H, W) input, got per-sample shape {input_shape}")
        return self._out(input_shape)

    def _to_trainer(self, trainer: Any) -> None:
        b = self.bias
        trainer.add_conv(self.weight.value, b.value if b else None, self.weight.grad, b.grad if b else None,
                         self.stride, self.padding, self.dilation, self.groups, self.activation)


class _Activation(Layer):
    act = ""


    def _to_trainer(self, trainer: Any) -> None:
        trainer.add_activation(self.act)


class ReLU(_Activation):
    """max(x, 0), elementwise."""
    kind = act = "relu"


class Sigmoid(_Activation):
    """1 / (1 + exp(-x)), elementwise."""
    kind = act = "sigmoid"


class Tanh(_Activation):
    """tanh(x), elementwise."""
    kind = act = "tanh"


def _splitmix64(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return z ^ (z >> 31)


class Dropout(Layer):
    """Inverted dropout (torch.nn.Dropout): while ``fit`` trains, each element is zeroed with probability ``p`` and
    the rest scaled by 1 / (1 - p); ``predict`` and ``evaluate`` pass the input through. The masks are drawn on the
    device from ``seed`` (else a draw from hetnn.nn.manual_seed's generator) and the step, so a run is reproducible
    and every device draws the same masks."""

    kind = "dropout"

    def __init__(self, p: float = 0.5, seed: Optional[int] = None) -> None:
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, (int, float, np.floating, np.integer)):
            raise ValueError(f"Dropout: p must be a probability in [0, 1], got {p!r}")
        _core.check_dropout_p(float(p), "Dropout")
        if seed is not None and (not is_int(seed) or seed < 0):
            raise ValueError(f"Dropout: seed must be an int >= 0, got {seed!r}")
        self.p = float(p)
        self.seed = int(seed) if seed is not None else int(_GENERATOR.integers(0, 2**63))
        self._fits = 0  # each fit draws its own stream of masks (predict and evaluate use none)

    def config(self) -> Dict[str, Any]:
        return {"p": self.p, "seed": self.seed}

    def _to_trainer(self, trainer: Any) -> None:
        trainer.add_dropout(self.p, _splitmix64((self.seed + self._fits * 0xD1B54A32D192ED03) % 2**64))

    def _fit_begins(self) -> None:
        self._fits += 1

    def _fit_progress(self) -> Any:
        return self._fits

    def _restore_fit_progress(self, value: Any) -> None:
        self._fits = int(value)

    def __repr__(self) -> str:
        return f"Dropout(p={self.p})"


class Softmax(Layer):
    """Softmax over the features of each sample (2-D input). Only as a model's last layer: with
    :class:`CrossEntropyLoss` it is folded into the loss during training (the loss takes the logits before it), so
    ``predict`` returns probabilities and training stays numerically stable."""

    kind = "softmax"

    def output_shape(self, input_shape: Tuple[int, ...]) -> Tuple[int, ...]:
        if len(input_shape) != 1:
            raise ValueError(f"Softmax takes (batch, features) input, got per-sample shape {input_shape}")
        return input_shape



class Flatten(Layer):
    """(N, d1, d2, ...) -> (N, d1 * d2 * ...), a view (no copy)."""

    kind = "flatten"

    def output_shape(self, input_shape: Tuple[int, ...]) -> Tuple[int, ...]:
        return (int(np.prod(input_shape, dtype=np.int64)),)


    def _to_trainer(self, trainer: Any) -> None:
        trainer.add_flatten()


class Reshape(Layer):
    """(N, ...) -> (N, *shape), a view (no copy): for example Dense output -> (N, C, H, W) for MaxPool2d."""

    kind = "reshape"

    def __init__(self, *shape: int) -> None:
        super().__init__()
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if not shape or any(not is_int(v) or v <= 0 for v in shape):
            raise ValueError(f"Reshape: shape must be positive ints (per sample), got {shape!r}")
        self.shape = tuple(int(v) for v in shape)

    def config(self) -> Dict[str, Any]:
        return {"shape": list(self.shape)}

    def output_shape(self, input_shape: Tuple[int, ...]) -> Tuple[int, ...]:
        if int(np.prod(input_shape, dtype=np.int64)) != int(np.prod(self.shape, dtype=np.int64)):
            raise ValueError(f"Reshape{self.shape} cannot take per-sample shape {input_shape} (sizes differ)")
        return self.shape


    def _to_trainer(self, trainer: Any) -> None:
        trainer.add_reshape(list(self.shape))


class MaxPool2d(Layer):
    """hetnn.max_pool2d as a layer on (N, C, H, W) input, with PyTorch's semantics; in training the backward adds
    each gradient at its window's maximum (indices kept from the forward)."""

    kind = "maxpool2d"

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode = _core.pool2d_window(
            "MaxPool2d", kernel_size, stride, padding, dilation, ceil_mode)

    def config(self) -> Dict[str, Any]:
        return {"kernel_size": list(self.kernel_size), "stride": list(self.stride), "padding": list(self.padding),
                "dilation": list(self.dilation), "ceil_mode": self.ceil_mode}

    def output_shape(self, input_shape: Tuple[int, ...]) -> Tuple[int, ...]:
        if len(input_shape) != 3:
            raise ValueError(f"MaxPool2d takes (N, C, H, W) input, got per-sample shape {input_shape}")
        # the core's checks (PyTorch's rules: padding <= kernel/2, a window inside the padded input, ...)
        return _core.pool2d_output_shape("MaxPool2d", input_shape, self.kernel_size, self.stride, self.padding,
                                         self.dilation, self.ceil_mode)


    def _to_trainer(self, trainer: Any) -> None:
        trainer.add_maxpool(self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)


class AvgPool2d(Layer):
    """hetnn.avg_pool2d as a layer on (N, C, H, W) input, with PyTorch's semantics (``count_include_pad``: padded
    positions count in a window's divisor; ``divisor_override``: one divisor for every window); in training the
    backward spreads each window's gradient evenly over the positions it averaged."""

    kind = "avgpool2d"

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: Optional[int] = None) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding, _, self.ceil_mode = _core.pool2d_window(
            "AvgPool2d", kernel_size, stride, padding, 1, ceil_mode)
        if not isinstance(count_include_pad, (bool, np.bool_)):
            raise TypeError(f"AvgPool2d: count_include_pad must be a bool, got {count_include_pad!r}")
        if divisor_override is not None and (not is_int(divisor_override) or not 0 < divisor_override < 2**31):
            raise ValueError(f"AvgPool2d: divisor_override must be None or an int > 0, got {divisor_override!r}")
        self.count_include_pad = bool(count_include_pad)
        self.divisor_override = None if divisor_override is None else int(divisor_override)

    def config(self) -> Dict[str, Any]:
        return {"kernel_size": list(self.kernel_size), "stride": list(self.stride), "padding": list(self.padding),
                "ceil_mode": self.ceil_mode, "count_include_pad": self.count_include_pad,
                "divisor_override": self.divisor_override}

    def output_shape(self, input_shape: Tuple[int, ...]) -> Tuple[int, ...]:
        if len(input_shape) != 3:
            raise ValueError(f"AvgPool2d takes (N, C, H, W) input, got per-sample shape {input_shape}")
        return _core.pool2d_output_shape("AvgPool2d", input_shape, self.kernel_size, self.stride, self.padding, 1,
                                         self.ceil_mode)

    def _to_trainer(self, trainer: Any) -> None:
        trainer.add_avgpool(self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                            self.divisor_override)


class GlobalAvgPool2d(Layer):
    """The mean of each channel over its whole map: (N, C, H, W) -> (N, C), as Keras's GlobalAveragePooling2D
    (PyTorch: AdaptiveAvgPool2d(1) followed by Flatten); in training the backward spreads each mean's gradient evenly
    over the map. It takes any map size, so one model serves several image sizes."""

    kind = "globalavgpool2d"

    def output_shape(self, input_shape: Tuple[int, ...]) -> Tuple[int, ...]:
        if len(input_shape) != 3:
            raise ValueError(f"GlobalAvgPool2d takes (N, C, H, W) input, got per-sample shape {input_shape}")
        if min(input_shape) < 1:
            raise ValueError(f"GlobalAvgPool2d: an empty map, per-sample shape {input_shape}")
        return (input_shape[0],)

    def _to_trainer(self, trainer: Any) -> None:
        trainer.add_global_avgpool()


LAYERS = {cls.kind: cls for cls in (Dense, Conv2d, ReLU, Sigmoid, Tanh, Softmax, Flatten, Reshape, MaxPool2d,
                                     AvgPool2d, GlobalAvgPool2d, Dropout)}


def layer_from_config(kind: str, cfg: Dict[str, Any]) -> Layer:
    cls = LAYERS.get(kind)
    if cls is None:
        raise ValueError(f"unknown layer kind {kind!r} (known: {', '.join(LAYERS)})")
    if cls in (MaxPool2d, AvgPool2d):
        kwargs: Dict[str, Any] = {k: (tuple(v) if isinstance(v, list) else v) for k, v in cfg.items()}
        return cls(**kwargs)
    if cls is Reshape:
        return Reshape(*cfg["shape"])
    if cls is Conv2d:
        kw: Dict[str, Any] = {k: (tuple(v) if isinstance(v, list) else v) for k, v in cfg.items()}
        return Conv2d(**kw)
    return cls(**cfg)


def check_sequence(layers: Sequence[Any]) -> List[Layer]:
    out = []
    features: Optional[int] = None  # width flowing out of the last Dense, while only activations follow it
    for i, layer in enumerate(layers):
        if not isinstance(layer, Layer):
            raise TypeError(f"Sequential: layer {i} is a {type(layer).__name__}, not a hetnn.nn layer")
        if isinstance(layer, Dense):
            if features is not None and layer.in_features != features:
                raise ValueError(f"Sequential: layer {i} (Dense) has in_features={layer.in_features}, but the layers "
                                 f"before it produce {features} features")
            features = layer.out_features
        elif not isinstance(layer, (ReLU, Sigmoid, Tanh, Softmax, Dropout)):
            features = None  # reshaping layers: the next Dense is checked when data arrives
        if isinstance(layer, Softmax) and i != len(layers) - 1:
            raise ValueError("Sequential: Softmax is supported only as the last layer (it is folded into "
                             "CrossEntropyLoss for training)")
        out.append(layer)
    return out
