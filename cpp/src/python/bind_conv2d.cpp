// hetnn._core: conv2d (core/conv2d.cpp). Arguments as the user gives them; hetnn._ops applies the placement rule.
#include <string>

#include "core/errors.h"
#include "core/ops.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace hetnn::python {

namespace {

py::object maybe(const Array& a) { return a.valid() ? py::cast(a) : py::none(); }

}  // namespace

void bind_conv2d(py::module_& m) {
  m.def(
      "conv2d_output_shape",
      [](const std::string& op, const py::sequence& sample, const py::sequence& weight_shape, py::object stride,
         py::object padding, py::object dilation, py::object groups) {
        const Conv2dArgs args = arg_conv2d(op.c_str(), stride, padding, dilation, groups, py::none());
        return py::tuple(py::cast(hetnn::conv2d_output_shape(arg_shape(sample, "input shape", op.c_str()),
                                                             arg_shape(weight_shape, "weight shape", op.c_str()),
                                                             args, op.c_str())));
      },
      py::arg("op"), py::arg("sample"), py::arg("weight_shape"), py::arg("stride"), py::arg("padding"),
      py::arg("dilation"), py::arg("groups"),
      "The per-sample output shape (O, OH, OW) of a convolution on per-sample input (C, H, W): conv2d's rules.");
  m.def(
      "conv2d_backward",
      [](const Array& grad_output, const Array& x, const Array& weight, py::object stride, py::object padding,
         py::object dilation, py::object groups, py::object input_grad, py::object weight_grad, py::object bias_grad,
         py::object precision) {
        const char* op = "conv2d_backward";
        Conv2dArgs args = arg_conv2d(op, stride, padding, dilation, groups, py::none());
        args.precision = arg_precision(precision, op);
        const bool gi = arg_bool(input_grad, "input_grad", op), gw = arg_bool(weight_grad, "weight_grad", op),
                   gb = arg_bool(bias_grad, "bias_grad", op);
        std::tuple<Array, Array, Array> g;
        {
          NoGil nogil;
          g = hetnn::conv2d_backward(grad_output, x, weight, args, gi, gw, gb);
        }
        return py::make_tuple(maybe(std::get<0>(g)), maybe(std::get<1>(g)), maybe(std::get<2>(g)));
      },
      py::arg("grad_output"), py::arg("x"), py::arg("weight"), py::arg("stride") = 1, py::arg("padding") = 0,
      py::arg("dilation") = 1, py::arg("groups") = 1, py::kw_only(), py::arg("input_grad") = true,
      py::arg("weight_grad") = true, py::arg("bias_grad") = true, py::arg("precision") = py::none(),
      R"doc((grad_input, grad_weight, grad_bias) of ``y = conv2d(x, weight, bias, stride, padding, dilation, groups)``
from ``grad_output`` = dL/dy (the gradient before any activation: apply its backward first), as PyTorch's autograd
computes them; each is None when its ``*_grad`` flag is False. Same dtypes, devices and ``precision`` as conv2d.)doc");
  m.def(
      "conv2d",
      [](const Array& x, const Array& weight, const Array* bias, py::object stride, py::object padding,
         py::object dilation, py::object groups, py::object activation, const Array* out, py::object precision) {
        Conv2dArgs args = arg_conv2d("conv2d", stride, padding, dilation, groups, activation);
        args.precision = arg_precision(precision, "conv2d");
        NoGil nogil;
        return hetnn::conv2d(x, weight, bias, args, out);
      },
      py::arg("x"), py::arg("weight"), py::arg("bias").none(true) = nullptr, py::arg("stride") = 1,
      py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1, py::arg("activation") = py::none(),
      py::kw_only(), py::arg("out").none(true) = nullptr, py::arg("precision") = py::none(),
      R"doc(2-D convolution of ``x`` (N, C, H, W), or unbatched (C, H, W), with ``weight`` (O, C/groups, kh, kw).

PyTorch's ``conv2d`` exactly (a cross-correlation): ``stride``, ``dilation`` an int or a pair; ``padding`` an int,
a pair, ``"valid"`` (none) or ``"same"`` (output the input's size; stride 1; an odd total split with the extra
row and column at the bottom and right); output size ``(H + 2p - d(k-1) - 1) // s + 1``; ``groups`` splits the
channels into groups convolved apart. ``bias`` (O,) and ``activation`` (None, ``"relu"``, ``"sigmoid"``,
``"tanh"``) are fused. float32; float64 on devices with fp64; float16 and bfloat16 (computed in float32, rounded
once). The CPU device runs oneDNN's convolution; OpenCL devices a direct kernel. ``precision`` as matmul's.)doc");
}

HETNN_BINDING(2, bind_conv2d);

}  // namespace hetnn::python
