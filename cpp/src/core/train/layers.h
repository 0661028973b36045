// The layers and optimizers the training loop runs, one row each: a new one is a file, a factory here and its row
// (docs/adding-a-layer.md). tests/test_layer_table.py checks that its own table has every row.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/ops.h"
#include "core/train/layer.h"

namespace hetnn::train {

// Dense: y = act(x W^T + b); W (out, in).
std::unique_ptr<Layer> make_dense(const Array& W, const Array* b, const Array& dW, const Array* db, Activation act);
// 2-D convolution: W (O, C/groups, kh, kw), b (O); args.act is fused into the forward.
std::unique_ptr<Layer> make_conv2d(const Array& W, const Array* b, const Array& dW, const Array* db,
                                   const Conv2dArgs& args);
// ReLU, sigmoid or tanh, elementwise.
std::unique_ptr<Layer> make_activation(Activation act);
std::unique_ptr<Layer> make_flatten();
// (n, ...) -> (n, *per_sample), a view.
std::unique_ptr<Layer> make_reshape(const Shape& per_sample);
std::unique_ptr<Layer> make_max_pool2d(const Pool2dArgs& args);
// Average pooling (NCHW: a blocked activation is reordered before it); PyTorch's AvgPool2d.
std::unique_ptr<Layer> make_avg_pool2d(const Pool2dArgs& args, bool count_include_pad,
                                       std::optional<int> divisor_override);
// The mean of each channel over its map: (N, C, H, W) -> (N, C).
std::unique_ptr<Layer> make_global_avg_pool2d();
// Inverted dropout with probability p while training (identity in predict); step k's mask is drawn from a seed
// mixed from (seed, k) and the pass's dropout stream.
std::unique_ptr<Layer> make_dropout(double p, std::uint64_t seed);

// One row of the tables: the kind (Layer::kind() / Optimizer::kind()), the Python classes that build it, and the
// file that holds it (relative to cpp/src).
struct TableRow {
  const char* kind;
  const char* python;
  const char* source;
};
const std::vector<TableRow>& layer_table();
const std::vector<TableRow>& optimizer_table();

}  // namespace hetnn::train
