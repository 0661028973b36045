#include "core/trainer.h"

#include <cmath>
#include <string>

#include "core/errors.h"
#include "core/matmul.h"
#include "core/nn.h"

namespace hetnn {

Trainer::Layer& Trainer::add_weighted(Layer::Kind kind, const Array& W, const Array* b, const Array& dW,
                                       const Array* db, Activation act, const char* what) {
  Layer l{kind};
  l.W = W;
  l.dW = dW;
  l.has_bias = b != nullptr;
  if (b) {
    if (!db) throw ValueError(std::string(what) + ": a bias needs its gradient array");
    l.b = *b;
    l.db = *db;
  }
  l.act = act;
  layers_.push_back(std::move(l));
  return layers_.back();
}

void Trainer::add_dense(const Array& W, const Array* b, const Array& dW, const Array* db, Activation act) {
  add_weighted(Layer::Kind::dense, W, b, dW, db, act, "Trainer.add_dense");
}

void Trainer::add_activation(Activation act) {
  if (act == Activation::none) throw ValueError("Trainer.add_activation: act must be relu, sigmoid or tanh");
  Layer l{Layer::Kind::activation};
  l.act = act;
  layers_.push_back(std::move(l));
}

void Trainer::add_flatten() { layers_.push_back(Layer{Layer::Kind::flatten}); }

void Trainer::add_reshape(const Shape& per_sample) {
  Layer l{Layer::Kind::reshape};
  l.to_shape = per_sample;
  layers_.push_back(std::move(l));
}

void Trainer::add_maxpool(const Pool2dArgs& args) {
  Layer l{Layer::Kind::maxpool};
  l.pool = args;
  layers_.push_back(std::move(l));
}

void Trainer::add_avgpool(const Pool2dArgs& args, bool count_include_pad, std::optional<int> divisor_override) {
  Layer l{Layer::Kind::avgpool};
  l.pool = args;
  l.count_include_pad = count_include_pad;
  l.divisor = divisor_override;
  layers_.push_back(std::move(l));
}

void Trainer::add_dropout(double p, std::uint64_t seed) {
  check_dropout_p(p, "Dropout");
  Layer l{Layer::Kind::dropout};
  l.drop_p = p;
  l.drop_seed = seed;
  layers_.push_back(std::move(l));
}

void Trainer::add_conv(const Array& W, const Array* b, const Array& dW, const Array* db, const Conv2dArgs& args) {
  add_weighted(Layer::Kind::conv, W, b, dW, db, args.act, "Trainer.add_conv").conv = args;
}

void Trainer::begin_forward(const Array& x) {
  layouts_ = device_layouts_ ? conv_layouts_for(x) : nullptr;
  block_ = 1;
}

Array Trainer::end_forward(const Array& h) {
  if (block_ == 1) return h;
  const Array out = reorder_blocked(*layouts_, {h, logical_, block_}, 1, &out_buf_[logical_[0]]).a;
  block_ = 1;
  return out;
}

Array Trainer::predict(const Array& x) {
  Array h = x;
  begin_forward(x);
  for (Layer& l : layers_) h = forward(l, h, false);
  return end_forward(h);
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
  params_.push_back({p, grad, velocity ? *velocity : Array{}, Array{}, Array{}, velocity != nullptr, false});
}

void Trainer::set_sgd(double momentum, double weight_decay, bool nesterov) {
  if (adam_) throw ValueError("Trainer.set_sgd: the trainer runs Adam");
  momentum_ = momentum;
  weight_decay_ = weight_decay;
  nesterov_ = nesterov;
}

void Trainer::add_adam_param(const Array& p, const Array& grad, const Array& m, const Array& v, const Array* vmax) {
  if (!adam_) throw ValueError("Trainer.add_adam_param: call set_adam first");
  if (amsgrad_ && !vmax) throw ValueError("Trainer.add_adam_param: amsgrad needs vmax");
  params_.push_back({p, grad, m, v, vmax ? *vmax : Array{}, true, vmax != nullptr});
}

void Trainer::set_adam(double beta1, double beta2, double eps, double weight_decay, bool amsgrad, bool decoupled,
                       std::int64_t steps_done) {
  if (!params_.empty() && !adam_) throw ValueError("Trainer.set_adam: SGD parameters were added");
  if (steps_done < 0) throw ValueError("Trainer.set_adam: steps_done must be >= 0");
  adam_ = true;
  beta1_ = beta1;
  beta2_ = beta2;
  eps_ = eps;
  weight_decay_ = weight_decay;
  amsgrad_ = amsgrad;
  decoupled_ = decoupled;
  adam_steps_ = steps_done;
}

void Trainer::update(double lr) {
  if (!adam_) {
    for (const Param& p : params_)
      sgd_update(p.p, p.g, p.has_v ? &p.v : nullptr, lr, momentum_, weight_decay_, nesterov_);
    return;
  }
  ++adam_steps_;
  for (const Param& p : params_)
    adam_update(p.p, p.g, p.v, p.v2, p.has_vmax ? &p.vmax : nullptr, lr, beta1_, beta2_, eps_, weight_decay_,
                adam_steps_, amsgrad_, decoupled_);
}

Array& Trainer::buffer(std::map<std::int64_t, Array>& m, const Array& like, const Shape& shape) {
  Array& b = m[shape[0]];
  if (!b.valid() || b.shape() != shape || b.dtype() != like.dtype())
    b = Array::empty(like.device(), shape, like.dtype());
  return b;
}

Array Trainer::forward(Layer& l, const Array& x_in, bool train) {
  Array x = x_in;
  const std::int64_t n = x.shape()[0];
  // Layers that take any block: convolutions, elementwise activations, max pooling. The others get NCHW.
  const bool any_block = l.kind == Layer::Kind::conv || l.kind == Layer::Kind::activation ||
                         l.kind == Layer::Kind::maxpool;
  l.in_block = block_;
  l.reordered_in = block_ != 1 && !any_block;
  if (l.reordered_in) {
    l.in_logical = logical_;
    x = reorder_blocked(*layouts_, {x, logical_, block_}, 1, &l.plain_buf[n]).a;
    block_ = 1;
  }
  switch (l.kind) {
    case Layer::Kind::dense: {
      Array& y = buffer(l.y_buf, x, {n, l.W.shape()[0]});
      MatmulArgs a;
      a.trans_b = true;
      a.bias = l.has_bias ? &l.b : nullptr;
      a.act = l.act;
      matmul(x, l.W, &y, a);
      l.x = x;
      l.y = y;
      return y;
    }
    case Layer::Kind::activation: {
      Array& y = buffer(l.y_buf, x, x.shape());
      activation(x, l.act, &y);
      l.y = y;
      return y;
    }
    case Layer::Kind::flatten: {
      l.in_shape = x.shape();
      std::int64_t f = 1;
      for (std::size_t i = 1; i < x.shape().size(); ++i) f *= x.shape()[i];
      return x.reshape({n, f});
    }
    case Layer::Kind::reshape: {
      l.in_shape = x.shape();
      Shape s{n};
      s.insert(s.end(), l.to_shape.begin(), l.to_shape.end());
      return x.reshape(s);  // the core checks the sizes
    }
    case Layer::Kind::maxpool: {
      if (block_ != 1) {
        l.in_shape = logical_;
        const BlockedAct y = max_pool2d_blocked(*layouts_, {x, logical_, block_}, l.pool, &l.y_buf[n], &l.idx_buf[n]);
        l.y = y.a;
        l.idx = l.idx_buf[n];
        logical_ = y.shape;
        return y.a;
      }
      l.in_shape = x.shape();
      l.idx = Array{};
      l.y = max_pool2d(x, l.pool, nullptr, &l.idx);
      return l.y;
    }
    case Layer::Kind::avgpool: {
      l.in_shape = x.shape();
      l.y = avg_pool2d(x, l.pool, l.count_include_pad, l.divisor, nullptr);
      return l.y;
    }
    case Layer::Kind::dropout: {
      if (!train || l.drop_p == 0) return x;
      // each step's mask from its own mixed seed (and the replica's stream)
      l.drop_step_seed = splitmix64(dropout_stream_ ? splitmix64(l.drop_seed, dropout_stream_) : l.drop_seed,
                                    l.drop_calls++);
      return dropout(x, l.drop_p, l.drop_step_seed, &buffer(l.y_buf, x, x.shape()));
    }
    case Layer::Kind::conv: {
      if (block_ == 1 && x.ndim() != 4)
        throw ValueError("Conv2d takes (N, C, H, W) input, got shape " + shape_str(x.shape()));
      l.blocked_conv = layouts_ != nullptr;
      if (l.blocked_conv) {
        l.bx = {x, block_ == 1 ? x.shape() : logical_, block_};
        l.by = conv2d_blocked(*layouts_, l.bx, l.W, l.has_bias ? &l.b : nullptr, l.conv, &l.y_buf[n]);
        l.x = x;
        l.y = l.by.a;
        block_ = l.by.block;
        logical_ = l.by.shape;
        return l.y;
      }
      Shape ys = conv2d_output_shape({x.shape()[1], x.shape()[2], x.shape()[3]}, l.W.shape(), l.conv, "Conv2d");
      ys.insert(ys.begin(), n);
      Array& y = buffer(l.y_buf, x, ys);
      conv2d(x, l.W, l.has_bias ? &l.b : nullptr, l.conv, &y);
      l.x = x;
      l.y = y;
      return y;
    }
  }
  return x;
}

void Trainer::plan_relu_pool() {
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    Layer& l = layers_[i];
    const bool relu = l.act == Activation::relu &&
                      (l.kind == Layer::Kind::conv || l.kind == Layer::Kind::activation);
    l.relu_in_pool = relu && i + 1 < layers_.size() && layers_[i + 1].kind == Layer::Kind::maxpool;
    if (i + 1 < layers_.size()) layers_[i + 1].pool_masks_relu = l.relu_in_pool;
  }
}

Array Trainer::pre_activation_grad(Layer& l, const Array& g) {
  if (l.act == Activation::none || l.relu_in_pool) return g;
  Array& dz = buffer(l.dz_buf, g, g.shape());
  activation_backward(g, l.y, l.act, &dz);
  return dz;
}

Array Trainer::backward(Layer& l, const Array& g, bool need_input_grad) {
  const Array dx = backward_layer(l, g, need_input_grad);
  if (!l.reordered_in || !dx.valid()) return dx;
  return reorder_blocked(*layouts_, {dx, l.in_logical, 1}, l.in_block, &l.grad_buf[l.in_logical[0]]).a;
}

Array Trainer::backward_layer(Layer& l, const Array& g, bool need_input_grad) {
  const std::int64_t n = g.shape()[0];
  switch (l.kind) {
    case Layer::Kind::dense: {
      const Array dz = pre_activation_grad(l, g);
      MatmulArgs ta;
      ta.trans_a = true;
      matmul(dz, l.x, &l.dW, ta);  // dW = dz^T x
      if (l.has_bias) sum_rows(dz, &l.db, 0.0);
      if (!need_input_grad) return Array{};
      Array& dx = buffer(l.dx_buf, g, {n, l.W.shape()[1]});
      matmul(dz, l.W, &dx, MatmulArgs{});  // dx = dz W
      return dx;
    }
    case Layer::Kind::activation: {
      if (!need_input_grad) return Array{};
      if (l.relu_in_pool) return g;
      Array& dx = buffer(l.dx_buf, g, g.shape());
      activation_backward(g, l.y, l.act, &dx);
      return dx;
    }
    case Layer::Kind::flatten:
    case Layer::Kind::reshape:
      return need_input_grad ? g.reshape(l.in_shape) : Array{};
    case Layer::Kind::maxpool: {
      if (!need_input_grad) return Array{};
      Array gm = g;
      if (l.pool_masks_relu) {
        gm = buffer(l.dz_buf, g, g.shape());
        activation_backward(g, l.y, Activation::relu, &gm);
      }
      if (l.in_block == 1) return max_pool2d_backward(gm, l.idx, l.in_shape, l.pool, nullptr);
      const Shape ys{l.in_shape[0], l.in_shape[1], l.y.shape()[2], l.y.shape()[3]};
      return max_pool2d_backward_blocked(*layouts_, {gm, ys, l.in_block}, l.idx, l.in_shape, l.pool,
                                         &l.dx_buf[n]).a;
    }
    case Layer::Kind::avgpool:
      if (!need_input_grad) return Array{};
      return avg_pool2d_backward(g, l.in_shape, l.pool, l.count_include_pad, l.divisor, nullptr);
    case Layer::Kind::dropout:
      if (!need_input_grad) return Array{};
      if (l.drop_p == 0) return g;
      return dropout(g, l.drop_p, l.drop_step_seed, &buffer(l.dx_buf, g, g.shape()));  // the same mask
    case Layer::Kind::conv: {
      const Array dz = pre_activation_grad(l, g);
      if (l.blocked_conv)
        return conv2d_backward_blocked(*layouts_, {dz, l.by.shape, l.by.block}, l.bx, l.W, l.conv,
                                       need_input_grad ? &l.dx_buf[n] : nullptr, l.dW, l.has_bias ? &l.db : nullptr)
            .a;
      Conv2dArgs linear = l.conv;
      linear.act = Activation::none;
      Conv2dGradOut out;
      out.weight = &l.dW;
      out.bias = l.has_bias ? &l.db : nullptr;
      if (need_input_grad) out.input = &buffer(l.dx_buf, l.x, l.x.shape());
      return std::get<0>(conv2d_backward(dz, l.x, l.W, linear, need_input_grad, true, l.has_bias, out));
    }
  }
  return Array{};
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
  const auto scratch = [&](int tag, const Array& like, const Shape& shape) -> Array& {
    Array& b = scratch_[{tag, shape[0]}];
    if (!b.valid() || b.shape() != shape || b.dtype() != like.dtype())
      b = Array::empty(like.device(), shape, like.dtype());
    return b;
  };
  const auto rows_like = [](const Array& a, std::int64_t m) {
    Shape s = a.shape();
    s[0] = m;
    return s;
  };
  using clock = std::chrono::steady_clock;
  auto last_report = clock::now();
  for (std::int64_t start = 0; start < n; start += batch) {
    const std::int64_t m = std::min(batch, n - start);
    if (progress && start > 0 && clock::now() - last_report > std::chrono::milliseconds(100)) {
      progress(start);
      last_report = clock::now();
    }
    if (before_step_hook_) before_step_hook_(m);
    Array xb = take_rows(X, idx, start, m, &scratch(0, X, rows_like(X, m)));
    Array yb = take_rows(Y, idx, start, m, &scratch(1, Y, rows_like(Y, m)));
    Array h = xb;
    begin_forward(xb);
    for (Layer& l : layers_) h = forward(l, h, true);
    h = end_forward(h);
    if (h.ndim() != 2) throw ValueError("Trainer.run_epoch: the last layer's output must be 2-D (rows, outputs)");
    Array& g = scratch(2, h, h.shape());
    batch_loss(loss_, h, yb, acc_loss, &g);
    for (const Metric& mt : metrics_) {
      if (mt.kind == "correct_argmax") {
        if (!labels) throw ValueError("Trainer.run_epoch: correct_argmax needs labels");
        metric(mt.kind, h, take_rows(*labels, idx, start, m, &scratch(3, *labels, rows_like(*labels, m))), mt.acc);
      } else {
        metric(mt.kind, mt.probs ? softmax(h, &scratch(4, h, h.shape())) : h, yb, mt.acc);
      }
    }
    Array grad = g;
    for (std::size_t i = layers_.size(); i-- > 0;) grad = backward(layers_[i], grad, i > 0);
    if (step_hook_) step_hook_(m);
    update(lrs[static_cast<std::size_t>(start / batch)]);
    if (after_step_hook_) after_step_hook_(m);
  }
  if (progress) progress(n);
}

}  // namespace hetnn
