// Math functions written so that GCC vectorises their loops (libm's calls it does not, without -ffast-math): used
// by the CPU device's element-wise loops compiled as HETNN_CLONES (AVX2 / AVX-512 where the processor has them).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace hetnn {

// e^x in float32 within 1 ulp of the correctly rounded value (checked against double exp over every third float32,
// subnormal results included), as libm's expf: x = n ln2 + r
// with |r| <= ln2/2 (ln2 split in two, Cody and Waite), e^r by Cephes expf's degree-7 polynomial, 2^n applied as
// two factors so that results below FLT_MIN come out as the subnormals they are (and above FLT_MAX as inf).
// NaN stays NaN (its payload too), inf gives inf, -inf gives 0.
// e^x = 2^n * the returned p: x = n ln2 + r with |r| <= ln2/2 (ln2 split in two, Cody and Waite), e^r by Cephes
// expf's polynomial. The two forms below differ only in how they apply 2^n.
// e^r for |r| <= ln2/2, r = x - n ln2 (ln2 in two parts)
inline float exp_poly(float x, float n) {
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r + 1.0f;
}

inline float exp_reduced(float x, float* n_out) {
  const float n = std::floor(x * 1.44269504088896341f + 0.5f);
  *n_out = n;
  return exp_poly(x, n);
}

inline float exp_f32(float x) {
  const bool nan = x != x;
  float c = nan ? 0.0f : x;
  c = c > 89.0f ? 89.0f : c;     // beyond: inf all the same (2^128 * e^r overflows)
  c = c < -104.0f ? -104.0f : c;  // below: 0 all the same (under half the smallest subnormal)
  float n;
  const float p = exp_reduced(c, &n);
  const std::int32_t k = static_cast<std::int32_t>(n);  // in [-150, 128]
  const std::int32_t k1 = k / 2, k2 = k - k1;            // each in [-75, 64]: normal powers of two
  const std::int32_t b1 = (k1 + 127) << 23, b2 = (k2 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, sizeof s1);
  std::memcpy(&s2, &b2, sizeof s2);
  const float y = p * s1 * s2;
  return nan ? x : y;
}

// exp_f32 for x in [kExpNormalLo, kExpNormalHi] (results normal, no NaN): the same polynomial, 2^n added to the
// exponent bits (exact there), without exp_f32's clamps and two-factor scaling: half its instructions (0.44 against
// 0.95 ns an element on a Zen 4 core, AVX2). n is rounded by adding 1.5 * 2^23, which leaves it in the low bits of
// t (no floor, no conversion: 0.29 against 0.32 ns an element, AVX-512); ties round to even where floor(x + 1/2)
// rounded up, and over every third float32 of the range the results are floor's, bit for bit, within 1 ulp. For x
// outside the range the result is unspecified (but computing it is safe).
constexpr float kExpNormalLo = -87.0f, kExpNormalHi = 88.0f;
inline float exp_f32_normal(float x) {
  const float t = x * 1.44269504088896341f + 12582912.0f;
  const float p = exp_poly(x, t - 12582912.0f);
  std::uint32_t b, k;
  std::memcpy(&b, &p, sizeof b);  // p's bits; 2^n goes into the exponent
  std::memcpy(&k, &t, sizeof k);  // n + 0x4B400000: shifted by 23, the offset's bits leave the word
  b += k << 23;
  float y;
  std::memcpy(&y, &b, sizeof y);
  return y;
}

}  // namespace hetnn
