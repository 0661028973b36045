#include "core/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <string>

#include "core/errors.h"
#include "core/elementwise.h"
#include "core/nn.h"
#include "core/reduction.h"

namespace hetnn {

void Trainer::add_layer(std::unique_ptr<train::Layer> layer) { layers_.push_back(std::move(layer)); }

void Trainer::set_compute_dtype(DType t) {
  if (t != DType::f32 && t != DType::f64 && t != DType::f16 && t != DType::bf16)
    throw TypeError(std::string("Trainer.set_compute_dtype: float32, float64, float16 or bfloat16, not ") +
                    dtype_name(t));
  if (!layers_.empty()) throw ValueError("Trainer.set_compute_dtype: set it before the layers are added");
  compute_ = t;
}

void Trainer::set_loss_scale(double s) {
  if (!(s >= 1.0 && std::isfinite(s)))
    throw ValueError("Sequential: loss_scale must be a finite number >= 1 (float16's loss scale), got " +
                     std::to_string(s));
  scale_ = s;
}

std::pair<Array, Array> Trainer::computed(const Array& param, const Array& grad) {
  const bool mixed = compute_ == DType::f16 || compute_ == DType::bf16;
  if (!mixed || param.dtype() == compute_) return {param, grad};
  if (param.dtype() != DType::f32 || grad.dtype() != DType::f32 || grad.shape() != param.shape())
    throw TypeError(std::string("Trainer: a ") + dtype_name(compute_) + " model's parameters and gradients are " +
                    "float32 (its master weights), got " + dtype_name(param.dtype()) + " and " +
                    dtype_name(grad.dtype()));
  Master m{param, grad, Array::empty(param.device(), param.shape(), compute_),
           Array::empty(param.device(), param.shape(), compute_)};
  astype_into(param, m.copy);
  masters_.push_back(m);
  return {m.copy, m.copy_grad};
}

void Trainer::refresh_copies() {
  for (Master& m : masters_) astype_into(m.param, m.copy);
}

bool Trainer::unscale_grads() {
  const bool scaled = loss_scaling();
  Array finite;  // float16: the sum of every gradient, finite exactly when each of them is (one read per step)
  for (Master& m : masters_) {
    astype_into(m.copy_grad, m.grad);
    if (!scaled) continue;
    EwScalar inv;
    inv.is_float = true;
    inv.f = 1.0 / scale_;
    elementwise(EwOp::multiply, m.grad, inv, false, &m.grad);
    const Array s = reduce(RedOp::sum, m.grad, Axes{}, false);
    finite = finite.valid() ? elementwise(EwOp::add, finite, &s, nullptr) : s;
  }
  if (!scaled || !finite.valid()) return true;
  float total = 0;
  finite.to_host(&total);
  if (std::isfinite(total)) {
    if (++good_steps_ >= kScaleGrowthInterval) {
      scale_ = std::min(scale_ * 2.0, 16777216.0 * 65536.0);  // 2^40
      good_steps_ = 0;
    }
    return true;
  }
  scale_ = std::max(scale_ / 2.0, 1.0);
  good_steps_ = 0;
  ++skipped_;
  return false;
}

void Trainer::add_dense(const Array& W_in, const Array* b_in, const Array& dW_in, const Array* db_in,
                        Activation act) {
  const auto [W, dW] = computed(W_in, dW_in);
  if (!b_in) return add_layer(train::make_dense(W, nullptr, dW, nullptr, act));
  if (!db_in) throw ValueError("Trainer.add_dense: a bias needs its gradient array");
  const auto [b, db] = computed(*b_in, *db_in);
  add_layer(train::make_dense(W, &b, dW, &db, act));
}
void Trainer::add_activation(Activation act) { add_layer(train::make_activation(act)); }
void Trainer::add_flatten() { add_layer(train::make_flatten()); }
void Trainer::add_reshape(const Shape& per_sample) { add_layer(train::make_reshape(per_sample)); }
void Trainer::add_maxpool(const Pool2dArgs& args) { add_layer(train::make_max_pool2d(args)); }
void Trainer::add_avgpool(const Pool2dArgs& args, bool count_include_pad, std::optional<int> divisor_override) {
  add_layer(train::make_avg_pool2d(args, count_include_pad, divisor_override));
}
void Trainer::add_global_avgpool() { add_layer(train::make_global_avg_pool2d()); }
void Trainer::add_dropout(double p, std::uint64_t seed) { add_layer(train::make_dropout(p, seed)); }
void Trainer::add_conv(const Array& W_in, const Array* b_in, const Array& dW_in, const Array* db_in,
                       const Conv2dArgs& args) {
  const auto [W, dW] = computed(W_in, dW_in);
  if (!b_in) return add_layer(train::make_conv2d(W, nullptr, dW, nullptr, args));
  if (!db_in) throw ValueError("Trainer.add_conv: a bias needs its gradient array");
  const auto [b, db] = computed(*b_in, *db_in);
  add_layer(train::make_conv2d(W, &b, dW, &db, args));
}

void Trainer::set_loss(const std::string& kind) {
  loss_kind_from_name(kind);  // validates
  loss_ = kind;
}

void Trainer::add_metric(const std::string& kind, const Array& acc, bool probs) {
  metric_kind_from_name(kind);
  metrics_.push_back({kind, acc, probs});
}

void Trainer::add_param(const Array& p, const Array& grad, const Array* velocity) {
  if (adam_) throw ValueError("Trainer.add_param: the trainer runs Adam (add_adam_param)");
  if (!sgd_) sgd_ = std::make_unique<train::Sgd>();
  sgd_->add(p, grad, velocity);
}

void Trainer::set_sgd(double momentum, double weight_decay, bool nesterov) {
  if (adam_) throw ValueError("Trainer.set_sgd: the trainer runs Adam");
  if (!sgd_) sgd_ = std::make_unique<train::Sgd>();
  sgd_->configure(momentum, weight_decay, nesterov);
}

void Trainer::add_adam_param(const Array& p, const Array& grad, const Array& m, const Array& v, const Array* vmax) {
  if (!adam_) throw ValueError("Trainer.add_adam_param: call set_adam first");
  adam_->add(p, grad, m, v, vmax);
}

void Trainer::set_adam(double beta1, double beta2, double eps, double weight_decay, bool amsgrad, bool decoupled,
                       std::int64_t steps_done) {
  if (sgd_ && sgd_->size() > 0) throw ValueError("Trainer.set_adam: SGD parameters were added");
  if (adam_ && adam_->size() > 0) throw ValueError("Trainer.set_adam: Adam parameters were added already");
  adam_ = std::make_unique<train::Adam>(beta1, beta2, eps, weight_decay, amsgrad, decoupled, steps_done);
  sgd_.reset();
}

void Trainer::begin_forward(const Array& x) {
  pass_.layouts = device_layouts_ ? conv_layouts_for(x) : nullptr;
  pass_.block = 1;
}

Array Trainer::end_forward(const Array& h) {
  if (pass_.block == 1) return h;
  const Array out = reorder_blocked(*pass_.layouts, {h, pass_.logical, pass_.block}, 1,
                                    &out_buf_[pass_.logical[0]]).a;
  pass_.block = 1;
  return out;
}

Array Trainer::forward(train::Layer& l, const Array& x_in, bool train) {
  Array x = x_in;
  l.in_block = pass_.block;
  l.reordered_in = pass_.block != 1 && !l.takes_blocked();
  if (l.reordered_in) {
    l.in_logical = pass_.logical;
    x = reorder_blocked(*pass_.layouts, {x, pass_.logical, pass_.block}, 1, &l.plain_buf[x.shape()[0]]).a;
    pass_.block = 1;
  }
  return l.forward(pass_, x, train);
}

Array Trainer::backward(train::Layer& l, const Array& g, bool need_input_grad) {
  const Array dx = l.backward(pass_, g, need_input_grad);
  if (!l.reordered_in || !dx.valid()) return dx;
  return reorder_blocked(*pass_.layouts, {dx, l.in_logical, 1}, l.in_block, &l.grad_buf[l.in_logical[0]]).a;
}

Array Trainer::forward_all(const Array& x, bool train) {
  Array h = x;
  begin_forward(x);
  for (auto& l : layers_) h = forward(*l, h, train);
  return end_forward(h);
}

Array Trainer::predict(const Array& x) {
  refresh_copies();
  return forward_all(x, false);
}

void Trainer::plan_relu_pool() {
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    train::Layer& l = *layers_[i];
    l.relu_in_pool = l.output_relu() && i + 1 < layers_.size() && layers_[i + 1]->is_max_pool();
    if (i + 1 < layers_.size()) layers_[i + 1]->pool_masks_relu = l.relu_in_pool;
  }
}

Array& Trainer::scratch(int tag, const Array& like, const Shape& shape) {
  return train::buffer(scratch_[tag], like, shape);
}

namespace {
Shape rows_like(const Array& a, std::int64_t m) {
  Shape s = a.shape();
  s[0] = m;
  return s;
}
}  // namespace

const Array& Trainer::all_rows(const Array& x) {
  const std::int64_t n = x.shape().empty() ? 0 : x.shape()[0];
  if (!rows_.valid() || rows_.size() < n || rows_.device() != x.device()) {
    std::vector<std::int64_t> r(static_cast<std::size_t>(n));
    std::iota(r.begin(), r.end(), std::int64_t{0});
    rows_ = Array::from_host(x.device(), r.data(), {n}, DType::i64);
  }
  return rows_;
}

void Trainer::add_metrics(const Array& h, const Array& yb, const Array* labels, const Array* idx, std::int64_t start,
                          std::int64_t m) {
  for (const Metric& mt : metrics_) {
    if (mt.kind == "correct_argmax") {
      if (!labels) throw ValueError("Trainer: the metric correct_argmax needs labels");
      metric(mt.kind, h,
             idx ? take_rows(*labels, *idx, start, m, &scratch(3, *labels, rows_like(*labels, m))) : *labels,
             mt.acc);
    } else {
      metric(mt.kind, mt.probs ? softmax(h, &scratch(4, h, h.shape())) : h, yb, mt.acc);
    }
  }
}

Array Trainer::predict_rows(const Array& X, std::int64_t batch, bool softmax_out) {
  if (batch <= 0) throw ValueError("Trainer.predict_rows: batch must be > 0");
  if (X.ndim() < 1 || X.shape()[0] == 0) throw ValueError("Trainer.predict_rows: X has no rows");
  refresh_copies();
  const std::int64_t n = X.shape()[0];
  if (n <= batch) {  // one batch: X itself, no gather
    Array h = forward_all(X, false);
    return softmax_out ? softmax(h, nullptr) : h.copy();  // a result of its own, not a trainer's buffer
  }
  const Array& idx = all_rows(X);
  Array result;
  for (std::int64_t start = 0; start < n; start += batch) {
    const std::int64_t m = std::min(batch, n - start);
    Array h = forward_all(take_rows(X, idx, start, m, &scratch(0, X, rows_like(X, m))), false);
    if (softmax_out) h = softmax(h, &scratch(4, h, h.shape()));
    if (!result.valid()) result = Array::empty(h.device(), rows_like(h, n), h.dtype());
    result.set_rows(start, start + m, h);
  }
  return result;
}

void Trainer::evaluate_rows(const Array& X, const Array& Y, const Array* labels, std::int64_t batch,
                            const Array* acc_loss) {
  if (batch <= 0) throw ValueError("Trainer.evaluate_rows: batch must be > 0");
  refresh_copies();
  const std::int64_t n = X.ndim() < 1 ? 0 : X.shape()[0];
  if (n <= batch) {  // one batch: the rows as given, no gather
    const Array h = forward_all(X, false);
    if (acc_loss) batch_loss(loss_, h, Y, *acc_loss, nullptr);
    add_metrics(h, Y, labels, nullptr, 0, n);
    return;
  }
  const Array& idx = all_rows(X);
  for (std::int64_t start = 0; start < n; start += batch) {
    const std::int64_t m = std::min(batch, n - start);
    const Array h = forward_all(take_rows(X, idx, start, m, &scratch(0, X, rows_like(X, m))), false);
    const Array yb = take_rows(Y, idx, start, m, &scratch(1, Y, rows_like(Y, m)));
    if (acc_loss) batch_loss(loss_, h, yb, *acc_loss, nullptr);
    add_metrics(h, yb, labels, &idx, start, m);
  }
}

std::vector<double> Trainer::fit_epoch(const Array& X, const Array& Y, const Array* labels, const Array& idx,
                                       const std::int64_t* order, std::int64_t batch, const std::vector<double>& lrs,
                                       const Array& acc_loss, const std::function<void(std::int64_t)>& progress) {
  std::vector<Array> accs{acc_loss};
  for (const Metric& mt : metrics_) accs.push_back(mt.acc);
  for (const Array& a : accs)
    if (a.dtype() != DType::f32 || a.size() != 1)
      throw ValueError("Trainer.fit_epoch: an accumulator must be one float32 element, got " + shape_str(a.shape()) +
                       " " + dtype_name(a.dtype()));
  if (order) {
    if (idx.dtype() != DType::i64) throw ValueError("Trainer.fit_epoch: idx must be int64");
    const std::int64_t rows = X.ndim() < 1 ? 0 : X.shape()[0];
    for (std::int64_t i = 0; i < idx.size(); ++i)
      if (order[i] < 0 || order[i] >= rows)
        throw ValueError("Trainer.fit_epoch: order[" + std::to_string(i) + "] = " + std::to_string(order[i]) +
                         " is not a row of X (" + std::to_string(rows) + " rows)");
    Array(idx).from_host_into(order);
  }
  const float zero = 0.0f;
  for (Array& a : accs) a.from_host_into(&zero);
  run_epoch(X, Y, labels, idx, batch, lrs, acc_loss, progress);
  std::vector<double> sums;
  sums.reserve(accs.size());
  for (const Array& a : accs) {
    float v = 0;
    a.to_host(&v);
    sums.push_back(v);
  }
  return sums;
}

void Trainer::run_epoch(const Array& X, const Array& Y, const Array* labels, const Array& idx, std::int64_t batch,
                        double lr, const Array& acc_loss, const std::function<void(std::int64_t)>& progress) {
  run_epoch(X, Y, labels, idx, batch, std::vector<double>(static_cast<std::size_t>(epoch_steps(idx.size(), batch)),
                                                          lr),
            acc_loss, progress);
}

void Trainer::run_epoch(const Array& X, const Array& Y, const Array* labels, const Array& idx, std::int64_t batch,
                        const std::vector<double>& lrs, const Array& acc_loss,
                        const std::function<void(std::int64_t)>& progress) {
  if (batch <= 0) throw ValueError("Trainer.run_epoch: batch must be > 0");
  if (layers_.empty()) throw ValueError("Trainer.run_epoch: no layers");
  const std::int64_t n = idx.size();
  const std::int64_t steps = epoch_steps(n, batch);
  if (static_cast<std::int64_t>(lrs.size()) < steps)
    throw ValueError("Trainer.run_epoch: " + std::to_string(lrs.size()) + " learning rate(s) for an epoch of " +
                     std::to_string(steps) + " steps");
  for (std::int64_t i = 0; i < steps; ++i)
    if (!std::isfinite(lrs[static_cast<std::size_t>(i)]) || lrs[static_cast<std::size_t>(i)] < 0)
      throw ValueError("Trainer.run_epoch: the learning rate of step " + std::to_string(i) +
                       " must be finite and >= 0, got " + std::to_string(lrs[static_cast<std::size_t>(i)]));
  plan_relu_pool();
  refresh_copies();
  train::Optimizer* opt = adam_ ? static_cast<train::Optimizer*>(adam_.get()) : sgd_.get();
  using clock = std::chrono::steady_clock;
  auto last_report = clock::now();
  for (std::int64_t start = 0; start < n; start += batch) {
    const std::int64_t m = std::min(batch, n - start);
    if (progress && start > 0 && clock::now() - last_report > std::chrono::milliseconds(100)) {
      progress(start);
      last_report = clock::now();
    }
    if (before_step_hook_) before_step_hook_(m);
    const Array xb = take_rows(X, idx, start, m, &scratch(0, X, rows_like(X, m)));
    const Array yb = take_rows(Y, idx, start, m, &scratch(1, Y, rows_like(Y, m)));
    const Array h = forward_all(xb, true);
    if (h.ndim() != 2) throw ValueError("Trainer.run_epoch: the last layer's output must be 2-D (rows, outputs)");
    Array& g = scratch(2, h, h.shape());
    batch_loss(loss_, h, yb, acc_loss, &g, loss_scaling() ? scale_ : 1.0);
    add_metrics(h, yb, labels, &idx, start, m);
    Array grad = g;
    for (std::size_t i = layers_.size(); i-- > 0;) grad = backward(*layers_[i], grad, i > 0);
    const bool update = masters_.empty() || unscale_grads();
    if (step_hook_) step_hook_(m);
    if (opt && update) opt->step(lrs[static_cast<std::size_t>(start / batch)]);
    if (update) refresh_copies();
    if (after_step_hook_) after_step_hook_(m);
  }
  if (progress) progress(n);
}

}  // namespace hetnn
