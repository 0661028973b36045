// hetnn.tensordot (the Array API's, also hetnn.linalg.tensordot) and matmul's stacked forms: built from the core's
// ops, so every device runs them (core/linalg.cpp).
#pragma once
#include <optional>
#include <vector>

#include "core/array.h"
#include "core/precision.h"

namespace hetnn {

// The sum over the paired axes (axes_a[i] of a with axes_b[i] of b, equal extents, none broadcast) of the products,
// shaped as a's other axes then b's; dtypes promoted (result_type). Floating types go through matmul (a permuted to
// (other, summed) and b to (summed, other)); integers as a product broadcast over blocks of rows, summed (wrapping
// as NumPy's). bool is a TypeError; mismatched, repeated or out-of-range axes a ValueError.
Array tensordot(const Array& a, const Array& b, const std::vector<int>& axes_a, const std::vector<int>& axes_b);
// The last n axes of a with the first n of b (n >= 0, at most either's dimensions).
Array tensordot(const Array& a, const Array& b, int n);

// The Array API's (NumPy's) matmul: a 1-d operand as a row (a) or a column (b), its axis dropped from the result;
// stacks of matrices broadcast against each other; dtypes promoted (result_type). Floating types run as one batched
// product of the matmul kernels (at `precision`, else the one in force); integers exactly (wrapping as NumPy's), as
// products summed over K in blocks. 0-d operands and bool are errors, as misaligned or unbroadcastable shapes.
// core/matmul.cpp's matmul() comes here for every form its kernels do not take directly.
Array matmul_stacked(const Array& a, const Array& b, std::optional<Precision> precision);

}  // namespace hetnn
