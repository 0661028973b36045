// avg_pool2d and avg_pool2d_backward fronts (core/ops.h): validate once, then dispatch to the device's backend.
#include <string>

#include "core/errors.h"
#include "core/pool2d.h"

namespace hetnn {

namespace {

// The descriptor both directions use: the pooling geometry of an input of shape `s` plus the divisor rule.
AvgPool2dDesc avg_plan(const Shape& s, DType t, const Device& dev, const Pool2dArgs& args, bool count_include_pad,
                       std::optional<int> divisor_override, const char* op) {
  if (args.dilation[0] != 1 || args.dilation[1] != 1)
    throw ValueError(std::string(op) + ": average pooling has no dilation");
  if (divisor_override && *divisor_override == 0)
    throw ValueError(std::string(op) + ": divisor_override must not be 0 (None: the window's size)");
  AvgPool2dDesc d;
  static_cast<Pool2dDesc&>(d) = pool2d_plan(s, t, dev, args, op);
  d.count_include_pad = count_include_pad;
  d.divisor_override = divisor_override.value_or(0);
  return d;
}

}  // namespace

Array avg_pool2d(const Array& x_in, const Pool2dArgs& args, bool count_include_pad, std::optional<int> divisor_override,
                 const Array* out) {
  const Array x = x_in.dense();  // views read as dense copies
  const char* op = "avg_pool2d";
  const AvgPool2dDesc d = avg_plan(x.shape(), x.dtype(), *x.device(), args, count_include_pad, divisor_override, op);
  const Shape ys = pool_output_shape(x.shape(), d);
  if (out) pool_check_out(*out, ys, d.dtype, x, op, "out");
  Array y = out ? *out : Array::empty(x.device(), ys, d.dtype);
  if (d.N == 0) return y;
  const OpDetail detail(x.device()->backend().capturing(), [&] { return pool_window_str(x.shape(), d); });
  x.device()->backend().avg_pool2d(d, *x.buffer(), *y.buffer());
  return y;
}

Array avg_pool2d_backward(const Array& gy_in, const Shape& input_shape, const Pool2dArgs& args, bool count_include_pad,
                          std::optional<int> divisor_override, const Array* out) {
  const Array gy = gy_in.dense();  // views read as dense copies
  const char* op = "avg_pool2d_backward";
  pool_check_input_shape(input_shape, op);
  pool_require_float(gy.dtype(), *gy.device(), op, "grad_output");
  const AvgPool2dDesc d =
      avg_plan(input_shape, gy.dtype(), *gy.device(), args, count_include_pad, divisor_override, op);
  const Shape ys = pool_output_shape(input_shape, d);
  if (gy.shape() != ys)
    throw ValueError(std::string(op) + ": grad_output has shape " + shape_str(gy.shape()) +
                     " but pooling an input of shape " + shape_str(input_shape) + " gives " + shape_str(ys));
  if (out) pool_check_out(*out, input_shape, d.dtype, gy, op, "out");
  Array gx = out ? *out : Array::empty(gy.device(), input_shape, d.dtype);
  if (d.N == 0) return gx;
  const OpDetail detail(gy.device()->backend().capturing(), [&] { return "to " + pool_window_str(input_shape, d); });
  gy.device()->backend().avg_pool2d_backward(d, *gy.buffer(), *gx.buffer());
  return gx;
}

}  // namespace hetnn
