// AvgPool2d (PyTorch's options) over the average-pooling front, in NCHW.
#include "core/train/layers.h"

namespace hetnn::train {
namespace {

class AvgPool2d final : public Layer {
 public:
  AvgPool2d(const Pool2dArgs& args, bool count_include_pad, std::optional<int> divisor)
      : pool_(args), count_include_pad_(count_include_pad), divisor_(divisor) {}
  const char* kind() const override { return "avgpool2d"; }

  Array forward(Pass&, const Array& x, bool) override {
    in_shape_ = x.shape();
    return avg_pool2d(x, pool_, count_include_pad_, divisor_, nullptr);
  }

  Array backward(Pass&, const Array& g, bool need_input_grad) override {
    if (!need_input_grad) return Array{};
    return avg_pool2d_backward(g, in_shape_, pool_, count_include_pad_, divisor_, nullptr);
  }

 private:
  Pool2dArgs pool_;
  bool count_include_pad_;
  std::optional<int> divisor_;
  Shape in_shape_;
};

}  // namespace

std::unique_ptr<Layer> make_avg_pool2d(const Pool2dArgs& args, bool count_include_pad,
                                       std::optional<int> divisor_override) {
  return std::make_unique<AvgPool2d>(args, count_include_pad, divisor_override);
}

}  // namespace hetnn::train
