// Flatten and Reshape: views of their input (NCHW), the gradient reshaped back.
#include "core/train/layers.h"

namespace hetnn::train {
namespace {

class Flatten final : public Layer {
 public:
  const char* kind() const override { return "flatten"; }
  Array forward(Pass&, const Array& x, bool) override {
    in_shape_ = x.shape();
    std::int64_t f = 1;
    for (std::size_t i = 1; i < x.shape().size(); ++i) f *= x.shape()[i];
    return x.reshape({x.shape()[0], f});
  }
  Array backward(Pass&, const Array& g, bool need_input_grad) override {
    return need_input_grad ? g.reshape(in_shape_) : Array{};
  }

 private:
  Shape in_shape_;
};

class Reshape final : public Layer {
 public:
  explicit Reshape(const Shape& per_sample) : to_shape_(per_sample) {}
  const char* kind() const override { return "reshape"; }
  Array forward(Pass&, const Array& x, bool) override {
    in_shape_ = x.shape();
    Shape s{x.shape()[0]};
    s.insert(s.end(), to_shape_.begin(), to_shape_.end());
    return x.reshape(s);  // the core checks the sizes
  }
  Array backward(Pass&, const Array& g, bool need_input_grad) override {
    return need_input_grad ? g.reshape(in_shape_) : Array{};
  }

 private:
  Shape to_shape_, in_shape_;
};

}  // namespace

std::unique_ptr<Layer> make_flatten() { return std::make_unique<Flatten>(); }
std::unique_ptr<Layer> make_reshape(const Shape& per_sample) { return std::make_unique<Reshape>(per_sample); }

}  // namespace hetnn::train
