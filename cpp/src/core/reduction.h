// Reductions and statistics on hetnn arrays (the Array API's sum, prod, max, min, argmax, argmin, all, any, mean,
// var, std, cumulative_sum): axes, keepdims and the type rules, checked here once; the backends receive a
// ReduceDesc / ScanDesc (core/ops.h) with the kept and reduced dimensions coalesced.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/array.h"
#include "core/ops.h"

namespace hetnn {

// Which axes to reduce: all of them (none given), or the listed ones (negative from the end; each at most once).
struct Axes {
  bool all = true;
  std::vector<int> list;
};

// sum, prod: integers and bool give int64 (hetnn has no uint64: uint8 gives int64 too), floating types their own;
// `dtype` (optional) sets the result's type instead. max, min: the input's type; a zero-size reduction is a
// ValueError. argmax, argmin: int64 (one axis or all, then a flat index), a zero-size reduction a ValueError.
// all, any: bool. mean: floating types their own, integers and bool the device's default real type; an empty
// reduction gives NaN. var, std: the same types; correction as the Array API's (1 for the sample variance), NaN
// when fewer elements than correction + 1. keepdims keeps the reduced axes with extent 1.
// The op of that name (sum, prod, max, min, argmax, argmin, all, any); ValueError listing them otherwise.
RedOp red_op_from_name(const std::string& name);

Array reduce(RedOp op, const Array& x, const Axes& axes, bool keepdims, std::optional<DType> dtype = std::nullopt);
Array mean(const Array& x, const Axes& axes, bool keepdims);
Array var(const Array& x, const Axes& axes, double correction, bool keepdims, bool take_sqrt = false);
// The running sum along `axis` (may be omitted for 0-d and 1-d arrays); result types as sum's.
Array cumulative_sum(const Array& x, std::optional<int> axis, std::optional<DType> dtype, bool include_initial);
// The running product, with cumulative_sum's axes and type rules (a leading 1 with include_initial).
Array cumulative_prod(const Array& x, std::optional<int> axis, std::optional<DType> dtype, bool include_initial);

}  // namespace hetnn
