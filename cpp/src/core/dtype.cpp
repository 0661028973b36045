#include "core/dtype.h"

#include "core/errors.h"

namespace hetnn {

namespace {
struct Entry {
  DType type;
  const char* name;
  std::size_t size;
  bool floating;
};
constexpr Entry kTypes[] = {
    {DType::f32, "float32", 4, true}, {DType::f64, "float64", 8, true}, {DType::f16, "float16", 2, true},
    {DType::bf16, "bfloat16", 2, true}, {DType::i32, "int32", 4, false}, {DType::i64, "int64", 8, false},
    {DType::u8, "uint8", 1, false},     {DType::i8, "int8", 1, false},      {DType::b8, "bool", 1, false},
};
const Entry& entry(DType t) { return kTypes[static_cast<int>(t)]; }
}  // namespace

std::size_t dtype_size(DType t) { return entry(t).size; }
const char* dtype_name(DType t) { return entry(t).name; }
bool is_floating(DType t) { return entry(t).floating; }

DType dtype_from_name(const std::string& name) {
  for (const auto& e : kTypes)
    if (name == e.name) return e.type;
  std::string known;
  for (const auto& e : kTypes) known += std::string(known.empty() ? "" : ", ") + e.name;
  throw TypeError("unsupported dtype '" + name + "' (hetnn arrays hold " + known + ")");
}

}  // namespace hetnn
