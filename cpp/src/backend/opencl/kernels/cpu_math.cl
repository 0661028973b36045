// cpu_math.cl: the CPU device's function forms for CPU-type OpenCL devices (included by elementwise.cl under
// -DEW_OWN_EXP, which such devices get: float exp; with double, -DEW_OWN_MATH, every float function, pow and
// logaddexp, and float64 exp, expm1, log, log1p, log2 and cosh).
// PoCL runs its own OpenCL C built-ins an element at a time (64 MiB float32: exp 53 ms; 4 Mi: tanh 22 ms, log 35,
// expm1 64, against NumPy's 1.4-1.8); these are the forms of cpp/src/backend/cpu/vec_math.h and vec_functions.h
// (the same reductions and polynomials; the family evaluated in double and rounded once, within 1 ulp), written per
// element without branches so that the compiler vectorises them across work-items: a case outside a form's domain
// (NaN, zeros, infinities, the domain's edges) is a select after it, the form run on a harmless argument.

// Inlined always: a form left a call (PoCL's inliner declined own_atanh with its log1p) keeps the work-items' loop
// from being vectorized.
#define CM_INLINE static inline __attribute__((always_inline))

// e^x of a float (PoCL's: 53 ms for 64 MiB, this form 6.6): the CPU device's exp_f32 (vec_math.h) without a branch,
// floor, division or conversion (each kept PoCL from vectorising it: 154 ms): x = n ln2 + r, n rounded by adding
// 1.5 * 2^23, e^r by Cephes expf's polynomial, 2^n applied as two normal factors (subnormal results and overflow
// come out as they are); within 1 ulp. NaN stays NaN. One form for a float (own_exp) and for sixteen (own_exp16,
// ew_exp16: PoCL vectorizes the work-items' loop of own_exp eight floats wide, float16 computes in 512-bit registers:
// 4 Mi 1.5 ms against 2.7). F the float type, I the int type of its size, AF / AI its as_ conversions.
#define CM_EXP_FORM(NAME, F, I, AF, AI)                                                                               \
  CM_INLINE F NAME(F x) {                                                                                            \
    const I nan = isnan(x);                                                                                          \
    const F c = fmin(fmax(select(x, (F)0.0f, nan), -104.0f), 89.0f); /* beyond: 0 and inf all the same */           \
    const F t = c * 1.44269504088896341f + 12582912.0f;              /* n rounded to nearest, in t's low bits */    \
    const F n = t - 12582912.0f;                                                                                     \
    const F r = (c - n * 0.693359375f) - n * -2.12194440e-4f;                                                        \
    F p = 1.9875691500e-4f;                                                                                          \
    p = p * r + 1.3981999507e-3f;                                                                                    \
    p = p * r + 8.3334519073e-3f;                                                                                    \
    p = p * r + 4.1665795894e-2f;                                                                                    \
    p = p * r + 1.6666665459e-1f;                                                                                    \
    p = p * r + 5.0000001201e-1f;                                                                                    \
    p = p * r * r + r + 1.0f;                                                                                        \
    const I k = AI(t) - 0x4B400000, k1 = k >> 1, k2 = k - k1; /* each in [-75, 64] */                               \
    return select(p * AF((k1 + 127) << 23) * AF((k2 + 127) << 23), x, nan);                                          \
  }
CM_EXP_FORM(own_exp, float, int, as_float, as_int)
CM_EXP_FORM(own_exp16, float16, int16, as_float16, as_int16)

#ifdef EW_OWN_MATH
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#define CM_SHIFT 6755399441055744.0  // 1.5 * 2^52: x + CM_SHIFT rounds x to an integer in the low bits
#define CM_LN2 0.693147180559945309417232121458176568
#define CM_LN2_HI 6.93147180369123816490e-01
#define CM_LN2_LO 1.90821492927058770002e-10

// e^r - 1 for |r| <= ln2/2 (vec_functions.h's expm1_poly)
CM_INLINE double cm_expm1_poly(double r) {
  double p = r * 2.7625103456125615e-06 + 2.486787206587467e-05;
  p = p * r + 0.0001984120875394296;
  p = p * r + 0.0013888839107173761;
  p = p * r + 0.008333333353718988;
  p = p * r + 0.04166666678628104;
  p = p * r + 0.166666666666483;
  p = p * r + 0.49999999999955097;
  return r + r * r * p;
}
// e^x = s (1 + q), s = 2^n, |x| <= 700
CM_INLINE void cm_exp_split(double x, double* s, double* q) {
  const double t = x * 1.44269504088896340736 + CM_SHIFT;
  const double n = t - CM_SHIFT;
  *q = cm_expm1_poly((x - n * CM_LN2_HI) - n * CM_LN2_LO);
  *s = as_double((as_long(t) + 1023) << 52);  // t's low bits hold n
}
CM_INLINE double cm_exp(double x) {
  double s, q;
  cm_exp_split(x, &s, &q);
  return s + s * q;
}
CM_INLINE double cm_expm1(double x) {
  double s, q;
  cm_exp_split(x, &s, &q);
  return (s - 1.0) + s * q;
}
// ln y = e ln2 + l for a positive, finite, normal y (vec_functions.h's log_parts)
CM_INLINE void cm_log_parts(double y, double* e, double* l) {
  const long b = as_long(y);
  double m = as_double((b & 0x000FFFFFFFFFFFFFL) | 0x3FF0000000000000L);
  double ex = as_double((b >> 52) | 0x4330000000000000L) - (4503599627370496.0 + 1023.0);
  const int big = m > 1.41421356237309504880;
  m = big ? m * 0.5 : m;
  ex = big ? ex + 1.0 : ex;
  const double s = (m - 1.0) / (m + 1.0), z = s * s;
  double p = z * 0.09681722684229842 + 0.11095677130222789;
  p = p * z + 0.14285877695866536;
  p = p * z + 0.19999999396153842;
  p = p * z + 0.3333333333368985;
  *e = ex;
  *l = 2.0 * s + 2.0 * s * z * p;
}
CM_INLINE double cm_log(double y) {
  double e, l;
  cm_log_parts(y, &e, &l);
  return e * CM_LN2 + l;
}
CM_INLINE double cm_log1p(double x) {  // x > -1
  const double u = 1.0 + x;
  return cm_log(u) + (fabs(x) < 1.0 ? x - (u - 1.0) : 0.0);
}
CM_INLINE float cm_keep_zero(float a, float y) { return a == 0.0f ? a : y; }  // f(+-0) = +-0
CM_INLINE float cm_clamp(float a, float lo, float hi) { return a < lo ? lo : a > hi ? hi : a; }  // NaN stays NaN

CM_INLINE float own_tanh(float a) {  // expm1(2x) / (expm1(2x) + 2); beyond |x| = 20 +-1
  const double d = (double)cm_clamp(isnan(a) ? 0.0f : a, -20.0f, 20.0f);
  const double e = cm_expm1(d + d);
  return isnan(a) ? a : cm_keep_zero(a, (float)(e / (e + 2.0)));
}
CM_INLINE float own_sinh(float a) {  // (E + E / (E + 1)) / 2, E = expm1|x|; beyond 100 inf
  const double t = (double)cm_clamp(isnan(a) ? 0.0f : a, -100.0f, 100.0f);
  const double e = cm_expm1(fabs(t));
  return isnan(a) ? a : cm_keep_zero(a, (float)copysign(0.5 * (e + e / (e + 1.0)), t));
}
CM_INLINE float own_cosh(float a) {
  const double x = cm_exp(fabs((double)cm_clamp(isnan(a) ? 0.0f : a, -100.0f, 100.0f)));
  return isnan(a) ? a : (float)(0.5 * (x + 1.0 / x));
}
CM_INLINE float own_expm1(float a) {
  const float c = cm_clamp(isnan(a) ? 0.0f : a, -110.0f, 100.0f);
  return isnan(a) ? a : cm_keep_zero(a, (float)cm_expm1((double)c));
}
// the logarithms: positive finite arguments through the form; 0 gives -inf, +inf inf, the rest NaN (a NaN kept)
#define CM_LOG_EDGES(a, r) \
  ((a) > 0.0f && (a) <= FLT_MAX ? (r) : (a) == 0.0f ? -INFINITY : (a) == INFINITY ? INFINITY : isnan(a) ? (a) : NAN)
CM_INLINE float own_log(float a) {
  const double d = a > 0.0f && a <= FLT_MAX ? (double)a : 1.0;
  return CM_LOG_EDGES(a, (float)cm_log(d));
}
CM_INLINE float own_log2(float a) {
  double e, l;
  cm_log_parts(a > 0.0f && a <= FLT_MAX ? (double)a : 1.0, &e, &l);
  return CM_LOG_EDGES(a, (float)(e + l * 1.44269504088896340736));
}
CM_INLINE float own_log10(float a) {
  double e, l;
  cm_log_parts(a > 0.0f && a <= FLT_MAX ? (double)a : 1.0, &e, &l);
  return CM_LOG_EDGES(a, (float)(e * 0.30102999566398119521 + l * 0.43429448190325182765));
}
CM_INLINE float own_log1p(float a) {  // -1 gives -inf, below it NaN
  const int ok = a > -1.0f && a <= FLT_MAX;
  const float r = cm_keep_zero(a, (float)cm_log1p(ok ? (double)a : 0.0));
  return ok ? r : a == -1.0f ? -INFINITY : a == INFINITY ? INFINITY : isnan(a) ? a : NAN;
}
CM_INLINE float own_atanh(float a) {  // +-1 give +-inf, beyond them NaN
  const int ok = a > -1.0f && a < 1.0f;
  const double d = ok ? (double)a : 0.0;
  const float r = cm_keep_zero(a, (float)(0.5 * cm_log1p(2.0 * d / (1.0 - d))));
  return ok ? r : a == 1.0f ? INFINITY : a == -1.0f ? -INFINITY : isnan(a) ? a : NAN;
}
CM_INLINE float own_asinh(float a) {  // log1p(t + t^2 / (1 + sqrt(1 + t^2))), t = |x|; infinities kept
  const int ok = a >= -FLT_MAX && a <= FLT_MAX;
  const double d = ok ? (double)a : 0.0, t = fabs(d), t2 = t * t;
  const float r = cm_keep_zero(a, (float)copysign(cm_log1p(t + t2 / (1.0 + sqrt(1.0 + t2))), d));
  return ok ? r : a;  // +-inf or NaN
}
CM_INLINE float own_acosh(float a) {  // log1p(t + sqrt(t (x + 1))), t = x - 1; below 1 NaN
  const int ok = a >= 1.0f && a <= FLT_MAX;
  const double d = ok ? (double)a : 1.0, t = d - 1.0;
  const float r = (float)cm_log1p(t + sqrt(t * (d + 1.0)));
  return ok ? r : a == INFINITY ? INFINITY : isnan(a) ? a : NAN;
}

// ---- the trigonometric functions (vec_functions.h's forms); the reduction exact over the whole float range ----
#include "cpu_trig_table.cl"
#define CM_PI 3.14159265358979323846264338327950288

// |x| = (n + s) pi/2 for a float x: returns s pi/2 (|s| <= 1/2, a little beyond), n's two low bits in quadrant. The
// CPU device reduces by pi/2 in two parts up to 2^17 and calls libm beyond; a work-item cannot call out of a
// vectorized loop, so here Payne and Hanek's way for every float: |x| = M 2^E (M an integer below 2^24) times 2/pi
// modulo 4 is M times the 112 bits of 2/pi that matter at E (cpu_trig_table.cl), in four products exact in double;
// the integer part dropped exactly, the rest summed with the one rounding that matters kept (a two-sum). The four
// loads (gathers) take about half the time (sin of 4 Mi on PoCL: 9.5 ms; without them 5); a branch around them for
// small arguments kept PoCL from vectorizing the loop.
CM_INLINE double cm_reduce_pio2(float x, int* quadrant) {
  const uint b = as_uint(x) & 0x7FFFFFFFu;
  const uint e8 = min(b >> 23, 254u);  // infinities and NaN: the largest floats' row (their results are selected)
  const double m = (double)(e8 == 0u ? b : (b & 0x7FFFFFu) | 0x800000u);  // x = m 2^(e8 - 150), subnormals e8 1's
  __constant const double* g = cm_trig_g[(int)max(e8, 1u) - 150 - CM_TRIG_E_MIN];
  const double p0 = m * g[0], p1 = m * g[1], p2 = m * g[2], p3 = m * g[3];  // each exact (24 bits times 28)
  const double w = p0 * 0.25, wr = (w + CM_SHIFT) - CM_SHIFT;  // p0 < 2^26: its multiples of 4 dropped exactly
  const double p0m = p0 - 4.0 * (wr > w ? wr - 1.0 : wr);
  const double t = (p0m + p1) + CM_SHIFT, n = t - CM_SHIFT;  // the nearest integer (off by one at a half: harmless)
  const double d = p0m - n;  // exact
  const double s1 = d + p1, v = s1 - d, e1 = (d - (s1 - v)) + (p1 - v);  // s1 + e1 = d + p1 exactly
  *quadrant = (int)(as_long(t) & 3);
  return (s1 + (e1 + p2 + p3)) * 1.57079632679489661923;
}
// sin r and cos r for |r| <= pi/4, a little beyond (vec_functions.h's sincos_poly)
CM_INLINE void cm_sincos_poly(double r, double* s, double* c) {
  const double z = r * r;
  double ps = z * -2.4804401976205356e-08 + 2.7555977599142064e-06;
  ps = ps * z + -0.00019841266872943096;
  ps = ps * z + 0.008333333331034002;
  ps = ps * z + -0.16666666666663815;
  *s = r + r * z * ps;
  double pc = z * 2.069971617606893e-09 + -2.755636014231265e-07;
  pc = pc * z + 2.480158517941614e-05;
  pc = pc * z + -0.0013888888887244907;
  pc = pc * z + 0.04166666666666463;
  *c = 1.0 - 0.5 * z + z * z * pc;
}
CM_INLINE float own_sin(float a) {  // NaN and the infinities give NaN; zeros keep their sign
  int q;
  double s, c;
  cm_sincos_poly(cm_reduce_pio2(a, &q), &s, &c);
  const double v = (q & 1) ? c : s;
  const float r = (float)(((q & 2) != 0) != signbit(a) ? -v : v);  // sin(-x) = -sin(x)
  return isfinite(a) ? r : NAN;
}
CM_INLINE float own_cos(float a) {
  int q;
  double s, c;
  cm_sincos_poly(cm_reduce_pio2(a, &q), &s, &c);
  const double v = (q & 1) ? s : c;
  const float r = (float)(((q + 1) & 2) ? -v : v);
  return isfinite(a) ? r : NAN;
}
CM_INLINE float own_tan(float a) {
  int q;
  double s, c;
  cm_sincos_poly(cm_reduce_pio2(a, &q), &s, &c);
  const double v = (q & 1) ? -c / s : s / c;
  const float r = (float)(signbit(a) ? -v : v);
  return isfinite(a) ? r : NAN;
}
// atan(n / d) for n >= 0, d >= 0, not both 0 (n = inf or d = 0 included; vec_functions.h's atan_ratio)
CM_INLINE double cm_atan_ratio(double n, double d) {
  const int big = n > 2.41421356237309504880 * d, mid = n > 0.41421356237309504880 * d;
  const double num = big ? -d : mid ? n - d : n;
  const double den = big ? n : mid ? n + d : d;
  const double base = big ? CM_PI / 2 : mid ? CM_PI / 4 : 0.0;
  const double u = num / den, z = u * u;
  double p = z * 0.032998707681635556 + -0.06029830813552158;
  p = p * z + 0.07605397159406324;
  p = p * z + -0.0908417200414473;
  p = p * z + 0.11110823945883;
  p = p * z + -0.1428570823198382;
  p = p * z + 0.19999999951168643;
  p = p * z + -0.3333333333326852;
  return base + (u + u * z * p);
}
CM_INLINE float own_atan(float a) {  // +-inf give +-pi/2 from the form itself
  const double d = isnan(a) ? 0.0 : (double)a;
  const float r = (float)copysign(cm_atan_ratio(fabs(d), 1.0), d);
  return isnan(a) ? a : r;
}
// The two-operand forms do nothing alike to both operands (a fabs of each, isinf(x) | isinf(y)): PoCL's pipeline
// made such a pair a two-lane vector operation before the loop vectorizer ran, which then gave up ("instruction
// return type cannot be vectorized"; atan2 of 4 Mi 23 ms).
CM_INLINE float own_atan2(float y, float x) {  // C's cases: both zero or both infinite by selects, NaN kept
  const double dy = (double)y, dx = (double)x;
  const double ay = sqrt(dy * dy), ax = fabs(dx);  // the root exact (dy has 24 bits); not a second fabs (above)
  const int nan = isnan(ay + ax), zeros = fmax(ay, ax) == 0.0, infs = fmin(ay, ax) == INFINITY;
  const double v = cm_atan_ratio(zeros ? 0.0 : infs ? 1.0 : ay, zeros | infs ? 1.0 : ax);  // both: atan(1 or 0)
  const float r = (float)copysign(signbit(dx) ? CM_PI - v : v, dy);
  return nan ? (float)(ay + ax) : r;
}
// asin t for 0 <= t <= 1 (vec_functions.h's asin_half): r = asin of the reduced s; returns whether t was reflected
CM_INLINE int cm_asin_half(double t, double* r) {
  const int big = t > 0.5;
  const double z = big ? 0.5 - 0.5 * t : t * t;
  const double s = big ? sqrt(z) : t;
  double p = z * 0.02801752120423027 + -0.0030636532508882723;
  p = p * z + 0.015733489741212338;
  p = p * z + 0.013173365233711152;
  p = p * z + 0.017443628149945288;
  p = p * z + 0.022365882515612154;
  p = p * z + 0.03038219162935859;
  p = p * z + 0.04464285222417601;
  p = p * z + 0.07500000003782922;
  p = p * z + 0.16666666666661878;
  *r = s + s * z * p;
  return big;
}
CM_INLINE float own_asin(float a) {  // beyond 1/2: pi/2 - 2 asin(s); beyond 1 NaN
  const int ok = fabs(a) <= 1.0f;
  const double d = ok ? (double)a : 0.0;
  double r;
  const int big = cm_asin_half(fabs(d), &r);
  const float y = (float)copysign(big ? CM_PI / 2 - 2.0 * r : r, d);
  return ok ? y : isnan(a) ? a : NAN;
}
CM_INLINE float own_acos(float a) {  // |x| <= 1/2: pi/2 - asin x; beyond: 2 asin(s), or pi - 2 asin(s) for x < 0
  const int ok = fabs(a) <= 1.0f;
  const double d = ok ? (double)a : 0.0;
  double r;
  const int big = cm_asin_half(fabs(d), &r);
  const float y = (float)(big ? (d < 0.0 ? CM_PI - 2.0 * r : 2.0 * r) : CM_PI / 2 - copysign(r, d));
  return ok ? y : isnan(a) ? a : NAN;
}
CM_INLINE float own_hypot(float x, float y) {  // an infinity wins over NaN (C's rule)
  const double dx = (double)x, dy = (double)y, xx = dx * dx, yy = dy * dy;
  const float r = (float)sqrt(xx + yy);
  return fmax(xx, yy) == INFINITY ? INFINITY : r;
}
// x^y: |x|^y = e^(y ln|x|) in double (y ln|x| held within +-700: overflow and 0 all the same), the sign from an
// odd integer y; C's special cases as selects, in order of precedence (last applied wins). Tests of x in double,
// of y in float (above).
CM_INLINE float own_pow(float x, float y) {
  const double dx = (double)x, dy = (double)y;
  const double ax = sqrt(dx * dx);  // |x|, exact
  const int integer = rint(y) == y;  // the infinities too
  const float h = y * 0.5f;
  const int odd = integer & (rint(h) != h), neg = (dx < 0.0) & odd;  // from 2^24 every float is even
  const double m = cm_exp(fmin(fmax(dy * cm_log(ax > 0.0 && ax < INFINITY ? ax : 1.0), -700.0), 700.0));
  float r = (dx < 0.0) & !integer ? NAN : (float)(neg ? -m : m);
  const float zero = y < 0.0f ? (odd ? copysign(INFINITY, x) : INFINITY) : (odd ? x : 0.0f);
  r = dx == 0.0 ? zero : r;
  const float inf_x = y < 0.0f ? (neg ? -0.0f : 0.0f) : (neg ? -INFINITY : INFINITY);
  r = ax == INFINITY ? inf_x : r;
  const float inf_y = ax == 1.0 ? 1.0f : (ax < 1.0) == (y < 0.0f) ? INFINITY : 0.0f;
  r = isinf(y) ? inf_y : r;
  r = isnan(dx) | isnan(y) ? NAN : r;
  return (y == 0.0f) | (dx == 1.0) ? 1.0f : r;  // x^0 and 1^y are 1, NaN or not
}
// ln(e^a + e^b) = hi + ln(1 + e^(lo - hi)); both infinite of one sign: that infinity (lo - hi NaN, held at -700)
CM_INLINE float own_logaddexp(float a, float b) {
  const double da = (double)a, db = (double)b, hi = fmax(da, db), lo = fmin(da, db);
  const float r = (float)(hi + cm_log1p(cm_exp(fmax(lo - hi, -700.0))));
  return isnan(a) | isnan(db) ? NAN : r;
}
#endif  // EW_OWN_MATH

#if defined(EW_OWN_MATH) && defined(TIN_F64)
// ---- float64 exp, expm1, log, log1p: vec_functions.h's exp64, expm1_64, log64, log1p64 (within 1 ulp) ----
// The CPU device calls libm for subnormal results and arguments; here those go through the forms too: 2^n applied as
// two normal factors (one rounding into the subnormals), subnormal arguments scaled by 2^54 first.

// e^x = 2^n (1 + em), x = n ln2 + hi - lo, em = hi - (lo - r^2 Q(r)); n's integer in t's low bits
CM_INLINE double cm64_exp_split(double x, double* t) {
  *t = x * 1.44269504088896340736 + CM_SHIFT;
  const double n = *t - CM_SHIFT;
  const double hi = x - n * CM_LN2_HI, lo = n * CM_LN2_LO, r = hi - lo;
  double q = r * 2.091813816945801e-09 + 2.5105217695684516e-08;
  q = q * r + 2.7557263277791584e-07;
  q = q * r + 2.755725539833871e-06;
  q = q * r + 2.4801587336443602e-05;
  q = q * r + 0.00019841269874822307;
  q = q * r + 0.0013888888888879073;
  q = q * r + 0.008333333333326134;
  q = q * r + 0.04166666666666668;
  q = q * r + 0.1666666666666667;
  q = q * r + 0.5;
  return hi - (lo - r * r * q);
}
// y 2^k for k in [-1076, 1025] as two normal factors (one rounding, into the subnormals or to inf)
CM_INLINE double cm64_scale(double y, long k) {
  const long k1 = k >> 1, k2 = k - k1;
  return y * as_double((k1 + 1023) << 52) * as_double((k2 + 1023) << 52);
}
CM_INLINE double own64_exp(double x) {  // beyond [-746, 710] 0 and inf all the same; NaN kept
  double t;
  const double y = 1.0 + cm64_exp_split(fmin(fmax(x, -746.0), 710.0), &t);
  const double v = cm64_scale(y, as_long(t) - as_long(CM_SHIFT));
  return isnan(x) ? x : v;
}
CM_INLINE double own64_expm1(double x) {  // |x| <= 1: x + x^2 P(x); beyond the reduction; above 709 e^x itself
  double p = x * 7.753295105383928e-13 + 1.16392040024203e-11;
  p = p * x + 1.605744835014058e-10;
  p = p * x + 2.087443527953241e-09;
  p = p * x + 2.5052120586633744e-08;
  p = p * x + 2.7557335072267237e-07;
  p = p * x + 2.7557319174038892e-06;
  p = p * x + 2.4801587246079535e-05;
  p = p * x + 0.00019841269841374776;
  p = p * x + 0.0013888888888981446;
  p = p * x + 0.008333333333333236;
  p = p * x + 0.04166666666666609;
  p = p * x + 0.16666666666666666;
  p = p * x + 0.5;
  const double small = x + x * x * p;
  double t;
  const double em = cm64_exp_split(fmin(fmax(x, -707.0), 709.0), &t);
  const double s = as_double((as_long(t) - as_long(CM_SHIFT) + 1023) << 52);  // 2^n
  const double y = fabs(x) <= 1.0 ? small : x > 709.0 ? own64_exp(x) : (s - 1.0) + s * em;
  return x == 0.0 || isnan(x) ? x : y;  // -0 and NaN kept
}
// ln x for a positive finite x (subnormals scaled by 2^54 first): x = 2^e (1 + f), 1 + f in [sqrt(1/2), sqrt(2)),
// s = f / (2 + f), z = s^2: e, f, f^2/2 and s (f^2/2 + R), R = z L(z) (vec_functions.h's log64_parts)
CM_INLINE void cm64_log_parts(double x, double* e, double* f, double* hfsq, double* sr) {
  const int sub = x < 0x1p-1022;
  const long b = as_long(sub ? x * 0x1p54 : x);
  double m = as_double((b & 0x000FFFFFFFFFFFFFL) | 0x3FF0000000000000L);
  double ex = as_double((b >> 52) | 0x4330000000000000L) - (4503599627370496.0 + 1023.0) - (sub ? 54.0 : 0.0);
  const int big = m > 1.41421356237309504880;
  m = big ? m * 0.5 : m;
  *e = big ? ex + 1.0 : ex;
  *f = m - 1.0;
  const double s = *f / (2.0 + *f), z = s * s;
  double l = z * 0.13087358019991335 + 0.13268698800146927;
  l = l * z + 0.1538624266836552;
  l = l * z + 0.18181795581488394;
  l = l * z + 0.22222222392309024;
  l = l * z + 0.2857142857080074;
  l = l * z + 0.40000000000000885;
  l = l * z + 0.6666666666666666;
  *hfsq = 0.5 * *f * *f;
  *sr = s * (*hfsq + z * l);
}
// summed as fdlibm's log; c: a correction added to x's logarithm (log1p's), below its ulp
CM_INLINE double cm64_log(double x, double c) {
  double e, f, hfsq, sr;
  cm64_log_parts(x, &e, &f, &hfsq, &sr);
  return e * CM_LN2_HI - ((hfsq - (sr + (e * CM_LN2_LO + c))) - f);
}
CM_INLINE double own64_log(double x) {  // 0 gives -inf, +inf inf, below 0 NaN, NaN kept
  const double y = cm64_log(x > 0.0 && x < INFINITY ? x : 1.0, 0.0);
  return x > 0.0 && x < INFINITY ? y : x == 0.0 ? -INFINITY : x == INFINITY || isnan(x) ? x : NAN;
}
// log2 (vec_functions.h's log2_64: log's parts, ln(1 + f) as hi + lo with hi the leading 21 bits of f - f^2/2, times
// 1/ln2 in two parts, e added last)
CM_INLINE double own64_log2(double x) {
  const int ok = x > 0.0 && x < INFINITY;
  double e, f, hfsq, sr;
  cm64_log_parts(ok ? x : 1.0, &e, &f, &hfsq, &sr);
  const double hi = as_double(as_long(f - hfsq) & ~0xFFFFFFFFL), lo = (f - hi) - hfsq + sr;
  const double vhi = hi * 1.44269504072144627571e+00, w = e + vhi;
  const double vlo = (lo + hi) * 1.67517131648865118353e-10 + lo * 1.44269504072144627571e+00 + ((e - w) + vhi);
  return ok ? vlo + w : x == 0.0 ? -INFINITY : x == INFINITY || isnan(x) ? x : NAN;
}
// cosh (vec_functions.h's cosh64): |x| < ln2/2: 1 + t^2 / (2 (1 + t)), t = expm1|x|; to 22 (e + 1/e) / 2, e = 1 + t;
// beyond e^|x| / 2 as 2^(n-1) (1 + em), 2^(n-1) as two factors; beyond 711 inf, NaN kept
CM_INLINE double own64_cosh(double x) {
  const double a = fmin(fabs(x), 711.0);
  double t2;
  const double scaled = cm64_scale(1.0 + cm64_exp_split(a, &t2), as_long(t2) - as_long(CM_SHIFT) - 1);
  const double t = own64_expm1(a > 22.0 ? 0.0 : a), w = 1.0 + t;
  const double y = a < 0.34657359027997264 ? 1.0 + t * t / (w + w) : a > 22.0 ? scaled : 0.5 * w + 0.5 / w;
  return isnan(x) ? x : y;
}
CM_INLINE double own64_log1p(double x) {  // u = 1 + x and what its rounding dropped, (x - (u - 1)) / u
  const int ok = x > -1.0 && x < INFINITY;
  const double v = ok ? x : 0.0, u = 1.0 + v;
  const double y = cm64_log(u, v < 4503599627370496.0 ? (v - (u - 1.0)) / u : 0.0);
  return ok && x != 0.0 ? y : x == -1.0 ? -INFINITY : x == 0.0 || x == INFINITY || isnan(x) ? x : NAN;
}
#endif  // EW_OWN_MATH && TIN_F64
