// Dense: y = act(x W^T + b) through the matmul front (bias and activation fused); backward dW = dz^T x,
// db = column sums of dz, dx = dz W.
#include "core/errors.h"
#include "core/nn.h"
#include "core/train/layers.h"

namespace hetnn::train {
namespace {

class Dense final : public WeightedLayer {
 public:
  using WeightedLayer::WeightedLayer;
  const char* kind() const override { return "dense"; }

  Array forward(Pass&, const Array& x, bool) override {
    Array& y = buffer(y_buf_, x, {x.shape()[0], W_.shape()[0]});
    MatmulArgs a;
    a.trans_b = true;
    a.bias = bias();
    a.act = act_;
    matmul(x, W_, &y, a);
    x_ = x;
    y_ = y;
    return y;
  }

  Array backward(Pass&, const Array& g, bool need_input_grad) override {
    const Array dz = pre_activation_grad(g);
    MatmulArgs ta;
    ta.trans_a = true;
    matmul(dz, x_, &dW_, ta);
    if (has_bias_) sum_rows(dz, &db_, 0.0);
    if (!need_input_grad) return Array{};
    Array& dx = buffer(dx_buf_, g, {g.shape()[0], W_.shape()[1]});
    matmul(dz, W_, &dx, MatmulArgs{});
    return dx;
  }
};

}  // namespace

std::unique_ptr<Layer> make_dense(const Array& W, const Array* b, const Array& dW, const Array* db, Activation act) {
  return std::make_unique<Dense>(W, b, dW, db, act, "Trainer.add_dense");
}

}  // namespace hetnn::train
