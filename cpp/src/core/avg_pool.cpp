// avg_pool2d front (core/ops.h): validates once, then dispatches to the device's backend.
#include <string>

#include "core/errors.h"
#include "core/pool2d.h"

namespace hetnn {

Array avg_pool2d(const Array& x, const Pool2dArgs& args, bool count_include_pad, std::optional<int> divisor_override,
                 const Array* out) {
  const char* op = "avg_pool2d";
  if (args.dilation[0] != 1 || args.dilation[1] != 1)
    throw ValueError(std::string(op) + ": average pooling has no dilation");
  if (divisor_override && *divisor_override == 0)
    throw ValueError(std::string(op) + ": divisor_override must not be 0 (None: the window's size)");
  AvgPool2dDesc d;
  static_cast<Pool2dDesc&>(d) = pool2d_plan(x.shape(), x.dtype(), *x.device(), args, op);
  d.count_include_pad = count_include_pad;
  d.divisor_override = divisor_override.value_or(0);
  const Shape ys = pool_output_shape(x.shape(), d);
  if (out) pool_check_out(*out, ys, d.dtype, x, op, "out");
  Array y = out ? *out : Array::empty(x.device(), ys, d.dtype);
  if (d.N == 0) return y;
  const OpDetail detail(x.device()->backend().capturing(), [&] { return pool_window_str(x.shape(), d); });
  x.device()->backend().avg_pool2d(d, *x.buffer(), *y.buffer());
  return y;
}

}  // namespace hetnn
