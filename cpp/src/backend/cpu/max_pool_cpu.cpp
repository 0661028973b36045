// Max pooling on the CPU device: own OpenMP loops, compiled for AVX-512, AVX2 and baseline x86-64 (picked at load).
//
// Not oneDNN's pooling primitive: its max ignores NaN (PyTorch propagates it), its workspace holds window offsets
// in its own layout rather than the flat int64 indices hetnn returns, and its NCHW kernels are slow for some shapes
// (measured: the bench's onednn-c++ rows). The forward streams each input row once per window row and keeps the
// output row in cache; the backward (strides 1 and 2, AVX-512) writes each input-gradient row once, densely,
// gathering from the output rows whose windows reach it, and falls back to a checked scatter for other strides
// and for indices it cannot place. `python -m hetnn bench maxpool` compares them with the oneDNN primitive and
// with the machine's STREAM bandwidth.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_threads.h"
#include "backend/cpu/cpu_loops.h"
#include "backend/cpu/half_convert.h"
#include "core/errors.h"
#include "core/half.h"
#include "core/pool2d.h"

// GCC 12 reports the AVX-512 headers' own "undefined vector" idiom (__Y in _mm512_cvtepi64_epi32,
// _mm256_maskz_loadu_epi16, ...) as maybe-uninitialised at every inlined call; nothing here reads an
// uninitialised value.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif


namespace hetnn {

namespace {

// Element access: storage type S, compared as V. 16-bit data is compared in float and stored back bit-exact (a max
// selects, it never rounds).
struct F32 {
  using S = float;
  using V = float;
  static V val(S s) { return s; }
  static S neg_inf() { return -std::numeric_limits<float>::infinity(); }
};
struct F64 {
  using S = double;
  using V = double;
  static V val(S s) { return s; }
  static S neg_inf() { return -std::numeric_limits<double>::infinity(); }
};
struct F16 {
  using S = std::uint16_t;
  using V = float;
  // Bit arithmetic (core/half.h) instead of a _Float16 cast, which GCC 12 turns into a library call per element
  // (measured: a 32x64x112x112 float16 forward took 164 ms, 0.4 GB/s).
  static V val(S s) { return half_bits_to_float(s); }
  static S neg_inf() { return 0xFC00; }
};
struct BF16 {
  using S = std::uint16_t;
  using V = float;
  static V val(S s) {
    const std::uint32_t u = static_cast<std::uint32_t>(s) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  static S neg_inf() { return 0xFF80; }
};

// Integers compare as themselves; the maximum of an empty window is the type's lowest value (the float types' -inf).
template <class T>
struct Int {
  using S = T;
  using V = T;
  static V val(S s) { return s; }
  static S neg_inf() { return std::numeric_limits<T>::lowest(); }
};
using I8 = Int<std::int8_t>;
using U8 = Int<std::uint8_t>;
using I32 = Int<std::int32_t>;
using I64 = Int<std::int64_t>;

// Exact float -> bfloat16 narrowing of values that came from bfloat16 (a max selects, so every result does).
inline std::uint16_t narrow_bf16(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return static_cast<std::uint16_t>(b >> 16);
}

inline std::int64_t first_inside(std::int64_t start, int d) { return pool_first_inside(start, d); }

// Window tap number (i * kw + j) tracked per output while scanning; the same width as the compared value so the
// compare-and-select loops vectorise (an int64 index next to float lanes does not).
template <class E>
using Tap = std::conditional_t<sizeof(typename E::V) == 8, std::int64_t, std::int32_t>;

// The comparison every pass makes: NaN propagates (v != v); ties keep the first maximum (strict >), as PyTorch.
// Bitwise, so that the scalar remainder has no branch.
template <class V>
inline bool takes(V v, V cur) {
  return (v > cur) | (v != v);
}

// Column range of each tap j of a window row: output columns [lo, hi) read input column ow*sw + off, inside the
// input. The same for every row, so computed once per call.
struct TapCols {
  std::vector<std::int64_t> off, lo, hi;
  // Lane masks per (16-output chunk c, tap j), index c * kw + j: which outputs of the chunk read an input column
  // inside the row (m), and, for stride 2, which of the two 16-float loads' elements those are (m0, m1). The same
  // for every row, so the row loop does no mask arithmetic. Padded with empty chunks to a multiple of 4.
  std::vector<std::uint16_t> m, m0, m1, out;
  std::vector<char> full;  // chunk c: every tap reads 16 inside columns (no masks needed)
  std::int64_t chunks = 0, real_chunks = 0;  // padded to a multiple of 4 / ceil(OW / 16)
  // Rows of at most 32 inputs and 16 outputs (stride 1 or 2): the window rows' maximum stays in two registers and
  // each tap is a two-register permute of it; idx[16 j + lane] is the input column output `lane` reads for tap j
  // (clamped where the lane is masked off).
  bool in_registers = false;
  std::vector<std::int32_t> idx;
  // Tap q = i * kw + j of a window as a flat offset from its corner, i * dh * W + j * dw, for windows of at most 64
  // taps (empty beyond: computed per element there).
  std::vector<std::int64_t> flat;
  explicit TapCols(const Pool2dDesc& d) {
    if (d.kh * d.kw <= 64)
      for (int q = 0; q < d.kh * d.kw; ++q)
        flat.push_back(static_cast<std::int64_t>(q / d.kw) * d.dh * d.W + static_cast<std::int64_t>(q % d.kw) * d.dw);
    for (auto* v : {&off, &lo, &hi}) v->reserve(static_cast<std::size_t>(d.kw));
    for (int j = 0; j < d.kw; ++j) {
      const std::int64_t o = static_cast<std::int64_t>(j) * d.dw - d.pw;
      off.push_back(o);
      lo.push_back(o >= 0 ? 0 : (-o + d.sw - 1) / d.sw);
      hi.push_back(d.W - 1 - o >= 0 ? std::min(d.OW, (d.W - 1 - o) / d.sw + 1) : 0);
    }
    real_chunks = (d.OW + 15) / 16;
    chunks = (real_chunks + 3) / 4 * 4;
    for (auto* v : {&m, &m0, &m1}) v->reserve(static_cast<std::size_t>(chunks * d.kw));
    out.reserve(static_cast<std::size_t>(chunks));
    full.reserve(static_cast<std::size_t>(chunks));
    const auto lanes = [](std::int64_t c0, std::int64_t l, std::int64_t h) -> std::uint16_t {
      const std::int64_t a = std::clamp<std::int64_t>(l - c0, 0, 16), b = std::clamp<std::int64_t>(h - c0, 0, 16);
      if (b <= a) return 0;
      const unsigned upto = b == 16 ? 0xFFFFu : (1u << b) - 1, below = (1u << a) - 1;
      return static_cast<std::uint16_t>(upto & ~below);
    };

#if defined(__x86_64__) && defined(__GNUC__)
    const auto spread = [](unsigned bits8) {  // bit k -> bit 2k (the even floats of a 16-float load)
      unsigned r = 0;
      for (int k = 0; k < 8; ++k) r |= ((bits8 >> k) & 1u) << (2 * k);
      return static_cast<std::uint16_t>(r);
    };
    for (std::int64_t c = 0; c < chunks; ++c) {
      out.push_back(lanes(16 * c, 0, d.OW));
      bool all = out.back() == 0xFFFF;
      for (int j = 0; j < d.kw; ++j) {
        const std::uint16_t mm = lanes(16 * c, lo[j], hi[j]);
        m.push_back(mm);
        m0.push_back(spread(mm & 0xFFu));
        m1.push_back(spread(mm >> 8));
        // stride 2 loads 32 floats for 16 outputs: the odd one after the last tap's column must be in the row too
        // (else the row's last chunk read one float past the input, beyond a buffer that ends on a page: SIGSEGV)
        all = all && mm == 0xFFFF && (d.sw == 1 || off[j] + 2 * (16 * c + 15) + 1 < d.W);
      }
      full.push_back(all);
    }
    in_registers = real_chunks == 1 && d.W <= 32 && (d.sw == 1 || d.sw == 2);
    if (in_registers)
      for (int j = 0; j < d.kw; ++j)
        for (std::int64_t lane = 0; lane < 16; ++lane)
          idx.push_back(static_cast<std::int32_t>(std::clamp<std::int64_t>(d.sw * lane + off[j], 0, 31)));
  }
};

// A row of at most 32 inputs and 16 outputs (TapCols::in_registers): each window row in two registers, each tap a
// permute of them (fwd_row_f32_avx512 loads every tap from memory: with vbuf, masked loads that waited for the
// buffer's store). Values only: the window rows' maximum first, then the taps over it; false (nothing written)
// where a row holds NaN or -0 (fwd_row_f32_avx512's taps keep NaN and the first zero's sign) or where no input row
// is inside. With `tap`: the taps row by row in window order, PyTorch's select (greater, or NaN), as
// fwd_row_f32_avx512's. A function of its own: inlined there, it cost the long rows' loops 7 %.
__attribute__((target("avx512f,avx512bw,avx512dq"))) bool short_row_f32_avx512(const Pool2dDesc& d,
                                                                              const TapCols& tc,
                                                                              const float* plane, float* y,
                                                                              std::int32_t* tap, std::int64_t oh) {
  const std::int64_t W = d.W, hi_w = std::max<std::int64_t>(W - 16, 0), hs = oh * d.sh - d.ph;
  const __mmask16 wl = W >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << W) - 1),
                  wh = hi_w >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << hi_w) - 1);
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 best = neg_inf;
  if (tap) {
    __m512i t = _mm512_set1_epi32(-1);
    for (int i = 0; i < d.kh; ++i) {
      const std::int64_t ih = hs + static_cast<std::int64_t>(i) * d.dh;
      if (ih < 0 || ih >= d.H) continue;
      const float* r = plane + ih * W;
      const __m512 lo = _mm512_maskz_loadu_ps(wl, r), hi = _mm512_maskz_loadu_ps(wh, r + 16);
      for (int j = 0; j < d.kw; ++j) {
        const __m512 v = _mm512_permutex2var_ps(lo, _mm512_loadu_si512(tc.idx.data() + 16 * j), hi);
        // in mask registers throughout: through general registers (and-ing the lanes' mask from memory) the
        // chain from one tap's `best` to the next took about 13 cycles
        const __mmask16 lanes = tc.m[j];
        const __mmask16 take = _kor_mask16(_mm512_mask_cmp_ps_mask(lanes, v, best, _CMP_GT_OQ),
                                           _mm512_mask_cmp_ps_mask(lanes, v, v, _CMP_UNORD_Q));
        best = _mm512_mask_mov_ps(best, take, v);
        t = _mm512_mask_mov_epi32(t, take, _mm512_set1_epi32(i * d.kw + j));
      }
    }
    _mm512_mask_storeu_ps(y, tc.out[0], best);
    _mm512_mask_storeu_epi32(tap, tc.out[0], t);
    return true;
  }
  __m512 lo = neg_inf, hi = neg_inf;
  __mmask16 special = 0;
  bool any = false;
  for (int i = 0; i < d.kh; ++i) {
    const std::int64_t ih = hs + static_cast<std::int64_t>(i) * d.dh;
    if (ih < 0 || ih >= d.H) continue;
    const float* r = plane + ih * W;
    const __m512 a = _mm512_maskz_loadu_ps(wl, r), b = _mm512_maskz_loadu_ps(wh, r + 16);
    special |= _mm512_fpclass_ps_mask(a, 0x85) | _mm512_fpclass_ps_mask(b, 0x85);  // NaN, -0
    lo = _mm512_max_ps(a, lo);
    hi = _mm512_max_ps(b, hi);
    any = true;
  }
  if (special || !any) return false;
  for (int j = 0; j < d.kw; ++j) {
    const __m512i at = _mm512_loadu_si512(tc.idx.data() + 16 * j);
    best = _mm512_mask_max_ps(best, tc.m[j], _mm512_permutex2var_ps(lo, at, hi), best);
  }
  _mm512_mask_storeu_ps(y, tc.out[0], best);
  return true;
}

// One float32 output row (stride 1 or 2) with AVX-512: 16 outputs per vector, four vectors (64 outputs) in flight
// so that four independent compare-select chains hide each other's latency; the running maximum and its tap stay in
// registers over all taps of the window and are stored once. Taps outside the input and the ragged end of the row
// are lanes masked off (loads included, so nothing outside the input is read). Written by hand because the
// compiler's tap-by-tap loops store and reload the output between taps (masked stores do not forward to loads)
// and run the row's remainder scalar.
// `plane` holds input rows from row0 on (row ih at plane + (ih - row0) * W).
__attribute__((target("avx512f,avx512bw,avx512dq"))) void fwd_row_f32_avx512(const Pool2dDesc& d,
                                                                             const TapCols& tc,
                                                                             const float* plane, float* y,
                                                                             std::int32_t* tap, std::int64_t oh,
                                                                             std::int64_t row0, float* vbuf) {
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const __m512i no_tap = _mm512_set1_epi32(-1);
  const std::int64_t W = d.W, sw = d.sw, kw = d.kw;
  const std::int64_t hs = oh * d.sh - d.ph;
  const float* rows[64];
  int taps_row[64];
  int nrows = 0;
  for (int i = 0; i < d.kh && nrows < 64; ++i) {
    const std::int64_t ih = hs + static_cast<std::int64_t>(i) * d.dh;
    if (ih >= 0 && ih < d.H) rows[nrows] = plane + (ih - row0) * W, taps_row[nrows++] = i * d.kw;
  }
  // The 16 inputs of chunk C for tap j at P (stride sw) into V, with M the lanes that exist: plain loads for
  // interior chunks (no mask registers: they compete for the permute port), else under the chunk's precomputed
  // masks.
#define HETNN_LOAD_TAP(C, P, V, M)                                                                              \
  __mmask16 M = 0xFFFF;                                                                                         \
  __m512 V;                                                                                                     \
  if (tc.full[C]) {                                                                                             \
    V = sw == 1 ? _mm512_loadu_ps(P) : _mm512_permutex2var_ps(_mm512_loadu_ps(P), even, _mm512_loadu_ps((P) + 16)); \
  } else {                                                                                                      \
    const std::int64_t k_ = (C) * kw + j;                                                                       \
    M = tc.m[k_];                                                                                               \
    V = sw == 1 ? _mm512_maskz_loadu_ps(M, P)                                                                   \
                : _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(tc.m0[k_], P), even,                             \
                                         _mm512_maskz_loadu_ps(tc.m1[k_], (P) + 16));                           \
  }
  // With indices: PyTorch's select (greater, or NaN), the tap number following the value.
#define HETNN_TAP_STEP(B, T, C, P, TV)                                                                          \
  {                                                                                                             \
    HETNN_LOAD_TAP(C, P, v_, m_)                                                                                \
    const __mmask16 t_ = _kor_mask16(_mm512_mask_cmp_ps_mask(m_, v_, B, _CMP_GT_OQ),                            \
                                     _mm512_mask_cmp_ps_mask(m_, v_, v_, _CMP_UNORD_Q));                         \
    B = _mm512_mask_mov_ps(B, t_, v_);                                                                          \
    T = _mm512_mask_mov_epi32(T, t_, TV);                                                                       \
  }
  // Without indices: vmaxps(v, best) keeps best on ties and ignores NaN (it returns its second operand when either
  // is NaN), and a separate mask remembers which lanes saw a NaN, set to NaN at the end: fewer compare-into-mask
  // operations.
#define HETNN_MAX_STEP(B, N, C, P)                                                                              \
  {                                                                                                             \
    HETNN_LOAD_TAP(C, P, v_, m_)                                                                                \
    B = _mm512_mask_max_ps(B, m_, v_, B);                                                                       \
    if (nan_check) N = N | _mm512_cmp_ps_mask(v_, v_, _CMP_UNORD_Q);                                            \
  }
  if (!tap) {
    const __m512 nan = _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN());
    bool nan_check = true;
    // Several window rows: their column-wise maximum first (`vbuf`, one pass over whole input rows, no permutes),
    // then the taps of one row over it. Exact only for ordinary values: a NaN must still propagate and, among equal
    // zeros, the first in window order decides the sign, which a column-wise maximum loses. So the pass classifies
    // every input (NaN or -0: one instruction per vector) and such rows go through the tap-by-tap loops below.
    if (vbuf && nrows >= 3) {  // (two rows: measured no faster than the taps over both)
      __mmask16 special = 0;
      for (std::int64_t k = 0; k < W; k += 16) {
        const __mmask16 lanes = W - k >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (W - k)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(lanes, rows[0] + k);
        special |= _mm512_fpclass_ps_mask(v, 0x85);  // QNaN, -0, SNaN
        for (int q = 1; q < nrows; ++q) {
          const __m512 r = _mm512_maskz_loadu_ps(lanes, rows[q] + k);
          special |= _mm512_fpclass_ps_mask(r, 0x85);
          v = _mm512_max_ps(r, v);
        }
        _mm512_storeu_ps(vbuf + k, v);
      }
      if (!special) rows[0] = vbuf, nrows = 1, nan_check = false;
    }
    std::int64_t c = 0;
    for (; c + 4 <= tc.real_chunks; c += 4) {
      __m512 b0 = neg_inf, b1 = neg_inf, b2 = neg_inf, b3 = neg_inf;
      __mmask16 n0 = 0, n1 = 0, n2 = 0, n3 = 0;
      for (int q = 0; q < nrows; ++q) {
        for (int j = 0; j < kw; ++j) {
          const float* base = rows[q] + sw * 16 * c + tc.off[j];
          HETNN_MAX_STEP(b0, n0, c, base)
          HETNN_MAX_STEP(b1, n1, c + 1, base + 16 * sw)
          HETNN_MAX_STEP(b2, n2, c + 2, base + 32 * sw)
          HETNN_MAX_STEP(b3, n3, c + 3, base + 48 * sw)
        }
      }
      float* yo = y + 16 * c;
      _mm512_mask_storeu_ps(yo, tc.out[c], _mm512_mask_mov_ps(b0, n0, nan));
      _mm512_mask_storeu_ps(yo + 16, tc.out[c + 1], _mm512_mask_mov_ps(b1, n1, nan));
      _mm512_mask_storeu_ps(yo + 32, tc.out[c + 2], _mm512_mask_mov_ps(b2, n2, nan));
      _mm512_mask_storeu_ps(yo + 48, tc.out[c + 3], _mm512_mask_mov_ps(b3, n3, nan));
    }
    for (; c < tc.real_chunks; ++c) {  // short rows and the last chunks: one at a time
      __m512 b0 = neg_inf;
      __mmask16 n0 = 0;
      for (int q = 0; q < nrows; ++q)
        for (int j = 0; j < kw; ++j) HETNN_MAX_STEP(b0, n0, c, rows[q] + sw * 16 * c + tc.off[j])
      _mm512_mask_storeu_ps(y + 16 * c, tc.out[c], _mm512_mask_mov_ps(b0, n0, nan));
    }
    return;
  }
  std::int64_t c = 0;
  for (; c + 4 <= tc.real_chunks; c += 4) {
    __m512 b0 = neg_inf, b1 = neg_inf, b2 = neg_inf, b3 = neg_inf;
    __m512i t0 = no_tap, t1 = no_tap, t2 = no_tap, t3 = no_tap;
    for (int q = 0; q < nrows; ++q) {
      for (int j = 0; j < kw; ++j) {
        const float* base = rows[q] + sw * 16 * c + tc.off[j];
        const __m512i tv = _mm512_set1_epi32(taps_row[q] + j);
        HETNN_TAP_STEP(b0, t0, c, base, tv)
        HETNN_TAP_STEP(b1, t1, c + 1, base + 16 * sw, tv)
        HETNN_TAP_STEP(b2, t2, c + 2, base + 32 * sw, tv)
        HETNN_TAP_STEP(b3, t3, c + 3, base + 48 * sw, tv)
      }
    }
    float* yo = y + 16 * c;
    _mm512_mask_storeu_ps(yo, tc.out[c], b0);
    _mm512_mask_storeu_ps(yo + 16, tc.out[c + 1], b1);
    _mm512_mask_storeu_ps(yo + 32, tc.out[c + 2], b2);
    _mm512_mask_storeu_ps(yo + 48, tc.out[c + 3], b3);
    if (tap) {
      std::int32_t* to = tap + 16 * c;
      _mm512_mask_storeu_epi32(to, tc.out[c], t0);
      _mm512_mask_storeu_epi32(to + 16, tc.out[c + 1], t1);
      _mm512_mask_storeu_epi32(to + 32, tc.out[c + 2], t2);
      _mm512_mask_storeu_epi32(to + 48, tc.out[c + 3], t3);
    }
  }
  for (; c < tc.real_chunks; ++c) {
    __m512 b0 = neg_inf;
    __m512i t0 = no_tap;
    for (int q = 0; q < nrows; ++q)
      for (int j = 0; j < kw; ++j)
        HETNN_TAP_STEP(b0, t0, c, rows[q] + sw * 16 * c + tc.off[j], _mm512_set1_epi32(taps_row[q] + j))
    _mm512_mask_storeu_ps(y + 16 * c, tc.out[c], b0);
    if (tap) _mm512_mask_storeu_epi32(tap + 16 * c, tc.out[c], t0);
  }
}
#undef HETNN_TAP_STEP
#undef HETNN_MAX_STEP
#undef HETNN_LOAD_TAP
const bool kHaveAvx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl") &&
                         __builtin_cpu_supports("avx512dq");
#else
constexpr bool kHaveAvx512 = false;
inline void fwd_row_f32_avx512(const Pool2dDesc&, const TapCols&, const float*, float*, std::int32_t*, std::int64_t, std::int64_t, float*,
                               std::int64_t = 0) {}
inline bool short_row_f32_avx512(const Pool2dDesc&, const TapCols&, const float*, float*, std::int32_t*,
                                 std::int64_t) {
  return false;
}
#endif

// One tap over output columns [lo, hi): r points at the tap's input for column 0 (column ow reads r[ow * sw]).
template <class E, bool IDX>
inline __attribute__((always_inline)) void tap_pass(const typename E::S* r, std::int64_t sw, typename E::S* y,
                                                    Tap<E>* tap, Tap<E> t, std::int64_t lo, std::int64_t hi) {
  using S = typename E::S;
  if (sw == 1) {
#pragma omp simd
    for (std::int64_t ow = lo; ow < hi; ++ow) {
      const S s = r[ow];
      const bool take = takes(E::val(s), E::val(y[ow]));
      y[ow] = take ? s : y[ow];
      if (IDX) tap[ow] = take ? t : tap[ow];
    }
  } else if (sw == 2) {
#pragma omp simd
    for (std::int64_t ow = lo; ow < hi; ++ow) {
      const S s = r[2 * ow];
      const bool take = takes(E::val(s), E::val(y[ow]));
      y[ow] = take ? s : y[ow];
      if (IDX) tap[ow] = take ? t : tap[ow];
    }
  } else {
    for (std::int64_t ow = lo; ow < hi; ++ow) {
      const S s = r[ow * sw];
      const bool take = takes(E::val(s), E::val(y[ow]));
      y[ow] = take ? s : y[ow];
      if (IDX) tap[ow] = take ? t : tap[ow];
    }
  }
}

// One output row (plane, oh): y[ow] = max over the window, ix[ow] = its flat index (when IDX; `tap` is scratch of
// OW entries).
template <class E, bool IDX>
inline __attribute__((always_inline)) void fwd_row(const Pool2dDesc& d, const typename E::S* plane,
                                                   typename E::S* y, std::int64_t* ix, Tap<E>* tap,
                                                   const TapCols* tc, std::int64_t oh, float* wide,
                                                   float* wide_y, float* vbuf) {
  using S = typename E::S;
  using T = Tap<E>;
  const std::int64_t W = d.W, OW = d.OW, sw = d.sw;
  const std::int64_t hstart = oh * d.sh - d.ph;
  bool done = false;
  if constexpr (std::is_same_v<E, F32>) {
    if (kHaveAvx512 && (sw == 1 || sw == 2) && d.kh <= 64) {
      if (!tc->in_registers || !short_row_f32_avx512(d, *tc, plane, y, IDX ? tap : nullptr, oh))
        fwd_row_f32_avx512(d, *tc, plane, y, IDX ? tap : nullptr, oh, 0, vbuf);
      done = true;
    }
  } else if constexpr (std::is_same_v<typename E::S, std::uint16_t>) {
    // 16-bit data: the window's input rows are widened into a float scratch (`wide`, extent x W floats; `wide_y`
    // OW floats), pooled by the float32 kernel, and the maxima narrowed back exactly (the generic loops below ran
    // float16 at 0.8 GB/s: mixed 16/32-bit lanes do not vectorise).
    if (kHaveAvx512 && (sw == 1 || sw == 2) && d.kh <= 64 && wide) {
      std::int64_t lo_row = -1, hi_row = -1;
      for (int i = 0; i < d.kh; ++i) {
        const std::int64_t ih = hstart + static_cast<std::int64_t>(i) * d.dh;
        if (ih < 0 || ih >= d.H) continue;
        if (lo_row < 0) lo_row = ih;
        hi_row = ih;
      }
      if (lo_row >= 0) {
        const S* src = plane + lo_row * W;
        const std::int64_t n = (hi_row - lo_row + 1) * W;
        if constexpr (std::is_same_v<E, F16>) {
          widen_to_f32(DType::f16, src, wide, n);  // the conversion instructions: F16::val does not vectorise
        } else {
#pragma omp simd
          for (std::int64_t k = 0; k < n; ++k) wide[k] = E::val(src[k]);
        }
      }
      fwd_row_f32_avx512(d, *tc, wide, wide_y, IDX ? tap : nullptr, oh, lo_row < 0 ? 0 : lo_row, vbuf);
      if constexpr (std::is_same_v<E, F16>) {
        narrow_from_f32(DType::f16, wide_y, y, OW);
      } else {
#pragma omp simd
        for (std::int64_t ow = 0; ow < OW; ++ow) y[ow] = narrow_bf16(wide_y[ow]);
      }
      done = true;
    }
  }
  if (!done) {
  for (std::int64_t ow = 0; ow < OW; ++ow) y[ow] = E::neg_inf();
  if (IDX)
    for (std::int64_t ow = 0; ow < OW; ++ow) tap[ow] = -1;
  for (int i = 0; i < d.kh; ++i) {
    const std::int64_t ih = hstart + static_cast<std::int64_t>(i) * d.dh;
    if (ih < 0 || ih >= d.H) continue;
    const S* row = plane + ih * W;
    for (int j = 0; j < d.kw; ++j)  // column ow reads row[ow * sw + off[j]] for ow in [lo[j], hi[j])
      tap_pass<E, IDX>(row + tc->off[j], sw, y, tap, static_cast<T>(i * d.kw + j), tc->lo[j], tc->hi[j]);
  }
  }  // !done
  if (IDX) {
    // tap -> flat index: row hstart + i*dh, column ow*sw - pw + j*dw. A window that took nothing (all -inf, or
    // no input position) keeps PyTorch's initial index: its first in-bounds tap.
    const std::int64_t* offs = tc->flat.data();
    const bool small = !tc->flat.empty();
    const std::int64_t base = hstart * W - d.pw;
    const std::int64_t h0 = first_inside(hstart, d.dh);
    for (std::int64_t ow = 0; ow < OW; ++ow) {
      const std::int64_t q = tap[ow];
      if (q >= 0)
        ix[ow] = base + ow * sw + (small ? offs[q] : (q / d.kw) * d.dh * W + (q % d.kw) * d.dw);
      else
        ix[ow] = h0 * W + first_inside(ow * sw - d.pw, d.dw);
    }
  }
}

template <class E, bool IDX>
inline __attribute__((always_inline)) void fwd_rows(const Pool2dDesc& d, const typename E::S* x,
                                                    typename E::S* y, std::int64_t* ix, std::int64_t r0,
                                                    std::int64_t r1) {
  std::vector<Tap<E>> tap(IDX ? static_cast<std::size_t>(d.OW) : 0);
  const TapCols tc(d);
  // Scratch of the 16-bit path: the window's input rows and one output row, widened to float.
  constexpr bool half = std::is_same_v<typename E::S, std::uint16_t>;
  const std::int64_t extent = static_cast<std::int64_t>(d.kh - 1) * d.dh + 1;
  std::vector<float> wide(half ? static_cast<std::size_t>(std::min(extent, d.H) * d.W) : 0);
  std::vector<float> wide_y(half ? static_cast<std::size_t>(d.OW) : 0);
  // Column-wise maximum of a window's rows (float32 kernel, values only), rounded up to whole vectors.
  std::vector<float> vbuf(IDX ? 0 : static_cast<std::size_t>((d.W + 15) / 16 * 16));
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::int64_t p = r / d.OH, oh = r % d.OH;
    fwd_row<E, IDX>(d, x + p * d.H * d.W, y + r * d.OW, IDX ? ix + r * d.OW : nullptr, tap.data(), &tc, oh,
                    half ? wide.data() : nullptr, half ? wide_y.data() : nullptr, IDX ? nullptr : vbuf.data());
  }
}

// Per-ISA entry points (target_clones needs plain functions).
#define HETNN_POOL_FWD(NAME, E, IDX)                                                                            \
  HETNN_CLONES void NAME(const Pool2dDesc& d, const void* x, void* y, std::int64_t* ix, std::int64_t r0,      \
                         std::int64_t r1) {                                                                    \
    fwd_rows<E, IDX>(d, static_cast<const E::S*>(x), static_cast<E::S*>(y), ix, r0, r1);                     \
  }
HETNN_POOL_FWD(fwd_f32, F32, false)
HETNN_POOL_FWD(fwd_f32_idx, F32, true)
HETNN_POOL_FWD(fwd_f64, F64, false)
HETNN_POOL_FWD(fwd_f64_idx, F64, true)
HETNN_POOL_FWD(fwd_f16, F16, false)
HETNN_POOL_FWD(fwd_f16_idx, F16, true)
HETNN_POOL_FWD(fwd_bf16, BF16, false)
HETNN_POOL_FWD(fwd_bf16_idx, BF16, true)
HETNN_POOL_FWD(fwd_i8, I8, false)
HETNN_POOL_FWD(fwd_i8_idx, I8, true)
HETNN_POOL_FWD(fwd_u8, U8, false)
HETNN_POOL_FWD(fwd_u8_idx, U8, true)
HETNN_POOL_FWD(fwd_i32, I32, false)
HETNN_POOL_FWD(fwd_i32_idx, I32, true)
HETNN_POOL_FWD(fwd_i64, I64, false)
HETNN_POOL_FWD(fwd_i64_idx, I64, true)
#undef HETNN_POOL_FWD

using FwdFn = void (*)(const Pool2dDesc&, const void*, void*, std::int64_t*, std::int64_t, std::int64_t);

FwdFn fwd_fn(DType t, bool idx) {
  switch (t) {
    case DType::f32: return idx ? fwd_f32_idx : fwd_f32;
    case DType::f64: return idx ? fwd_f64_idx : fwd_f64;
    case DType::f16: return idx ? fwd_f16_idx : fwd_f16;
    case DType::bf16: return idx ? fwd_bf16_idx : fwd_bf16;
    case DType::i8: return idx ? fwd_i8_idx : fwd_i8;
    case DType::u8: return idx ? fwd_u8_idx : fwd_u8;
    case DType::i32: return idx ? fwd_i32_idx : fwd_i32;
    case DType::i64: return idx ? fwd_i64_idx : fwd_i64;
    default: throw TypeError(std::string("max_pool2d: unsupported dtype ") + dtype_name(t));
  }
}

// Whether flat index v lies on window (oh, ow)'s grid inside the plane. Row from a double reciprocal (exact after
// the +-1 fix-up for v < 2^31) instead of an integer division per element.
// Scatter of output rows [oh0, oh1) of one plane: acc[idx] += gy, after checking each index.
// Whether any index of output row oh fails the undilated-window test: v is tap (i, j) iff
// v - (hs*W + ws) - i*W lies in [0, kw) for some window row i, with that row and column inside the input.
// Branch-free with the row count fixed, so the compiler vectorises it (a division per index, or a loop over a
// run-time row count, made the check half of the backward's time).
template <int KH>
inline bool row_fails(const Pool2dDesc& d, const std::int64_t* x, std::int64_t oh) {
  const std::int64_t hs = oh * d.sh - d.ph, W = d.W, H = d.H, sw = d.sw, pw = d.pw, kw = d.kw;
  std::int64_t fails = 0;
#pragma omp simd reduction(| : fails)
  for (std::int64_t ow = 0; ow < d.OW; ++ow) {
    const std::int64_t ws = ow * sw - pw, rel = x[ow] - (hs * W + ws);
    std::int64_t ok = 0;
#pragma GCC unroll 4
    for (int i = 0; i < KH; ++i) {
      const std::int64_t j = rel - i * W;
      ok |= static_cast<std::int64_t>(static_cast<std::uint64_t>(j) < static_cast<std::uint64_t>(kw)) &
            static_cast<std::int64_t>(static_cast<std::uint64_t>(hs + i) < static_cast<std::uint64_t>(H)) &
            static_cast<std::int64_t>(static_cast<std::uint64_t>(ws + j) < static_cast<std::uint64_t>(W));
    }
    fails |= ok ^ 1;
  }
  return fails != 0;
}

// to_acc: element -> accumulator type (a functor, inlined; a function pointer cost a call per element).
template <class G, class A, class Conv>
inline void bwd_rows(const Pool2dDesc& d, const G* gy, const std::int64_t* ix, A* acc, std::int64_t plane,
                     std::int64_t oh0, std::int64_t oh1, std::atomic<bool>& bad, Conv to_acc) {
  const bool plain = d.dh == 1 && d.dw == 1 && d.kh <= 4;
  for (std::int64_t oh = oh0; oh < oh1; ++oh) {
    const G* g = gy + (plane * d.OH + oh) * d.OW;
    const std::int64_t* x = ix + (plane * d.OH + oh) * d.OW;
    // Check the whole row first (undilated windows of up to 4 rows: row_fails), then scatter it unchecked.
    bool row_ok = true;
    if (plain) {
      switch (d.kh) {
        case 1: row_ok = !row_fails<1>(d, x, oh); break;
        case 2: row_ok = !row_fails<2>(d, x, oh); break;
        case 3: row_ok = !row_fails<3>(d, x, oh); break;
        case 4: row_ok = !row_fails<4>(d, x, oh); break;
        default: row_ok = false;  // the per-index path below
      }
    }
    if (row_ok && plain) {
      for (std::int64_t ow = 0; ow < d.OW; ++ow) {
        if constexpr (std::is_same_v<G, A>) acc[x[ow]] += g[ow];
        else acc[x[ow]] += to_acc(g[ow]);
      }
      continue;
    }
    for (std::int64_t ow = 0; ow < d.OW; ++ow) {  // dilated windows, or a row holding a bad or empty-window index
      const std::int64_t v = x[ow];
      if (!pool_index_inside(d, v, oh, ow)) {  // (also keeps v inside the plane)
        if (!pool_index_free(d, v, oh, ow)) bad.store(true, std::memory_order_relaxed);
        continue;
      }
      if constexpr (std::is_same_v<G, A>) acc[v] += g[ow];
      else acc[v] += to_acc(g[ow]);
    }
  }
}

struct Same {
  template <class T>
  T operator()(T v) const { return v; }
};
struct FromF16 {
  float operator()(std::uint16_t s) const { return F16::val(s); }
};
struct FromBF16 {
  float operator()(std::uint16_t s) const { return BF16::val(s); }
};

// Runs the scatter in parallel without races: output rows are cut into blocks whose input row ranges (window
// extent included) do not reach the block after next, so all even blocks run together, then all odd ones.
template <class G, class A, class Conv>
void bwd_scatter(const Pool2dDesc& d, const G* gy, const std::int64_t* ix, A* acc, Conv to_acc) {
  // Blocks of output rows (pool_scatter_blocks): each zeroes the input rows it owns just before scattering, while
  // they are in cache. Overlapping windows run in two phases: the even blocks first, each zeroing its own rows and
  // block b+1's (which its windows reach), then the odd blocks, whose rows are zeroed by then. No separate pass.
  std::atomic<bool> bad{false};
  const std::int64_t planes = d.N * d.C, plane_size = d.H * d.W;
  const PoolScatterBlocks pb = pool_scatter_blocks(d);
  for (int phase = 0; phase < (pb.disjoint ? 1 : 2); ++phase) {
    const std::int64_t per_plane = pb.disjoint ? pb.count : (pb.count - phase + 1) / 2;
#pragma omp parallel for schedule(static)
    for (std::int64_t t = 0; t < planes * per_plane; ++t) {
      const std::int64_t p = t / per_plane;
      const std::int64_t b = pb.disjoint ? t % per_plane : 2 * (t % per_plane) + phase;
      A* plane_acc = acc + p * plane_size;
      if (phase == 0) {
        auto [z0, z1] = pb.owned_rows(d, b);
        if (!pb.disjoint && b + 1 < pb.count) z1 = pb.owned_rows(d, b + 1).second;
        std::fill(plane_acc + z0 * d.W, plane_acc + z1 * d.W, A(0));
      }
      const std::int64_t oh0 = b * pb.rows, oh1 = std::min(d.OH, oh0 + pb.rows);
      bwd_rows<G, A, Conv>(d, gy, ix, plane_acc, p, oh0, oh1, bad, to_acc);
    }
  }
  if (bad.load()) {  // name the first bad index, whichever thread saw one
    const std::int64_t o = pool_find_bad_index(d, ix);
    throw ValueError(pool_bad_index_message(d, o / (d.OH * d.OW), (o / d.OW) % d.OH, o % d.OW, ix[o]));
  }
}


#if defined(__x86_64__) && defined(__GNUC__)
// Dense backward with AVX-512 (stride 1 or 2 across, any window, float32 or 16-bit): each thread owns whole input
// rows and writes every element of them once, instead of zeroing the input gradient and scattering into it. For
// input row h, each window row i that lands on h, each 16-output chunk and each tap j: compare the 16 int64
// indices with the positions the tap reads (h*W + ow*sw + off_j) and keep the matching gradients, in a row of
// tap j's own (so no store is reloaded at another alignment: that stalled on store forwarding). Then each input
// column sums the taps that read it (stride 2: even and odd columns separately, interleaved on the way out).
// Windows may overlap: a position shared by two windows receives both gradients. The sum is in float32 and
// rounded once for 16-bit data, as the scatter does. Returns how many indices matched a tap; the caller compares
// the total with the number of outputs (each valid index matches exactly one tap of its window; a bad index, or
// an empty window's, matches none).
enum class GradKind { f32, f16, bf16 };

template <GradKind K>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))) inline __m512 load_grad(const void* g, std::int64_t k,
                                                                                    __mmask16 m) {
  if constexpr (K == GradKind::f32) return _mm512_maskz_loadu_ps(m, static_cast<const float*>(g) + k);
  const __m256i h = _mm256_maskz_loadu_epi16(m, static_cast<const std::uint16_t*>(g) + k);
  if constexpr (K == GradKind::f16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// `stream`: whole aligned vectors bypass the cache (non-temporal stores: a large gradient is written once and not
// read back, and a normal store first reads each line in: measured 9.6 -> 7.7 ms on 32x64x112x112 k3s2).
template <GradKind K>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))) inline void store_grad(void* out, std::int64_t k,
                                                                                     __mmask16 m, __m512 v,
                                                                                     bool stream) {
  if constexpr (K == GradKind::f32) {
    float* o = static_cast<float*>(out) + k;
    if (stream && m == 0xFFFF && (reinterpret_cast<std::uintptr_t>(o) & 63) == 0) _mm512_stream_ps(o, v);
    else _mm512_mask_storeu_ps(o, m, v);
  } else {
    __m256i h;
    if constexpr (K == GradKind::f16) {
      h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    } else {  // bfloat16, round to nearest even; NaN stays (quiet) NaN
      const __m512i b = _mm512_castps_si512(v);
      const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(b, _mm512_set1_epi32(0x7fffffff)),
                                                    _mm512_set1_epi32(0x7f800000));
      __m512i r = _mm512_add_epi32(b, _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
                                                        _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1))));
      r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(b, _mm512_set1_epi32(0x00400000)));
      h = _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16));
    }
    std::uint16_t* o = static_cast<std::uint16_t*>(out) + k;
    if (stream && m == 0xFFFF && (reinterpret_cast<std::uintptr_t>(o) & 31) == 0)
      _mm256_stream_si256(reinterpret_cast<__m256i*>(o), h);
    else _mm256_mask_storeu_epi16(o, m, h);
  }
}

inline __mmask16 first_lanes(std::int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>(n <= 0 ? 0u : (1u << n) - 1);
}

// Input rows [r0, r1) over all planes; planes of fewer than 2^31 elements (positions compared as int32).
template <GradKind K>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))) std::int64_t bwd_gather_avx512(
    const Pool2dDesc& d, const TapCols& tc, const void* gy, const std::int64_t* ix, void* gx, std::int64_t r0,
    std::int64_t r1, bool stream) {
  constexpr int esize = K == GradKind::f32 ? 4 : 2;
  const std::int64_t W = d.W, H = d.H, OW = d.OW, OH = d.OH, sw = d.sw, kw = d.kw;
  const std::int64_t chunks = tc.real_chunks, cols = 16 * chunks;
  // Tap j's row: output column ow at taps[j] + ow, which is input column ow*sw + off_j, i.e. entry
  // qoff_j + ow of phase (off_j mod sw). Zero margins of `pad` around each row, so the column sums read every tap
  // at every phase position without bounds checks.
  std::vector<std::int64_t> phase(kw), qoff(kw);
  std::int64_t pad = 16;
  for (int j = 0; j < kw; ++j) {
    phase[j] = sw == 2 ? (tc.off[j] & 1) : 0;
    qoff[j] = (tc.off[j] - phase[j]) / sw;
    pad = std::max(pad, std::abs(qoff[j]) + 16);
  }
  const std::int64_t q = sw == 2 ? (W + 1) / 2 : W;  // entries per phase
  pad = (pad + 15) / 16 * 16 + std::max<std::int64_t>(0, (q + 15) / 16 * 16 - cols);
  const std::int64_t stride_t = cols + 2 * pad;
  std::vector<float> buf(static_cast<std::size_t>(kw * stride_t), 0.f);
  std::vector<float*> taps(kw);
  for (int j = 0; j < kw; ++j) taps[j] = buf.data() + j * stride_t + pad;
  // Per phase, the taps' rows shifted so that entry e of the phase is row[e].
  std::vector<const float*> of_phase[2];
  for (int j = 0; j < kw; ++j) of_phase[phase[j]].push_back(taps[j] - qoff[j]);
  std::vector<std::int32_t> off32(kw);  // (an embedded-broadcast operand of the add)
  for (int j = 0; j < kw; ++j) off32[j] = static_cast<std::int32_t>(tc.off[j]);
  const __m512i lane = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                          _mm512_set1_epi32(static_cast<int>(sw)));
  const __m512i chunk_step = _mm512_set1_epi32(static_cast<int>(16 * sw));
  const __m512i limit = _mm512_set1_epi64(std::int64_t{1} << 31);
  const __m512i lo_pairs = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i hi_pairs = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
  __m512i count = _mm512_setzero_si512();  // matched indices, per lane
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::int64_t p = r / H, h = r % H;
    bool first = true;  // no window row has written the taps' rows for this input row yet
    for (int i = 0; i < d.kh; ++i) {
      const std::int64_t t = h + d.ph - static_cast<std::int64_t>(i) * d.dh;
      if (t < 0 || t % d.sh != 0 || t / d.sh >= OH) continue;
      const std::int64_t o = (p * OH + t / d.sh) * OW;  // output row t / sh of plane p
      const std::int64_t* x = ix + o;
      const char* g = static_cast<const char*>(gy) + o * esize;
      __m512i e = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(h * W)), lane);  // column offset 0
      for (std::int64_t c = 0; c < chunks; ++c, e = _mm512_add_epi32(e, chunk_step)) {
        const std::int64_t ow = 16 * c;
        const __mmask16 out = tc.out[c];
        const __m512i x0 = _mm512_maskz_loadu_epi64(static_cast<__mmask8>(out), x + ow);
        const __m512i x1 = _mm512_maskz_loadu_epi64(static_cast<__mmask8>(out >> 8), x + ow + 8);
        // Indices as int32, lanes whose int64 value is outside [0, 2^31) excluded (they match no tap).
        const __mmask16 fits = static_cast<__mmask16>(_mm512_cmplt_epu64_mask(x0, limit) |
                                                      (_mm512_cmplt_epu64_mask(x1, limit) << 8));
        const __m512i x32 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi64_epi32(x0)),
                                               _mm512_cvtepi64_epi32(x1), 1);
        const __m512 gv = load_grad<K>(g, ow, out);
        const __mmask16* m = &tc.m[c * kw];
        for (int j = 0; j < kw; ++j) {
          const __mmask16 hit = _mm512_mask_cmpeq_epi32_mask(m[j] & fits, x32, _mm512_add_epi32(e, _mm512_set1_epi32(off32[j])));
          count = _mm512_mask_sub_epi32(count, hit, count, _mm512_set1_epi32(-1));
          float* dst = taps[j] + ow;
          if (first) {
            _mm512_storeu_ps(dst, _mm512_maskz_mov_ps(hit, gv));
          } else {
            const __m512 a = _mm512_loadu_ps(dst);
            _mm512_storeu_ps(dst, _mm512_mask_add_ps(a, hit, a, gv));
          }
        }
      }
      first = false;
    }
    char* dst = static_cast<char*>(gx) + r * W * esize;
    if (sw == 1) {
      for (std::int64_t e = 0; e < W; e += 16) {
        __m512 a = _mm512_setzero_ps();
        if (!first)
          for (const float* t : of_phase[0]) a = _mm512_add_ps(a, _mm512_loadu_ps(t + e));
        store_grad<K>(dst, e, first_lanes(W - e), a, stream);
      }
    } else {
      for (std::int64_t e = 0; 2 * e < W; e += 16) {
        __m512 ev = _mm512_setzero_ps(), od = _mm512_setzero_ps();
        if (!first) {
          for (const float* t : of_phase[0]) ev = _mm512_add_ps(ev, _mm512_loadu_ps(t + e));
          for (const float* t : of_phase[1]) od = _mm512_add_ps(od, _mm512_loadu_ps(t + e));
        }
        store_grad<K>(dst, 2 * e, first_lanes(W - 2 * e), _mm512_permutex2var_ps(ev, lo_pairs, od), stream);
        store_grad<K>(dst, 2 * e + 16, first_lanes(W - 2 * e - 16), _mm512_permutex2var_ps(ev, hi_pairs, od),
                      stream);
      }
    }
  }
  _mm_sfence();  // non-temporal stores are weakly ordered: visible before the threads join
  return _mm512_reduce_add_epi32(count);
}
#endif

// The dense AVX-512 backward over all input rows; false when some index matched no tap (a bad index, or an empty
// window's), in which case the caller runs the checked scatter, which rewrites every element and names a bad one.
bool gather_backward(const Pool2dDesc& d, const Buffer& gy, const std::int64_t* ix, Buffer& gx) {
#if defined(__x86_64__) && defined(__GNUC__)
  using Fn = std::int64_t (*)(const Pool2dDesc&, const TapCols&, const void*, const std::int64_t*, void*,
                              std::int64_t, std::int64_t, bool);
  const Fn fn = d.dtype == DType::f32   ? bwd_gather_avx512<GradKind::f32>
                : d.dtype == DType::f16 ? bwd_gather_avx512<GradKind::f16>
                                        : bwd_gather_avx512<GradKind::bf16>;
  const TapCols tc(d);
  // Streaming stores only for gradients well beyond the L2 caches (measured no faster below; a small gradient is
  // better left in cache for whoever reads it next).
  const bool stream = d.N * d.C * d.H * d.W * static_cast<std::int64_t>(dtype_size(d.dtype)) >= (std::int64_t{16} << 20);
  std::atomic<std::int64_t> matched{0};
  parallel_ranges(d.N * d.C * d.H, [&](std::int64_t r0, std::int64_t r1) {
    matched += fn(d, tc, gy.host_ptr(), ix, gx.host_ptr(), r0, r1, stream);
  });
  return matched.load() == d.N * d.C * d.OH * d.OW;
#else
  (void)d, (void)gy, (void)ix, (void)gx;
  return false;
#endif
}

// Zero padding (d.zero_pad): window (oh, ow) of one plane recomputed with the padding's taps read as 0 at index -1,
// in the forward's order (row-major taps; NaN wins, else the first maximum). A window with no tap on the input or
// its padding (past it, with ceil_mode) keeps the forward's result.
template <class E>
void zero_pad_window(const Pool2dDesc& d, const typename E::S* plane, typename E::S* y, std::int64_t* ix,
                     std::int64_t oh, std::int64_t ow) {
  using S = typename E::S;
  using V = typename E::V;
  const std::int64_t hs = oh * d.sh - d.ph, ws = ow * d.sw - d.pw;
  bool found = false;
  V best{};
  S best_s{};
  std::int64_t where = -1;
  for (std::int64_t i = 0; i < d.kh; ++i) {
    const std::int64_t r = hs + i * d.dh;
    const bool rin = r >= 0 && r < d.H;
    if (!rin && r >= d.H + d.ph) continue;  // past the bottom padding (r >= -ph always)
    for (std::int64_t j = 0; j < d.kw; ++j) {
      const std::int64_t c = ws + j * d.dw;
      const bool cin = c >= 0 && c < d.W;
      if (!cin && c >= d.W + d.pw) continue;
      const S s = rin && cin ? plane[r * d.W + c] : S(0);
      const V v = E::val(s);
      if (!found || takes(v, best)) found = true, best = v, best_s = s, where = rin && cin ? r * d.W + c : -1;
    }
  }
  if (!found) return;
  const std::int64_t o = oh * d.OW + ow;
  y[o] = best_s;
  if (ix) ix[o] = where;
}

template <class E>
void zero_pad_fixup(const Pool2dDesc& d, const void* x, void* y, std::int64_t* ix) {
  using S = typename E::S;
  const PoolPadBands b = pool_pad_bands(d);
  parallel_ranges(d.N * d.C, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t p = p0; p < p1; ++p) {
      const S* plane = static_cast<const S*>(x) + p * d.H * d.W;
      S* yp = static_cast<S*>(y) + p * d.OH * d.OW;
      std::int64_t* ip = ix ? ix + p * d.OH * d.OW : nullptr;
      for (std::int64_t oh = 0; oh < d.OH; ++oh) {
        const bool whole = oh < b.top || oh >= b.bottom;
        for (std::int64_t ow = 0; ow < d.OW; ++ow) {
          if (!whole && ow == b.left) ow = std::max(ow, b.right);  // skip the columns between the bands
          if (ow >= d.OW) break;
          zero_pad_window<E>(d, plane, yp, ip, oh, ow);
        }
      }
    }
  });
}

void zero_pad_fixup(const Pool2dDesc& d, const void* x, void* y, std::int64_t* ix) {
  switch (d.dtype) {
    case DType::f32: return zero_pad_fixup<F32>(d, x, y, ix);
    case DType::f64: return zero_pad_fixup<F64>(d, x, y, ix);
    case DType::f16: return zero_pad_fixup<F16>(d, x, y, ix);
    case DType::bf16: return zero_pad_fixup<BF16>(d, x, y, ix);
    case DType::i8: return zero_pad_fixup<I8>(d, x, y, ix);
    case DType::u8: return zero_pad_fixup<U8>(d, x, y, ix);
    case DType::i32: return zero_pad_fixup<I32>(d, x, y, ix);
    case DType::i64: return zero_pad_fixup<I64>(d, x, y, ix);
    default: throw TypeError(std::string("max_pool2d: unsupported dtype ") + dtype_name(d.dtype));
  }
}

}  // namespace

void CpuBackend::max_pool2d(const Pool2dDesc& d, const Buffer& x, Buffer& y, Buffer* indices) {
  cpu_threads::apply();
  const FwdFn fn = fwd_fn(d.dtype, indices != nullptr);
  const std::int64_t rows = d.N * d.C * d.OH;
  const std::uint64_t bytes = (d.N * d.C * (d.H * d.W + d.OH * d.OW)) * dtype_size(d.dtype) +
                              (indices ? rows * d.OW * 8 : 0);
  const void* xp = x.host_ptr();
  void* yp = y.host_ptr();
  std::int64_t* ip = indices ? static_cast<std::int64_t*>(indices->host_ptr()) : nullptr;
  timed("max_pool2d", bytes, [&] {
    parallel_ranges(rows, [&](std::int64_t r0, std::int64_t r1) { fn(d, xp, yp, ip, r0, r1); });
    if (d.zero_pad) zero_pad_fixup(d, xp, yp, ip);
  });
}

void CpuBackend::max_pool2d_backward(const Pool2dDesc& d, const Buffer& gy, const Buffer& indices, Buffer& gx) {
  cpu_threads::apply();
  const std::int64_t in_size = d.N * d.C * d.H * d.W, out_size = d.N * d.C * d.OH * d.OW;
  const std::uint64_t bytes = (in_size + out_size) * dtype_size(d.dtype) + out_size * 8;
  const auto* ix = static_cast<const std::int64_t*>(indices.host_ptr());
  timed("max_pool2d_backward", bytes, [&] {
    if (kHaveAvx512 && (d.sw == 1 || d.sw == 2) && d.dtype != DType::f64 && d.H * d.W < (std::int64_t{1} << 31) &&
        gather_backward(d, gy, ix, gx))
      return;
    switch (d.dtype) {
      case DType::f32:
        bwd_scatter<float, float>(d, static_cast<const float*>(gy.host_ptr()), ix,
                                  static_cast<float*>(gx.host_ptr()), Same{});
        break;
      case DType::f64:
        bwd_scatter<double, double>(d, static_cast<const double*>(gy.host_ptr()), ix,
                                    static_cast<double*>(gx.host_ptr()), Same{});
        break;
      case DType::f16:
      case DType::bf16: {  // accumulate in float, round once
        const bool h = d.dtype == DType::f16;
        // float accumulator from the block cache (uninitialised: the scatter zeroes every row it owns); a fresh
        // zero-filled vector cost a serial 4-byte-per-element fill and a page fault per 4 KiB on every call.
        const std::shared_ptr<Buffer> acc_buf = alloc(static_cast<std::size_t>(in_size) * sizeof(float));
        float* acc = static_cast<float*>(acc_buf->host_ptr());
        const auto* g16 = static_cast<const std::uint16_t*>(gy.host_ptr());
        if (h) bwd_scatter<std::uint16_t, float>(d, g16, ix, acc, FromF16{});
        else bwd_scatter<std::uint16_t, float>(d, g16, ix, acc, FromBF16{});
        narrow_from_f32_parallel(d.dtype, acc, gx.host_ptr(), in_size);  // round to nearest even
        break;
      }
      default: throw TypeError(std::string("max_pool2d_backward: unsupported dtype ") + dtype_name(d.dtype));
    }
  });
}

}  // namespace hetnn
