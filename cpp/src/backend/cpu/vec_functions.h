// Element-wise functions eight lanes at a time: the CPU device's float32 tanh, log, sin, pow, ... evaluated in
// double, and float64 exp and log (libm's calls do not vectorise; NumPy 2 has vectorised versions). Written with
// GCC's generic vector types so that each HETNN_CLONES caller compiles them at its width (two AVX2 registers or one
// AVX-512 for a double vector); the auto-vectoriser gave up on these loops ("control flow in loop") as soon as a
// float select met the double arithmetic. float32: the input is exact in double and every double form is good to
// about 1e-12 relative, so the one rounding to float32 gives the correctly rounded result except where the exact
// value lies within that of a midpoint: within 1 ulp everywhere (checked over every fifth float32 of each
// function's domain; off by one in fewer than 1 in 10^6). float32 tanh, atan, sinh and cosh compute in float
// lanes, 16 at a time (twice the lanes; checked over every float32: scripts/check_float_lanes.cpp). float64: within
// 1 ulp (sampled against long double).
// Each function takes only the inputs its caller's domain test admits (elementwise_cpu.cpp sends other blocks to
// libm): no NaN, and a domain where the forms need no special cases; lanes beyond a call's end may hold anything.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace hetnn::vecfn {

typedef float F8 __attribute__((vector_size(32)));
typedef double D8 __attribute__((vector_size(64)));
typedef std::int64_t L8 __attribute__((vector_size(64)));
typedef float F16 __attribute__((vector_size(64)));  // float lanes (one AVX-512 register, two AVX2 ones)
typedef std::int32_t I16 __attribute__((vector_size(64)));
// Exponent bits are built in unsigned lanes: lanes outside a form's domain (a block's NaN or overflowing elements,
// whose results libm's replace) carry any n, and signed overflow there would be undefined behaviour.
typedef std::uint64_t U8 __attribute__((vector_size(64)));
typedef std::uint32_t U16 __attribute__((vector_size(64)));

#define HETNN_VI inline __attribute__((always_inline))

constexpr double kShift = 6755399441055744.0;  // 1.5 * 2^52: x + kShift rounds x to an integer in the low bits
constexpr double kLn2 = 0.693147180559945309417232121458176568;
constexpr double kLn2Hi = 6.93147180369123816490e-01;  // ln 2 in two parts, n * kLn2Hi exact for |n| < 2^20
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kPi = 3.14159265358979323846264338327950288;
constexpr double kPio2Hi = 1.57079632673412561417e+00;  // pi/2 in two parts: n * kPio2Hi exact for |n| < 2^20
constexpr double kPio2Lo = 6.07710050650619224932e-11;
constexpr float kFltMax = 3.40282347e+38f;

HETNN_VI F8 load(const float* p) {
  F8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
HETNN_VI void store(float* p, F8 v) { std::memcpy(p, &v, sizeof v); }
HETNN_VI F16 load16(const float* p) {
  F16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
HETNN_VI void store(float* p, F16 v) { std::memcpy(p, &v, sizeof v); }
HETNN_VI D8 load(const double* p) {
  D8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
HETNN_VI void store(double* p, D8 v) { std::memcpy(p, &v, sizeof v); }
// Horner's rule, the highest-degree coefficient first: horner(x, c_n, ..., c_1, c_0) = (c_n x + ... + c_1) x + c_0,
// each step p * x + c (contracted to a fused multiply-add where the target has one); double or float lanes
template <class V>
HETNN_VI V horner_steps(V p, V) {
  return p;
}
template <class V, class S, class... C>
HETNN_VI V horner_steps(V p, V x, S c, C... rest) {
  return horner_steps(p * x + c, x, rest...);
}
template <class V, class S, class... C>
HETNN_VI V horner(V x, S hi, C... rest) {
  return horner_steps(V{} + hi, x, rest...);
}
HETNN_VI D8 widen(F8 v) { return __builtin_convertvector(v, D8); }
HETNN_VI F8 narrow(D8 v) { return __builtin_convertvector(v, F8); }
HETNN_VI D8 sqrt(D8 v) {  // GCC turns the lane loop into one vector square root (-fno-math-errno)
  double t[8];
  std::memcpy(t, &v, sizeof v);
  for (double& e : t) e = std::sqrt(e);
  std::memcpy(&v, t, sizeof v);
  return v;
}
HETNN_VI D8 abs(D8 v) { return (D8)((L8)v & 0x7FFFFFFFFFFFFFFF); }
HETNN_VI D8 with_sign_of(D8 v, D8 s) {  // |v| with the sign of s
  return (D8)(((L8)v & 0x7FFFFFFFFFFFFFFF) | ((L8)s & std::numeric_limits<std::int64_t>::min()));
}

// e^r - 1 for |r| <= ln2/2 as r + r^2 p(r), p of degree 7 fitted to it (least squares on Chebyshev nodes, in 40
// digits): within 2e-13 of the result (Taylor's needs degree 9)
HETNN_VI D8 expm1_poly(D8 r) {
  const D8 p = horner(r, 2.7625103456125615e-06, 2.486787206587467e-05, 0.0001984120875394296, 0.0013888839107173761,
                      0.008333333353718988, 0.04166666678628104, 0.166666666666483, 0.49999999999955097);
  return r + r * r * p;
}
// e^x = s (1 + q) with s = 2^n, for |x| <= 700: x = n ln2 + r, |r| <= ln2/2
HETNN_VI void exp_split(D8 x, D8& s, D8& q) {
  const D8 t = x * 1.44269504088896340736 + kShift;
  const D8 n = t - kShift;
  q = expm1_poly((x - n * kLn2Hi) - n * kLn2Lo);
  s = (D8)(((U8)t + 1023) << 52);  // t's low bits hold n
}
HETNN_VI D8 exp_d(D8 x) {
  D8 s, q;
  exp_split(x, s, q);
  return s + s * q;
}

// ln y = e ln2 + l for a positive, finite, normal y: y = 2^e m with m in [sqrt(1/2), sqrt(2)), l = ln m =
// 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.172, as 2s + 2s z P(z), z = s^2, P of degree 4 fitted as expm1's:
// within 2e-13 of l
HETNN_VI void log_parts(D8 y, D8& e, D8& l) {
  const L8 b = (L8)y;
  D8 m = (D8)((b & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000);                      // [1, 2)
  e = (D8)((b >> 52) | 0x4330000000000000) - (4503599627370496.0 + 1023.0);  // the exponent, exactly
  const L8 big = m > 1.41421356237309504880;
  m = big ? m * 0.5 : m;
  e = big ? e + 1.0 : e;
  const D8 s = (m - 1.0) / (m + 1.0), z = s * s;
  const D8 p = horner(z, 0.09681722684229842, 0.11095677130222789, 0.14285877695866536, 0.19999999396153842,
                      0.3333333333368985);
  l = 2.0 * s + 2.0 * s * z * p;
}
HETNN_VI D8 log_d(D8 y) {
  D8 e, l;
  log_parts(y, e, l);
  return e * kLn2 + l;
}
// ln(1 + x) for x > -1: u = 1 + x rounded, plus what the rounding dropped where |x| < 1 (there ln u is u - 1 to
// first order; beyond, the drop is below u's ulp, and u - 1 itself may round: at x = 2^53 it "dropped" 1)
HETNN_VI D8 log1p_d(D8 x) {
  const D8 u = 1.0 + x;
  return log_d(u) + (abs(x) < 1.0 ? x - (u - 1.0) : 0.0);
}

// atan(n / d) for n >= 0, d >= 0, not both 0 (n = inf or d = 0 included), one division: n / d beyond tan(3pi/8)
// as pi/2 + atan(-d/n), beyond tan(pi/8) as pi/4 + atan((n-d)/(n+d)); then |u| <= tan(pi/8) = 0.414 and atan u =
// u + u z A(z), z = u^2, A of degree 7 fitted as expm1's: within 2e-13 (the series needs 13 terms)
HETNN_VI D8 atan_ratio(D8 n, D8 d) {
  const L8 big = n > 2.41421356237309504880 * d, mid = n > 0.41421356237309504880 * d;
  const D8 num = big ? -d : mid ? n - d : n;
  const D8 den = big ? n : mid ? n + d : d;
  const D8 base = big ? kPi / 2 : mid ? kPi / 4 : 0.0;
  const D8 u = num / den, z = u * u;
  const D8 p = horner(z, 0.032998707681635556, -0.06029830813552158, 0.07605397159406324, -0.0908417200414473,
                      0.11110823945883, -0.1428570823198382, 0.19999999951168643, -0.3333333333326852);
  return base + (u + u * z * p);
}

// sin r and cos r for |r| <= pi/4 (a little beyond, from the reduction): r + r z S(z) and 1 - z/2 + z^2 C(z),
// z = r^2 <= 0.62, S and C of degree 4 fitted as expm1's: within 2e-14
HETNN_VI void sincos_poly(D8 r, D8& s, D8& c) {
  const D8 z = r * r;
  const D8 ps = horner(z, -2.4804401976205356e-08, 2.7555977599142064e-06, -0.00019841266872943096,
                       0.008333333331034002, -0.16666666666663815);
  s = r + r * z * ps;
  const D8 pc = horner(z, 2.069971617606893e-09, -2.755636014231265e-07, 2.480158517941614e-05, -0.0013888888887244907,
                       0.04166666666666463);
  c = 1.0 - 0.5 * z + z * z * pc;
}
// x = n pi/2 + r: n's quadrant (its two low bits) and r; exact enough for |x| <= kTrigMax (beyond: libm)
constexpr float kTrigMax = 131072.0f;
HETNN_VI D8 reduce_pio2(D8 x, L8& quadrant) {
  const D8 t = x * 0.63661977236758134308 + kShift;
  const D8 n = t - kShift;
  quadrant = (L8)t & 3;
  return (x - n * kPio2Hi) - n * kPio2Lo;
}

// ---- the float32 functions: 8 lanes in, 8 out ----

HETNN_VI F8 keep_zero(F8 a, F8 y) { return a == 0.0f ? a : y; }  // f(+-0) = +-0: the zero's sign kept
HETNN_VI F8 clamp(F8 a, float lo, float hi) {
  const F8 c = a < lo ? lo : a;
  return c > hi ? hi : c;
}

HETNN_VI F8 log8(F8 a) { return narrow(log_d(widen(a))); }
HETNN_VI F8 log2_8(F8 a) {
  D8 e, l;
  log_parts(widen(a), e, l);
  return narrow(e + l * 1.44269504088896340736);
}
HETNN_VI F8 log10_8(F8 a) {
  D8 e, l;
  log_parts(widen(a), e, l);
  return narrow(e * 0.30102999566398119521 + l * 0.43429448190325182765);
}
HETNN_VI F8 log1p8(F8 a) { return keep_zero(a, narrow(log1p_d(widen(a)))); }
HETNN_VI F8 atanh8(F8 a) {
  const D8 d = widen(a);
  return keep_zero(a, narrow(0.5 * log1p_d(2.0 * d / (1.0 - d))));
}
HETNN_VI F8 asinh8(F8 a) {  // log1p(t + t^2 / (1 + sqrt(1 + t^2))), t = |x|: no cancellation near 0
  const D8 d = widen(a), t = abs(d), t2 = t * t;
  return keep_zero(a, narrow(with_sign_of(log1p_d(t + t2 / (1.0 + sqrt(1.0 + t2))), d)));
}
HETNN_VI F8 acosh8(F8 a) {  // log1p(t + sqrt(t (x + 1))), t = x - 1 (exact)
  const D8 d = widen(a), t = d - 1.0;
  return narrow(log1p_d(t + sqrt(t * (d + 1.0))));
}
HETNN_VI F8 pow8(F8 a, F8 b) {  // x > 0: e^(y ln x), y ln x held within +-700 (overflow and 0 all the same)
  D8 w = widen(b) * log_d(widen(a));
  w = w > 700.0 ? 700.0 : w;
  w = w < -700.0 ? -700.0 : w;
  return narrow(exp_d(w));
}
HETNN_VI F8 sin8(F8 a) {
  L8 q;
  D8 s, c;
  sincos_poly(reduce_pio2(widen(a), q), s, c);
  const D8 v = (q & 1) != 0 ? c : s;
  return keep_zero(a, narrow((q & 2) != 0 ? -v : v));
}
HETNN_VI F8 cos8(F8 a) {
  L8 q;
  D8 s, c;
  sincos_poly(reduce_pio2(widen(a), q), s, c);
  const D8 v = (q & 1) != 0 ? s : c;
  return narrow(((q + 1) & 2) != 0 ? -v : v);
}
HETNN_VI F8 tan8(F8 a) {
  L8 q;
  D8 s, c;
  sincos_poly(reduce_pio2(widen(a), q), s, c);
  return keep_zero(a, narrow((q & 1) != 0 ? -c / s : s / c));
}
HETNN_VI F8 atan2_8(F8 a, F8 b) {  // atan2(y = a, x = b), both finite and non-zero
  const D8 y = widen(a), x = widen(b);
  const D8 v = atan_ratio(abs(y), abs(x));
  return narrow(with_sign_of(x < 0.0 ? kPi - v : v, y));
}
// asin s for |s| <= 1/2 as s + s z P(z), z = s^2, P of degree 9 fitted as expm1's (within 2e-14); beyond, |x| > 1/2
// reflected to s = sqrt((1 - |x|) / 2) <= 1/2 (1 - |x| exact): no division (atan's form took one and a root)
HETNN_VI L8 asin_half(D8 t, D8& r) {  // t = |x| <= 1: r = asin of the reduced s; returns whether t was reflected
  const L8 big = t > 0.5;
  const D8 z = big ? 0.5 - 0.5 * t : t * t;
  const D8 s = big ? sqrt(z) : t;
  const D8 p = horner(z, 0.02801752120423027, -0.0030636532508882723, 0.015733489741212338, 0.013173365233711152,
                      0.017443628149945288, 0.022365882515612154, 0.03038219162935859, 0.04464285222417601,
                      0.07500000003782922, 0.16666666666661878);
  r = s + s * z * p;
  return big;
}
HETNN_VI F8 asin8(F8 a) {  // beyond 1/2: pi/2 - 2 asin(s)
  const D8 d = widen(a);
  D8 r;
  const L8 big = asin_half(abs(d), r);
  return keep_zero(a, narrow(with_sign_of(big ? kPi / 2 - 2.0 * r : r, d)));
}
HETNN_VI F8 acos8(F8 a) {  // |x| <= 1/2: pi/2 - asin x; beyond: 2 asin(s), or pi - 2 asin(s) for x < 0
  const D8 d = widen(a);
  D8 r;
  const L8 big = asin_half(abs(d), r);
  return narrow(big ? (d < 0.0 ? kPi - 2.0 * r : 2.0 * r) : kPi / 2 - with_sign_of(r, d));
}
HETNN_VI F8 hypot8(F8 a, F8 b) {
  const D8 x = widen(a), y = widen(b);
  return narrow(sqrt(x * x + y * y));
}

// ---- float32 functions in float lanes: 16 at a time ----

// e^y for 0 <= y <= 89.5 as 2^n (1 + q): y = n ln2 + r, |r| <= ln2/2 (ln2 in two parts, n times the first exact,
// y - n ln2hi exact by Sterbenz's lemma for n >= 1), q = r + r^2 Q(r), Q Taylor's to r^7 / 7! (within 4e-9); n as a
// float holding an integer
HETNN_VI F16 minus_n_ln2(F16 y, F16 n) { return (y - n * 0.693145751953125f) - n * 1.428606765330187045e-06f; }
HETNN_VI F16 exp_parts16(F16 y, F16& n) {
  n = (y * 1.44269504f + 12582912.0f) - 12582912.0f;  // rounded to an integer (1.5 * 2^23 added)
  const F16 r = minus_n_ln2(y, n);
  const F16 q = horner(r, 1.0f / 5040, 1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f);
  return (r * r) * q + r;
}
HETNN_VI F16 pow2_16(F16 n) {  // -126 <= n <= 127
  return (F16)(((U16)__builtin_convertvector(n, I16) + 127) << 23);
}
HETNN_VI F16 abs16(F16 a) { return (F16)((I16)a & 0x7FFFFFFF); }
HETNN_VI F16 signed_as(F16 v, F16 s) {  // v >= 0 with the sign of s
  return (F16)((I16)v | ((I16)s & std::numeric_limits<std::int32_t>::min()));
}

// tanh: t = |x| <= 1 as t + t z P(z), z = t^2, P of degree 7 fitted to (tanh t - t) / t^3 (least squares of the
// relative error on Chebyshev nodes, 27 bits); beyond, 1 - 2 / (e^2t + 1) (exp_parts16); from 9.1 on it is 1 in
// float32. Every float32 of [0, 10) against tanh in double rounded to float32, with fused multiply-adds and without:
// none more than 1 ulp away, 0.2 % 1 ulp away (the double form: 1 in 10^6), at 16 lanes where that form had 8
// (scripts/check_float_lanes.cpp).
HETNN_VI F16 tanh16(F16 a) {
  const F16 t = abs16(a), z = t * t;
  const F16 p = horner(z, 0.0001417955432233068f, -0.0009199668306646327f, 0.0032018741006292445f,
                       -0.008694428049323527f, 0.02182832614058741f, -0.053963205367323706f, 0.13333309299374468f,
                       -0.33333333142184957f);
  const F16 small = (t * z) * p + t;
  const F16 c = t < 9.1f ? t : 9.1f;
  F16 n;
  const F16 m = exp_parts16(c + c, n) + 1.0f;
  const F16 e = (F16)((U16)m + ((U16)__builtin_convertvector(n, I16) << 23));
  const F16 big = 1.0f - 2.0f / (e + 1.0f);
  return signed_as(t <= 1.0f ? small : (t < 9.1f ? big : 1.0f), a);
}

// cosh and sinh: t = |x| <= 1 by Taylor's series (cosh: 1 + z/2 + z^2 C(z), sinh: t + t z S(z), z = t^2; the next
// term below 3e-9); beyond, with e^t = 2^n (1 + q) (exp_parts16) and h = 2^(n-2), g = 2^(-n-2) / (1 + q):
// 2 (h + (h q +- g)), the large part h exact and added last, so the one rounding that matters is that sum's; from
// 89.5 on both overflow (n = 129 keeps h finite; the doubling rounds nothing). g is negligible long before 2^(-n-2)
// leaves the normal range, so n is capped there. Checked over every float32 as tanh's.
HETNN_VI F16 cosh_sinh_big16(F16 t, float sign) {
  F16 n;
  const F16 q = exp_parts16(t < 89.5f ? t : 89.5f, n);
  const F16 h = pow2_16(n - 2.0f);
  const F16 g = pow2_16(-2.0f - (n < 100.0f ? n : 100.0f)) / (q + 1.0f);
  return 2.0f * (h + (h * q + sign * g));
}
HETNN_VI F16 cosh16(F16 a) {
  const F16 t = abs16(a), z = t * t;
  const F16 c = z * horner(z, 1.0f / 3628800, 1.0f / 40320, 1.0f / 720, 1.0f / 24, 0.5f);
  return t <= 1.0f ? 1.0f + c : cosh_sinh_big16(t, 1.0f);
}
HETNN_VI F16 sinh16(F16 a) {
  const F16 t = abs16(a), z = t * t;
  const F16 p = horner(z, 1.0f / 39916800, 1.0f / 362880, 1.0f / 5040, 1.0f / 120, 1.0f / 6);
  return signed_as(t <= 1.0f ? (t * z) * p + t : cosh_sinh_big16(t, -1.0f), a);
}

// expm1: e^x = 2^n (1 + q) as exp_parts16's, but n rounded down for x > 0 (r in [0, ln2): q >= 0) and to nearest
// for x <= 0 (|r| <= ln2/2), so that n = 0, where the result is q itself, covers [-ln2/2, ln2) and 2 ((h - 1/2) + h q),
// h = 2^(n-1), never subtracts nearly equal terms (with n = 1 from ln2/2 on, 1/2 + q lost an ulp to q's rounding);
// Q Taylor's to r^10 / 10! for the longer range. x held within [-18, 88.8]: below -18 it is -1 in float32, beyond
// 88.72 it overflows. Checked over every float32 as tanh's.
HETNN_VI F16 expm1_16(F16 a) {
  const F16 x = a < -18.0f ? -18.0f : (a > 88.8f ? 88.8f : a);
  const F16 y = x * 1.44269504f;
  const F16 n = ((x > 0.0f ? y - 0.5f : y) + 12582912.0f) - 12582912.0f;
  const F16 r = minus_n_ln2(x, n);
  const F16 p = horner(r, 1.0f / 3628800, 1.0f / 362880, 1.0f / 40320, 1.0f / 5040, 1.0f / 720, 1.0f / 120, 1.0f / 24,
                       1.0f / 6, 0.5f);
  const F16 q = (r * r) * p + r, h = pow2_16(n - 1.0f);
  const F16 v = n == 0.0f ? q : 2.0f * ((h - 0.5f) + h * q);  // (h q would halve a subnormal q, rounding it)
  return a == 0.0f ? a : v;
}

// atan: t = |x| as t <= 0.5625: t; below 2: pi/4 + atan((t - 1) / (t + 1)); beyond: pi/2 + atan(-1 / t) (one
// division for all three), each offset in two parts; then |u| <= 0.5625 and atan u = u + u z P(z), z = u^2, P of
// degree 7 fitted as tanh's (32 bits). The first bound keeps results below 0.5 (where the ulp halves) out of the
// reduced form, whose rounded u would cost them up to 1.7 ulp. Every float32 of [0, inf] checked as tanh's: none more
// than 1 ulp from atan in double rounded, 0.21 % 1 ulp away.
HETNN_VI F16 atan16(F16 a) {
  const F16 t = abs16(a);
  const I16 mid = t > 0.5625f, far = t >= 2.0f;
  const F16 num = far ? -1.0f : (mid ? t - 1.0f : t), den = far ? t : (mid ? t + 1.0f : 1.0f);
  const F16 hi = far ? 1.57079637050628662109375f : (mid ? 0.785398185253143310546875f : 0.0f);
  const F16 lo = far ? -4.3711388e-08f : (mid ? -2.1855694e-08f : 0.0f);
  const F16 u = num / den, z = u * u;
  const F16 p = horner(z, 0.021141677275581368f, -0.05110360683524609f, 0.07318043084740966f, -0.0903860041938118f,
                       0.11107039989138463f, -0.14285556241256633f, 0.1999999763565903f, -0.33333333327470316f);
  return signed_as(hi + (lo + ((u * z) * p + u)), a);
}

// ---- float64 functions: 8 lanes, within 1 ulp (the last roundings ordered as fdlibm's, no table) ----

// e^x for x in [kExp64Lo, kExp64Hi] (normal results): x = n ln2 + hi - lo, e^r = 1 + (hi - (lo - r^2 Q(r))),
// Q of degree 10 fitted as expm1's (within 4e-19), 2^n added to the exponent
constexpr double kExp64Lo = -707.0, kExp64Hi = 709.0;
// e^x = 2^n (1 + em) for |x| <= 709: x = n ln2 + hi - lo, em = e^r - 1 = hi - (lo - r^2 Q(r)); returns em, n's
// integer in the low bits of n_bits (t's bits less kShift's)
HETNN_VI D8 exp64_split(D8 x, L8& n_bits) {
  const D8 t = x * 1.44269504088896340736 + kShift;
  const D8 n = t - kShift;
  const D8 hi = x - n * kLn2Hi, lo = n * kLn2Lo, r = hi - lo;
  const D8 q = horner(r, 2.091813816945801e-09, 2.5105217695684516e-08, 2.7557263277791584e-07, 2.755725539833871e-06,
                      2.4801587336443602e-05, 0.00019841269874822307, 0.0013888888888879073, 0.008333333333326134,
                      0.04166666666666668, 0.1666666666666667, 0.5);
  n_bits = (L8)t - (L8)(D8{} + kShift);
  return hi - (lo - r * r * q);
}
HETNN_VI D8 exp64(D8 x) {
  L8 n;
  const D8 y = 1.0 + exp64_split(x, n);
  return (D8)((U8)y + ((U8)n << 52));
}

// ln x for a positive, finite, normal x: x = 2^e (1 + f), 1 + f in [sqrt(1/2), sqrt(2)), s = f / (2 + f),
// ln(1 + f) = f - f^2/2 + s (f^2/2 + R), R = z L(z), z = s^2, L of degree 7 fitted (within 6e-19): e, f, f^2/2 and
// s (f^2/2 + R)
struct Log64Parts {
  D8 e, f, hfsq, sr;
};
HETNN_VI Log64Parts log64_parts(D8 x) {
  const L8 b = (L8)x;
  D8 m = (D8)((b & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000);
  D8 e = (D8)((b >> 52) | 0x4330000000000000) - (4503599627370496.0 + 1023.0);
  const L8 big = m > 1.41421356237309504880;
  m = big ? m * 0.5 : m;
  e = big ? e + 1.0 : e;
  const D8 f = m - 1.0, s = f / (2.0 + f), z = s * s;
  const D8 l = horner(z, 0.13087358019991335, 0.13268698800146927, 0.1538624266836552, 0.18181795581488394,
                      0.22222222392309024, 0.2857142857080074, 0.40000000000000885, 0.6666666666666666);
  const D8 hfsq = 0.5 * f * f;
  return {e, f, hfsq, s * (hfsq + z * l)};
}
// summed as fdlibm's log: e ln2hi - ((f^2/2 - (s (f^2/2 + R) + e ln2lo)) - f)
HETNN_VI D8 log64(D8 x, D8 c = D8{}) {  // c: a correction added to x's logarithm (log1p64's), below its ulp
  const Log64Parts p = log64_parts(x);
  return p.e * kLn2Hi - ((p.hfsq - (p.sr + (p.e * kLn2Lo + c))) - p.f);
}
// log2 of a positive, finite, normal x: the parts above, ln(1 + f) as hi + lo with hi the leading 21 bits of
// f - f^2/2, times 1/ln2 in two parts, e added last (FreeBSD's e_log2.c): within 1 ulp
HETNN_VI void log64_hi_lo(const Log64Parts& p, D8& hi, D8& lo) {
  hi = (D8)((L8)(p.f - p.hfsq) & ~std::int64_t{0xFFFFFFFF});
  lo = (p.f - hi) - p.hfsq + p.sr;
}
HETNN_VI D8 log2_64(D8 x) {
  const Log64Parts p = log64_parts(x);
  D8 hi, lo;
  log64_hi_lo(p, hi, lo);
  const D8 vhi = hi * 1.44269504072144627571e+00, w = p.e + vhi;  // 1/ln2's leading 33 bits, and the rest:
  const D8 vlo = (lo + hi) * 1.67517131648865118353e-10 + lo * 1.44269504072144627571e+00 + ((p.e - w) + vhi);
  return vlo + w;
}

// ln(1 + x) for x > -1, finite: u = 1 + x rounded, and what the rounding dropped, (x - (u - 1)) / u, added where
// fdlibm's log1p adds it; u - 1 is exact below 2^52 (above, it may round itself, and the drop is far below the
// result's ulp; at x near 1.27 it was 0.9 of it)
HETNN_VI D8 log1p64(D8 x) {
  const D8 u = 1.0 + x;
  const D8 y = log64(u, x < 4503599627370496.0 ? (x - (u - 1.0)) / u : 0.0);
  return x == 0.0 ? x : y;  // -0 kept
}

// e^x - 1 for x in [kExp64Lo, kExp64Hi]: for |x| <= 1, x + x^2 P(x), P of degree 13 fitted (within 2e-17; the
// reduction's 2^n (1 + q) - 1 was 2 ulp off there, at n = 1 and r near -ln2/2); beyond, x = n ln2 + hi - lo as
// exp64's and (2^n - 1) + 2^n q, q = hi - (lo - r^2 Q(r)), 2^n - 1 exact (n > 53: -1 is below the ulp anyway)
HETNN_VI D8 expm1_64(D8 x) {
  const D8 p = horner(x, 7.753295105383928e-13, 1.16392040024203e-11, 1.605744835014058e-10, 2.087443527953241e-09,
                      2.5052120586633744e-08, 2.7557335072267237e-07, 2.7557319174038892e-06, 2.4801587246079535e-05,
                      0.00019841269841374776, 0.0013888888888981446, 0.008333333333333236, 0.04166666666666609,
                      0.16666666666666666, 0.5);
  const D8 small = x + x * x * p;
  L8 n;
  const D8 em = exp64_split(x, n);
  const D8 s = (D8)(((U8)n + 1023) << 52);  // 2^n
  const D8 y = abs(x) <= 1.0 ? small : (s - 1.0) + s * em;
  return x == 0.0 ? x : y;  // -0 kept
}

// cosh x for |x| up to its overflow (kCosh64Max), fdlibm's formulas with one transcendental a lane: |x| < ln2/2:
// 1 + t^2 / (2 (1 + t)), t = expm1|x|; to 22, (e + 1/e) / 2 with e = 1 + t; beyond, e^|x| / 2 = 2^(n-1) (1 + em) from
// exp64_split, 2^(n-1) applied as two normal factors (n reaches 1025): within 1 ulp (libm's: 2 near the overflow)
constexpr double kCosh64Max = 710.4758600739439;
HETNN_VI D8 cosh64(D8 x) {
  const D8 a = abs(x);
  L8 n;
  const D8 big = 1.0 + exp64_split(a, n);
  const L8 k1 = (n - 1) >> 1, k2 = (n - 1) - k1;
  const D8 scaled = big * (D8)(((U8)k1 + 1023) << 52) * (D8)(((U8)k2 + 1023) << 52);
  const D8 t = expm1_64(a > 22.0 ? 0.0 : a), w = 1.0 + t;
  return a < 0.34657359027997264 ? 1.0 + t * t / (w + w) : a > 22.0 ? scaled : 0.5 * w + 0.5 / w;
}

#undef HETNN_VI

}  // namespace hetnn::vecfn
