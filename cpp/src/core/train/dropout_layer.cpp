// Inverted dropout: step k's mask from splitmix64(seed mixed with the pass's stream, k); the backward applies the
// same mask to the gradient (the op draws a mask from its seed and the element index alone).
#include "core/nn.h"
#include "core/train/layers.h"

namespace hetnn::train {
namespace {

class Dropout final : public Layer {
 public:
  Dropout(double p, std::uint64_t seed) : p_(p), seed_(seed) {}
  const char* kind() const override { return "dropout"; }

  Array forward(Pass& pass, const Array& x, bool train) override {
    if (!train || p_ == 0) return x;
    step_seed_ = splitmix64(pass.dropout_stream ? splitmix64(seed_, pass.dropout_stream) : seed_, steps_++);
    return dropout(x, p_, step_seed_, &buffer(y_buf_, x, x.shape()));
  }

  Array backward(Pass&, const Array& g, bool need_input_grad) override {
    if (!need_input_grad) return Array{};
    if (p_ == 0) return g;
    return dropout(g, p_, step_seed_, &buffer(dx_buf_, g, g.shape()));
  }

 private:
  double p_;
  std::uint64_t seed_, steps_ = 0, step_seed_ = 0;
  Buffers y_buf_, dx_buf_;
};

}  // namespace

std::unique_ptr<Layer> make_dropout(double p, std::uint64_t seed) {
  check_dropout_p(p, "Dropout");
  return std::make_unique<Dropout>(p, seed);
}

}  // namespace hetnn::train
