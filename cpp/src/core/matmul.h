// matmul planning shared by the front (core/matmul.cpp), the trainer and the tests; the front is in core/ops.h.
#pragma once
#include <optional>

#include "backend/backend.h"
#include "core/ops.h"
#include "core/array.h"

namespace hetnn {

Activation activation_from_name(const std::string& name);  // "relu", "sigmoid", "tanh", "none"/""
std::vector<std::string> activation_names();                // the fusable activations, for the Python front

// Checks operands and returns the descriptor and result shape; throws ValueError / TypeError.
MatmulDesc matmul_plan(const Array& a, const Array& b, const Array* out, const MatmulArgs& args, Shape* out_shape);

}  // namespace hetnn
