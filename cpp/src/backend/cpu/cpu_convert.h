// Reading and writing the elements of a CPU buffer of any dtype as a computation type, and walking strided
// dimensions (the element-wise ops and the reductions): bool is stored as uint8, float16 and bfloat16 go through
// float32.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "backend/cpu/half_convert.h"
#include "core/dtype.h"
#include "core/ops.h"

namespace hetnn {

// Element i of a buffer of type t (storage), as C.
template <class C>
C load(DType t, const void* p, std::int64_t i) {
  switch (t) {
    case DType::f32: return static_cast<C>(static_cast<const float*>(p)[i]);
    case DType::f64: return static_cast<C>(static_cast<const double*>(p)[i]);
    case DType::i32: return static_cast<C>(static_cast<const std::int32_t*>(p)[i]);
    case DType::i64: return static_cast<C>(static_cast<const std::int64_t*>(p)[i]);
    case DType::u8:
    case DType::b8: return static_cast<C>(static_cast<const std::uint8_t*>(p)[i]);
    case DType::i8: return static_cast<C>(static_cast<const std::int8_t*>(p)[i]);
    case DType::f16:
    case DType::bf16: {
      float f;
      widen_to_f32(t, static_cast<const std::uint16_t*>(p) + i, &f, 1);
      return static_cast<C>(f);
    }
  }
  return C{};
}

// v as the output type O: floating to integer saturates (NaN gives 0), anything to bool is != 0.
template <class O, class C>
O convert(C v) {
  if constexpr (std::is_same_v<O, bool>) {
    return v != C(0);
  } else if constexpr (std::is_integral_v<O> && std::is_floating_point_v<C>) {
    if (v != v) return 0;
    if (v <= static_cast<C>(std::numeric_limits<O>::min())) return std::numeric_limits<O>::min();
    if (v >= static_cast<C>(std::numeric_limits<O>::max())) return std::numeric_limits<O>::max();
    return static_cast<O>(v);
  } else {
    return static_cast<O>(v);
  }
}

// out[i + j] = convert<V>(r[j]) for j < m, out holding S (the storage type; bool is stored as uint8).
template <class S, class V, class R>
void store_as(void* out, std::int64_t i, std::int64_t m, const R* r) {
  for (std::int64_t j = 0; j < m; ++j) static_cast<S*>(out)[i + j] = static_cast<S>(convert<V>(r[j]));
}

// Stores r[0, m) (type R) at output elements [i, i + m) of type t.
template <class R>
void store(DType t, void* out, std::int64_t i, std::int64_t m, const R* r) {
  switch (t) {
    case DType::f32: return store_as<float, float>(out, i, m, r);
    case DType::f64: return store_as<double, double>(out, i, m, r);
    case DType::i32: return store_as<std::int32_t, std::int32_t>(out, i, m, r);
    case DType::i64: return store_as<std::int64_t, std::int64_t>(out, i, m, r);
    case DType::u8: return store_as<std::uint8_t, std::uint8_t>(out, i, m, r);
    case DType::i8: return store_as<std::int8_t, std::int8_t>(out, i, m, r);
    case DType::b8: return store_as<std::uint8_t, bool>(out, i, m, r);
    case DType::f16:
    case DType::bf16: {
      float f[256];
      for (std::int64_t j0 = 0; j0 < m; j0 += 256) {
        const std::int64_t c = std::min<std::int64_t>(256, m - j0);
        for (std::int64_t j = 0; j < c; ++j) f[j] = static_cast<float>(r[j0 + j]);
        narrow_from_f32(t, f, static_cast<std::uint16_t*>(out) + i + j0, c);
      }
      return;
    }
  }
}

// Walks the output's elements [begin, end) in row-major order, giving each one's element offset in one operand.
struct Walker {
  const Shape& shape;
  const std::vector<std::int64_t>& st;
  std::int64_t idx[kEwMaxDims] = {};
  std::int64_t off = 0;
  Walker(const Shape& s, const std::vector<std::int64_t>& strides, std::int64_t start) : shape(s), st(strides) {
    for (int k = static_cast<int>(s.size()) - 1; k >= 0; --k) {
      idx[k] = start % s[k];
      start /= s[k];
      off += idx[k] * st[k];
    }
  }
  void next() {
    for (int k = static_cast<int>(shape.size()) - 1; k >= 0; --k) {
      off += st[k];
      if (++idx[k] < shape[k]) return;
      off -= idx[k] * st[k];
      idx[k] = 0;
    }
  }
};

}  // namespace hetnn
