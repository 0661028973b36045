// Element-wise ops on hetnn arrays (the Array API's element-wise functions and operators): one table of ops, the
// type rules, and the descriptor both backends receive. Inputs broadcast as NumPy's do; the front coalesces the
// shapes and strides so that a backend sees at most kEwMaxDims dimensions, and it casts an operand whose dtype is
// not the op's input type first (one extra pass, only for mixed dtypes).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/array.h"
#include "core/ops.h"

namespace hetnn {

// The ops (HETNN_EW_OPS) and ElementwiseDesc are in core/ops.h with the other descriptors.
enum class EwKind : std::uint8_t { arith, real, compare, logical, bitwise, rounding, test, cast };

struct EwInfo {
  const char* name;
  int arity;
  EwKind kind;
};
const EwInfo& ew_info(EwOp op);
// The op of that name; ValueError listing the names otherwise.
EwOp ew_op_from_name(const std::string& name);
std::vector<std::string> ew_op_names();

// The shape a and b broadcast to (NumPy's rule), or ValueError naming both (`name`: the call).
Shape broadcast(const std::string& name, const Shape& a, const Shape& b);
// Row-major element strides of an array of shape `s` read as broadcast to `out` (0 along broadcast dimensions).
std::vector<std::int64_t> strides_in(const Shape& s, const Shape& out);
// x's own element strides (a view's too) read as broadcast to `out`.
std::vector<std::int64_t> view_strides(const Array& x, const Shape& out);

// The dtype two operands promote to (the Array API's table within a kind; an integer with a floating type gives
// the floating type; float16 with bfloat16 gives float32; int8 with uint8 gives int32, hetnn having no int16).
DType result_type(DType a, DType b);
// The dtype an integer or bool becomes for a real-valued op on `device`: float64 where it has it, else float32.
DType default_real(const DevicePtr& device);

// A Python number as the second (or, scalar_first, the first) operand: weak, it takes the array's dtype (an int
// out of the integer type's range is a ValueError; a float with an integer array gives the default real type).
struct EwScalar {
  bool is_float = false;
  bool is_bool = false;
  double f = 0;
  std::int64_t i = 0;
};

// op(a) or op(a, b): b null for unary ops. `out` (optional): the result's shape and dtype, same device; it may be
// an input. Returns a new Array, or, with out given, an empty one (the result is in *out).
Array elementwise(EwOp op, const Array& a, const Array* b, Array* out);
Array elementwise(EwOp op, const Array& a, const EwScalar& s, bool scalar_first, Array* out);
// cond ? a : b element-wise, broadcast together; the result's dtype is result_type(a, b); a condition that is not
// bool is read as != 0.
Array where(const Array& cond, const Array& a, const Array& b, Array* out);
// A Python number as a 0-d array on like's device, of the dtype it takes beside like (weak, as above).
Array scalar_array(const Array& like, const EwScalar& s);
// x broadcast to `shape` (NumPy's rule), materialised on x's device.
Array broadcast_to(const Array& x, const Shape& shape);
// An array of `shape` on dev filled with s: of dtype t, or the Array API's default for the number (bool; int64;
// float64 where the device has it, else float32).
Array full(const DevicePtr& dev, const Shape& shape, const EwScalar& s, const DType* t);
// x converted to dtype t (a new array; x itself when it already has that dtype and copy is false).
Array astype(const Array& x, DType t, bool copy = true);
// x converted into out (dense, x's shape and device, any dtype x can be cast to); returns out.
Array& astype_into(const Array& x, Array& out);

}  // namespace hetnn
