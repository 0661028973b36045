// Conv2d through the convolution front; with the device's layouts (core/blocked.h) its input and output stay in
// the blocked layouts the device's convolutions prefer, and the next layers that take them keep them.
#include <string>
#include <tuple>

#include "core/errors.h"
#include "core/nn.h"
#include "core/train/layers.h"

namespace hetnn::train {
namespace {

class Conv2d final : public WeightedLayer {
 public:
  Conv2d(const Array& W, const Array* b, const Array& dW, const Array* db, const Conv2dArgs& args)
      : WeightedLayer(W, b, dW, db, args.act, "Trainer.add_conv"), conv_(args) {}
  const char* kind() const override { return "conv2d"; }
  bool takes_blocked() const override { return true; }
  bool output_relu() const override { return act_ == Activation::relu; }

  Array forward(Pass& p, const Array& x, bool) override {
    const std::int64_t n = x.shape()[0];
    if (p.block == 1 && x.ndim() != 4)
      throw ValueError("Conv2d takes (N, C, H, W) input, got shape " + shape_str(x.shape()));
    blocked_ = p.layouts != nullptr;
    x_ = x;
    if (blocked_) {
      bx_ = {x, p.block == 1 ? x.shape() : p.logical, p.block};
      by_ = conv2d_blocked(*p.layouts, bx_, W_, bias(), conv_, &y_buf_[n]);
      y_ = by_.a;
      p.block = by_.block;
      p.logical = by_.shape;
      return y_;
    }
    Shape ys = conv2d_output_shape({x.shape()[1], x.shape()[2], x.shape()[3]}, W_.shape(), conv_, "Conv2d");
    ys.insert(ys.begin(), n);
    Array& y = buffer(y_buf_, x, ys);
    conv2d(x, W_, bias(), conv_, &y);
    y_ = y;
    return y;
  }

  Array backward(Pass& p, const Array& g, bool need_input_grad) override {
    const Array dz = pre_activation_grad(g);
    if (blocked_)
      return conv2d_backward_blocked(*p.layouts, {dz, by_.shape, by_.block}, bx_, W_, conv_,
                                     need_input_grad ? &dx_buf_[g.shape()[0]] : nullptr, dW_,
                                     has_bias_ ? &db_ : nullptr)
          .a;
    Conv2dArgs linear = conv_;
    linear.act = Activation::none;
    Conv2dGradOut out;
    out.weight = &dW_;
    out.bias = has_bias_ ? &db_ : nullptr;
    if (need_input_grad) out.input = &buffer(dx_buf_, x_, x_.shape());
    return std::get<0>(conv2d_backward(dz, x_, W_, linear, need_input_grad, true, has_bias_, out));
  }

 private:
  Conv2dArgs conv_;  // its act is the layer's (fused into the forward)
  bool blocked_ = false;
  BlockedAct bx_, by_;
};

}  // namespace

std::unique_ptr<Layer> make_conv2d(const Array& W, const Array* b, const Array& dW, const Array* db,
                                   const Conv2dArgs& args) {
  return std::make_unique<Conv2d>(W, b, dW, db, args);
}

}  // namespace hetnn::train
