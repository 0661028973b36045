// The training loop of hetnn.nn.Sequential, in C++: one call per epoch runs every minibatch step (gather, forward,
// fused loss, metrics, backward, update) over the layers and the optimizer of core/train/layers.h, and the batch
// loops of predict and evaluate run here too, so that a step costs no Python.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/array.h"
#include "core/train/layers.h"
#include "core/train/optimizer.h"

namespace hetnn {

class Trainer {
 public:
  // Layers in order (core/train/layers.h says what each computes).
  void add_dense(const Array& W, const Array* b, const Array& dW, const Array* db, Activation act);
  void add_activation(Activation act);
  void add_flatten();
  void add_reshape(const Shape& per_sample);
  void add_maxpool(const Pool2dArgs& args);
  void add_avgpool(const Pool2dArgs& args, bool count_include_pad, std::optional<int> divisor_override);
  void add_global_avgpool();
  void add_dropout(double p, std::uint64_t seed);
  void add_conv(const Array& W, const Array* b, const Array& dW, const Array* db, const Conv2dArgs& args);
  void add_layer(std::unique_ptr<train::Layer> layer);
  const std::vector<std::unique_ptr<train::Layer>>& layers() const { return layers_; }
  // Loss on the last layer's output: "cross_entropy" (targets: int64 labels or probability rows) or "mse".
  void set_loss(const std::string& kind);
  // A metric summed into acc each step: "correct_argmax" (against `labels`, the int64 labels gathered like the
  // targets), "correct_threshold" or "abs_error" (against the targets; with probs, on softmax of the output).
  void add_metric(const std::string& kind, const Array& acc, bool probs);
  // Drops the metrics added (a model's kept trainer evaluates with the metrics of each call).
  void clear_metrics() { metrics_.clear(); }
  // SGD: each parameter with its gradient (the arrays the layers received) and velocity (when momentum != 0).
  void add_param(const Array& p, const Array& grad, const Array* velocity);
  void set_sgd(double momentum, double weight_decay, bool nesterov);
  // Adam / AdamW (decoupled): set_adam first, then each parameter with its gradient and moments (vmax with
  // amsgrad); `steps_done`: the steps the moments have seen (the next update is step steps_done + 1).
  void add_adam_param(const Array& p, const Array& grad, const Array& m, const Array& v, const Array* vmax);
  void set_adam(double beta1, double beta2, double eps, double weight_decay, bool amsgrad, bool decoupled,
                std::int64_t steps_done);
  std::int64_t adam_steps() const { return adam_ ? adam_->steps() : 0; }
  // Whether convolution chains keep their activations in the layouts the device's convolutions prefer (core/blocked.h;
  // on by default where the device offers them: the CPU device in float32). Off: NCHW between all layers.
  void set_device_layouts(bool on) { device_layouts_ = on; }
  bool device_layouts() const { return device_layouts_; }
  // Called in each step of run_epoch with the step's rows: `before_update` after the backward pass (data-parallel
  // training reduces the gradients across replicas there), `before_step` before the forward pass (a replica takes
  // the weights another updated), `after_step` after the update (per-step callbacks). Null: none.
  void set_step_hooks(std::function<void(std::int64_t)> before_update,
                      std::function<void(std::int64_t)> before_step,
                      std::function<void(std::int64_t)> after_step = nullptr) {
    step_hook_ = std::move(before_update);
    before_step_hook_ = std::move(before_step);
    after_step_hook_ = std::move(after_step);
  }
  // Mixed precision (a float16 / bfloat16 model, as torch.autocast with GradScaler): set before the layers are
  // added, with float32 parameters and gradients given to add_dense / add_conv and the optimizer. The layers then
  // compute in `t` on copies of the parameters in `t` (made from them before every predict, evaluate and epoch, and
  // after every update), and each step's gradients reach the float32 ones unscaled. float16 scales the loss's
  // gradient by loss_scale (from 2^16: halved, and the update skipped, when a gradient is not finite; doubled after
  // 2000 steps in a row without); bfloat16 has float32's range and no scale.
  void set_compute_dtype(DType t);
  DType compute_dtype() const { return compute_; }
  double loss_scale() const { return scale_; }
  void set_loss_scale(double s);
  std::int64_t skipped_steps() const { return skipped_; }  // updates skipped for a gradient that was not finite
  // Mixed into every dropout layer's per-step seeds (0: unchanged), so that replicas of one model draw other masks.
  void set_dropout_stream(std::uint64_t stream) { pass_.dropout_stream = stream; }

  // The layers' forward pass on x, as fit runs it (predict and evaluate use this, so inference and training run the
  // same code); the result lives in the trainer's buffers until the next call with the same batch size.
  Array predict(const Array& x);
  // The outputs of every row of X, forward passes over minibatches of `batch` rows; softmax: of each output row.
  Array predict_rows(const Array& X, std::int64_t batch, bool softmax);
  // The loss (into acc_loss, when given) and the metrics summed over every row of X against Y (and labels, when a
  // metric needs them), forward passes over minibatches of `batch` rows.
  void evaluate_rows(const Array& X, const Array& Y, const Array* labels, std::int64_t batch,
                     const Array* acc_loss);
  // One epoch over rows idx[0, n) of X / Y (and labels, when a metric needs them), minibatches of `batch`.
  // `progress` (optional) is told the samples whose steps have been issued, at most every 0.1 s and at the end.
  void run_epoch(const Array& X, const Array& Y, const Array* labels, const Array& idx, std::int64_t batch,
                 double lr, const Array& acc_loss,
                 const std::function<void(std::int64_t)>& progress = nullptr);
  // The same with a learning rate per step (a schedule): lrs[i] for step i; at least as many as the epoch's steps
  // (ceil(n / batch)), each finite and >= 0, checked before the first step.
  void run_epoch(const Array& X, const Array& Y, const Array* labels, const Array& idx, std::int64_t batch,
                 const std::vector<double>& lrs, const Array& acc_loss,
                 const std::function<void(std::int64_t)>& progress = nullptr);
  // One epoch as fit runs it, in one call: acc_loss and the metrics' accumulators zeroed, idx set to `order`
  // (idx.size() row numbers of X, each checked; null: idx as it is), run_epoch, and the sums read back (the loss's,
  // then the metrics' in the order they were added), which waits for the epoch's work.
  std::vector<double> fit_epoch(const Array& X, const Array& Y, const Array* labels, const Array& idx,
                                const std::int64_t* order, std::int64_t batch, const std::vector<double>& lrs,
                                const Array& acc_loss, const std::function<void(std::int64_t)>& progress = nullptr);
  // The steps an epoch over n rows in minibatches of `batch` takes.
  static std::int64_t epoch_steps(std::int64_t n, std::int64_t batch) {
    return batch > 0 ? (n + batch - 1) / batch : 0;
  }

 private:
  struct Metric {
    std::string kind;
    Array acc;
    bool probs;
  };
  // The forward and backward of one layer, with the reorders of a blocked activation for a layer that needs NCHW.
  Array forward(train::Layer& l, const Array& x, bool train);
  Array backward(train::Layer& l, const Array& g, bool need_input_grad);
  // The start and end of a forward pass: the device's layouts looked up for x; the output back in NCHW.
  void begin_forward(const Array& x);
  Array end_forward(const Array& h);
  // The whole forward pass of a batch, in NCHW.
  Array forward_all(const Array& x, bool train);
  // Marks each ReLU whose gradient mask the following max pooling applies (Layer::relu_in_pool).
  void plan_relu_pool();
  // The metrics of a batch's output h against targets yb (the labels' rows [start, start + m) of idx; idx null: the
  // labels as given).
  void add_metrics(const Array& h, const Array& yb, const Array* labels, const Array* idx, std::int64_t start,
                   std::int64_t m);
  Array& scratch(int tag, const Array& like, const Shape& shape);
  // An int64 0, 1, ..., n - 1 on x's device (the rows of predict and evaluate, in order), kept for the next call.
  const Array& all_rows(const Array& x);
  // Mixed precision: a float32 parameter (with its gradient) as the layers see it, its copy in compute_ registered;
  // the copies made from the parameters; the step's gradients unscaled into the parameters' (false: one was not
  // finite, and the update is to be skipped).
  std::pair<Array, Array> computed(const Array& param, const Array& grad);
  bool loss_scaling() const { return compute_ == DType::f16 && !masters_.empty(); }
  void refresh_copies();
  bool unscale_grads();
  struct Master {
    Array param, grad, copy, copy_grad;
  };
  std::vector<Master> masters_;
  DType compute_ = DType::f32;
  double scale_ = 65536.0;
  int good_steps_ = 0;
  std::int64_t skipped_ = 0;
  static constexpr int kScaleGrowthInterval = 2000;

  std::vector<std::unique_ptr<train::Layer>> layers_;
  std::string loss_ = "cross_entropy";
  std::vector<Metric> metrics_;
  std::unique_ptr<train::Sgd> sgd_;
  std::unique_ptr<train::Adam> adam_;
  bool device_layouts_ = true;
  std::function<void(std::int64_t)> step_hook_, before_step_hook_, after_step_hook_;
  train::Pass pass_;
  train::Buffers out_buf_;
  std::map<int, train::Buffers> scratch_;  // by tag: gathered batches, loss gradient, softmax (each by batch size)
  Array rows_;
};

}  // namespace hetnn
