// hetnn.tensordot (the Array API's, also hetnn.linalg.tensordot): built from the core's ops, so every device runs
// it (core/linalg.cpp).
#pragma once
#include <vector>

#include "core/array.h"

namespace hetnn {

// The sum over the paired axes (axes_a[i] of a with axes_b[i] of b, equal extents, none broadcast) of the products,
// shaped as a's other axes then b's; dtypes promoted (result_type). Floating types go through matmul (a permuted to
// (other, summed) and b to (summed, other)); integers as a product broadcast over blocks of rows, summed (wrapping
// as NumPy's). bool is a TypeError; mismatched, repeated or out-of-range axes a ValueError.
Array tensordot(const Array& a, const Array& b, const std::vector<int>& axes_a, const std::vector<int>& axes_b);
// The last n axes of a with the first n of b (n >= 0, at most either's dimensions).
Array tensordot(const Array& a, const Array& b, int n);

}  // namespace hetnn
