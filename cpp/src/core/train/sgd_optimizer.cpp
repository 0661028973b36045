#include "core/nn.h"
#include "core/train/optimizer.h"

namespace hetnn::train {

void Sgd::add(const Array& p, const Array& grad, const Array* velocity) {
  params_.push_back({p, grad, velocity ? *velocity : Array{}, velocity != nullptr});
}

void Sgd::step(double lr) {
  for (const Param& p : params_)
    sgd_update(p.p, p.g, p.has_v ? &p.v : nullptr, lr, momentum_, weight_decay_, nesterov_);
}

}  // namespace hetnn::train
