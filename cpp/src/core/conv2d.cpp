// conv2d front (core/ops.h): PyTorch's conv2d argument rules and output size, checked once, then the backend.
#include <cstdint>
#include <limits>
#include <string>

#include "core/array.h"
#include "core/blocked.h"
#include "core/errors.h"
#include "core/ops.h"
#include "core/pool2d.h"
#include "core/recorder.h"

namespace hetnn {

namespace {

std::string pair_str(std::int64_t a, std::int64_t b) { return "(" + std::to_string(a) + ", " + std::to_string(b) + ")"; }

void check_operand(const Array& a, const Array& x, const char* what) {
  require_dense(a, "conv2d", what);
  if (a.device() != x.device())
    throw ValueError(std::string("conv2d: ") + what + " is on " + a.device()->id() + " but x is on " + x.device()->id() +
                     "; move it with .to(device)");
  if (a.dtype() != x.dtype())
    throw TypeError(std::string("conv2d: ") + what + " is " + dtype_name(a.dtype()) + " but x is " +
                    dtype_name(x.dtype()) + " (convert one with astype)");
}

// The geometry of a convolution of input shape xs (N, C, H, W or C, H, W) with weights ws: every shape and argument
// rule checked (op names the calling front); dtype, devices and bias are the callers'.
Conv2dDesc conv2d_geometry(const Shape& xs, const Shape& ws, const Conv2dArgs& args, const char* op) {
  if (xs.size() != 4 && xs.size() != 3)
    throw ValueError(std::string(op) + ": x must be 4-D (N, C, H, W) or 3-D (C, H, W), got shape " + shape_str(xs));
  if (ws.size() != 4)
    throw ValueError(std::string(op) + ": weight must be 4-D (out_channels, in_channels/groups, kh, kw), got shape " +
                     shape_str(ws));
  const bool batched = xs.size() == 4;
  Conv2dDesc d;
  d.N = batched ? xs[0] : 1;
  d.C = xs[batched ? 1 : 0];
  d.H = xs[batched ? 2 : 1];
  d.W = xs[batched ? 3 : 2];
  d.O = ws[0];
  if (ws[2] > (1 << 30) || ws[3] > (1 << 30))
    throw ValueError(std::string(op) + ": weight's kernel size " + pair_str(ws[2], ws[3]) + " is too large");
  d.kh = static_cast<int>(ws[2]);
  d.kw = static_cast<int>(ws[3]);
  d.act = args.act;
  if (args.groups < 1) throw ValueError(std::string(op) + ": groups must be >= 1, got " + std::to_string(args.groups));
  d.groups = args.groups;
  if (d.C == 0 || d.C % d.groups)
    throw ValueError(std::string(op) + ": x has " + std::to_string(d.C) + " channels, which groups=" +
                     std::to_string(d.groups) + " must divide (and there must be at least one)");
  if (d.O == 0 || d.O % d.groups)
    throw ValueError(std::string(op) + ": weight has " + std::to_string(d.O) + " output channels, which groups=" +
                     std::to_string(d.groups) + " must divide (and there must be at least one)");
  if (ws[1] != d.C / d.groups)
    throw ValueError(std::string(op) + ": weight of shape " + shape_str(ws) + " expects " +
                     std::to_string(ws[1] * d.groups) + " input channels, x has " + std::to_string(d.C) +
                     (d.groups > 1 ? " (groups=" + std::to_string(d.groups) + ")" : std::string()));
  if (d.kh < 1 || d.kw < 1)
    throw ValueError(std::string(op) + ": weight's kernel size " + pair_str(d.kh, d.kw) + " must be at least 1x1");
  for (int i = 0; i < 2; ++i) {
    if (args.stride[i] < 1)
      throw ValueError(std::string(op) + ": stride must be >= 1, got " + pair_str(args.stride[0], args.stride[1]));
    if (args.dilation[i] < 1)
      throw ValueError(std::string(op) + ": dilation must be >= 1, got " +
                       pair_str(args.dilation[0], args.dilation[1]));
    if (args.padding[i] < 0)
      throw ValueError(std::string(op) + ": padding must be >= 0, got " + pair_str(args.padding[0], args.padding[1]));
  }
  d.sh = args.stride[0], d.sw = args.stride[1], d.dh = args.dilation[0], d.dw = args.dilation[1];
  const std::int64_t ekh = std::int64_t{d.dh} * (d.kh - 1) + 1, ekw = std::int64_t{d.dw} * (d.kw - 1) + 1;
  if (args.mode == Conv2dArgs::Padding::same) {
    if (d.sh != 1 || d.sw != 1)
      throw ValueError(std::string(op) + ": padding='same' is not supported for strided convolutions (stride " +
                       pair_str(d.sh, d.sw) + "), as in PyTorch");
    d.ph = static_cast<int>((ekh - 1) / 2), d.pr = static_cast<int>(ekh - 1 - d.ph);
    d.pw = static_cast<int>((ekw - 1) / 2), d.pw_r = static_cast<int>(ekw - 1 - d.pw);
  } else if (args.mode == Conv2dArgs::Padding::given) {
    d.ph = d.pr = args.padding[0], d.pw = d.pw_r = args.padding[1];
  }
  const std::int64_t ph = d.H + d.ph + d.pr, pw = d.W + d.pw + d.pw_r;
  if (ph < ekh || pw < ekw)
    throw ValueError(std::string(op) + ": the padded input is " + pair_str(ph, pw) + " per channel but the kernel " +
                     "spans " + pair_str(ekh, ekw) + " (kernel " + pair_str(d.kh, d.kw) + ", dilation " +
                     pair_str(d.dh, d.dw) + "): the kernel cannot be larger than the padded input");
  d.OH = (ph - ekh) / d.sh + 1;
  d.OW = (pw - ekw) / d.sw + 1;
  // The kernels index within a plane, and within one image's columns, in 32-bit integers (as pooling does): a
  // larger plane once gave zeros on OpenCL and an error from inside oneDNN on the CPU. Factor by factor, so that
  // the products of huge sizes cannot overflow.
  constexpr std::int64_t kMax = std::numeric_limits<int>::max();
  auto over = [&](std::int64_t a, std::int64_t b) { return a > kMax || b > kMax || (b > 0 && a > kMax / b); };
  const char* what = over(d.H, d.W)                             ? "an input plane"
                     : over(d.OH, d.OW)                         ? "an output plane"
                     : over(d.N, d.C) || over(d.N, d.O)         ? "the planes"
                     : over(d.C, std::int64_t{d.kh} * d.kw) ? "a column of kernel taps"
                                                                : nullptr;
  if (what)
    throw ValueError(std::string(op) + ": input " + shape_str(xs) + " with weight " + shape_str(ws) + " gives " +
                     what + " of more than 2^31-1 elements (output " + std::to_string(d.OH) + "x" +
                     std::to_string(d.OW) + "); planes of more than 2^31-1 elements, more than 2^31-1 planes, " +
                     "and more than 2^31-1 kernel taps per output are not supported");
  shape_size(Shape{d.N, d.O, d.OH, d.OW}, "conv2d output");
  return d;
}

}  // namespace

// The descriptor of conv2d(x, weight, bias, args) for x of (logical) shape xs: every argument checked (op names the
// calling front).
Conv2dDesc conv2d_plan(const Shape& xs, const Array& x, const Array& weight, const Array* bias,
                       const Conv2dArgs& args, const char* op) {
  const DType t = x.dtype();
  if (t != DType::f32 && t != DType::f64 && t != DType::f16 && t != DType::bf16)
    throw TypeError(std::string(op) + ": x is " + dtype_name(t) + "; conv2d takes float32, float64, float16 and "
                    "bfloat16");
  check_operand(weight, x, "weight");
  Conv2dDesc d = conv2d_geometry(xs, weight.shape(), args, op);
  d.dtype = t;
  d.allow_tf32 = t == DType::f32 && precision_in_force(args.precision) == Precision::high;
  if (bias) {
    check_operand(*bias, x, "bias");
    if (bias->shape() != Shape{d.O})
      throw ValueError(std::string(op) + ": bias must have shape (" + std::to_string(d.O) + ",), one per output "
                       "channel, got " + shape_str(bias->shape()));
    d.has_bias = true;
  }
  return d;
}

namespace {

Conv2dDesc conv2d_plan(const Array& x, const Array& weight, const Array* bias, const Conv2dArgs& args, const char* op) {
  return conv2d_plan(x.shape(), x, weight, bias, args, op);
}

Shape conv2d_output_shape(const Array& x, const Conv2dDesc& d) {
  return x.ndim() == 4 ? Shape{d.N, d.O, d.OH, d.OW} : Shape{d.O, d.OH, d.OW};
}

std::string conv2d_detail(const Array& x, const Array& weight, const Conv2dDesc& d) {
  return shape_str(x.shape()) + " * " + shape_str(weight.shape()) + ", stride " + pair_str(d.sh, d.sw) + ", pad " +
         pair_str(d.ph, d.pw) + (d.groups > 1 ? ", groups " + std::to_string(d.groups) : "") +
         (d.act != Activation::none ? std::string(", ") + activation_name(d.act) : "");
}

}  // namespace

Shape conv2d_output_shape(const Shape& sample, const Shape& weight_shape, const Conv2dArgs& args, const char* op) {
  if (sample.size() != 3)
    throw ValueError(std::string(op) + " takes (N, C, H, W) input, got per-sample shape " + shape_str(sample));
  const Conv2dDesc d = conv2d_geometry(sample, weight_shape, args, op);
  return {d.O, d.OH, d.OW};
}

Array conv2d(const Array& x_in, const Array& weight_in, const Array* bias_in, const Conv2dArgs& args, const Array* out) {
  const Array x = x_in.dense();  // views read as dense copies
  const Array weight = weight_in.dense();  // views read as dense copies
  const Array bias_d = bias_in ? bias_in->dense() : Array();
  const Array* bias = bias_in ? &bias_d : nullptr;
  const char* op = "conv2d";
  const Conv2dDesc d = conv2d_plan(x, weight, bias, args, op);
  const DType t = d.dtype;
  const Shape ys = conv2d_output_shape(x, d);
  if (out) {
    pool_check_out(*out, ys, t, x, op, "out");
    if (out->same_memory(weight) || (bias && out->same_memory(*bias)))
      throw ValueError(std::string(op) + ": out must not share memory with weight or bias");
  }
  Array y = out ? *out : Array::empty(x.device(), ys, t);
  if (d.N == 0) return y;
  const OpDetail detail(x.device()->backend().capturing(), [&] { return conv2d_detail(x, weight, d); });
  x.device()->backend().conv2d(d, *x.buffer(), *weight.buffer(), bias ? bias->buffer().get() : nullptr, *y.buffer());
  return y;
}

std::tuple<Array, Array, Array> conv2d_backward(const Array& grad_output_in, const Array& x_in, const Array& weight_in,
                                                const Conv2dArgs& args, bool input_grad, bool weight_grad,
                                                bool bias_grad, const Conv2dGradOut& out) {
  const Array grad_output = grad_output_in.dense();  // views read as dense copies
  const Array x = x_in.dense();  // views read as dense copies
  const Array weight = weight_in.dense();  // views read as dense copies
  const char* op = "conv2d_backward";
  if (args.act != Activation::none)
    throw ValueError(std::string(op) + ": the gradients are of the convolution before any activation; apply the "
                     "activation's backward to grad_output first");
  const Conv2dDesc d = conv2d_plan(x, weight, nullptr, args, op);
  check_operand(grad_output, x, "grad_output");
  const Shape ys = conv2d_output_shape(x, d);
  if (grad_output.shape() != ys)
    throw ValueError(std::string(op) + ": grad_output has shape " + shape_str(grad_output.shape()) + " but the "
                     "convolution's output has shape " + shape_str(ys));
  // The result arrays: the caller's (checked) or new ones.
  const auto result = [&](const Array* given, const Shape& shape, const char* what) {
    if (!given) return Array::empty(x.device(), shape, d.dtype);
    check_operand(*given, x, what);
    if (given->shape() != shape)
      throw ValueError(std::string(op) + ": " + what + " has shape " + shape_str(given->shape()) + " but the "
                       "gradient has shape " + shape_str(shape));
    if (given->same_memory(x) || given->same_memory(weight) || given->same_memory(grad_output))
      throw ValueError(std::string(op) + ": " + what + " must not share memory with x, weight or grad_output");
    return *given;
  };
  struct {
    Array input, weight, bias;
  } g;
  Backend& be = x.device()->backend();
  const OpDetail detail(be.capturing(), [&] { return conv2d_detail(x, weight, d); });
  if (input_grad) {
    g.input = result(out.input, x.shape(), "the input gradient's array");
    if (d.N) be.conv2d_backward_data(d, *grad_output.buffer(), *weight.buffer(), *g.input.buffer());
  }
  if (weight_grad || bias_grad) {
    Array gw = result(weight_grad ? out.weight : nullptr, weight.shape(), "the weight gradient's array");
    if (bias_grad) g.bias = result(out.bias, Shape{d.O}, "the bias gradient's array");
    if (d.N)
      be.conv2d_backward_weights(d, *grad_output.buffer(), *x.buffer(), *gw.buffer(),
                                 bias_grad ? g.bias.buffer().get() : nullptr);
    else {  // an empty batch contributes nothing
      be.fill(*gw.buffer(), 0, gw.nbytes(), 0);
      if (bias_grad) be.fill(*g.bias.buffer(), 0, g.bias.nbytes(), 0);
    }
    if (weight_grad) g.weight = gw;
  }
  return {g.input, g.weight, g.bias};
}

}  // namespace hetnn
