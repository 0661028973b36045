// hetnn._core: max_pool2d and its backward (core/max_pool.cpp). Arguments as the user gives them; the Python
// front (hetnn._placement) only converts the arrays and applies the placement rule.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/ops.h"
#include "core/pool2d.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace hetnn::python {

void bind_max_pool(py::module_& m) {
  m.def(
      "max_pool2d",
      [](const Array& x, py::object kernel_size, py::object stride, py::object padding, py::object dilation,
         py::object ceil_mode, py::object return_indices, const Array* out, const Array* indices_out,
         py::object padding_mode) -> py::object {
        const char* op = "max_pool2d";
        Pool2dArgs args = arg_pool2d(op, kernel_size, stride, padding, dilation, ceil_mode);
        args.zero_padding = arg_zero_padding(padding_mode, op);
        const bool with_indices = arg_bool(return_indices, "return_indices", op);
        Array y, idx;
        if (indices_out) idx = *indices_out;
        {
          NoGil nogil;
          y = hetnn::max_pool2d(x, args, out, with_indices || indices_out ? &idx : nullptr);
        }
        if (with_indices) return py::make_tuple(y, idx);
        return py::cast(y);
      },
      py::arg("x"), py::arg("kernel_size") = py::none(), py::arg("stride") = py::none(), py::arg("padding") = 0,
      py::arg("dilation") = 1, py::arg("ceil_mode") = false, py::arg("return_indices") = false, py::kw_only(),
      py::arg("out").none(true) = nullptr, py::arg("indices_out").none(true) = nullptr,
      py::arg("padding_mode") = "-inf",
      R"doc(Max over ``kernel_size`` windows of each (N, C) plane of ``x`` (4-D NCHW, or 3-D CHW as N = 1).

PyTorch's semantics exactly: ``stride`` defaults to ``kernel_size``; ``padding`` (at most half the kernel) is
implicit -inf; ``dilation`` spaces the window's taps; the output size is
``floor_or_ceil((H + 2p - d(k-1) - 1) / s) + 1`` where, with ``ceil_mode``, the last window must start inside the
input or the left padding. NaN wins a window; otherwise the first maximum in row-major window order.
With ``return_indices`` also returns int64 indices: flat ``h * W + w`` positions in each input plane, the input
of :func:`max_pool2d_backward`. ``out`` / ``indices_out``: arrays to write the results into.
float32, float64, float16, bfloat16, and int8, uint8, int32, int64 images (exact, the same dtype out; an
empty window's maximum is the type's lowest value where a float's is -inf).
``padding_mode="zeros"``: the padding holds zeros instead (any ``padding``, even wider than half the kernel), as
if the image were padded with zeros first (``numpy.pad``) and pooled without padding, on the device and in one
call; a window won by the padding has index -1, which :func:`max_pool2d_backward` (given the same
``padding_mode``) passes over.)doc");
  m.def(
      "max_pool2d_backward",
      [](const Array& grad_output, const Array& indices, py::object input_shape, py::object kernel_size,
         py::object stride, py::object padding, py::object dilation, py::object ceil_mode, const Array* out,
         py::object padding_mode) {
        const char* op = "max_pool2d_backward";
        Pool2dArgs args = arg_pool2d(op, kernel_size, stride, padding, dilation, ceil_mode);
        args.zero_padding = arg_zero_padding(padding_mode, op);
        const Shape shape = arg_shape(input_shape, "input_shape", op);
        NoGil nogil;
        return hetnn::max_pool2d_backward(grad_output, indices, shape, args, out);
      },
      py::arg("grad_output"), py::arg("indices"), py::arg("input_shape"), py::arg("kernel_size") = py::none(),
      py::arg("stride") = py::none(), py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("ceil_mode") = false,
      py::kw_only(), py::arg("out").none(true) = nullptr, py::arg("padding_mode") = "-inf");
  // The pooling layers' window and shape checks, before any data arrives.
  m.def(
      "pool2d_window",
      [](const std::string& op, py::object kernel_size, py::object stride, py::object padding, py::object dilation,
         py::object ceil_mode) {
        const Pool2dArgs a = arg_pool2d(op.c_str(), kernel_size, stride, padding, dilation, ceil_mode);
        // every argument's range on the smallest input the window fits (padding and dilation included: a layer
        // once took padding=5 or dilation=0 and failed at its first batch)
        // (the ranges are checked before the input's size: a dilation below 1 is refused as such)
        const auto span = [&](int i) {
          return std::max<std::int64_t>(1, (std::int64_t{a.kernel[i]} - 1) * std::max<std::int64_t>(a.dilation[i], 1) + 1);
        };
        (void)pool2d_geometry({1, 1, span(0), span(1)}, a, op.c_str());
        return py::make_tuple(py::make_tuple(a.kernel[0], a.kernel[1]), py::make_tuple(a.stride[0], a.stride[1]),
                              py::make_tuple(a.padding[0], a.padding[1]), py::make_tuple(a.dilation[0], a.dilation[1]),
                              a.ceil_mode);
      },
      py::arg("op"), py::arg("kernel_size"), py::arg("stride"), py::arg("padding"), py::arg("dilation"),
      py::arg("ceil_mode"), "A pooling layer's window arguments, normalised to (h, w) pairs and checked.");
  m.def(
      "pool2d_output_shape",
      [](const std::string& op, py::object input_shape, py::object kernel_size, py::object stride,
         py::object padding, py::object dilation, py::object ceil_mode) {
        const Pool2dArgs a = arg_pool2d(op.c_str(), kernel_size, stride, padding, dilation, ceil_mode);
        const Shape s = arg_shape(input_shape, "input_shape", op.c_str());
        return py::tuple(py::cast(pool_output_shape(s, pool2d_geometry(s, a, op.c_str()))));
      },
      py::arg("op"), py::arg("input_shape"), py::arg("kernel_size"), py::arg("stride"), py::arg("padding"),
      py::arg("dilation"), py::arg("ceil_mode"), "The output shape of pooling an input of input_shape, checked.");
}

HETNN_BINDING(2, bind_max_pool);

}  // namespace hetnn::python
