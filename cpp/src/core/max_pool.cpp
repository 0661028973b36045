// max_pool2d front and its backward (core/ops.h): validate once, then dispatch to the device's backend.
#include <string>

#include "core/errors.h"
#include "core/pool2d.h"

namespace hetnn {


Array max_pool2d(const Array& x_in, const Pool2dArgs& args, const Array* out, Array* indices) {
  const Array x = x_in.dense();  // views read as dense copies
  const char* op = "max_pool2d";
  const Pool2dDesc d = pool2d_plan(x.shape(), x.dtype(), *x.device(), args, op, true);
  const Shape ys = pool_output_shape(x.shape(), d);
  if (out) pool_check_out(*out, ys, d.dtype, x, op, "out");
  if (indices && indices->valid()) {
    pool_check_out(*indices, ys, DType::i64, x, op, "indices out");
    if (out && out->same_memory(*indices)) throw ValueError("max_pool2d: out and indices must be different arrays");
  }
  Array y = out ? *out : Array::empty(x.device(), ys, d.dtype);
  if (indices && !indices->valid()) *indices = Array::empty(x.device(), ys, DType::i64);
  if (d.N == 0) return y;
  const OpDetail detail(x.device()->backend().capturing(), [&] { return pool_window_str(x.shape(), d); });
  x.device()->backend().max_pool2d(d, *x.buffer(), *y.buffer(), indices ? indices->buffer().get() : nullptr);
  return y;
}

Array max_pool2d_backward(const Array& gy_in, const Array& idx_in, const Shape& input_shape, const Pool2dArgs& args,
                          const Array* out) {
  const Array gy = gy_in.dense();  // views read as dense copies
  const Array idx = idx_in.dense();  // views read as dense copies
  const char* op = "max_pool2d_backward";
  pool_check_input_shape(input_shape, op);
  if (input_shape.size() == 3 && (gy.ndim() != 3 || idx.ndim() != 3))
    throw ValueError(std::string(op) + ": input_shape " + shape_str(input_shape) + " is 3-D (C, H, W), so "
                     "grad_output and indices must be 3-D too; got shapes " + shape_str(gy.shape()) + " and " +
                     shape_str(idx.shape()));
  if (gy.device() != idx.device())
    throw ValueError(std::string(op) + ": grad_output is on " + gy.device()->id() + " but indices are on " +
                     idx.device()->id() + "; move one with .to(device)");
  pool_require_float(gy.dtype(), *gy.device(), op, "grad_output");
  const Pool2dDesc d = pool2d_plan(input_shape, gy.dtype(), *gy.device(), args, op);
  const Shape ys = pool_output_shape(input_shape, d);
  if (gy.shape() != ys)
    throw ValueError(std::string(op) + ": grad_output has shape " + shape_str(gy.shape()) +
                     " but pooling an input of shape " + shape_str(input_shape) + " gives " + shape_str(ys));
  if (idx.dtype() != DType::i64)
    throw TypeError(std::string(op) + ": indices must be int64 (as returned by max_pool2d), got " +
                    dtype_name(idx.dtype()));
  if (idx.shape() != ys)
    throw ValueError(std::string(op) + ": indices have shape " + shape_str(idx.shape()) + " but grad_output has " +
                     shape_str(ys));
  if (out) {
    pool_check_out(*out, input_shape, d.dtype, gy, op, "out");
    if (out->same_memory(idx)) throw ValueError(std::string(op) + ": out must not share memory with indices");
  }
  Array gx = out ? *out : Array::empty(gy.device(), input_shape, d.dtype);
  if (d.N == 0) return gx;
  const OpDetail detail(gy.device()->backend().capturing(), [&] { return "to " + pool_window_str(input_shape, d); });
  gy.device()->backend().max_pool2d_backward(d, *gy.buffer(), *idx.buffer(), *gx.buffer());
  return gx;
}

}  // namespace hetnn
