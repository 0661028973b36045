#include "core/nn.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/errors.h"

namespace hetnn {

namespace {

std::string where(const Array& x) { return x.device()->id(); }

void same_device(const Array& a, const Array& b, const char* op, const char* an, const char* bn) {
  if (a.device() != b.device())
    throw ValueError(std::string(op) + ": " + an + " is on " + where(a) + " but " + bn + " is on " + where(b) +
                     "; move one with .to(device)");
}

// Training data: a floating dtype the device takes (float16 and bfloat16 are computed in float32 where the
// hardware has no arithmetic for them).
void trainable(const Array& x, const char* op, const char* what) {
  if (x.dtype() != DType::f32 && x.dtype() != DType::f64 && x.dtype() != DType::f16 && x.dtype() != DType::bf16)
    throw TypeError(std::string(op) + ": " + what + " is " + dtype_name(x.dtype()) +
                    "; training ops take float32, float64, float16 or bfloat16");
  x.device()->require(x.dtype(), op);
  require_dense(x, op, what);
}

void like(const Array& x, const Array& ref, const char* op, const char* what, const char* ref_name) {
  same_device(x, ref, op, what, ref_name);
  require_dense(x, op, what);
  if (x.dtype() != ref.dtype())
    throw TypeError(std::string(op) + ": " + what + " is " + dtype_name(x.dtype()) + " but " + ref_name + " is " +
                    dtype_name(ref.dtype()));
  if (x.shape() != ref.shape())
    throw ValueError(std::string(op) + ": " + what + " has shape " + shape_str(x.shape()) + " but " + ref_name +
                     " has shape " + shape_str(ref.shape()));
}

void two_d(const Array& x, const char* op, const char* what) {
  if (x.ndim() != 2)
    throw ValueError(std::string(op) + ": " + what + " must be 2-D (rows, columns), got shape " +
                     shape_str(x.shape()));
}

void accumulator(const Array& acc, const Array& ref, const char* op) {
  same_device(acc, ref, op, "acc", "the predictions");
  require_dense(acc, op, "acc");
  if (acc.dtype() != DType::f32 || acc.size() != 1)
    throw ValueError(std::string(op) + ": acc must be a float32 array of one element, got " +
                     dtype_name(acc.dtype()) + " " + shape_str(acc.shape()));
}

Array result(const Array* out, const Array& ref, const char* op) {
  if (!out) return Array::empty(ref.device(), ref.shape(), ref.dtype());
  like(*out, ref, op, "out", "the input");
  return *out;
}

}  // namespace

Array activation(const Array& x_in, Activation act, const Array* out) {
  const Array x = x_in.dense();  // views read as dense copies
  const char* op = "activation";
  trainable(x, op, "x");
  if (act == Activation::none) throw ValueError("activation: act must be 'relu', 'sigmoid' or 'tanh'");
  Array y = result(out, x, op);  // may be x itself (elementwise, in place)
  const OpDetail detail(x.device()->backend().capturing(),
                        [&] { return std::string(activation_name(act)) + " " + shape_str(x.shape()); });
  if (x.size()) x.device()->backend().activation(act, x.dtype(), x.size(), *x.buffer(), *y.buffer());
  return y;
}

Array activation_backward(const Array& dy_in, const Array& y_in, Activation act, const Array* out) {
  const Array dy = dy_in.dense();  // views read as dense copies
  const Array y = y_in.dense();  // views read as dense copies
  const char* op = "activation_backward";
  trainable(dy, op, "grad_output");
  like(y, dy, op, "output", "grad_output");
  if (act == Activation::none) throw ValueError("activation_backward: act must be 'relu', 'sigmoid' or 'tanh'");
  Array dx = result(out, dy, op);
  const OpDetail detail(dy.device()->backend().capturing(),
                        [&] { return std::string(activation_name(act)) + " " + shape_str(dy.shape()); });
  if (dy.size())
    dy.device()->backend().activation_backward(act, dy.dtype(), dy.size(), *dy.buffer(), *y.buffer(), *dx.buffer());
  return dx;
}

Array softmax(const Array& x_in, const Array* out) {
  const Array x = x_in.dense();  // views read as dense copies
  const char* op = "softmax";
  trainable(x, op, "x");
  two_d(x, op, "x");
  Array y = result(out, x, op);
  const OpDetail detail(x.device()->backend().capturing(), [&] { return shape_str(x.shape()); });
  if (x.size()) x.device()->backend().softmax(x.dtype(), x.shape()[0], x.shape()[1], *x.buffer(), *y.buffer());
  return y;
}

LossKind loss_kind_from_name(const std::string& name) {
  if (name == "cross_entropy") return LossKind::cross_entropy_labels;
  if (name == "mse") return LossKind::mse;
  throw ValueError("loss: kind must be 'cross_entropy' or 'mse', got '" + name + "'");
}

MetricKind metric_kind_from_name(const std::string& name) {
  if (name == "correct_argmax") return MetricKind::correct_argmax;
  if (name == "correct_threshold") return MetricKind::correct_threshold;
  if (name == "abs_error") return MetricKind::abs_error;
  throw ValueError("metric: kind must be 'correct_argmax', 'correct_threshold' or 'abs_error', got '" + name + "'");
}

namespace {
// Labels: int64, one per row of pred.
void labels(const Array& target, const Array& pred, const char* op) {
  same_device(target, pred, op, "target", "the predictions");
  if (target.dtype() != DType::i64)
    throw TypeError(std::string(op) + ": integer labels must be int64, got " + dtype_name(target.dtype()));
  if (target.shape() != Shape{pred.shape()[0]})
    throw ValueError(std::string(op) + ": labels must have shape (" + std::to_string(pred.shape()[0]) +
                     ",) (one per row), got " + shape_str(target.shape()));
}
}  // namespace

namespace {
// The checks losses and metrics share: predictions (rows, cols) of a trainable dtype, a one-element accumulator.
template <class Desc>
Desc rows_desc(const Array& pred, const Array& acc, const char* op) {
  trainable(pred, op, "pred");
  two_d(pred, op, "pred");
  accumulator(acc, pred, op);
  Desc d;
  d.dtype = pred.dtype();
  d.rows = pred.shape()[0];
  d.cols = pred.shape()[1];
  return d;
}
}  // namespace

void loss(const std::string& kind, const Array& pred_in, const Array& target_in, const Array& acc, const Array* grad,
          double loss_scale, double grad_scale) {
  const Array pred = pred_in.dense();  // views read as dense copies
  const Array target = target_in.dense();  // views read as dense copies
  const char* op = "loss";
  LossDesc d = rows_desc<LossDesc>(pred, acc, op);
  d.kind = loss_kind_from_name(kind);
  d.loss_scale = loss_scale;
  d.grad_scale = grad_scale;
  if (d.kind == LossKind::cross_entropy_labels && is_floating(target.dtype())) d.kind = LossKind::cross_entropy_probs;
  if (d.kind == LossKind::cross_entropy_labels) labels(target, pred, op);
  else like(target, pred, op, "target", "pred");
  if (grad) {
    like(*grad, pred, op, "grad", "pred");
    if (grad->same_memory(target)) throw ValueError("loss: grad must not share memory with target");
  }
  if (d.rows == 0 || d.cols == 0) return;
  const OpDetail detail(pred.device()->backend().capturing(),
                        [&] { return kind + " " + shape_str(pred.shape()) + (grad ? " + grad" : ""); });
  pred.device()->backend().loss(d, *pred.buffer(), *target.buffer(), *acc.buffer(),
                                grad ? grad->buffer().get() : nullptr);
}

void batch_loss(const std::string& kind, const Array& pred_in, const Array& target_in, const Array& acc,
                const Array* grad, double grad_scale) {
  const Array pred = pred_in.dense();  // views read as dense copies
  const Array target = target_in.dense();  // views read as dense copies
  const double n = pred.ndim() >= 1 ? static_cast<double>(std::max<std::int64_t>(pred.shape()[0], 1)) : 1.0;
  const double c = pred.ndim() == 2 ? static_cast<double>(std::max<std::int64_t>(pred.shape()[1], 1)) : 1.0;
  if (loss_kind_from_name(kind) == LossKind::mse) loss(kind, pred, target, acc, grad, 1.0 / c, grad_scale / (n * c));
  else loss(kind, pred, target, acc, grad, 1.0, grad_scale / n);
}

void metric(const std::string& kind, const Array& pred_in, const Array& target_in, const Array& acc) {
  const Array pred = pred_in.dense();  // views read as dense copies
  const Array target = target_in.dense();  // views read as dense copies
  const char* op = "metric";
  MetricDesc d = rows_desc<MetricDesc>(pred, acc, op);
  d.kind = metric_kind_from_name(kind);
  if (d.kind == MetricKind::correct_argmax) labels(target, pred, op);
  else like(target, pred, op, "target", "pred");
  if (d.rows == 0 || d.cols == 0) return;
  const OpDetail detail(pred.device()->backend().capturing(), [&] { return kind + " " + shape_str(pred.shape()); });
  pred.device()->backend().metric(d, *pred.buffer(), *target.buffer(), *acc.buffer());
}

namespace {
bool finite_nonnegative(double v) { return v >= 0 && std::isfinite(v); }
}  // namespace

void sgd_update(const Array& param, const Array& grad_in, const Array* velocity, double lr, double momentum,
                double weight_decay, bool nesterov) {
  const Array grad = grad_in.dense();  // views read as dense copies
  const char* op = "sgd_update";
  trainable(param, op, "param");
  like(grad, param, op, "grad", "param");
  // finite too: one epoch of an infinite lr or weight decay left the model all NaN, silently
  if (!finite_nonnegative(lr)) throw ValueError("sgd_update: lr must be finite and >= 0, got " + std::to_string(lr));
  if (!finite_nonnegative(momentum))
    throw ValueError("sgd_update: momentum must be finite and >= 0, got " + std::to_string(momentum));
  if (!finite_nonnegative(weight_decay))
    throw ValueError("sgd_update: weight_decay must be finite and >= 0, got " + std::to_string(weight_decay));
  if (nesterov && momentum == 0) throw ValueError("sgd_update: nesterov needs momentum > 0");
  if (momentum != 0 && !velocity) throw ValueError("sgd_update: momentum needs a velocity array");
  if (velocity) {
    like(*velocity, param, op, "velocity", "param");
    if (velocity->same_memory(param) || velocity->same_memory(grad))
      throw ValueError("sgd_update: velocity must not share memory with param or grad");
  }
  if (grad.same_memory(param)) throw ValueError("sgd_update: grad must not share memory with param");
  SgdDesc d;
  d.dtype = param.dtype();
  d.n = param.size();
  d.lr = lr;
  d.momentum = momentum;
  d.weight_decay = weight_decay;
  d.nesterov = nesterov;
  if (d.n == 0) return;
  const OpDetail detail(param.device()->backend().capturing(),
                        [&] { return shape_str(param.shape()) + (momentum != 0 ? " momentum" : ""); });
  param.device()->backend().sgd_update(d, *param.buffer(), *grad.buffer(),
                                       momentum != 0 ? velocity->buffer().get() : nullptr);
}

void adam_update(const Array& param, const Array& grad_in, const Array& m, const Array& v, const Array* vmax, double lr,
                 double beta1, double beta2, double eps, double weight_decay, std::int64_t step, bool amsgrad,
                 bool decoupled) {
  const Array grad = grad_in.dense();  // views read as dense copies
  const char* op = decoupled ? "adamw_update" : "adam_update";
  const auto fail = [&](const std::string& what) { throw ValueError(std::string(op) + ": " + what); };
  trainable(param, op, "param");
  like(grad, param, op, "grad", "param");
  like(m, param, op, "m", "param");
  like(v, param, op, "v", "param");
  if (amsgrad && !vmax) fail("amsgrad needs a vmax array");
  if (vmax) like(*vmax, param, op, "vmax", "param");
  const Array* arrays[] = {&param, &grad, &m, &v, vmax};
  const char* names[] = {"param", "grad", "m", "v", "vmax"};
  for (int i = 0; i < 5; ++i)
    for (int j = i + 1; j < 5; ++j)
      if (arrays[i] && arrays[j] && arrays[i]->same_memory(*arrays[j]))
        fail(std::string(names[i]) + " and " + names[j] + " must not share memory");
  if (!finite_nonnegative(lr)) fail("lr must be finite and >= 0, got " + std::to_string(lr));
  if (!(beta1 >= 0 && beta1 < 1)) fail("beta1 must be in [0, 1), got " + std::to_string(beta1));
  if (!(beta2 >= 0 && beta2 < 1)) fail("beta2 must be in [0, 1), got " + std::to_string(beta2));
  if (!finite_nonnegative(eps)) fail("eps must be finite and >= 0, got " + std::to_string(eps));
  if (!finite_nonnegative(weight_decay)) fail("weight_decay must be finite and >= 0, got " + std::to_string(weight_decay));
  if (step < 1) fail("step must be >= 1 (the step being taken), got " + std::to_string(step));
  AdamDesc d;
  d.dtype = param.dtype();
  d.n = param.size();
  d.beta1 = beta1;
  d.beta2 = beta2;
  d.eps = eps;
  const double t = static_cast<double>(step);
  d.step_size = lr / (1.0 - std::pow(beta1, t));
  d.bias2_sqrt = std::sqrt(1.0 - std::pow(beta2, t));
  d.decay = decoupled ? 0.0 : weight_decay;
  d.shrink = decoupled ? 1.0 - lr * weight_decay : 1.0;
  if (d.n == 0) return;
  const OpDetail detail(param.device()->backend().capturing(),
                        [&] { return shape_str(param.shape()) + (amsgrad ? " amsgrad" : ""); });
  param.device()->backend().adam_update(d, *param.buffer(), *grad.buffer(), *m.buffer(), *v.buffer(),
                                        amsgrad ? vmax->buffer().get() : nullptr);
}

void check_dropout_p(double p, const std::string& who) {
  if (!(p >= 0 && p <= 1)) {
    std::ostringstream s;
    s << who << ": p must be a probability in [0, 1], got " << p;
    throw ValueError(s.str());
  }
}

Array dropout(const Array& x_in, double p, std::uint64_t seed, const Array* out) {
  const Array x = x_in.dense();  // views read as dense copies
  const char* op = "dropout";
  trainable(x, op, "x");
  check_dropout_p(p, op);
  Array o;
  if (out) {
    like(*out, x, op, "out", "x");  // out may be x: element i reads and writes only element i
    o = *out;
  } else {
    o = Array::empty(x.device(), x.shape(), x.dtype());
  }
  DropoutDesc d;
  d.dtype = x.dtype();
  d.n = x.size();
  d.seed = seed;
  d.threshold = static_cast<std::uint32_t>(std::llround(p * double(1 << 24)));
  d.scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  if (d.n == 0) return o;
  const OpDetail detail(x.device()->backend().capturing(), [&] { return shape_str(x.shape()); });
  x.device()->backend().dropout(d, *x.buffer(), *o.buffer());
  return o;
}

Array sum_rows(const Array& x_in, const Array* out, double beta) {
  const Array x = x_in.dense();  // views read as dense copies
  const char* op = "sum_rows";
  trainable(x, op, "x");
  two_d(x, op, "x");
  const Shape os{x.shape()[1]};
  Array o;
  if (out) {
    same_device(*out, x, op, "out", "x");
    if (out->dtype() != x.dtype() || out->shape() != os)
      throw ValueError("sum_rows: out must be " + std::string(dtype_name(x.dtype())) + " of shape " + shape_str(os) +
                       ", got " + dtype_name(out->dtype()) + " " + shape_str(out->shape()));
    if (out->same_memory(x)) throw ValueError("sum_rows: out must not share memory with x");
    o = *out;
  } else {
    if (beta != 0) throw ValueError("sum_rows: beta != 0 needs out= (the array it scales)");
    o = Array::empty(x.device(), os, x.dtype());
  }
  const OpDetail detail(x.device()->backend().capturing(), [&] { return shape_str(x.shape()); });
  if (os[0]) x.device()->backend().sum_rows(x.dtype(), x.shape()[0], os[0], *x.buffer(), *o.buffer(), beta);
  return o;
}

Array take_rows(const Array& src_in, const Array& idx_in, std::int64_t offset, std::int64_t n, const Array* out) {
  const Array src = src_in.dense();  // views read as dense copies
  const Array idx = idx_in.dense();  // views read as dense copies
  const char* op = "take_rows";
  same_device(idx, src, op, "idx", "src");
  if (src.ndim() < 1) throw ValueError("take_rows: src must have at least one dimension");
  if (idx.dtype() != DType::i64 || idx.ndim() != 1)
    throw TypeError("take_rows: idx must be a 1-D int64 array, got " + std::string(dtype_name(idx.dtype())) + " " +
                    shape_str(idx.shape()));
  if (offset < 0 || n < 0 || offset + n > idx.size())
    throw ValueError("take_rows: rows [" + std::to_string(offset) + ", " + std::to_string(offset + n) +
                     ") of idx are outside its " + std::to_string(idx.size()) + " entries");
  if (src.shape()[0] == 0 && n > 0) throw ValueError("take_rows: src has no rows to take");
  Shape os = src.shape();
  os[0] = n;
  Array o;
  if (out) {
    same_device(*out, src, op, "out", "src");
    if (out->dtype() != src.dtype() || out->shape() != os)
      throw ValueError("take_rows: out must be " + std::string(dtype_name(src.dtype())) + " of shape " +
                       shape_str(os) + ", got " + dtype_name(out->dtype()) + " " + shape_str(out->shape()));
    if (out->same_memory(src) || out->same_memory(idx))
      throw ValueError("take_rows: out must not share memory with src or idx");
    o = *out;
  } else {
    o = Array::empty(src.device(), os, src.dtype());
  }
  const std::size_t row_bytes = src.shape()[0] ? src.nbytes() / static_cast<std::size_t>(src.shape()[0]) : 0;
  const OpDetail detail(src.device()->backend().capturing(),
                        [&] { return std::to_string(n) + " rows of " + shape_str(src.shape()); });
  if (n && row_bytes)
    src.device()->backend().take_rows(row_bytes, src.shape()[0], *src.buffer(), *idx.buffer(), offset, n, *o.buffer());
  return o;
}

}  // namespace hetnn
