// IEEE binary16 <-> float by bit arithmetic: portable (clang < 15 has no _Float16 on x86) and no slower than the
// library calls GCC 12 emits for _Float16 casts. Rounding is to nearest, ties to even; NaN stays a quiet NaN.
#pragma once
#include <cstdint>
#include <cstring>

namespace hetnn {

inline float half_bits_to_float(std::uint16_t s) {
  // exponent/mantissa shifted into a float and scaled by 2^112: normals and subnormals exact
  const std::uint32_t em = s & 0x7FFFu, sign = static_cast<std::uint32_t>(s & 0x8000u) << 16;
  float f;
  const std::uint32_t shifted = em << 13;
  std::memcpy(&f, &shifted, 4);
  f *= 0x1p112f;
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (em >= 0x7C00u) bits = 0x7F800000u | ((em & 0x3FFu) << 13);  // infinity, NaN (payload kept)
  bits |= sign;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline std::uint16_t float_to_half_bits(float v) {
  std::uint32_t x;
  std::memcpy(&x, &v, 4);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7FFFFFFFu;
  if (x > 0x7F800000u) return sign | 0x7E00u | static_cast<std::uint16_t>((x >> 13) & 0x3FFu);  // NaN, quiet
  if (x >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520 (and infinity): rounds to infinity
  if (x < 0x38800000u) {  // below 2^-14: a subnormal half (or zero); round(|v| * 2^24) to nearest even
    float a;
    std::memcpy(&a, &x, 4);
    volatile float r = a * 0x1p24f;  // exact; volatile keeps the rounding trick below from being folded
    r = r + 0x1p23f;
    const float q = r - 0x1p23f;  // an integer in [0, 1024]; 1024 is the smallest normal's encoding
    return sign | static_cast<std::uint16_t>(q);
  }
  std::uint32_t h = (x - 0x38000000u) >> 13;  // rebias the exponent (127 - 15 = 112), keep 10 mantissa bits
  const std::uint32_t rest = x & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is correct rounding
  return sign | static_cast<std::uint16_t>(h);
}

}  // namespace hetnn
