// max_pool2d front: validates arguments once (PyTorch's rules), then dispatches to the device's backend.
#pragma once
#include <array>
#include <utility>

#include "backend/backend.h"
#include "core/array.h"

namespace hetnn {

struct Pool2dArgs {
  std::array<int, 2> kernel{1, 1}, stride{1, 1}, padding{0, 0}, dilation{1, 1};  // (h, w)
  bool ceil_mode = false;
};

// Output length of one spatial dimension, as PyTorch computes it (pooling_output_shape); may be < 1.
std::int64_t pool_output_size(std::int64_t in, int k, int s, int p, int d, bool ceil_mode);

// Checks an input of shape `s` (4-D NCHW; callers reshape 3-D CHW) and dtype `t` on `dev`, and the window
// parameters; throws ValueError / TypeError.
Pool2dDesc pool2d_plan(const Shape& s, DType t, const Device& dev, const Pool2dArgs& args, const char* op);

// Index checks shared by the backends' backward passes: whether flat index v lies on window (oh, ow)'s grid
// inside the plane; whether a window holds no input position at all (possible with dilation > 1 on tiny inputs:
// its output is -inf and its index carries no gradient); the error message for a bad index.
bool pool_index_inside(const Pool2dDesc& d, std::int64_t v, std::int64_t oh, std::int64_t ow);
bool pool_window_empty(const Pool2dDesc& d, std::int64_t oh, std::int64_t ow);
std::string pool_bad_index_message(const Pool2dDesc& d, std::int64_t plane, std::int64_t oh, std::int64_t ow,
                                   std::int64_t v);
// Position of the first bad index in a host copy of the indices, or -1.
std::int64_t pool_find_bad_index(const Pool2dDesc& d, const std::int64_t* indices);
// Row blocks of a race-free backward scatter (both backends): block b covers output rows [b*rows, (b+1)*rows) and
// owns the input rows owned_rows(b) (the first and last blocks also the rows before and after every window); its
// windows reach no further than block b+1's rows. With disjoint windows (vertical extent <= stride) every block
// can run at once; otherwise the even blocks, then the odd ones.
struct PoolScatterBlocks {
  std::int64_t rows = 1, count = 0;
  bool disjoint = true;
  std::pair<std::int64_t, std::int64_t> owned_rows(const Pool2dDesc& d, std::int64_t b) const;  // [begin, end)
};
PoolScatterBlocks pool_scatter_blocks(const Pool2dDesc& d);

// First in-bounds position of a dilated window starting at `start` (PyTorch's initial index).
inline std::int64_t pool_first_inside(std::int64_t start, int d) {
  return start >= 0 ? start : start + (-start + d - 1) / d * d;
}

// y = max over each window; indices (int64, flat h*W + w in each input plane) when `indices` is non-null.
// `out` / an already valid *indices are written in place (same device, right shape and dtype), else new Arrays on
// x's device are made. Returns y.
Array max_pool2d(const Array& x, const Pool2dArgs& args, const Array* out, Array* indices);

// grad_input: grad_output scattered to the argmax positions given by `indices`; overlapping windows accumulate.
// input_shape: the forward input's shape (N, C, H, W). `out`: optional grad_input to write.
Array max_pool2d_backward(const Array& grad_output, const Array& indices, const Shape& input_shape,
                          const Pool2dArgs& args, const Array* out);

}  // namespace hetnn
