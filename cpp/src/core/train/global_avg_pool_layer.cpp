// GlobalAvgPool2d: the mean of each channel over its whole map, (N, C, H, W) -> (N, C) (Keras's
// GlobalAveragePooling2D; PyTorch's AdaptiveAvgPool2d(1) and a flatten), through the average-pooling front with
// one window the size of the map; the backward spreads each mean's gradient evenly over the map.
#include <climits>
#include <string>

#include "core/errors.h"
#include "core/train/layers.h"

namespace hetnn::train {
namespace {

class GlobalAvgPool2d final : public Layer {
 public:
  const char* kind() const override { return "globalavgpool2d"; }

  Array forward(Pass&, const Array& x, bool) override {
    if (x.ndim() != 4)
      throw ValueError("GlobalAvgPool2d takes (N, C, H, W) input, got shape " + shape_str(x.shape()));
    const Shape& s = x.shape();
    if (s[2] > INT_MAX || s[3] > INT_MAX)
      throw ValueError("GlobalAvgPool2d: a map of " + shape_str({s[2], s[3]}) + " is larger than a window can be");
    const int h = static_cast<int>(s[2]), w = static_cast<int>(s[3]);
    pool_ = Pool2dArgs{{h, w}, {h, w}, {0, 0}, {1, 1}, false};
    in_shape_ = s;
    return avg_pool2d(x, pool_, true, std::nullopt, nullptr).reshape({s[0], s[1]});
  }

  Array backward(Pass&, const Array& g, bool need_input_grad) override {
    if (!need_input_grad) return Array{};
    return avg_pool2d_backward(g.reshape({in_shape_[0], in_shape_[1], 1, 1}), in_shape_, pool_, true, std::nullopt,
                               nullptr);
  }

 private:
  Pool2dArgs pool_;
  Shape in_shape_;
};

}  // namespace

std::unique_ptr<Layer> make_global_avg_pool2d() { return std::make_unique<GlobalAvgPool2d>(); }

}  // namespace hetnn::train
