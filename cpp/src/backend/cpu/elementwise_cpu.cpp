// Element-wise ops on the CPU device (core/elementwise.h): each thread's share of the output is taken in chunks;
// a chunk's operands are read into compute-type arrays (directly when contiguous and of that type; gathered by
// strides, widened from 16 bits, or filled with the scalar otherwise), the op runs as one loop per op the compiler
// vectorises, and the results are stored (narrowed to 16 bits where the output is). Integers wrap as NumPy's do
// (arithmetic in the unsigned type), integer division by zero gives 0, casts from floating to integer saturate
// (NaN gives 0).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_loops.h"
#include "backend/cpu/cpu_threads.h"
#include "backend/cpu/vec_functions.h"
#include "backend/cpu/cpu_convert.h"
#include "backend/cpu/half_convert.h"
#include "backend/cpu/stream_store.h"
#include "backend/cpu/vec_math.h"
#include "core/elementwise.h"
#include "core/errors.h"

#if defined(__GLIBC__) && defined(__x86_64__)
// glibc 2.35 added new versions of hypot and hypotf; the original ones (same accuracy) keep the module loadable on
// glibc 2.34 and older, which the wheel's manylinux tag promises (Ubuntu 22.04: Colab, Kaggle).
__asm__(".symver hypot,hypot@GLIBC_2.2.5");
__asm__(".symver hypotf,hypotf@GLIBC_2.2.5");
#endif

namespace hetnn {

namespace {

constexpr std::int64_t kChunk = 512;
constexpr std::int64_t kParallelMin = kElementwiseParallelMin;
constexpr std::int64_t kPiece = 1 << 16;  // elements a thread takes at a time (a multiple of kChunk)

bool is16(DType t) { return t == DType::f16 || t == DType::bf16; }

// The chunk [i, i + m) of one operand as C values: a pointer into the buffer when it can be read as it is, else
// `tmp` filled.
// Whether elements of type t are stored as C (so a chunk is read, or written, in place).
template <class C>
bool native(DType t) {
  return (t == DType::f32 && std::is_same_v<C, float>) || (t == DType::f64 && std::is_same_v<C, double>) ||
         (t == DType::i32 && std::is_same_v<C, std::int32_t>) || (t == DType::i64 && std::is_same_v<C, std::int64_t>) ||
         ((t == DType::u8 || t == DType::b8) && std::is_same_v<C, std::uint8_t>) ||
         (t == DType::i8 && std::is_same_v<C, std::int8_t>);
}

template <class C>
const C* operand(const ElementwiseDesc& d, DType t, const void* p, const std::vector<std::int64_t>& st, std::int64_t i,
                 std::int64_t m, C* tmp) {
  if (d.contiguous && native<C>(t)) return static_cast<const C*>(p) + i;
  if constexpr (std::is_same_v<C, float>) {
    if (d.contiguous && is16(t)) {
      widen_to_f32(t, static_cast<const std::uint16_t*>(p) + i, tmp, m);
      return tmp;
    }
  }
  Walker w(d.shape, st, i);
  if (native<C>(t)) {  // runs along the innermost dimension, read at its stride (a view, a broadcast row)
    const C* q = static_cast<const C*>(p);
    const std::size_t last = d.shape.size() - 1;
    const std::int64_t inner = d.shape[last], s = st[last];
    for (std::int64_t j = 0; j < m;) {
      const std::int64_t run = std::min(m - j, inner - w.idx[last]);
      const C* r = q + w.off;
      if (s == 1) std::copy(r, r + run, tmp + j);
      else for (std::int64_t k = 0; k < run; ++k) tmp[j + k] = r[k * s];
      j += run;
      w.off += (run - 1) * s;
      w.idx[last] += run - 1;
      w.next();  // onto the next row, or past the last element (then unused)
    }
    return tmp;
  }
  for (std::int64_t j = 0; j < m; ++j, w.next()) tmp[j] = load<C>(t, p, w.off);
  return tmp;
}

template <class C>
using Unsigned = std::conditional_t<std::is_integral_v<C>, std::make_unsigned_t<C>, C>;

template <class C>
C wrap_add(C x, C z) {
  if constexpr (std::is_integral_v<C>) return static_cast<C>(static_cast<Unsigned<C>>(x) + static_cast<Unsigned<C>>(z));
  else return x + z;
}
template <class C>
C wrap_sub(C x, C z) {
  if constexpr (std::is_integral_v<C>) return static_cast<C>(static_cast<Unsigned<C>>(x) - static_cast<Unsigned<C>>(z));
  else return x - z;
}
template <class C>
C wrap_mul(C x, C z) {
  if constexpr (std::is_integral_v<C>)
    return static_cast<C>(static_cast<Unsigned<C>>(x) * static_cast<Unsigned<C>>(z));
  else return x * z;
}

// NumPy's floor division and remainder (npy_divmod): the remainder takes the divisor's sign.
template <class C>
C floor_div(C x, C z) {
  if constexpr (std::is_integral_v<C>) {
    if (z == 0) return 0;
    if constexpr (std::is_signed_v<C>) {
      if (z == -1) return wrap_sub(C{0}, x);
      C q = x / z;
      if ((x % z != 0) && ((x < 0) != (z < 0))) --q;
      return q;
    } else {
      return x / z;
    }
  } else {
    if (z == 0) return x / z;
    const C mod = std::fmod(x, z);
    C div = (x - mod) / z;
    if (mod != 0 && ((z < 0) != (mod < 0))) div -= 1;
    if (div == 0) return std::copysign(C{0}, x / z);
    C fl = std::floor(div);
    if (div - fl > C(0.5)) fl += 1;
    return fl;
  }
}
template <class C>
C rem(C x, C z) {
  if constexpr (std::is_integral_v<C>) {
    if (z == 0) return 0;
    if constexpr (std::is_signed_v<C>) {
      if (z == -1) return 0;
      C r = x % z;
      if (r != 0 && ((r < 0) != (z < 0))) r += z;
      return r;
    } else {
      return x % z;
    }
  } else {
    if (z == 0) return std::fmod(x, z);
    C mod = std::fmod(x, z);
    if (mod != 0) {
      if ((z < 0) != (mod < 0)) mod += z;
    } else {
      mod = std::copysign(C{0}, z);
    }
    return mod;
  }
}
template <class C>
C power(C x, C z) {
  if constexpr (std::is_integral_v<C>) {
    if constexpr (std::is_signed_v<C>) {
      if (z < 0) return x == 1 ? 1 : x == -1 ? ((z & 1) ? -1 : 1) : 0;  // 1 / x^|z| truncated
    }
    Unsigned<C> r = 1, b = static_cast<Unsigned<C>>(x);
    for (auto e = static_cast<Unsigned<C>>(z); e; e >>= 1) {
      if (e & 1) r = static_cast<Unsigned<C>>(r * b);
      b = static_cast<Unsigned<C>>(b * b);
    }
    return static_cast<C>(r);
  } else {
    return std::pow(x, z);
  }
}
template <class C>
C shift_left(C x, C s) {
  constexpr int bits = 8 * sizeof(C);
  if (s < 0 || s >= bits) return 0;
  return static_cast<C>(static_cast<Unsigned<C>>(x) << s);
}
template <class C>
C shift_right(C x, C s) {
  constexpr int bits = 8 * sizeof(C);
  if (s < 0 || s >= bits) return x < 0 ? C(-1) : C(0);
  return static_cast<C>(x >> s);
}

// float32 e^x over m elements, vectorised at the processor's width: blocks whose elements all give normal results
// (the common case) take the short form, the others the full one (NaN, infinities, overflow, subnormals).
HETNN_CLONES void exp_f32_loop(std::int64_t m, const float* x, float* r) {
  constexpr std::int64_t kBlock = 64;
  for (std::int64_t j0 = 0; j0 < m; j0 += kBlock) {
    const std::int64_t e = std::min(m, j0 + kBlock);
    prefetch_block(x + j0);
    // the range checked in the same pass (a pass of its own cost a tenth more), the results held until it is
    // known (r may be x itself)
    alignas(64) float t[kBlock];
    int normal = 1;
    for (std::int64_t j = j0; j < e; ++j) {
      normal &= (x[j] >= kExpNormalLo) & (x[j] <= kExpNormalHi);
      t[j - j0] = exp_f32_normal(x[j]);
    }
    if (normal) {
      for (std::int64_t j = j0; j < e; ++j) r[j] = t[j - j0];
    } else {
      for (std::int64_t j = j0; j < e; ++j) r[j] = exp_f32(x[j]);
    }
  }
}

// The functions of vec_functions.h over blocks of 64 elements of type T: the form W lanes at a time (LOAD) for the
// elements in its domain (OK of `a`, and `b` for two operands), LIBM for the others (NaN, infinities, the domain's
// edges, arguments beyond the reduction's range), per element: for float32 libm's double call rounded once as the
// forms are. An element's result never depends on its block's neighbours (when a block went to libm whole, a float64
// cosh beside an overflowing one came out 2 ulp off, glibc's, instead of the form's 1). The libm results of a
// mixed block are taken before the form writes the block (r may be x). The functions below return false for an op
// they do not take.
#define HETNN_FN_BLOCKS_W(T, W, LOAD, OK, FORM, LIBM)                                                         \
  for (std::int64_t j0 = 0; j0 < m; j0 += 64) {                                                               \
    const std::int64_t e = std::min(m, j0 + 64);                                                              \
    prefetch_block(x + j0);                                                                                   \
    if (z) prefetch_block(z + j0);                                                                            \
    int ok = 1;                                                                                               \
    for (std::int64_t j = j0; j < e; ++j) {                                                                   \
      const T a = x[j], b = z ? z[j] : T(0);                                                                  \
      (void)b;                                                                                                \
      ok &= (OK);                                                                                             \
    }                                                                                                         \
    T fix[64];                                                                                                \
    std::uint64_t bad = 0;                                                                                    \
    if (!ok) { /* a mixed block: libm's results for the elements outside the domain, kept aside */            \
      for (std::int64_t j = j0; j < e; ++j) {                                                                 \
        const T a = x[j], b = z ? z[j] : T(0);                                                                \
        (void)b;                                                                                              \
        if (!(OK)) {                                                                                          \
          bad |= std::uint64_t{1} << (j - j0);                                                                \
          fix[j - j0] = (LIBM);                                                                               \
        }                                                                                                     \
      }                                                                                                       \
      if (bad == (e - j0 == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << (e - j0)) - 1)) {                   \
        for (std::int64_t j = j0; j < e; ++j) r[j] = fix[j - j0];                                             \
        continue;                                                                                             \
      }                                                                                                       \
    }                                                                                                         \
    std::int64_t j = j0;                                                                                      \
    for (; j + (W) <= e; j += (W)) {                                                                          \
      const auto va = vecfn::LOAD(x + j), vb = z ? vecfn::LOAD(z + j) : va;                                   \
      (void)vb;                                                                                               \
      vecfn::store(r + j, FORM);                                                                              \
    }                                                                                                         \
    if (j < e) { /* the ragged end through a padded vector */                                                 \
      alignas(64) T ta[W] = {}, tb[W] = {};                                                                   \
      std::memcpy(ta, x + j, static_cast<std::size_t>(e - j) * sizeof(T));                                    \
      if (z) std::memcpy(tb, z + j, static_cast<std::size_t>(e - j) * sizeof(T));                             \
      const auto va = vecfn::LOAD(ta), vb = vecfn::LOAD(tb);                                                  \
      (void)vb;                                                                                               \
      vecfn::store(ta, FORM);                                                                                 \
      std::memcpy(r + j, ta, static_cast<std::size_t>(e - j) * sizeof(T));                                    \
    }                                                                                                         \
    for (; bad; bad &= bad - 1) {                                                                             \
      const int k = __builtin_ctzll(bad);                                                                     \
      r[j0 + k] = fix[k];                                                                                     \
    }                                                                                                         \
  }                                                                                                           \
  return true
#define HETNN_FN_BLOCKS(T, OK, FORM, LIBM) HETNN_FN_BLOCKS_W(T, 8, load, OK, FORM, LIBM)

HETNN_CLONES bool functions_f32(EwOp op, std::int64_t m, const float* x, const float* z, float* r) {
  using namespace vecfn;
  constexpr float M = kFltMax;
  const auto D = [](double v) { return static_cast<float>(v); };
  switch (op) {
    case EwOp::tanh: HETNN_FN_BLOCKS_W(float, 16, load16, a == a, tanh16(va), D(std::tanh(double(a))));
    case EwOp::sinh: HETNN_FN_BLOCKS_W(float, 16, load16, a == a, sinh16(va), D(std::sinh(double(a))));
    case EwOp::cosh: HETNN_FN_BLOCKS_W(float, 16, load16, a == a, cosh16(va), D(std::cosh(double(a))));
    case EwOp::expm1: HETNN_FN_BLOCKS_W(float, 16, load16, a == a, expm1_16(va), D(std::expm1(double(a))));
    case EwOp::log: HETNN_FN_BLOCKS(float, (a > 0.0f) & (a <= M), log8(va), D(std::log(double(a))));
    case EwOp::log2: HETNN_FN_BLOCKS(float, (a > 0.0f) & (a <= M), log2_8(va), D(std::log2(double(a))));
    case EwOp::log10: HETNN_FN_BLOCKS(float, (a > 0.0f) & (a <= M), log10_8(va), D(std::log10(double(a))));
    case EwOp::log1p: HETNN_FN_BLOCKS(float, (a > -1.0f) & (a <= M), log1p8(va), D(std::log1p(double(a))));
    case EwOp::atanh: HETNN_FN_BLOCKS(float, (a > -1.0f) & (a < 1.0f), atanh8(va), D(std::atanh(double(a))));
    case EwOp::asinh: HETNN_FN_BLOCKS(float, (a >= -M) & (a <= M), asinh8(va), D(std::asinh(double(a))));
    case EwOp::acosh: HETNN_FN_BLOCKS(float, (a >= 1.0f) & (a <= M), acosh8(va), D(std::acosh(double(a))));
    case EwOp::sin: HETNN_FN_BLOCKS(float, std::fabs(a) <= kTrigMax, sin8(va), D(std::sin(double(a))));
    case EwOp::cos: HETNN_FN_BLOCKS(float, std::fabs(a) <= kTrigMax, cos8(va), D(std::cos(double(a))));
    case EwOp::tan: HETNN_FN_BLOCKS(float, std::fabs(a) <= kTrigMax, tan8(va), D(std::tan(double(a))));
    case EwOp::atan: HETNN_FN_BLOCKS_W(float, 16, load16, a == a, atan16(va), D(std::atan(double(a))));
    case EwOp::asin: HETNN_FN_BLOCKS(float, std::fabs(a) <= 1.0f, asin8(va), D(std::asin(double(a))));
    case EwOp::acos: HETNN_FN_BLOCKS(float, std::fabs(a) <= 1.0f, acos8(va), D(std::acos(double(a))));
    case EwOp::pow:
      HETNN_FN_BLOCKS(float, (a > 0.0f) & (a <= M) & (std::fabs(b) <= M), pow8(va, vb),
                      D(std::pow(double(a), double(b))));
    case EwOp::atan2:
      HETNN_FN_BLOCKS(float, (std::fabs(a) <= M) & (std::fabs(b) <= M) & (a != 0.0f) & (b != 0.0f), atan2_8(va, vb),
                      D(std::atan2(double(a), double(b))));
    case EwOp::hypot:
      HETNN_FN_BLOCKS(float, (std::fabs(a) <= M) & (std::fabs(b) <= M), hypot8(va, vb),
                      D(std::hypot(double(a), double(b))));
    default: return false;
  }
}

// float64 exp, expm1, log, log1p, log2 and cosh the same way (vec_functions.h's float64 forms, within 1 ulp);
// blocks beyond them, libm's. (tanh, sinh, atanh, asinh, acosh and log10 as fdlibm's formulas over these forms were
// 2-3 ulp off, libm's 1: left to libm.)
HETNN_CLONES bool functions_f64(EwOp op, std::int64_t m, const double* x, const double* z, double* r) {
  using namespace vecfn;
  switch (op) {
    case EwOp::exp: HETNN_FN_BLOCKS(double, (a >= kExp64Lo) & (a <= kExp64Hi), exp64(va), std::exp(a));
    case EwOp::expm1: HETNN_FN_BLOCKS(double, (a >= kExp64Lo) & (a <= kExp64Hi), expm1_64(va), std::expm1(a));
    case EwOp::log1p:
      HETNN_FN_BLOCKS(double, (a > -1.0) & (a <= std::numeric_limits<double>::max()), log1p64(va), std::log1p(a));
    case EwOp::log:
      HETNN_FN_BLOCKS(double, (a >= std::numeric_limits<double>::min()) & (a <= std::numeric_limits<double>::max()),
                      log64(va), std::log(a));
    case EwOp::log2:
      HETNN_FN_BLOCKS(double, (a >= std::numeric_limits<double>::min()) & (a <= std::numeric_limits<double>::max()),
                      log2_64(va), std::log2(a));
    case EwOp::cosh: HETNN_FN_BLOCKS(double, std::fabs(a) <= kCosh64Max, cosh64(va), std::cosh(a));
    default: return false;
  }
}
#undef HETNN_FN_BLOCKS

// The commonest floating ops at the processor's vector width (the library is built for baseline x86-64: SSE2): a
// chunk in the first-level cache runs in a quarter of the instructions with AVX-512, which shows once the memory
// side is fast (a streamed add at 64 MiB: 2.9 against 3.3 ms in a C prototype) and wherever the operands are in
// the caches; SSE2 has no rounding instruction, so floor, ceil, trunc and round were calls there. One exact
// operation an element, so the results are the same bits at every width. False: not one of them.
#define HETNN_ARITH(T, NAME)                                                                               \
  HETNN_CLONES bool NAME(EwOp op, std::int64_t m, const T* x, const T* z, T* r) {                          \
    switch (op) {                                                                                          \
      case EwOp::add: for (std::int64_t j = 0; j < m; ++j) r[j] = x[j] + z[j]; return true;               \
      case EwOp::subtract: for (std::int64_t j = 0; j < m; ++j) r[j] = x[j] - z[j]; return true;          \
      case EwOp::multiply: for (std::int64_t j = 0; j < m; ++j) r[j] = x[j] * z[j]; return true;          \
      case EwOp::divide: for (std::int64_t j = 0; j < m; ++j) r[j] = x[j] / z[j]; return true;            \
      case EwOp::square: for (std::int64_t j = 0; j < m; ++j) r[j] = x[j] * x[j]; return true;            \
      case EwOp::negative: for (std::int64_t j = 0; j < m; ++j) r[j] = -x[j]; return true;                \
      case EwOp::floor: for (std::int64_t j = 0; j < m; ++j) r[j] = std::floor(x[j]); return true;        \
      case EwOp::ceil: for (std::int64_t j = 0; j < m; ++j) r[j] = std::ceil(x[j]); return true;          \
      case EwOp::trunc: for (std::int64_t j = 0; j < m; ++j) r[j] = std::trunc(x[j]); return true;        \
      case EwOp::round: for (std::int64_t j = 0; j < m; ++j) r[j] = std::nearbyint(x[j]); return true;    \
      default: return false;                                                                               \
    }                                                                                                      \
  }
HETNN_ARITH(float, arith_f32)
HETNN_ARITH(double, arith_f64)
#undef HETNN_ARITH

// Integer floor division and remainder of 8- and 32-bit types through double, at the vector width (x86 has no
// vector integer division; int32 floor_divide was 0.54x NumPy's speed): both operands are exact in double and
// the rounded quotient lies less than 1/|z| from the exact one, so its floor is the exact floor quotient. The
// rules of floor_div/rem above: z = 0 gives 0, z = -1 the wrapped negation (floor_divide) and 0 (remainder); the
// remainder x - q z is taken modulo 2^32, where the exact one fits. False: another op.
#define HETNN_IDIV(T, NAME)                                                                                    \
  HETNN_CLONES bool NAME(EwOp op, std::int64_t m, const T* x, const T* z, T* r) {                              \
    if (op != EwOp::floor_divide && op != EwOp::remainder) return false;                                      \
    const bool quotient = op == EwOp::floor_divide;                                                           \
    for (std::int64_t j = 0; j < m; ++j) {                                                                    \
      const std::int32_t a = x[j], b = z[j];                                                                  \
      const bool plain = (b != 0) & (b != -1);                                                                \
      const double q = std::floor(static_cast<double>(a) / static_cast<double>(plain ? b : 1));               \
      const std::uint32_t qi = static_cast<std::uint32_t>(static_cast<std::int32_t>(plain ? q : 0.0));         \
      const std::uint32_t neg = 0u - static_cast<std::uint32_t>(a);                                           \
      const std::uint32_t rem = static_cast<std::uint32_t>(a) - qi * static_cast<std::uint32_t>(b);           \
      r[j] = static_cast<T>(static_cast<std::int32_t>(quotient ? (plain ? qi : b == -1 ? neg : 0u)            \
                                                               : (plain ? rem : 0u)));                        \
    }                                                                                                         \
    return true;                                                                                              \
  }
HETNN_IDIV(std::int32_t, idiv_i32)
HETNN_IDIV(std::int8_t, idiv_i8)
HETNN_IDIV(std::uint8_t, idiv_u8)
#undef HETNN_IDIV

// where's selection at the processor's vector width: both operands loaded first, so the choice is a select the
// compiler vectorises (a conditional load became a branch: with a random condition 2.7 ns an element, mispredicted)
#define HETNN_SELECT(T, NAME)                                                                                    \
  HETNN_CLONES void NAME(std::int64_t m, const std::uint8_t* k, const T* x, const T* z, T* r) {                  \
    for (std::int64_t j = 0; j < m; ++j) {                                                                      \
      const T a = x[j], b = z[j];                                                                               \
      r[j] = k[j] ? a : b;                                                                                      \
    }                                                                                                           \
  }
HETNN_SELECT(float, select_f32)
HETNN_SELECT(double, select_f64)
HETNN_SELECT(std::int32_t, select_i32)
HETNN_SELECT(std::int64_t, select_i64)
HETNN_SELECT(std::uint8_t, select_u8)
HETNN_SELECT(std::int8_t, select_i8)
#undef HETNN_SELECT

template <class T>
void select(std::int64_t m, const std::uint8_t* k, const T* x, const T* z, T* r) {
  if constexpr (std::is_same_v<T, float>) select_f32(m, k, x, z, r);
  else if constexpr (std::is_same_v<T, double>) select_f64(m, k, x, z, r);
  else if constexpr (std::is_same_v<T, std::int32_t>) select_i32(m, k, x, z, r);
  else if constexpr (std::is_same_v<T, std::int64_t>) select_i64(m, k, x, z, r);
  else if constexpr (std::is_same_v<T, std::uint8_t>) select_u8(m, k, x, z, r);
  else select_i8(m, k, x, z, r);
}

template <class R, class C, class F>
void map2(std::int64_t m, const C* x, const C* z, R* r, F f) {
  for (std::int64_t j = 0; j < m; ++j) r[j] = static_cast<R>(f(x[j], z[j]));
}
template <class R, class C, class F>
void map1(std::int64_t m, const C* x, R* r, F f) {
  for (std::int64_t j = 0; j < m; ++j) r[j] = static_cast<R>(f(x[j]));
}

[[noreturn]] void unreachable(EwOp op) {
  throw Error(std::string("elementwise (cpu): op ") + ew_name(op) + " reached a type it has no loop for");
}

// r = op(x, z) (or op(x)) over m elements; R is C for numeric results, std::uint8_t for bool ones.
template <class C, class R>
void compute(EwOp op, bool bool_in, std::int64_t m, const C* x, const C* z, R* r) {
  constexpr bool F = std::is_floating_point_v<C>;
  constexpr bool I = std::is_integral_v<C>;
  if constexpr (std::is_same_v<C, float> && std::is_same_v<R, float>) {
    if (arith_f32(op, m, x, z, r) || functions_f32(op, m, x, z, r)) return;
  } else if constexpr (std::is_same_v<C, double> && std::is_same_v<R, double>) {
    if (arith_f64(op, m, x, z, r) || functions_f64(op, m, x, z, r)) return;
  } else if constexpr (std::is_same_v<C, std::int32_t> && std::is_same_v<R, std::int32_t>) {
    if (idiv_i32(op, m, x, z, r)) return;
  } else if constexpr (std::is_same_v<C, std::int8_t> && std::is_same_v<R, std::int8_t>) {
    if (idiv_i8(op, m, x, z, r)) return;
  } else if constexpr (std::is_same_v<C, std::uint8_t> && std::is_same_v<R, std::uint8_t>) {
    if (idiv_u8(op, m, x, z, r)) return;
  }
  switch (op) {
    case EwOp::add: return map2(m, x, z, r, wrap_add<C>);
    case EwOp::subtract: return map2(m, x, z, r, wrap_sub<C>);
    case EwOp::multiply: return map2(m, x, z, r, wrap_mul<C>);
    case EwOp::floor_divide: return map2(m, x, z, r, floor_div<C>);
    case EwOp::remainder: return map2(m, x, z, r, rem<C>);
    case EwOp::pow: return map2(m, x, z, r, power<C>);
    case EwOp::maximum:
      return map2(m, x, z, r, [](C a, C b) { return (a != a || a > b) ? a : b; });  // NaN propagates
    case EwOp::minimum: return map2(m, x, z, r, [](C a, C b) { return (a != a || a < b) ? a : b; });
    case EwOp::equal: return map2(m, x, z, r, [](C a, C b) { return a == b; });
    case EwOp::not_equal: return map2(m, x, z, r, [](C a, C b) { return a != b; });
    case EwOp::less: return map2(m, x, z, r, [](C a, C b) { return a < b; });
    case EwOp::less_equal: return map2(m, x, z, r, [](C a, C b) { return a <= b; });
    case EwOp::greater: return map2(m, x, z, r, [](C a, C b) { return a > b; });
    case EwOp::greater_equal: return map2(m, x, z, r, [](C a, C b) { return a >= b; });
    case EwOp::logical_and: return map2(m, x, z, r, [](C a, C b) { return a != C(0) && b != C(0); });
    case EwOp::logical_or: return map2(m, x, z, r, [](C a, C b) { return a != C(0) || b != C(0); });
    case EwOp::logical_xor: return map2(m, x, z, r, [](C a, C b) { return (a != C(0)) != (b != C(0)); });
    case EwOp::logical_not: return map1(m, x, r, [](C a) { return a == C(0); });
    case EwOp::negative:  // floating: the sign flipped (-0 for +0, as NumPy's), not 0 - a
      if constexpr (F) return map1(m, x, r, [](C a) { return -a; });
      else return map1(m, x, r, [](C a) { return wrap_sub(C(0), a); });
    case EwOp::positive: return map1(m, x, r, [](C a) { return a; });
    case EwOp::square: return map1(m, x, r, [](C a) { return wrap_mul(a, a); });
    case EwOp::abs:
      if constexpr (F) return map1(m, x, r, [](C a) { return std::fabs(a); });
      else if constexpr (std::is_signed_v<C>) return map1(m, x, r, [](C a) { return a < 0 ? wrap_sub(C(0), a) : a; });
      else return map1(m, x, r, [](C a) { return a; });
    case EwOp::sign:
      // +0 for either zero (NumPy's and the Array API's), NaN kept
      return map1(m, x, r, [](C a) { return a > C(0) ? C(1) : a < C(0) ? C(-1) : a == C(0) ? C(0) : a; });
    case EwOp::floor:
    case EwOp::ceil:
    case EwOp::round:
    case EwOp::trunc:
      if constexpr (F) {
        if (op == EwOp::floor) return map1(m, x, r, [](C a) { return std::floor(a); });
        if (op == EwOp::ceil) return map1(m, x, r, [](C a) { return std::ceil(a); });
        if (op == EwOp::round) return map1(m, x, r, [](C a) { return std::nearbyint(a); });  // ties to even
        return map1(m, x, r, [](C a) { return std::trunc(a); });
      } else {
        return map1(m, x, r, [](C a) { return a; });
      }
    case EwOp::isnan: return map1(m, x, r, [](C a) { return a != a; });
    case EwOp::isinf:
      if constexpr (F) return map1(m, x, r, [](C a) { return std::isinf(a); });
      else return map1(m, x, r, [](C) { return false; });
    case EwOp::isfinite:
      if constexpr (F) return map1(m, x, r, [](C a) { return std::isfinite(a); });
      else return map1(m, x, r, [](C) { return true; });
    case EwOp::signbit:
      if constexpr (F) return map1(m, x, r, [](C a) { return std::signbit(a); });
      else break;
    case EwOp::bitwise_and:
    case EwOp::bitwise_or:
    case EwOp::bitwise_xor:
    case EwOp::bitwise_left_shift:
    case EwOp::bitwise_right_shift:
    case EwOp::bitwise_invert:
      if constexpr (I) {
        if (op == EwOp::bitwise_and) return map2(m, x, z, r, [](C a, C b) { return C(a & b); });
        if (op == EwOp::bitwise_or) return map2(m, x, z, r, [](C a, C b) { return C(a | b); });
        if (op == EwOp::bitwise_xor) return map2(m, x, z, r, [](C a, C b) { return C(a ^ b); });
        if (op == EwOp::bitwise_left_shift) return map2(m, x, z, r, shift_left<C>);
        if (op == EwOp::bitwise_right_shift) return map2(m, x, z, r, shift_right<C>);
        if (bool_in) return map1(m, x, r, [](C a) { return C(a == 0); });
        return map1(m, x, r, [](C a) { return C(~a); });
      }
      break;
    default:
      if constexpr (F) {
        switch (op) {
          case EwOp::divide: return map2(m, x, z, r, [](C a, C b) { return a / b; });
          case EwOp::atan2: return map2(m, x, z, r, [](C a, C b) { return std::atan2(a, b); });
          case EwOp::hypot: return map2(m, x, z, r, [](C a, C b) { return std::hypot(a, b); });
          case EwOp::copysign: return map2(m, x, z, r, [](C a, C b) { return std::copysign(a, b); });
          case EwOp::logaddexp:
            return map2(m, x, z, r, [](C a, C b) {
              if (a != a || b != b) return a + b;
              if (a == b) return a + C(0.693147180559945309417232121458176568);  // also equal infinities
              const C hi = std::max(a, b), lo = std::min(a, b);
              return hi + std::log1p(std::exp(lo - hi));
            });
          case EwOp::exp:
            if constexpr (std::is_same_v<C, float> && std::is_same_v<R, float>) return exp_f32_loop(m, x, r);
            else return map1(m, x, r, [](C a) { return std::exp(a); });
          case EwOp::expm1: return map1(m, x, r, [](C a) { return std::expm1(a); });
          case EwOp::log: return map1(m, x, r, [](C a) { return std::log(a); });
          case EwOp::log1p: return map1(m, x, r, [](C a) { return std::log1p(a); });
          case EwOp::log2: return map1(m, x, r, [](C a) { return std::log2(a); });
          case EwOp::log10: return map1(m, x, r, [](C a) { return std::log10(a); });
          case EwOp::sqrt: return map1(m, x, r, [](C a) { return std::sqrt(a); });
          case EwOp::sin: return map1(m, x, r, [](C a) { return std::sin(a); });
          case EwOp::cos: return map1(m, x, r, [](C a) { return std::cos(a); });
          case EwOp::tan: return map1(m, x, r, [](C a) { return std::tan(a); });
          case EwOp::asin: return map1(m, x, r, [](C a) { return std::asin(a); });
          case EwOp::acos: return map1(m, x, r, [](C a) { return std::acos(a); });
          case EwOp::atan: return map1(m, x, r, [](C a) { return std::atan(a); });
          case EwOp::sinh: return map1(m, x, r, [](C a) { return std::sinh(a); });
          case EwOp::cosh: return map1(m, x, r, [](C a) { return std::cosh(a); });
          case EwOp::tanh: return map1(m, x, r, [](C a) { return std::tanh(a); });
          case EwOp::asinh: return map1(m, x, r, [](C a) { return std::asinh(a); });
          case EwOp::acosh: return map1(m, x, r, [](C a) { return std::acosh(a); });
          case EwOp::atanh: return map1(m, x, r, [](C a) { return std::atanh(a); });
          case EwOp::reciprocal: return map1(m, x, r, [](C a) { return C(1) / a; });
          default: break;
        }
      }
      break;
  }
  unreachable(op);
}


// The op over output elements [begin, end), inputs read as C. `streamed`: each chunk's results are stored into a
// buffer in the first-level cache and written out with streaming stores (stream_store.h).
template <class C>
void run_range(const ElementwiseDesc& d, const void* a, const void* b, void* out, std::int64_t begin,
               std::int64_t end, bool streamed = false) {
  alignas(64) C xa[kChunk], xb[kChunk];
  alignas(64) C rc[kChunk];
  alignas(64) std::uint8_t rb[kChunk];
  alignas(64) unsigned char sc[kChunk * 8];  // the output's chunk when streamed (any type)
  const std::int64_t osize = static_cast<std::int64_t>(dtype_size(d.out));
  C scalar{};
  if (d.scalar) scalar = std::is_floating_point_v<C> ? static_cast<C>(d.fscalar) : static_cast<C>(d.iscalar);
  const bool binary = ew_arity(d.op) == 2;
  const bool bool_out = d.out == DType::b8 && d.op != EwOp::cast;
  const bool direct = !bool_out && d.op != EwOp::cast && d.out == d.in && native<C>(d.out);
  const DType in = d.in;
  const std::size_t isize = dtype_size(in);
  // (the size first: a small call's only cost here is this comparison)
  const bool prefetch = d.contiguous &&
                        static_cast<std::uint64_t>(d.n) * ((binary && !d.scalar ? 2 : 1) * isize + dtype_size(d.out)) >=
                            last_level_cache_bytes() &&
                        ew_info(d.op).kind != EwKind::real;
  const void* pre_b = binary && !d.scalar ? b : nullptr;  // (a number operand: the array is a)
  for (std::int64_t i = begin; i < end; i += kChunk) {
    const std::int64_t m = std::min(kChunk, end - i);
    if (prefetch) {  // the chunk kPrefetchAhead bytes on, within this range
      const std::size_t from = static_cast<std::size_t>(i) * isize + kPrefetchAhead;
      const std::size_t to = std::min(from + static_cast<std::size_t>(m) * isize, static_cast<std::size_t>(end) * isize);
      prefetch_lines(a, from, to);
      if (pre_b) prefetch_lines(pre_b, from, to);
    }
    const C* x = d.scalar == 2 ? nullptr : operand<C>(d, in, a, d.sa, i, m, xa);
    const C* z = nullptr;
    if (binary) {
      if (d.scalar) {
        C* fill = d.scalar == 2 ? xa : xb;
        const C* arr = operand<C>(d, in, a, d.sa, i, m, d.scalar == 2 ? xb : xa);
        std::fill(fill, fill + m, scalar);
        x = d.scalar == 2 ? fill : arr;
        z = d.scalar == 2 ? arr : fill;
      } else {
        z = operand<C>(d, in, b, d.sb, i, m, xb);
      }
    }
    // streamed: results stored into `sc` (element i of the chunk at its start), then the chunk streamed out
    void* dst = streamed ? reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(sc) -
                                                    static_cast<std::uintptr_t>(i) * osize)
                         : out;
    if (d.op == EwOp::cast) {
      store(d.out, dst, i, m, x);
    } else if (direct) {  // into the output (or its chunk) itself: no second pass through a buffer
      compute<C, C>(d.op, in == DType::b8, m, x, z, static_cast<C*>(dst) + i);
    } else if (bool_out) {
      compute<C, std::uint8_t>(d.op, in == DType::b8, m, x, z, rb);
      store(d.out, dst, i, m, rb);
    } else {
      compute<C, C>(d.op, in == DType::b8, m, x, z, rc);
      store(d.out, dst, i, m, rc);
    }
    if (streamed) stream_copy(static_cast<unsigned char*>(out) + i * osize, sc, static_cast<std::size_t>(m) * osize);
  }
}

// Whether an operand of a 2-D walk steps through memory across the output's rows faster than along them (a
// transposed view): row by row, each of its elements would sit in another cache line and page, and at a power-of-two
// row length all of them in one cache set.
bool crosswise(const std::vector<std::int64_t>& st) {
  return st.size() == 2 && std::abs(st[1]) > 1 && std::abs(st[0]) < std::abs(st[1]);
}

// A crosswise walk's output tiles (kTileRows x kTileCols): a tile's copy stays in the first-level cache, and each of
// its columns is a few whole lines of the crosswise operand's memory.
constexpr std::int64_t kTileRows = 64, kTileCols = 64;

// Tile [r0, r1) x [c0, c1) of a crosswise operand (element (r, c) at p[r * st[0] + c * st[1]]) copied into t
// (row-major, kTileCols columns): read along its own memory, column by column of the output, whole lines at a time.
template <class C>
void gather_tile(const C* p, const std::vector<std::int64_t>& st, std::int64_t r0, std::int64_t r1, std::int64_t c0,
                 std::int64_t c1, C* t) {
  const std::int64_t s0 = st[0];
  for (std::int64_t c = c0; c < c1; ++c) {
    const C* col = p + r0 * s0 + c * st[1];
    for (std::int64_t r = 0; r < r1 - r0; ++r) t[r * kTileCols + (c - c0)] = col[r * s0];
  }
}

// gather_tile of a transposed float32 operand (each column of the tile a run in memory, s1 apart): 8 x 8 blocks
// transposed in AVX registers, the edges an element at a time. The compiler's own vector forms of the element loop
// (scatters at AVX-512) took longer than the library's baseline build.
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) void gather_runs_avx(const float* p, std::int64_t s1, std::int64_t h, std::int64_t w,
                                                    float* t) {
  const std::int64_t h8 = h / 8 * 8, w8 = w / 8 * 8;
  for (std::int64_t c = 0; c < w8; c += 8) {
    for (std::int64_t r = 0; r < h8; r += 8) {
      __m256 v[8];
      for (int k = 0; k < 8; ++k) v[k] = _mm256_loadu_ps(p + (c + k) * s1 + r);  // column c + k, rows r..r + 7
      const __m256 a0 = _mm256_unpacklo_ps(v[0], v[1]), a1 = _mm256_unpackhi_ps(v[0], v[1]);
      const __m256 a2 = _mm256_unpacklo_ps(v[2], v[3]), a3 = _mm256_unpackhi_ps(v[2], v[3]);
      const __m256 a4 = _mm256_unpacklo_ps(v[4], v[5]), a5 = _mm256_unpackhi_ps(v[4], v[5]);
      const __m256 a6 = _mm256_unpacklo_ps(v[6], v[7]), a7 = _mm256_unpackhi_ps(v[6], v[7]);
      const __m256 b0 = _mm256_shuffle_ps(a0, a2, 0x44), b1 = _mm256_shuffle_ps(a0, a2, 0xEE);
      const __m256 b2 = _mm256_shuffle_ps(a1, a3, 0x44), b3 = _mm256_shuffle_ps(a1, a3, 0xEE);
      const __m256 b4 = _mm256_shuffle_ps(a4, a6, 0x44), b5 = _mm256_shuffle_ps(a4, a6, 0xEE);
      const __m256 b6 = _mm256_shuffle_ps(a5, a7, 0x44), b7 = _mm256_shuffle_ps(a5, a7, 0xEE);
      float* o = t + r * kTileCols + c;  // rows r..r + 7 of the tile, columns c..c + 7
      _mm256_storeu_ps(o + 0 * kTileCols, _mm256_permute2f128_ps(b0, b4, 0x20));
      _mm256_storeu_ps(o + 1 * kTileCols, _mm256_permute2f128_ps(b1, b5, 0x20));
      _mm256_storeu_ps(o + 2 * kTileCols, _mm256_permute2f128_ps(b2, b6, 0x20));
      _mm256_storeu_ps(o + 3 * kTileCols, _mm256_permute2f128_ps(b3, b7, 0x20));
      _mm256_storeu_ps(o + 4 * kTileCols, _mm256_permute2f128_ps(b0, b4, 0x31));
      _mm256_storeu_ps(o + 5 * kTileCols, _mm256_permute2f128_ps(b1, b5, 0x31));
      _mm256_storeu_ps(o + 6 * kTileCols, _mm256_permute2f128_ps(b2, b6, 0x31));
      _mm256_storeu_ps(o + 7 * kTileCols, _mm256_permute2f128_ps(b3, b7, 0x31));
    }
    for (std::int64_t k = c; k < c + 8; ++k)  // the rows past the last whole block
      for (std::int64_t r = h8; r < h; ++r) t[r * kTileCols + k] = p[k * s1 + r];
  }
  for (std::int64_t c = w8; c < w; ++c)  // the columns past the last whole block
    for (std::int64_t r = 0; r < h; ++r) t[r * kTileCols + c] = p[c * s1 + r];
}
const bool kHaveAvx = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx") != 0;
}();
#endif

// Tile [r0, r1) x [c0, c1) of an operand read along the output's rows (contiguous or broadcast) copied into t
// (row-major, kTileCols columns).
template <class C>
void copy_tile(const C* p, const std::vector<std::int64_t>& st, std::int64_t r0, std::int64_t r1, std::int64_t c0,
               std::int64_t c1, C* t) {
  for (std::int64_t r = r0; r < r1; ++r) {
    const C* row = p + r * st[0] + c0 * st[1];
    C* o = t + (r - r0) * kTileCols;
    if (st[1] == 1) std::copy(row, row + (c1 - c0), o);
    else for (std::int64_t c = 0; c < c1 - c0; ++c) o[c] = row[c * st[1]];
  }
}

// Prefetches (into the second-level cache) what gather_tile reads of a crosswise operand for tile [r0, r1) x
// [c0, c1): a run of r1 - r0 elements per column where its rows are neighbours in memory (a transpose); the hardware
// follows 64 such streams poorly (a C transposed add of 64 MiB: 11-13 GB/s without, 17-18 with).
template <class C>
void prefetch_tile(const C* p, const std::vector<std::int64_t>& st, std::int64_t r0, std::int64_t r1, std::int64_t c0,
                   std::int64_t c1) {
  if (st[0] != 1) return;
  for (std::int64_t c = c0; c < c1; ++c)
    prefetch_lines(p + r0 + c * st[1], 0, static_cast<std::size_t>(r1 - r0) * sizeof(C));
}

// A crosswise walk where the op computes C from C into the output itself (no cast, no bool result): each tile's
// operands copied into tile buffers (the crosswise one transposed in cache, the other row by row), the op run once
// over the tile (one call, not one a row: the rows' calls took more than the memory, 5 GB/s at 64 MiB), its rows
// stored (streamed where the output is large). The columns past an edge tile's width hold earlier tiles' values
// and are computed but never stored.
template <class C>
void run_tiles(const ElementwiseDesc& d, const void* a, const void* b, void* out, bool xa, bool xb) {
  const bool two = ew_arity(d.op) == 2 && d.scalar == 0;
  const std::int64_t rows = d.shape[0], cols = d.shape[1];
  const std::int64_t tc = (cols + kTileCols - 1) / kTileCols, tiles = tc * ((rows + kTileRows - 1) / kTileRows);
  const bool streamed = stream_output(static_cast<std::size_t>(d.n) * sizeof(C));
  const C* pa = static_cast<const C*>(a);
  const C* pb = static_cast<const C*>(b);
  C scalar{};
  if (d.scalar) scalar = std::is_floating_point_v<C> ? static_cast<C>(d.fscalar) : static_cast<C>(d.iscalar);
  constexpr std::int64_t kGrain = 4;  // tiles a thread takes at a time
  const std::int64_t pieces = (tiles + kGrain - 1) / kGrain;
#pragma omp parallel if (pieces > 1)
  {
    constexpr std::int64_t kTile = kTileRows * kTileCols;
    std::vector<C> ta(kTile), tb(two || d.scalar ? kTile : 0), tr(kTile);  // zeros at first
    if (d.scalar) std::fill(tb.begin(), tb.end(), scalar);
    const C* x = d.scalar == 2 ? tb.data() : ta.data();
    const C* z = two || d.scalar == 1 ? tb.data() : d.scalar == 2 ? ta.data() : nullptr;
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t piece = 0; piece < pieces; ++piece) {
        const std::int64_t t0 = piece * kGrain, t1 = std::min(tiles, t0 + kGrain);
        for (std::int64_t t = t0; t < t1; ++t) {
          const std::int64_t r0 = (t / tc) * kTileRows, c0 = (t % tc) * kTileCols;
          const std::int64_t r1 = std::min(r0 + kTileRows, rows), c1 = std::min(c0 + kTileCols, cols);
          if (t + 1 < tiles) {  // the next tile's crosswise reads, while this one computes
            const std::int64_t n0 = ((t + 1) / tc) * kTileRows, m0 = ((t + 1) % tc) * kTileCols;
            const std::int64_t n1 = std::min(n0 + kTileRows, rows), m1 = std::min(m0 + kTileCols, cols);
            if (xa) prefetch_tile(pa, d.sa, n0, n1, m0, m1);  // (the other operand's rows too: 0.8x)
            if (xb) prefetch_tile(pb, d.sb, n0, n1, m0, m1);
          }
          const auto gather = [&](const C* p, const std::vector<std::int64_t>& st, C* t) {
#if defined(__x86_64__) && defined(__GNUC__)
            if constexpr (std::is_same_v<C, float>) {
              if (st[0] == 1 && kHaveAvx) return gather_runs_avx(p + r0 + c0 * st[1], st[1], r1 - r0, c1 - c0, t);
            }
#endif
            gather_tile(p, st, r0, r1, c0, c1, t);
          };
          if (xa) gather(pa, d.sa, ta.data());
          else copy_tile(pa, d.sa, r0, r1, c0, c1, ta.data());
          if (two) {
            if (xb) gather(pb, d.sb, tb.data());
            else copy_tile(pb, d.sb, r0, r1, c0, c1, tb.data());
          }
          compute<C, C>(d.op, false, (r1 - r0) * kTileCols, x, z, tr.data());
          const auto bytes = static_cast<std::size_t>(c1 - c0) * sizeof(C);
          for (std::int64_t r = r0; r < r1; ++r) {
            C* dst = static_cast<C*>(out) + r * cols + c0;
            const C* src = tr.data() + (r - r0) * kTileCols;
            if (streamed) stream_copy(dst, src, bytes);
            else std::memcpy(dst, src, bytes);
          }
        }
    }
    if (streamed) stream_fence();
  }
}

template <class C>
void run_all(const ElementwiseDesc& d, const void* a, const void* b, void* out) {
  const bool two = ew_arity(d.op) == 2 && d.scalar == 0;
  const bool xa = crosswise(d.sa) && native<C>(d.in), xb = two && crosswise(d.sb) && native<C>(d.in);
  if (d.n >= kParallelMin && (xa || xb) && d.op != EwOp::cast && d.out == d.in && d.in != DType::b8) {
    run_tiles<C>(d, a, b, out, xa, xb);
    return;
  }
  if (d.n >= kParallelMin && (xa || xb)) {
    // output tiles; a crosswise operand's tile is first copied out of its memory in its own order (the transpose
    // done in cache), then the tile's rows run as usual, that operand read from the copy at strides (kTileCols, 1)
    const std::int64_t rows = d.shape[0], cols = d.shape[1];
    const std::int64_t tc = (cols + kTileCols - 1) / kTileCols, tiles = tc * ((rows + kTileRows - 1) / kTileRows);
    parallel_pieces(
        tiles, 4,
        [&](std::int64_t t0, std::int64_t t1) {
          ElementwiseDesc dt = d;  // the same walk, the copied operands' strides those of their tile copies
          if (xa) dt.sa = {kTileCols, 1};
          if (xb) dt.sb = {kTileCols, 1};
          std::vector<C> ta(xa ? kTileRows * kTileCols : 0), tb(xb ? kTileRows * kTileCols : 0);
          for (std::int64_t t = t0; t < t1; ++t) {
            const std::int64_t r0 = (t / tc) * kTileRows, c0 = (t % tc) * kTileCols;
            const std::int64_t r1 = std::min(r0 + kTileRows, rows), c1 = std::min(c0 + kTileCols, cols);
            // an operand read from its tile copy: the pointer at which (r, c) of the tile is r * kTileCols + c
            const std::uintptr_t shift = static_cast<std::uintptr_t>(r0 * kTileCols + c0) * sizeof(C);
            const void* pa = a;
            const void* pb = b;
            if (xa) {
              gather_tile(static_cast<const C*>(a), d.sa, r0, r1, c0, c1, ta.data());
              pa = reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(ta.data()) - shift);
            }
            if (xb) {
              gather_tile(static_cast<const C*>(b), d.sb, r0, r1, c0, c1, tb.data());
              pb = reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(tb.data()) - shift);
            }
            for (std::int64_t r = r0; r < r1; ++r) run_range<C>(dt, pa, pb, out, r * cols + c0, r * cols + c1);
          }
        },
        2);
    return;
  }
  // a contiguous output beyond the caches: streamed (the chunks of a piece, then its fence). Not 16-bit outputs:
  // a float32 -> float16 cast streamed ran 0.68-0.84x the regular one at 8-128 MiB of output (Emerald Rapids),
  // where casts to float32/float64 ran 1.26-2.0x and the ops of float32 outputs 1.47-2.07x
  const bool streamed = d.contiguous && !is16(d.out) &&
                        stream_output(static_cast<std::size_t>(d.n) * dtype_size(d.out));
  parallel_pieces(
      d.n, kPiece,
      [&](std::int64_t begin, std::int64_t end) {
        run_range<C>(d, a, b, out, begin, end, streamed);
        if (streamed) stream_fence();
      },
      kParallelMin);
}

template <class C>
void where_all(const ElementwiseDesc& d, const void* c, const void* a, const void* b, void* out) {
  const bool streamed = d.contiguous && !is16(d.out) &&  // as run_all's outputs
                        stream_output(static_cast<std::size_t>(d.n) * dtype_size(d.out));
  const std::int64_t osize = static_cast<std::int64_t>(dtype_size(d.out));
  parallel_pieces(
      d.n, kPiece,
      [&](std::int64_t begin, std::int64_t end) {
        C xb[kChunk], zb[kChunk], r[kChunk];
        std::uint8_t cb[kChunk];
        alignas(64) unsigned char sc[kChunk * 8];
        for (std::int64_t i = begin; i < end; i += kChunk) {
          const std::int64_t m = std::min(kChunk, end - i);
          const std::uint8_t* k = operand<std::uint8_t>(d, DType::b8, c, d.sc, i, m, cb);
          const C* x = operand<C>(d, d.in, a, d.sa, i, m, xb);
          const C* z = operand<C>(d, d.in, b, d.sb, i, m, zb);
          select(m, k, x, z, r);
          if (!streamed) {
            store(d.out, out, i, m, r);
            continue;
          }
          store(d.out, reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(sc) - static_cast<std::uintptr_t>(i) * osize),
                i, m, r);
          stream_copy(static_cast<unsigned char*>(out) + i * osize, sc, static_cast<std::size_t>(m) * osize);
        }
        if (streamed) stream_fence();
      },
      kParallelMin);
}

}  // namespace

void CpuBackend::where(const ElementwiseDesc& d, const Buffer& cond, const Buffer& a, const Buffer& b, Buffer& out) {
  cpu_threads::apply();
  const std::uint64_t bytes = static_cast<std::uint64_t>(d.n) * (1 + 3 * dtype_size(d.in));
  timed("where", bytes, [&] {
    const std::size_t e = dtype_size(d.in);
    const void* pc = static_cast<const unsigned char*>(cond.host_ptr()) + d.oc;
    const void* pa = static_cast<const unsigned char*>(a.host_ptr()) + d.oa * e;
    const void* pb = static_cast<const unsigned char*>(b.host_ptr()) + d.ob * e;
    void* po = out.host_ptr();
    switch (d.in) {
      case DType::f32:
      case DType::f16:
      case DType::bf16: return where_all<float>(d, pc, pa, pb, po);
      case DType::f64: return where_all<double>(d, pc, pa, pb, po);
      case DType::i32: return where_all<std::int32_t>(d, pc, pa, pb, po);
      case DType::i64: return where_all<std::int64_t>(d, pc, pa, pb, po);
      case DType::u8:
      case DType::b8: return where_all<std::uint8_t>(d, pc, pa, pb, po);
      case DType::i8: return where_all<std::int8_t>(d, pc, pa, pb, po);
    }
  });
}

void CpuBackend::elementwise(const ElementwiseDesc& d, const Buffer& a, const Buffer* b, Buffer& out) {
  // below kParallelMin the op runs on the calling thread: no team to set up or to mark warm (two clock reads and
  // OpenMP's settings, a tenth of a small array's call)
  const bool team = d.n >= kParallelMin;
  if (team) cpu_threads::apply();
  const std::uint64_t bytes =
      static_cast<std::uint64_t>(d.n) * ((b ? 2 : 1) * dtype_size(d.in) + dtype_size(d.out));
  timed(ew_name(d.op), bytes, [&] {
    const std::size_t e = dtype_size(d.in);
    const void* pa = static_cast<const unsigned char*>(a.host_ptr()) + d.oa * e;
    const void* pb = b ? static_cast<const unsigned char*>(b->host_ptr()) + d.ob * e : nullptr;
    void* po = out.host_ptr();
    switch (d.in) {
      case DType::f32:
      case DType::f16:
      case DType::bf16: return run_all<float>(d, pa, pb, po);
      case DType::f64: return run_all<double>(d, pa, pb, po);
      case DType::i32: return run_all<std::int32_t>(d, pa, pb, po);
      case DType::i64: return run_all<std::int64_t>(d, pa, pb, po);
      case DType::u8:
      case DType::b8: return run_all<std::uint8_t>(d, pa, pb, po);
      case DType::i8: return run_all<std::int8_t>(d, pa, pb, po);
    }
  }, team);
}

}  // namespace hetnn
