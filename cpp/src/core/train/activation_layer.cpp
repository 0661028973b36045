// ReLU, sigmoid, tanh as layers: elementwise, so they take any layout.
#include "core/errors.h"
#include "core/nn.h"
#include "core/train/layers.h"

namespace hetnn::train {
namespace {

class ActivationLayer final : public Layer {
 public:
  explicit ActivationLayer(Activation act) : act_(act) {}
  const char* kind() const override { return "activation"; }
  bool takes_blocked() const override { return true; }
  bool output_relu() const override { return act_ == Activation::relu; }

  Array forward(Pass&, const Array& x, bool) override {
    Array& y = buffer(y_buf_, x, x.shape());
    activation(x, act_, &y);
    y_ = y;
    return y;
  }

  Array backward(Pass&, const Array& g, bool need_input_grad) override {
    if (!need_input_grad) return Array{};
    if (relu_in_pool) return g;  // the next max pooling applied the mask
    Array& dx = buffer(dx_buf_, g, g.shape());
    activation_backward(g, y_, act_, &dx);
    return dx;
  }

 private:
  Activation act_;
  Array y_;
  Buffers y_buf_, dx_buf_;
};

}  // namespace

std::unique_ptr<Layer> make_activation(Activation act) {
  if (act == Activation::none) throw ValueError("Trainer.add_activation: act must be relu, sigmoid or tanh");
  return std::make_unique<ActivationLayer>(act);
}

}  // namespace hetnn::train
