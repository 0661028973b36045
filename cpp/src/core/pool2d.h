// Pooling geometry (PyTorch's rules) shared by the pooling fronts and both backends; the fronts are in core/ops.h.
#pragma once
#include <array>
#include <utility>

#include "backend/backend.h"
#include "core/array.h"
#include "core/ops.h"

namespace hetnn {

// Output length of one spatial dimension, as PyTorch computes it (pooling_output_shape); may be < 1.
std::int64_t pool_output_size(std::int64_t in, int k, int s, int p, int d, bool ceil_mode);

// TypeError unless t is a floating-point dtype the device has.
void pool_require_float(DType t, const Device& dev, const char* op, const char* what, bool integers = false);

// Checks an input of shape `s` (4-D NCHW, or 3-D CHW as N = 1) and dtype `t` on `dev`, and the window
// parameters; throws ValueError / TypeError.
// integers: the op also takes int8, uint8, int32 and int64 (max pooling: a max selects, so integers pool exactly).
Pool2dDesc pool2d_plan(const Shape& s, DType t, const Device& dev, const Pool2dArgs& args, const char* op,
                       bool integers = false);
// The same without the dtype (layers check their shapes before any data arrives); dtype left float32.
Pool2dDesc pool2d_geometry(const Shape& s, const Pool2dArgs& args, const char* op);
// ValueError unless a backward pass's input_shape is (N, C, H, W) or (C, H, W) with no negative entry.
void pool_check_input_shape(const Shape& input_shape, const char* op);

// Index checks shared by the backends' backward passes: whether flat index v lies on window (oh, ow)'s grid
// inside the plane; whether a window holds no input position at all (possible with dilation > 1 on tiny inputs:
// its output is -inf and its index carries no gradient); the error message for a bad index.
bool pool_index_inside(const Pool2dDesc& d, std::int64_t v, std::int64_t oh, std::int64_t ow);
bool pool_window_empty(const Pool2dDesc& d, std::int64_t oh, std::int64_t ow);
// With zero padding (d.zero_pad): whether window (oh, ow) has a tap on the padding (which reads 0); and whether
// index v of that window carries no gradient and is valid: -1 in such a window, anything in an empty one.
bool pool_window_padded(const Pool2dDesc& d, std::int64_t oh, std::int64_t ow);
bool pool_index_free(const Pool2dDesc& d, std::int64_t v, std::int64_t oh, std::int64_t ow);
// The windows that may reach the zero padding: output rows [0, top) and [bottom, OH) whole, and in the rows
// between, columns [0, left) and [right, OW). All empty without zero padding.
struct PoolPadBands {
  std::int64_t top = 0, bottom = 0, left = 0, right = 0;
};
PoolPadBands pool_pad_bands(const Pool2dDesc& d);
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

// "(N, C, H, W) k=(kh, kw) s=(sh, sw) p=(ph, pw) d=(dh, dw)": a pooling op's operands, for the profiler.
std::string pool_window_str(const Shape& input, const Pool2dDesc& d);
// Checks a caller's output array `o` (`what`: "out", "indices out") against the shape and dtype it must have.
void pool_check_out(const Array& o, const Shape& shape, DType t, const Array& ref, const char* op, const char* what);
// The output's shape for an input of shape `input`: (C, OH, OW) for a 3-D input, else (N, C, OH, OW).
Shape pool_output_shape(const Shape& input, const Pool2dDesc& d);

// First in-bounds position of a dilated window starting at `start` (PyTorch's initial index).
inline std::int64_t pool_first_inside(std::int64_t start, int d) {
  return start >= 0 ? start : start + (-start + d - 1) / d * d;
}


}  // namespace hetnn
