// Indexing and manipulation of hetnn arrays (the Array API's basic indexing, take, permute_dims, matrix_transpose,
// flip, concat, stack, expand_dims, squeeze) and the creation functions arange, linspace and eye. Every check is
// here; the data moves through one backend op, copy_strided (core/ops.h, CopyDesc), which reads and writes by
// strides and offsets. As in NumPy, basic indexing, permute_dims, matrix_transpose, flip, unstack, expand_dims and
// squeeze give views (no data moved; writes through a view show in the array); reshape gives a view when the
// elements' order allows it, else a copy; the others make new arrays.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "core/array.h"
#include "core/elementwise.h"
#include "core/ops.h"

namespace hetnn {

// One entry of a basic index: an integer, a slice (start, stop and step each optional, as Python's), None (a new
// axis of extent 1) or the Ellipsis (at most one).
struct IndexItem {
  enum class Kind : std::uint8_t { integer, slice, newaxis, ellipsis };
  Kind kind = Kind::integer;
  std::int64_t index = 0;
  std::optional<std::int64_t> start, stop, step;
};
using Index = std::vector<IndexItem>;

// x[key], a view of x's memory. IndexError for an index out of bounds or too many indices.
Array getitem(const Array& x, const Index& key);
// x[key] = value: value (same device; converted to x's dtype as NumPy does) broadcast to the selection's shape.
void setitem(Array& x, const Index& key, const Array& value);

// x[mask] and x[mask] = value, mask a bool array of x's leading shape (core/mask_index.cpp): the elements where
// it is true, in row-major order, as (count,) + the rest of x's shape; value broadcasts to that shape (a leading
// axis of 1, or of the count: one row per true element). IndexError for a mask that does not fit x.
Array getitem_mask(const Array& x, const Array& mask);
void setitem_mask(Array& x, const Array& mask, const Array& value);

// The axes of x in the order `axes` (a permutation of 0..ndim-1, negative from the end).
Array permute_dims(const Array& x, const std::vector<int>& axes);
// The last two axes swapped (ndim >= 2).
Array matrix_transpose(const Array& x);
// x with the order of the elements along `axes` (every axis when none) reversed.
Array flip(const Array& x, const std::optional<std::vector<int>>& axes);
// The arrays joined along an existing axis (none given: flattened, joined end to end); the result's dtype is their
// promoted type (result_type).
Array concat(const std::vector<Array>& xs, std::optional<int> axis);
// The Array API's moveaxis, roll, tile, repeat, unstack and meshgrid (each a new array, one strided pass per piece).
// moveaxis: axes `source` moved to positions `destination` (as many, each distinct), the others kept in order.
Array moveaxis(const Array& x, const std::vector<int>& source, const std::vector<int>& destination);
// roll: elements shifted by `shift` along `axes` (one shift for all, or one each; nullopt: x flattened, one shift).
Array roll(const Array& x, const std::vector<std::int64_t>& shift, const std::optional<std::vector<int>>& axes);
// tile: x repeated `reps` times along each axis (reps aligned to x's trailing axes; more reps add leading axes).
Array tile(const Array& x, const std::vector<std::int64_t>& reps);
// repeat: each element repeated along `axis` (nullopt: x flattened) `repeats` times: one count, or one per element.
Array repeat(const Array& x, const std::vector<std::int64_t>& repeats, std::optional<int> axis);
std::vector<Array> unstack(const Array& x, int axis);
// meshgrid: 1-D arrays spread over a grid, "xy" (the first two axes swapped) or "ij" indexing.
std::vector<Array> meshgrid(const std::vector<Array>& xs, const std::string& indexing);
// tril / triu: x (its last two axes, any batch before them) with the elements above diagonal k (below, for triu) set
// to zero.
Array tril(const Array& x, std::int64_t k);
Array triu(const Array& x, std::int64_t k);
// The arrays (of one shape) joined along a new axis (a new array).
Array stack(const std::vector<Array>& xs, int axis);
// A view of x with an axis of extent 1 inserted at `axis` (-ndim-1 <= axis <= ndim).
Array expand_dims(const Array& x, int axis);
// A view of x without the listed axes (each of extent 1); none listed: every axis of extent 1.
Array squeeze(const Array& x, const std::optional<std::vector<int>>& axes);
// The elements of x at `indices` (a 1-d integer array on x's device; negative counts from the end) along `axis`
// (may be omitted for a 1-d x). IndexError when an index is out of bounds (checked on the device: two reductions
// and two scalars read back).
Array take(const Array& x, const Array& indices, std::optional<int> axis);

// Values from start to stop (exclusive) by step, as Python's range; dtype given, or int64 when all three are
// integers, else the device's default real type. The values are computed on the host in 64 bits and uploaded.
Array arange(const DevicePtr& dev, const EwScalar& start, const std::optional<EwScalar>& stop, const EwScalar& step,
             std::optional<DType> dtype);
// num values evenly spaced from start to stop (stop included with endpoint), computed on the host in float64 as
// NumPy does and uploaded; dtype a floating type (default: the device's default real type).
Array linspace(const DevicePtr& dev, double start, double stop, std::int64_t num, bool endpoint,
               std::optional<DType> dtype);
// An n_rows x n_cols array with ones on the k-th diagonal (k > 0 above the main one), zeros elsewhere.
Array eye(const DevicePtr& dev, std::int64_t n_rows, std::optional<std::int64_t> n_cols, std::int64_t k,
          std::optional<DType> dtype);

}  // namespace hetnn
