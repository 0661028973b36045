// A small JSON reader and writer for hetnn's own files in the cache directory (tuned kernel parameters). Depth and
// size are bounded: a hostile file is a ValueError, never a stack overflow.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace hetnn::json {

struct Value;
using Object = std::map<std::string, Value>;
using Array = std::vector<Value>;

struct Value {
  std::variant<std::nullptr_t, bool, double, std::string, Array, Object> v = nullptr;

  Value() = default;
  Value(std::nullptr_t) {}
  Value(bool b) : v(b) {}
  Value(double d) : v(d) {}
  Value(int i) : v(static_cast<double>(i)) {}
  Value(const char* s) : v(std::string(s)) {}
  Value(std::string s) : v(std::move(s)) {}
  Value(Array a) : v(std::move(a)) {}
  Value(Object o) : v(std::move(o)) {}

  bool is_object() const { return std::holds_alternative<Object>(v); }
  bool is_string() const { return std::holds_alternative<std::string>(v); }
  bool is_number() const { return std::holds_alternative<double>(v); }
  const Object* object() const { return std::get_if<Object>(&v); }
  Object* object() { return std::get_if<Object>(&v); }
  const std::string* string() const { return std::get_if<std::string>(&v); }
  const double* number() const { return std::get_if<double>(&v); }
  // The member `key` of an object, or nullptr (not an object, or no such member).
  const Value* get(const std::string& key) const;
};

// Throws ValueError("... at offset N") for anything that is not one JSON value within the limits.
Value parse(const std::string& text, int max_depth = 64);
// Compact, keys sorted (std::map), numbers with 17 significant digits.
std::string dump(const Value& value);

}  // namespace hetnn::json
