// Training ops front (dense layers, losses, metrics, SGD, minibatch gathering): validates operands once, then
// dispatches to the device's backend. Used by hetnn.nn / hetnn.optim; float32, and float64 on devices with fp64.
#pragma once
#include <string>

#include "backend/backend.h"
#include "core/array.h"

namespace hetnn {

// out = act(x), elementwise (any shape). act must not be none.
Array activation(const Array& x, Activation act, const Array* out);
// dx = dy * act'(.) from the activation's output y (same shape as dy).
Array activation_backward(const Array& dy, const Array& y, Activation act, const Array* out);
// Row-wise softmax of a 2-D (rows, cols) array.
Array softmax(const Array& x, const Array* out);

LossKind loss_kind_from_name(const std::string& name);      // "cross_entropy", "mse" (labels vs probs: from target)
MetricKind metric_kind_from_name(const std::string& name);  // "correct_argmax", "correct_threshold", "abs_error"

// acc (one float32 element) += loss_scale * sum of the rows' losses of pred (rows, cols) against target; grad
// (optional, pred's shape and dtype) = grad_scale * d(sum)/d(pred). Cross-entropy takes int64 labels (rows,) or
// float targets (rows, cols); mse float targets (rows, cols).
void loss(const std::string& kind, const Array& pred, const Array& target, const Array& acc, const Array* grad,
          double loss_scale, double grad_scale);
// The loss hetnn.nn trains and reports: acc += the sum over the rows of each row's loss (mean squared error: the
// mean over its columns; cross-entropy: as is), grad = d(mean over the rows)/d(pred). fit (trainer.cpp) and
// evaluate (the Python front) both call this, so the two cannot scale differently.
void batch_loss(const std::string& kind, const Array& pred, const Array& target, const Array& acc,
                const Array* grad, double grad_scale = 1.0);  // grad_scale: a loss scale on the gradient only
// acc (one float32 element) += the metric's sum over pred (rows, cols) and target (int64 (rows,) for
// correct_argmax, else pred's shape and dtype).
void metric(const std::string& kind, const Array& pred, const Array& target, const Array& acc);
// In-place SGD step on param (see SgdDesc); velocity (param's shape and dtype) is required when momentum != 0.
void sgd_update(const Array& param, const Array& grad, const Array* velocity, double lr, double momentum,
                double weight_decay, bool nesterov);
// In-place Adam (decoupled = false) or AdamW (decoupled = true) step number `step` (1, 2, ...) on param with
// PyTorch's definitions (see AdamDesc); m, v and, with amsgrad, vmax are param's shape and dtype (zeros before the
// first step).
void adam_update(const Array& param, const Array& grad, const Array& m, const Array& v, const Array* vmax, double lr,
                 double beta1, double beta2, double eps, double weight_decay, std::int64_t step, bool amsgrad,
                 bool decoupled);
// Inverted dropout: out = x * mask / (1 - p), the mask drawn from (seed, element index) alone (see DropoutDesc), so
// the same call on the gradient is the backward pass and every device draws the same mask. out may be x.
Array dropout(const Array& x, double p, std::uint64_t seed, const Array* out);
// Raises ValueError("<who>: p must be a probability in [0, 1], got <p>") unless 0 <= p <= 1 (NaN fails): the one
// check of a dropout probability (the op, the Trainer's layer, nn.Dropout's constructor).
void check_dropout_p(double p, const std::string& who);
// out (cols,) = beta * out + column sums of x (rows, cols). beta != 0 needs out.
Array sum_rows(const Array& x, const Array* out, double beta);
// Rows idx[offset : offset + n] of src (first dimension indexed) into out (n, ...); idx is int64 on src's device.
// Indices outside [0, len(src)) are clamped on the device; the callers check them on the host.
Array take_rows(const Array& src, const Array& idx, std::int64_t offset, std::int64_t n, const Array* out);

}  // namespace hetnn
