// matmul front: validates operands once, then dispatches to the device's backend.
#pragma once
#include <optional>

#include "backend/backend.h"
#include "core/array.h"

namespace hetnn {

struct MatmulArgs {
  bool trans_a = false, trans_b = false;
  double alpha = 1.0, beta = 0.0;
  const Array* bias = nullptr;  // (N,), same device and dtype
  Activation act = Activation::none;
};

Activation activation_from_name(const std::string& name);  // "relu", "sigmoid", "tanh", "none"/""
std::vector<std::string> activation_names();                // the fusable activations, for the Python front

// Checks operands and returns the descriptor and result shape; throws ValueError / TypeError.
MatmulDesc matmul_plan(const Array& a, const Array& b, const Array* out, const MatmulArgs& args, Shape* out_shape);

// out = act(alpha * op(a) @ op(b) + beta * out + bias). 2-D (M,K)@(K,N) or batched 3-D with batch broadcasting of 1 or 2-D.
// Returns `out` when given, else a new Array on the operands' device.
Array matmul(const Array& a, const Array& b, const Array* out, const MatmulArgs& args);

}  // namespace hetnn
