// An optimizer of the training loop: parameters with their gradients and state, one in-place step per minibatch
// through the update ops of core/nn.h. Each is one file (<name>_optimizer.cpp), listed in optimizer_table().
#pragma once
#include <cstdint>
#include <vector>

#include "core/array.h"

namespace hetnn::train {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual const char* kind() const = 0;
  // One update of every parameter with learning rate lr.
  virtual void step(double lr) = 0;
  virtual std::size_t size() const = 0;  // the parameters it updates
};

// SGD with PyTorch's options: momentum (a velocity per parameter when != 0), weight decay, Nesterov.
class Sgd final : public Optimizer {
 public:
  void configure(double momentum, double weight_decay, bool nesterov) {
    momentum_ = momentum;
    weight_decay_ = weight_decay;
    nesterov_ = nesterov;
  }
  const char* kind() const override { return "sgd"; }
  void add(const Array& p, const Array& grad, const Array* velocity);
  void step(double lr) override;
  std::size_t size() const override { return params_.size(); }

 private:
  struct Param {
    Array p, g, v;
    bool has_v;
  };
  std::vector<Param> params_;
  double momentum_ = 0, weight_decay_ = 0;
  bool nesterov_ = false;
};

// Adam, or AdamW with decoupled weight decay; amsgrad keeps the running maximum of the second moment. steps_done:
// the steps the moments have seen (the next update is step steps_done + 1).
class Adam final : public Optimizer {
 public:
  Adam(double beta1, double beta2, double eps, double weight_decay, bool amsgrad, bool decoupled,
       std::int64_t steps_done);
  const char* kind() const override { return decoupled_ ? "adamw" : "adam"; }
  void add(const Array& p, const Array& grad, const Array& m, const Array& v, const Array* vmax);
  void step(double lr) override;
  std::size_t size() const override { return params_.size(); }
  std::int64_t steps() const { return steps_; }

 private:
  struct Param {
    Array p, g, m, v, vmax;
    bool has_vmax;
  };
  std::vector<Param> params_;
  double beta1_, beta2_, eps_, weight_decay_;
  bool amsgrad_, decoupled_;
  std::int64_t steps_;
};

}  // namespace hetnn::train
