// The training loop of hetnn.nn.Sequential.fit, in C++: one call per epoch runs every minibatch step (gather,
// forward, fused loss, metrics, backward, SGD) through the validated fronts of core/matmul.h, core/nn.h and
// core/max_pool.h, so that a step costs no Python (measured: about 35 us of a 784-128-10 step of 250 us).
#pragma once
#include <functional>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/array.h"
#include "core/blocked.h"
#include "core/pool2d.h"

namespace hetnn {

class Trainer {
 public:
  // Layers in order. Dense: y = act(x W^T + b), gradients written into dW / db.
  void add_dense(const Array& W, const Array* b, const Array& dW, const Array* db, Activation act);
  void add_activation(Activation act);
  void add_flatten();
  void add_reshape(const Shape& per_sample);  // (n, ...) -> (n, *per_sample), a view
  void add_maxpool(const Pool2dArgs& args);
  // Average pooling (NCHW: a blocked activation is reordered before it); PyTorch's AvgPool2d.
  void add_avgpool(const Pool2dArgs& args, bool count_include_pad, std::optional<int> divisor_override);
  // Inverted dropout with probability p while training (identity in predict); step k's mask is drawn from a seed
  // mixed from (seed, k), so a trainer built again with another seed draws other masks.
  void add_dropout(double p, std::uint64_t seed);
  // Loss on the last layer's output: "cross_entropy" (targets: int64 labels or probability rows) or "mse".
  void set_loss(const std::string& kind);
  // A metric summed into acc each step: "correct_argmax" (against `labels`, the int64 labels gathered like the
  // targets), "correct_threshold" or "abs_error" (against the targets; with probs, on softmax of the output).
  // A 2-D convolution layer: W (O, C/groups, kh, kw), optional bias b (O), their gradient arrays, and the
  // convolution's arguments (args.act: the activation fused into the forward).
  void add_conv(const Array& W, const Array* b, const Array& dW, const Array* db, const Conv2dArgs& args);
  void add_metric(const std::string& kind, const Array& acc, bool probs);
  // SGD: each parameter with its gradient (the arrays add_dense received) and velocity (when momentum != 0).
  void add_param(const Array& p, const Array& grad, const Array* velocity);
  void set_sgd(double momentum, double weight_decay, bool nesterov);
  // Adam / AdamW (decoupled): each parameter with its gradient and moments (vmax with amsgrad); `steps_done`: the
  // steps the moments have seen (the next update is step steps_done + 1).
  void add_adam_param(const Array& p, const Array& grad, const Array& m, const Array& v, const Array* vmax);
  void set_adam(double beta1, double beta2, double eps, double weight_decay, bool amsgrad, bool decoupled,
                std::int64_t steps_done);
  std::int64_t adam_steps() const { return adam_steps_; }
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
  // Mixed into every dropout layer's per-step seeds (0: unchanged), so that replicas of one model draw other masks.
  void set_dropout_stream(std::uint64_t stream) { dropout_stream_ = stream; }

  // The layers' forward pass on x, as fit runs it (predict and evaluate use this, so inference and training run the
  // same code); the result lives in the trainer's buffers until the next call with the same batch size.
  Array predict(const Array& x);
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
  // The steps an epoch over n rows in minibatches of `batch` takes.
  static std::int64_t epoch_steps(std::int64_t n, std::int64_t batch) {
    return batch > 0 ? (n + batch - 1) / batch : 0;
  }

 private:
  struct Layer {
    enum class Kind { dense, activation, flatten, reshape, maxpool, avgpool, conv, dropout };
    explicit Layer(Kind k) : kind(k) {}
    Kind kind;
    Array W, b, dW, db;
    bool has_bias = false;
    Activation act = Activation::none;
    Pool2dArgs pool;
    bool count_include_pad = true;     // avgpool
    std::optional<int> divisor;       // avgpool: divisor_override
    Conv2dArgs conv;  // its act is the layer's (fused into the forward)
    double drop_p = 0;
    std::uint64_t drop_seed = 0, drop_calls = 0, drop_step_seed = 0;
    Array x, y, idx;  // what the backward needs from the forward
    // Device layouts (core/blocked.h): the block of the layer's input (the block of the gradient it returns) and,
    // where the layer needs NCHW and got a blocked input, that input's logical shape (reordered in the forward, its
    // gradient reordered back in the backward). Convolutions: input and output as held.
    int in_block = 1;
    bool reordered_in = false;
    Shape in_logical;
    bool blocked_conv = false;
    BlockedAct bx, by;
    std::map<std::int64_t, Array> idx_buf, plain_buf, grad_buf;
    // A ReLU (fused or a layer) followed by max pooling: the pool's backward applies the ReLU's mask on its own,
    // 4x smaller, gradient (at a window's argmax the ReLU's output is the pooled value) and the ReLU's is skipped.
    bool relu_in_pool = false, pool_masks_relu = false;
    Shape in_shape, to_shape;  // reshape: the per-sample target
    std::map<std::int64_t, Array> y_buf, dz_buf, dx_buf;  // by batch size
  };
  struct Metric {
    std::string kind;
    Array acc;
    bool probs;
  };
  struct Param {
    Array p, g, v;      // SGD: v the velocity; Adam: v the first moment
    Array v2, vmax;     // Adam: the second moment, its running maximum (amsgrad)
    bool has_v, has_vmax;
  };
  // A layer with weights W (gradient dW), an optional bias and a fused activation, appended; returned for the rest.
  Layer& add_weighted(Layer::Kind kind, const Array& W, const Array* b, const Array& dW, const Array* db,
                      Activation act, const char* what);
  // The gradient before the layer's fused activation (g itself without one).
  Array pre_activation_grad(Layer& l, const Array& g);
  Array forward(Layer& l, const Array& x, bool train);
  void update(double lr);
  Array backward(Layer& l, const Array& g, bool need_input_grad);
  Array backward_layer(Layer& l, const Array& g, bool need_input_grad);
  // The start and end of a forward pass: the device's layouts looked up for x; the output back in NCHW.
  void begin_forward(const Array& x);
  Array end_forward(const Array& h);
  // Marks each ReLU whose gradient mask the following max pooling applies (Layer::relu_in_pool).
  void plan_relu_pool();
  static Array& buffer(std::map<std::int64_t, Array>& m, const Array& like, const Shape& shape);

  std::vector<Layer> layers_;
  std::string loss_ = "cross_entropy";
  std::vector<Metric> metrics_;
  std::vector<Param> params_;
  double momentum_ = 0, weight_decay_ = 0;
  bool nesterov_ = false;
  bool adam_ = false, amsgrad_ = false, decoupled_ = false;
  double beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8;
  std::int64_t adam_steps_ = 0;
  bool device_layouts_ = true;
  std::function<void(std::int64_t)> step_hook_, before_step_hook_, after_step_hook_;
  std::uint64_t dropout_stream_ = 0;
  ConvLayouts* layouts_ = nullptr;  // this pass's, when device_layouts_
  int block_ = 1;                   // the block of the activation the forward pass holds, and its logical shape
  Shape logical_;
  std::map<std::int64_t, Array> out_buf_;
  std::map<std::pair<int, std::int64_t>, Array> scratch_;  // gathered batches, loss gradient, softmax: by batch size
};

}  // namespace hetnn
