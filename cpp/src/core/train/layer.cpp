#include "core/train/layer.h"

#include <string>

#include "core/errors.h"
#include "core/nn.h"

namespace hetnn::train {

Array& Buffers::operator[](std::int64_t rows) {
  for (auto it = slots_.begin(); it != slots_.end(); ++it)
    if (it->first == rows) {
      slots_.splice(slots_.end(), slots_, it);  // list nodes do not move: references stay valid
      return slots_.back().second;
    }
  if (slots_.size() >= kSlots) slots_.pop_front();
  slots_.emplace_back(rows, Array());
  return slots_.back().second;
}

Array& buffer(Buffers& m, const Array& like, const Shape& shape) {
  Array& b = m[shape[0]];
  if (!b.valid() || b.shape() != shape || b.dtype() != like.dtype())
    b = Array::empty(like.device(), shape, like.dtype());
  return b;
}

WeightedLayer::WeightedLayer(const Array& W, const Array* b, const Array& dW, const Array* db, Activation act,
                             const char* what)
    : W_(W), dW_(dW), has_bias_(b != nullptr), act_(act) {
  if (b) {
    if (!db) throw ValueError(std::string(what) + ": a bias needs its gradient array");
    b_ = *b;
    db_ = *db;
  }
}

std::vector<std::pair<Array, Array>> WeightedLayer::parameters() const {
  std::vector<std::pair<Array, Array>> out{{W_, dW_}};
  if (has_bias_) out.emplace_back(b_, db_);
  return out;
}

Array WeightedLayer::pre_activation_grad(const Array& g) {
  if (act_ == Activation::none || relu_in_pool) return g;
  Array& dz = buffer(dz_buf_, g, g.shape());
  activation_backward(g, y_, act_, &dz);
  return dz;
}

}  // namespace hetnn::train
