// MaxPool2d: NCHW or the device's blocked layout; after a ReLU it applies the ReLU's mask to its own (smaller)
// gradient, as at a window's argmax the ReLU's output is the pooled value, and the ReLU skips its backward.
#include "core/nn.h"
#include "core/train/layers.h"

namespace hetnn::train {
namespace {

class MaxPool2d final : public Layer {
 public:
  explicit MaxPool2d(const Pool2dArgs& args) : pool_(args) {}
  const char* kind() const override { return "maxpool2d"; }
  bool takes_blocked() const override { return true; }
  bool is_max_pool() const override { return true; }

  Array forward(Pass& p, const Array& x, bool) override {
    const std::int64_t n = x.shape()[0];
    if (p.block != 1) {
      in_shape_ = p.logical;
      const BlockedAct y = max_pool2d_blocked(*p.layouts, {x, p.logical, p.block}, pool_, &y_buf_[n], &idx_buf_[n]);
      y_ = y.a;
      idx_ = idx_buf_[n];
      p.logical = y.shape;
      return y.a;
    }
    in_shape_ = x.shape();
    idx_ = Array{};
    y_ = max_pool2d(x, pool_, nullptr, &idx_);
    return y_;
  }

  Array backward(Pass& p, const Array& g, bool need_input_grad) override {
    if (!need_input_grad) return Array{};
    Array gm = g;
    if (pool_masks_relu) {
      gm = buffer(dz_buf_, g, g.shape());
      activation_backward(g, y_, Activation::relu, &gm);
    }
    if (in_block == 1) return max_pool2d_backward(gm, idx_, in_shape_, pool_, nullptr);
    const Shape ys{in_shape_[0], in_shape_[1], y_.shape()[2], y_.shape()[3]};
    return max_pool2d_backward_blocked(*p.layouts, {gm, ys, in_block}, idx_, in_shape_, pool_,
                                       &dx_buf_[g.shape()[0]])
        .a;
  }

 private:
  Pool2dArgs pool_;
  Shape in_shape_;
  Array y_, idx_;
  Buffers y_buf_, idx_buf_, dz_buf_, dx_buf_;
};

}  // namespace

std::unique_ptr<Layer> make_max_pool2d(const Pool2dArgs& args) { return std::make_unique<MaxPool2d>(args); }

}  // namespace hetnn::train
