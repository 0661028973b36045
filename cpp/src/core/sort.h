// sort and argsort along one axis (the Array API's): the front checks the axis once, then dispatches the backend's
// sort op (core/ops.h SortDesc) over the (outer, len, inner) lines of the array.
#pragma once

#include <string>
#include <vector>

#include "core/array.h"

namespace hetnn {

// A sorted copy of x along `axis` (negative counts from the end): stable, NaN the largest value, ascending unless
// `descending`. `stable`: accepted as the Array API has it; every sort here is stable.
Array sort(const Array& x, int axis, bool descending, bool stable);
// The int64 positions along `axis` that sort x as sort() does.
Array argsort(const Array& x, int axis, bool descending, bool stable);
// Where each element of x2 would be inserted into the 1-D ascending x1 (NaN last) to keep it sorted: `side` "left"
// (before equal elements) or "right" (after them); `sorter`: int64 positions that sort x1 (argsort's), or null.
// int64, x2's shape; x1 and x2 of one dtype on one device.
Array searchsorted(const Array& x1, const Array& x2, const std::string& side, const Array* sorter);
// The int64 coordinates of x's non-zero elements (NaN counts; -0.0 does not), one array per dimension, in
// row-major order: built from the core's ops (x == 0, its count read back, a stable argsort, the coordinates by
// floor division), so it runs on every device with the one readback the result's size needs.
std::vector<Array> nonzero(const Array& x);

// The Array API's unique_*: x's distinct values in ascending order (each NaN distinct, -0.0 equal to 0.0), and on
// request the flat index of each one's first occurrence, each element's position in `values` (x's shape) and how
// many times each occurs. From the core's ops: a stable argsort, the run starts in sorted order, nonzero, take.
struct UniqueParts {
  Array values, indices, inverse, counts;  // invalid where not asked for
};
UniqueParts unique(const Array& x, bool want_indices, bool want_inverse, bool want_counts);

}  // namespace hetnn
