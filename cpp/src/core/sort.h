// sort and argsort along one axis (the Array API's): the front checks the axis once, then dispatches the backend's
// sort op (core/ops.h SortDesc) over the (outer, len, inner) lines of the array.
#pragma once

#include "core/array.h"

namespace hetnn {

// A sorted copy of x along `axis` (negative counts from the end): stable, NaN the largest value, ascending unless
// `descending`. `stable`: accepted as the Array API has it; every sort here is stable.
Array sort(const Array& x, int axis, bool descending, bool stable);
// The int64 positions along `axis` that sort x as sort() does.
Array argsort(const Array& x, int axis, bool descending, bool stable);

}  // namespace hetnn
