// elementwise.cl: every element-wise op of core/elementwise.h in one kernel per (input type, output type); the op
// is a run-time argument (a uniform branch: one build serves all ~60 ops of a type pair). The op numbers EW_<name>
// come from the build options (generated from HETNN_EW_OPS, so they cannot drift from the C++ enum).
// Build options: -DTIN_<T> -DTOUT_<T> with T one of F32 F64 F16 BF16 I32 I64 U8 I8 B8.
// Semantics as the CPU device's (elementwise_cpu.cpp): integers wrap, integer division by zero gives 0, floor
// division and remainder follow NumPy (the remainder takes the divisor's sign), casts from floating to integer
// saturate (NaN gives 0), casts between integers wrap.
#include "ew_types.cl"

#if IS_FLOAT
#define NAN_OF(x) isnan(x)
#else
#define NAN_OF(x) 0
#endif
#if !IS_FLOAT
#define BITS ((int)(8 * sizeof(CT)))
#if IS_SIGNED
#define NEGATIVE(x) ((x) < 0)
#else
#define NEGATIVE(x) 0
#endif
CT wrap_add(CT x, CT z) { return (CT)((UCT)x + (UCT)z); }
CT wrap_sub(CT x, CT z) { return (CT)((UCT)x - (UCT)z); }
CT wrap_mul(CT x, CT z) { return (CT)((UCT)x * (UCT)z); }
CT floor_div(CT x, CT z) {
  if (z == 0) return 0;
#if IS_SIGNED
  if (z == (CT)-1) return wrap_sub(0, x);
  CT q = x / z;
  if (x % z != 0 && (NEGATIVE(x) != NEGATIVE(z))) q -= 1;
  return q;
#else
  return x / z;
#endif
}
CT rem(CT x, CT z) {
  if (z == 0) return 0;
#if IS_SIGNED
  if (z == (CT)-1) return 0;
  CT r = x % z;
  if (r != 0 && (NEGATIVE(r) != NEGATIVE(z))) r += z;
  return r;
#else
  return x % z;
#endif
}
CT power(CT x, CT z) {
#if IS_SIGNED
  if (z < 0) return x == 1 ? (CT)1 : x == (CT)-1 ? ((z & 1) ? (CT)-1 : (CT)1) : (CT)0;
#endif
  UCT r = 1, b = (UCT)x;
  for (UCT e = (UCT)z; e; e >>= 1) {
    if (e & 1) r = (UCT)(r * b);
    b = (UCT)(b * b);
  }
  return (CT)r;
}
#define NEGATIVE_OR_LESS(x) NEGATIVE(x)
#else
#define NEGATIVE_OR_LESS(x) ((x) < 0)
#define wrap_add(x, z) ((x) + (z))
#define wrap_sub(x, z) ((x) - (z))
#define wrap_mul(x, z) ((x) * (z))
CT floor_div(CT x, CT z) {
  if (z == 0) return x / z;
  const CT mod = fmod(x, z);
  CT div = (x - mod) / z;
  if (mod != 0 && ((z < 0) != (mod < 0))) div -= 1;
  if (div == 0) return copysign((CT)0, x / z);
  CT fl = floor(div);
  if (div - fl > (CT)0.5) fl += 1;
  return fl;
}
CT rem(CT x, CT z) {
  if (z == 0) return fmod(x, z);
  CT mod = fmod(x, z);
  if (mod != 0) {
    if ((z < 0) != (mod < 0)) mod += z;
  } else {
    mod = copysign((CT)0, z);
  }
  return mod;
}
#ifdef EW_OWN_EXP  // CPU-type devices: the CPU device's forms (cpu_math.cl)
#include "cpu_math.cl"
#endif
#if defined(EW_OWN_EXP) && !defined(TIN_F64)
#define EXP own_exp
#elif defined(EW_OWN_EXP) && defined(EW_OWN_MATH)  // float64 where the device has it
#define EXP own64_exp
#else
#define EXP exp
#endif
#if defined(EW_OWN_MATH) && !defined(TIN_F64)  // and with double, the exp, log and trigonometric families, pow
#define MATH(f) own_##f
#define log_add_exp own_logaddexp
#else
#define MATH(f) f
CT log_add_exp(CT a, CT b) {
  if (isnan(a) || isnan(b)) return a + b;
  if (a == b) return a + (CT)0.693147180559945309417232121458176568;
  const CT hi = fmax(a, b), lo = fmin(a, b);
  return hi + log1p(exp(lo - hi));
}
#endif
#define power(x, z) MATH(pow)((x), (z))
#endif

// Inlined always on CPU-type devices (EW_OWN_EXP): with the op fixed at build time (EW_FIXED_OP) the switch then
// folds to one case; PoCL's inliner left a large apply (the forms of cpu_math.cl) a call, and a loop with a call is
// not vectorized. GPU compilers get the plain function, as before.
#ifdef EW_OWN_EXP
#define EW_INLINE static inline __attribute__((always_inline))
#else
#define EW_INLINE
#endif
EW_INLINE CT apply(const int op, const CT x, const CT z) {
#if defined(EW_OWN_MATH) && defined(TIN_F64)  // float64 on CPU-type devices: these as the CPU device's forms too
  if (op == EW_expm1) return own64_expm1(x);
  if (op == EW_log) return own64_log(x);
  if (op == EW_log1p) return own64_log1p(x);
  if (op == EW_log2) return own64_log2(x);
  if (op == EW_cosh) return own64_cosh(x);
#endif
  switch (op) {
    case EW_add: return wrap_add(x, z);
    case EW_subtract: return wrap_sub(x, z);
    case EW_multiply: return wrap_mul(x, z);
    case EW_floor_divide: return floor_div(x, z);
    case EW_remainder: return rem(x, z);
    case EW_pow: return power(x, z);
    case EW_maximum: return (NAN_OF(x) || x > z) ? x : z;  // NaN propagates
    case EW_minimum: return (NAN_OF(x) || x < z) ? x : z;
    case EW_equal: return (CT)(x == z);
    case EW_not_equal: return (CT)(x != z);
    case EW_less: return (CT)(x < z);
    case EW_less_equal: return (CT)(x <= z);
    case EW_greater: return (CT)(x > z);
    case EW_greater_equal: return (CT)(x >= z);
    case EW_logical_and: return (CT)(x != 0 && z != 0);
    case EW_logical_or: return (CT)(x != 0 || z != 0);
    case EW_logical_xor: return (CT)((x != 0) != (z != 0));
    case EW_logical_not: return (CT)(x == 0);
#if IS_FLOAT
    case EW_negative: return -x;  // the sign flipped: -0 for +0, as NumPy's (0 - x gives +0)
#else
    case EW_negative: return wrap_sub((CT)0, x);
#endif
    case EW_positive: return x;
    case EW_square: return wrap_mul(x, x);
    case EW_sign: return x > 0 ? (CT)1 : NEGATIVE_OR_LESS(x) ? (CT)-1 : x == 0 ? (CT)0 : x;  // +0 for -0, NaN kept
    case EW_isnan: return (CT)(NAN_OF(x) != 0);
    case EW_cast: return x;
#if IS_FLOAT
    case EW_abs: return fabs(x);
    case EW_floor: return floor(x);
    case EW_ceil: return ceil(x);
    case EW_round: return rint(x);  // ties to even
    case EW_trunc: return trunc(x);
    case EW_isinf: return (CT)(isinf(x) != 0);
    case EW_isfinite: return (CT)(isfinite(x) != 0);
    case EW_signbit: return (CT)(signbit(x) != 0);
    case EW_divide: return x / z;
    case EW_atan2: return MATH(atan2)(x, z);
    case EW_hypot: return MATH(hypot)(x, z);
    case EW_copysign: return copysign(x, z);
    case EW_logaddexp: return log_add_exp(x, z);
    case EW_exp: return EXP(x);
    case EW_expm1: return MATH(expm1)(x);
    case EW_log: return MATH(log)(x);
    case EW_log1p: return MATH(log1p)(x);
    case EW_log2: return MATH(log2)(x);
    case EW_log10: return MATH(log10)(x);
    case EW_sqrt: return sqrt(x);
    case EW_sin: return MATH(sin)(x);
    case EW_cos: return MATH(cos)(x);
    case EW_tan: return MATH(tan)(x);
    case EW_asin: return MATH(asin)(x);
    case EW_acos: return MATH(acos)(x);
    case EW_atan: return MATH(atan)(x);
    case EW_sinh: return MATH(sinh)(x);
    case EW_cosh: return MATH(cosh)(x);
    case EW_tanh: return MATH(tanh)(x);
    case EW_asinh: return MATH(asinh)(x);
    case EW_acosh: return MATH(acosh)(x);
    case EW_atanh: return MATH(atanh)(x);
    case EW_reciprocal: return (CT)1 / x;
#else
    case EW_abs: return NEGATIVE(x) ? wrap_sub((CT)0, x) : x;
    case EW_floor:
    case EW_ceil:
    case EW_round:
    case EW_trunc: return x;
    case EW_isinf: return 0;
    case EW_isfinite: return 1;
    case EW_bitwise_and: return x & z;
    case EW_bitwise_or: return x | z;
    case EW_bitwise_xor: return x ^ z;
    case EW_bitwise_left_shift: return (NEGATIVE(z) || z >= BITS) ? (CT)0 : (CT)((UCT)x << z);
    case EW_bitwise_right_shift: return (NEGATIVE(z) || z >= BITS) ? (NEGATIVE(x) ? (CT)-1 : (CT)0) : (CT)(x >> z);
#if defined(TIN_B8)
    case EW_bitwise_invert: return (CT)(x == 0);
#else
    case EW_bitwise_invert: return (CT)~x;
#endif
#endif
  }
  return 0;
}

// The element offsets of output element i in three operands: its row-major index over the (at most 8) dimensions
// `shape8`, times each operand's element strides.
void offsets(long i, const int nd, const long8 shape8, const long8 sa8, const long8 sb8, const long8 sc8, long* oa,
             long* ob, long* oc) {
  long sh[8], sa[8], sb[8], sc[8];
  vstore8(shape8, 0, sh);
  vstore8(sa8, 0, sa);
  vstore8(sb8, 0, sb);
  vstore8(sc8, 0, sc);
  *oa = 0;
  *ob = 0;
  *oc = 0;
  for (int k = nd - 1; k >= 0; --k) {
    const long q = i % sh[k];
    i /= sh[k];
    *oa += q * sa[k];
    *ob += q * sb[k];
    *oc += q * sc[k];
  }
}

// EW_FIXED_OP / EW_FIXED_MODE (ClBackend::op_built_in: CPU-type devices, large contiguous calls): the op and the mode
// fixed at build time, so that the op's switch folds away and the compiler vectorizes the work items' loop (PoCL
// ran the run-time switch element by element: an add of 64 MiB at 0.12x the memory bandwidth).
#ifdef EW_FIXED_OP
#define OP EW_FIXED_OP
#define MODE EW_FIXED_MODE
#else
#define OP op
#define MODE mode
#endif

// y[i] = op(a, b) at element i of the output: the offsets of a and b from the (at most 8) dimensions `shape` and
// their element strides, unless contig (then i itself), plus their first elements a0 / b0 (views). mode: 0 two
// arrays, 1 the scalar second, 2 the scalar first (the array is a), 3 one array (unary).
__kernel void ew(const long n, const int op, const int mode, const int contig, const int nd, const long8 shape8,
                 const long8 sa8, const long8 sb8, const long a0, const long b0, const CT scal,
                 __global const SIN* a, __global const SIN* b, __global SOUT* y) {
  const long i = get_global_id(0);
  if (i >= n) return;
  long oa = i, ob = i, oc = i;
#ifndef EW_FIXED_OP  // fixed ops are built for contiguous calls only: no offsets' loop in the work-item, which kept
  // PoCL from vectorizing the work-items' loop wherever the op was too large for it to unswitch (tanh 12 ms -> 2.4)
  if (!contig) offsets(i, nd, shape8, sa8, sb8, sb8, &oa, &ob, &oc);
#endif
  oa += a0;
  ob += b0;
  const CT v = LOADIN(a, oa);
  const CT x = MODE == 2 ? scal : v;
  const CT z = MODE == 0 ? LOADIN(b, ob) : MODE == 2 ? v : scal;
  STOREOUT(apply(OP, x, z), y, i);
}

#if defined(EW_OWN_EXP) && defined(TIN_F32) && defined(TOUT_F32)
// float32 exp of a contiguous call on CPU-type devices: item i < n / 16 sixteen elements (own_exp16), item n / 16 the
// last n % 16 one by one
__kernel void ew_exp16(const long n, const long a0, __global const float* a, __global float* y) {
  const long i = get_global_id(0), n16 = n / 16;
  if (i < n16) {
    vstore16(own_exp16(vload16(i, a + a0)), i, y);
  } else if (i == n16) {
    for (long j = 16 * n16; j < n; ++j) y[j] = own_exp(a[a0 + j]);
  }
}
#endif

// ew over a two-dimensional range (CPU-type devices: strided calls of one or two dimensions after merging): item
// (col, row) of rows x cols, the offsets row * s?0 + col * s?1 without ew's divisions; the output dense.
__kernel void ew2(const long rows, const long cols, const int op, const int mode, const long sa0, const long sa1,
                  const long sb0, const long sb1, const long a0, const long b0, const CT scal, __global const SIN* a,
                  __global const SIN* b, __global SOUT* y) {
  const long col = get_global_id(0), row = get_global_id(1);
  if (col >= cols || row >= rows) return;
  const CT v = LOADIN(a, a0 + row * sa0 + col * sa1);
  const CT x = MODE == 2 ? scal : v;
  const CT z = MODE == 0 ? LOADIN(b, b0 + row * sb0 + col * sb1) : MODE == 2 ? v : scal;
  STOREOUT(apply(OP, x, z), y, row * cols + col);
}

// y[i] = c[i] ? a[i] : b[i] (where; TIN = TOUT), the offsets from the dimensions as in ew, c read at sc. The
// elements are moved as raw bits (half is not loadable without cl_khr_fp16).
#if defined(TIN_F16)
#define RAW ushort
#else
#define RAW SIN
#endif
__kernel void ew_where(const long n, const int contig, const int nd, const long8 shape8, const long8 sa8,
                       const long8 sb8, const long8 sc8, const long a0, const long b0, const long c0,
                       __global const uchar* c, __global const SIN* a, __global const SIN* b, __global SOUT* y) {
  const long i = get_global_id(0);
  if (i >= n) return;
  long oa = i, ob = i, oc = i;
  if (!contig) offsets(i, nd, shape8, sa8, sb8, sc8, &oa, &ob, &oc);
  oa += a0;
  ob += b0;
  oc += c0;
  ((__global RAW*)y)[i] = c[oc] ? ((__global const RAW*)a)[oa] : ((__global const RAW*)b)[ob];
}

// ew_where over a two-dimensional range, as ew2 for ew
__kernel void ew_where2(const long rows, const long cols, const long sa0, const long sa1, const long sb0,
                        const long sb1, const long sc0, const long sc1, const long a0, const long b0, const long c0,
                        __global const uchar* c, __global const SIN* a, __global const SIN* b, __global SOUT* y) {
  const long col = get_global_id(0), row = get_global_id(1);
  if (col >= cols || row >= rows) return;
  ((__global RAW*)y)[row * cols + col] = c[c0 + row * sc0 + col * sc1]
                                             ? ((__global const RAW*)a)[a0 + row * sa0 + col * sa1]
                                             : ((__global const RAW*)b)[b0 + row * sb0 + col * sb1];
}
