// hetnn._core: avg_pool2d (core/avg_pool.cpp). Arguments as the user gives them; hetnn._ops applies the placement
// rule.
#include <optional>

#include "core/errors.h"
#include "core/ops.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace hetnn::python {

namespace {

std::optional<int> arg_divisor(py::object divisor_override, const char* op) {
  if (divisor_override.is_none()) return std::nullopt;
  if (py::isinstance<py::sequence>(divisor_override))
    throw TypeError(std::string(op) + ": divisor_override must be None or an int");
  return arg_pair(divisor_override, "divisor_override", op)[0];
}

}  // namespace

void bind_avg_pool(py::module_& m) {
  m.def(
      "avg_pool2d",
      [](const Array& x, py::object kernel_size, py::object stride, py::object padding, py::object ceil_mode,
         py::object count_include_pad, py::object divisor_override, const Array* out) {
        const char* op = "avg_pool2d";
        const Pool2dArgs args = arg_pool2d(op, kernel_size, stride, padding, py::int_(1), ceil_mode);
        const bool include_pad = arg_bool(count_include_pad, "count_include_pad", op);
        const std::optional<int> divisor = arg_divisor(divisor_override, op);
        NoGil nogil;
        return hetnn::avg_pool2d(x, args, include_pad, divisor, out);
      },
      py::arg("x"), py::arg("kernel_size") = py::none(), py::arg("stride") = py::none(), py::arg("padding") = 0,
      py::arg("ceil_mode") = false, py::arg("count_include_pad") = true, py::arg("divisor_override") = py::none(),
      py::kw_only(), py::arg("out").none(true) = nullptr,
      R"doc(Average over ``kernel_size`` windows of each (N, C) plane of ``x`` (4-D NCHW, or 3-D CHW as N = 1).

PyTorch's ``avg_pool2d`` exactly: ``stride`` defaults to ``kernel_size``; ``padding`` (at most half the kernel)
adds implicit zeros; the output size is ``floor_or_ceil((H + 2p - k) / s) + 1`` (with ``ceil_mode`` the last window
must start inside the input or the left padding). Each window's sum is divided by ``divisor_override`` when given,
else by the window's size clipped to the padded input (``count_include_pad=True``) or by the number of input
positions it covers. float32, float64, float16 and bfloat16 (summed in float32, rounded once).)doc");
  m.def(
      "avg_pool2d_backward",
      [](const Array& grad_output, py::object input_shape, py::object kernel_size, py::object stride,
         py::object padding, py::object ceil_mode, py::object count_include_pad, py::object divisor_override,
         const Array* out) {
        const char* op = "avg_pool2d_backward";
        const Pool2dArgs args = arg_pool2d(op, kernel_size, stride, padding, py::int_(1), ceil_mode);
        const Shape shape = arg_shape(input_shape, "input_shape", op);
        const bool include_pad = arg_bool(count_include_pad, "count_include_pad", op);
        const std::optional<int> divisor = arg_divisor(divisor_override, op);
        NoGil nogil;
        return hetnn::avg_pool2d_backward(grad_output, shape, args, include_pad, divisor, out);
      },
      py::arg("grad_output"), py::arg("input_shape"), py::arg("kernel_size") = py::none(),
      py::arg("stride") = py::none(), py::arg("padding") = 0, py::arg("ceil_mode") = false,
      py::arg("count_include_pad") = true, py::arg("divisor_override") = py::none(), py::kw_only(),
      py::arg("out").none(true) = nullptr,
      R"doc(The gradient of :func:`avg_pool2d` with respect to its input (PyTorch's ``avg_pool2d_backward``).

``grad_output`` has the forward output's shape; ``input_shape`` is the forward input's (N, C, H, W) or (C, H, W);
the window arguments are the forward's. Each window's gradient is divided by the forward's divisor and added to
every input position the window averaged; positions in no window get 0. ``out``: an array to write into.)doc");
}

HETNN_BINDING(2, bind_avg_pool);

}  // namespace hetnn::python
