# Types of hetnn's public ops (hetnn._ops), by input: hetnn Arrays in -> Arrays out (on their device); NumPy arrays
# or array-likes in -> NumPy arrays out. The arguments after the arrays are the core's (_core.pyi).
from typing import Any, Literal, Optional, Sequence, Tuple, Union, overload

import numpy as np
import numpy.typing as npt

from ._array import Array
from ._device import DeviceLike

_IntOrPair = Union[int, Sequence[int]]
_Dev = Array
_Host = npt.ArrayLike


@overload
def matmul(a: _Dev, b: _Dev, *, transpose_a: bool = ..., transpose_b: bool = ..., alpha: float = ...,
           beta: float = ..., out: Optional[Array] = ..., bias: Optional[Array] = ...,
           activation: Optional[str] = ..., precision: Optional[str] = ..., out_dtype: Any = ...,
           device: DeviceLike = ...) -> Array: ...
@overload
def matmul(a: _Host, b: _Host, *, transpose_a: bool = ..., transpose_b: bool = ..., alpha: float = ...,
           beta: float = ..., out: Optional[np.ndarray] = ..., bias: Optional[_Host] = ...,
           activation: Optional[str] = ..., precision: Optional[str] = ..., out_dtype: Any = ...,
           device: DeviceLike = ...) -> np.ndarray: ...

@overload
def max_pool2d(x: Array, kernel_size: _IntOrPair, stride: Optional[_IntOrPair] = ..., padding: _IntOrPair = ...,
               dilation: _IntOrPair = ..., ceil_mode: bool = ..., return_indices: Literal[False] = ..., *,
               out: Optional[Array] = ..., padding_mode: str = ..., device: DeviceLike = ...) -> Array: ...
@overload
def max_pool2d(x: Array, kernel_size: _IntOrPair, stride: Optional[_IntOrPair] = ..., padding: _IntOrPair = ...,
               dilation: _IntOrPair = ..., ceil_mode: bool = ..., *, return_indices: Literal[True],
               out: Optional[Array] = ..., indices_out: Optional[Array] = ...,
               padding_mode: str = ..., device: DeviceLike = ...) -> Tuple[Array, Array]: ...
@overload
def max_pool2d(x: _Host, kernel_size: _IntOrPair, stride: Optional[_IntOrPair] = ..., padding: _IntOrPair = ...,
               dilation: _IntOrPair = ..., ceil_mode: bool = ..., return_indices: Literal[False] = ..., *,
               out: Optional[np.ndarray] = ..., padding_mode: str = ..., device: DeviceLike = ...) -> np.ndarray: ...
@overload
def max_pool2d(x: _Host, kernel_size: _IntOrPair, stride: Optional[_IntOrPair] = ..., padding: _IntOrPair = ...,
               dilation: _IntOrPair = ..., ceil_mode: bool = ..., *, return_indices: Literal[True],
               out: Optional[np.ndarray] = ..., indices_out: Optional[np.ndarray] = ...,
               padding_mode: str = ..., device: DeviceLike = ...) -> Tuple[np.ndarray, np.ndarray]: ...

@overload
def max_pool2d_backward(grad_output: Array, indices: Array, input_shape: Sequence[int], kernel_size: _IntOrPair,
                        stride: Optional[_IntOrPair] = ..., padding: _IntOrPair = ..., dilation: _IntOrPair = ...,
                        ceil_mode: bool = ..., *, out: Optional[Array] = ..., padding_mode: str = ...,
                        device: DeviceLike = ...) -> Array: ...
@overload
def max_pool2d_backward(grad_output: _Host, indices: _Host, input_shape: Sequence[int], kernel_size: _IntOrPair,
                        stride: Optional[_IntOrPair] = ..., padding: _IntOrPair = ..., dilation: _IntOrPair = ...,
                        ceil_mode: bool = ..., *, out: Optional[np.ndarray] = ...,
                        padding_mode: str = ..., device: DeviceLike = ...) -> np.ndarray: ...

@overload
def avg_pool2d_backward(grad_output: Array, input_shape: Sequence[int], kernel_size: _IntOrPair,
                        stride: Optional[_IntOrPair] = ..., padding: _IntOrPair = ..., ceil_mode: bool = ...,
                        count_include_pad: bool = ..., divisor_override: Optional[int] = ..., *,
                        out: Optional[Array] = ..., device: DeviceLike = ...) -> Array: ...
@overload
def avg_pool2d_backward(grad_output: _Host, input_shape: Sequence[int], kernel_size: _IntOrPair,
                        stride: Optional[_IntOrPair] = ..., padding: _IntOrPair = ..., ceil_mode: bool = ...,
                        count_include_pad: bool = ..., divisor_override: Optional[int] = ..., *,
                        out: Optional[np.ndarray] = ..., device: DeviceLike = ...) -> np.ndarray: ...

@overload
def avg_pool2d(x: Array, kernel_size: _IntOrPair, stride: Optional[_IntOrPair] = ..., padding: _IntOrPair = ...,
               ceil_mode: bool = ..., count_include_pad: bool = ..., divisor_override: Optional[int] = ..., *,
               out: Optional[Array] = ..., device: DeviceLike = ...) -> Array: ...
@overload
def avg_pool2d(x: _Host, kernel_size: _IntOrPair, stride: Optional[_IntOrPair] = ..., padding: _IntOrPair = ...,
               ceil_mode: bool = ..., count_include_pad: bool = ..., divisor_override: Optional[int] = ..., *,
               out: Optional[np.ndarray] = ..., device: DeviceLike = ...) -> np.ndarray: ...


@overload
def conv2d(x: Array, weight: Array, bias: Optional[Array] = ..., stride: _IntOrPair = ...,
           padding: Union[_IntOrPair, str] = ..., dilation: _IntOrPair = ..., groups: int = ...,
           activation: Optional[str] = ..., *, out: Optional[Array] = ..., precision: Optional[str] = ...,
           device: DeviceLike = ...) -> Array: ...
@overload
def conv2d(x: _Host, weight: _Host, bias: Optional[_Host] = ..., stride: _IntOrPair = ...,
           padding: Union[_IntOrPair, str] = ..., dilation: _IntOrPair = ..., groups: int = ...,
           activation: Optional[str] = ..., *, out: Optional[np.ndarray] = ..., precision: Optional[str] = ...,
           device: DeviceLike = ...) -> np.ndarray: ...

@overload
def conv2d_backward(grad_output: Array, x: Array, weight: Array, stride: _IntOrPair = ...,
                    padding: Union[_IntOrPair, str] = ..., dilation: _IntOrPair = ..., groups: int = ..., *,
                    input_grad: bool = ..., weight_grad: bool = ..., bias_grad: bool = ...,
                    precision: Optional[str] = ...,
                    device: DeviceLike = ...) -> Tuple[Optional[Array], Optional[Array], Optional[Array]]: ...
@overload
def conv2d_backward(grad_output: _Host, x: _Host, weight: _Host, stride: _IntOrPair = ...,
                    padding: Union[_IntOrPair, str] = ..., dilation: _IntOrPair = ..., groups: int = ..., *,
                    input_grad: bool = ..., weight_grad: bool = ..., bias_grad: bool = ...,
                    precision: Optional[str] = ...,
                    device: DeviceLike = ...) -> Tuple[Optional[np.ndarray], Optional[np.ndarray],
                                                       Optional[np.ndarray]]: ...
