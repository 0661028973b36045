#include "core/errors.h"
#include "core/nn.h"
#include "core/train/optimizer.h"

namespace hetnn::train {

Adam::Adam(double beta1, double beta2, double eps, double weight_decay, bool amsgrad, bool decoupled,
           std::int64_t steps_done)
    : beta1_(beta1), beta2_(beta2), eps_(eps), weight_decay_(weight_decay), amsgrad_(amsgrad),
      decoupled_(decoupled), steps_(steps_done) {
  if (steps_done < 0) throw ValueError("Trainer.set_adam: steps_done must be >= 0");
}

void Adam::add(const Array& p, const Array& grad, const Array& m, const Array& v, const Array* vmax) {
  if (amsgrad_ && !vmax) throw ValueError("Trainer.add_adam_param: amsgrad needs vmax");
  params_.push_back({p, grad, m, v, vmax ? *vmax : Array{}, vmax != nullptr});
}

void Adam::step(double lr) {
  ++steps_;
  for (const Param& p : params_)
    adam_update(p.p, p.g, p.m, p.v, p.has_vmax ? &p.vmax : nullptr, lr, beta1_, beta2_, eps_, weight_decay_, steps_,
                amsgrad_, decoupled_);
}

}  // namespace hetnn::train
