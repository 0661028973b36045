// Element types an Array can hold. Which ops accept which types is decided by each op's front (core/*.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace hetnn {

// b8: bool, one byte holding 0 or 1 (NumPy's bool_), what comparisons give.
enum class DType : std::uint8_t { f32, f64, f16, bf16, i32, i64, u8, i8, b8 };

std::size_t dtype_size(DType t);
const char* dtype_name(DType t);      // NumPy spelling: "float32", "bfloat16", ...
DType dtype_from_name(const std::string& name);  // throws TypeError for unknown names
bool is_floating(DType t);

}  // namespace hetnn
