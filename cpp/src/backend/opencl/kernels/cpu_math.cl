// cpu_math.cl: the CPU device's float function forms for CPU-type OpenCL devices (included by elementwise.cl under
// -DEW_OWN_EXP, which such devices get; the exp and log family under -DEW_OWN_MATH too, where they have double).
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
// come out as they are); within 1 ulp. NaN stays NaN.
CM_INLINE float own_exp(float x) {
  const int nan = isnan(x);
  float c = nan ? 0.0f : x;
  c = fmin(fmax(c, -104.0f), 89.0f);  // beyond: 0 and inf all the same
  const float t = c * 1.44269504088896341f + 12582912.0f;  // n rounded to nearest, in t's low bits
  const float n = t - 12582912.0f;
  float r = c - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int k = as_int(t) - 0x4B400000, k1 = k >> 1, k2 = k - k1;  // each in [-75, 64]
  const float y = p * as_float((k1 + 127) << 23) * as_float((k2 + 127) << 23);
  return nan ? x : y;
}

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
#endif  // EW_OWN_MATH
