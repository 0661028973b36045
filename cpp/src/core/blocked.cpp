#include "core/blocked.h"

#include <string>

#include "core/errors.h"
#include "core/pool2d.h"
#include "core/recorder.h"

namespace hetnn {

namespace {

Shape physical(const Shape& s, int b) {
  if (b == 1) return s;
  return {s[0], (s[1] + b - 1) / b, s[2], s[3], b};
}

std::array<std::int64_t, 4> dims4(const Shape& s) { return {s[0], s[1], s[2], s[3]}; }

// *slot, made anew on x's device when its shape or dtype differ.
Array& fit(Array* slot, const Array& like, const Shape& shape, DType t) {
  if (!slot->valid() || slot->shape() != shape || slot->dtype() != t) *slot = Array::empty(like.device(), shape, t);
  return *slot;
}

void check_act(const BlockedAct& x, const char* op, const char* what) {
  if (x.shape.size() != 4 || x.a.dtype() != DType::f32 || x.a.shape() != physical(x.shape, x.block))
    throw ValueError(std::string(op) + ": " + what + " of shape " + shape_str(x.a.shape()) + " does not hold a " +
                     "float32 (N, C, H, W) = " + shape_str(x.shape) + " activation in channel block " +
                     std::to_string(x.block));
}

std::string block_str(int b) { return b == 1 ? "" : ", block " + std::to_string(b); }

std::string blocks_str(int from, int to) {
  return from == 1 && to == 1 ? "" : ", blocks " + std::to_string(from) + " -> " + std::to_string(to);
}

}  // namespace

ConvLayouts* conv_layouts_for(const Array& x) {
  if (x.dtype() != DType::f32) return nullptr;
  return find_extension<ConvLayouts>(x.device()->backend());
}

BlockedAct conv2d_blocked(ConvLayouts& cl, const BlockedAct& x, const Array& weight_in, const Array* bias_in,
                          const Conv2dArgs& args, Array* y_buf) {
  const Array weight = weight_in.dense();  // views read as dense copies
  const Array bias_d = bias_in ? bias_in->dense() : Array();
  const Array* bias = bias_in ? &bias_d : nullptr;
  const char* op = "conv2d";
  check_act(x, op, "x");
  const Conv2dDesc d = conv2d_plan(x.shape, x.a, weight, bias, args, op);
  const int yb = d.N ? cl.conv2d_output_block(d) : 1;
  const Shape ys{d.N, d.O, d.OH, d.OW};
  Array& y = fit(y_buf, x.a, physical(ys, yb), DType::f32);
  if (d.N) {
    const OpDetail detail(x.a.device()->backend().capturing(), [&] {
      return shape_str(x.shape) + " * " + shape_str(weight.shape()) + blocks_str(x.block, yb);
    });
    cl.conv2d_blocked(d, x.block, *x.a.buffer(), *weight.buffer(), bias ? bias->buffer().get() : nullptr, yb,
                      *y.buffer());
  }
  return {y, ys, yb};
}

BlockedAct conv2d_backward_blocked(ConvLayouts& cl, const BlockedAct& gy, const BlockedAct& x, const Array& weight_in,
                                   const Conv2dArgs& args, Array* gx_buf, const Array& gw, const Array* gb) {
  const Array weight = weight_in.dense();  // views read as dense copies
  const char* op = "conv2d_backward";
  check_act(x, op, "x");
  check_act(gy, op, "grad_output");
  Conv2dArgs linear = args;
  linear.act = Activation::none;
  Conv2dDesc d = conv2d_plan(x.shape, x.a, weight, nullptr, linear, op);
  if (gy.shape != Shape{d.N, d.O, d.OH, d.OW})
    throw ValueError(std::string(op) + ": grad_output has shape " + shape_str(gy.shape) + " but the convolution's "
                     "output has shape " + shape_str(Shape{d.N, d.O, d.OH, d.OW}));
  if (gw.shape() != weight.shape() || gw.dtype() != weight.dtype() || (gb && gb->shape() != Shape{d.O}))
    throw ValueError(std::string(op) + ": the gradient arrays must have the weight's and bias' shapes");
  const OpDetail detail(x.a.device()->backend().capturing(), [&] {
    return shape_str(x.shape) + " * " + shape_str(weight.shape()) + block_str(x.block);
  });
  BlockedAct gx{Array{}, x.shape, x.block};
  if (gx_buf) {
    gx.a = fit(gx_buf, x.a, x.a.shape(), DType::f32);
    if (d.N) cl.conv2d_backward_data_blocked(d, gy.block, *gy.a.buffer(), *weight.buffer(), x.block, *gx.a.buffer());
  }
  if (d.N) {
    cl.conv2d_backward_weights_blocked(d, gy.block, *gy.a.buffer(), x.block, *x.a.buffer(), *gw.buffer(),
                                       gb ? gb->buffer().get() : nullptr);
  } else {
    Backend& be = x.a.device()->backend();
    be.fill(*gw.buffer(), 0, gw.nbytes(), 0);
    if (gb) be.fill(*gb->buffer(), 0, gb->nbytes(), 0);
  }
  return gx;
}

BlockedAct max_pool2d_blocked(ConvLayouts& cl, const BlockedAct& x, const Pool2dArgs& args, Array* y_buf,
                              Array* idx_buf) {
  const char* op = "max_pool2d";
  check_act(x, op, "x");
  const Pool2dDesc d = pool2d_plan(x.shape, DType::f32, *x.a.device(), args, op);
  const Shape ys = pool_output_shape(x.shape, d);
  if (d.H * d.W > (std::int64_t{1} << 31) - 1)
    throw ValueError(std::string(op) + ": planes of more than 2^31 - 1 positions are pooled in NCHW");
  Array& y = fit(y_buf, x.a, physical(ys, x.block), DType::f32);
  Array& idx = fit(idx_buf, x.a, physical(ys, x.block), DType::i32);
  if (d.N) {
    const OpDetail detail(x.a.device()->backend().capturing(),
                          [&] { return pool_window_str(x.shape, d) + block_str(x.block); });
    cl.max_pool2d_blocked(d, x.block, *x.a.buffer(), *y.buffer(), *idx.buffer());
  }
  return {y, ys, x.block};
}

BlockedAct max_pool2d_backward_blocked(ConvLayouts& cl, const BlockedAct& gy, const Array& idx,
                                       const Shape& input_shape, const Pool2dArgs& args, Array* gx_buf) {
  const char* op = "max_pool2d_backward";
  check_act(gy, op, "grad_output");
  const Pool2dDesc d = pool2d_plan(input_shape, DType::f32, *gy.a.device(), args, op);
  if (gy.shape != pool_output_shape(input_shape, d) || idx.dtype() != DType::i32 || idx.shape() != gy.a.shape())
    throw ValueError(std::string(op) + ": grad_output " + shape_str(gy.shape) + " and indices " +
                     shape_str(idx.shape()) + " do not match pooling an input of shape " + shape_str(input_shape));
  Array& gx = fit(gx_buf, gy.a, physical(input_shape, gy.block), DType::f32);
  if (d.N) {
    const OpDetail detail(gy.a.device()->backend().capturing(),
                          [&] { return "to " + pool_window_str(input_shape, d) + block_str(gy.block); });
    cl.max_pool2d_backward_blocked(d, gy.block, *gy.a.buffer(), *idx.buffer(), *gx.buffer());
  }
  return {gx, input_shape, gy.block};
}

BlockedAct reorder_blocked(ConvLayouts& cl, const BlockedAct& x, int to, Array* out_buf) {
  check_act(x, "reorder", "x");
  if (x.block == to) return x;
  Array& y = fit(out_buf, x.a, physical(x.shape, to), DType::f32);
  if (x.shape[0]) {
    const OpDetail detail(x.a.device()->backend().capturing(),
                          [&] { return shape_str(x.shape) + blocks_str(x.block, to); });
    cl.reorder_blocked(dims4(x.shape), x.block, *x.a.buffer(), to, *y.buffer());
  }
  return {y, x.shape, to};
}

ResidentConv::ResidentConv(const Array& x_in, const Array& weight, const Conv2dArgs& args)
    : cl_(conv_layouts_for(x_in)), w_(weight.dense()), args_(args) {
  const Array x = x_in.dense();  // views read as dense copies
  if (!cl_ || x.ndim() != 4)
    throw ValueError("ResidentConv: needs a float32 (N, C, H, W) x on a device that keeps convolution layouts "
                     "(the CPU device); x is " + std::string(dtype_name(x.dtype())) + " " + shape_str(x.shape()) +
                     " on " + x.device()->id());
  const Conv2dDesc d = conv2d_plan(x.shape(), x, weight, nullptr, args, "ResidentConv");
  x_ = reorder_blocked(*cl_, {x, x.shape(), 1}, d.N ? cl_->conv2d_input_block(d) : 1, &x_buf_);
}

void ResidentConv::run() { y_ = conv2d_blocked(*cl_, x_, w_, nullptr, args_, &y_buf_); }

Array ResidentConv::fetch() {
  if (!y_.a.valid()) throw ValueError("ResidentConv.fetch: run() has not been called");
  return reorder_blocked(*cl_, y_, 1, &out_buf_).a;
}

}  // namespace hetnn
