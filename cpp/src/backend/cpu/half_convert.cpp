#include "backend/cpu/half_convert.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define HETNN_X86 1
#endif

#include "backend/cpu/cpu_loops.h"
#include "backend/cpu/host_allocator.h"
#include "core/errors.h"
#include "core/half.h"

namespace hetnn {

namespace {

constexpr std::int64_t kParallelMin = 1 << 16;  // elements below which conversions stay on the calling thread

void widen_f16_soft(const std::uint16_t* src, float* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = half_bits_to_float(src[i]);
}
void narrow_f16_soft(const float* src, std::uint16_t* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = float_to_half_bits(src[i]);
}

#ifdef HETNN_X86
__attribute__((target("avx512f,avx512bw,avx512vl"))) void widen_f16_avx512(const std::uint16_t* src, float* dst,
                                                                            std::int64_t n) {
  for (std::int64_t k = 0; k < n; k += 16) {
    const std::int64_t m = std::min<std::int64_t>(16, n - k);
    const __mmask16 mask = static_cast<__mmask16>(m == 16 ? 0xFFFFu : (1u << m) - 1);
    _mm512_mask_storeu_ps(dst + k, mask, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, src + k)));
  }
}
__attribute__((target("avx512f,avx512bw,avx512vl"))) void narrow_f16_avx512(const float* src, std::uint16_t* dst,
                                                                             std::int64_t n) {
  for (std::int64_t k = 0; k < n; k += 16) {
    const std::int64_t m = std::min<std::int64_t>(16, n - k);
    const __mmask16 mask = static_cast<__mmask16>(m == 16 ? 0xFFFFu : (1u << m) - 1);
    const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(mask, src + k), _MM_FROUND_TO_NEAREST_INT);
    _mm256_mask_storeu_epi16(dst + k, mask, h);
  }
}
__attribute__((target("avx,f16c"))) void widen_f16c(const std::uint16_t* src, float* dst, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  for (; i < n; ++i) dst[i] = half_bits_to_float(src[i]);
}
__attribute__((target("avx,f16c"))) void narrow_f16c(const float* src, std::uint16_t* dst, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) dst[i] = float_to_half_bits(src[i]);
}
#endif

const F16Conversions& f16() {  // the best, picked on first use (safe from any static initialiser)
  static const F16Conversions c = f16_conversions_available().front();
  return c;
}

// bfloat16 is the upper half of a float: integer shifts the compiler vectorises.
HETNN_CLONES void widen_bf16(const std::uint16_t* src, float* dst, std::int64_t n) {
  auto* d = reinterpret_cast<std::uint32_t*>(dst);
  for (std::int64_t i = 0; i < n; ++i) d[i] = static_cast<std::uint32_t>(src[i]) << 16;
}
HETNN_CLONES void narrow_bf16(const float* src, std::uint16_t* dst, std::int64_t n) {
  const auto* s = reinterpret_cast<const std::uint32_t*>(src);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t bits = s[i];
    const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
    const std::uint32_t r = nan ? (bits | 0x00400000u) : bits + 0x7fffu + ((bits >> 16) & 1u);  // NaN stays quiet NaN
    dst[i] = static_cast<std::uint16_t>(r >> 16);
  }
}

}  // namespace

void widen_to_f32(DType t, const void* src, float* dst, std::int64_t n) {
  const auto* s = static_cast<const std::uint16_t*>(src);
  switch (t) {
    case DType::f16: return f16().widen(s, dst, n);
    case DType::bf16: return widen_bf16(s, dst, n);
    case DType::f32: std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float)); return;
    default: throw TypeError(std::string("widen_to_f32: not a 16-bit float type: ") + dtype_name(t));
  }
}

void narrow_from_f32(DType t, const float* src, void* dst, std::int64_t n) {
  auto* d = static_cast<std::uint16_t*>(dst);
  switch (t) {
    case DType::f16: return f16().narrow(src, d, n);
    case DType::bf16: return narrow_bf16(src, d, n);
    case DType::f32: std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float)); return;
    default: throw TypeError(std::string("narrow_from_f32: not a 16-bit float type: ") + dtype_name(t));
  }
}

void widen_to_f32_parallel(DType t, const void* src, float* dst, std::int64_t n) {
  const std::size_t es = dtype_size(t);
  parallel_ranges(n, [&](std::int64_t b, std::int64_t e) {
    widen_to_f32(t, static_cast<const char*>(src) + b * es, dst + b, e - b);
  }, kParallelMin);
}

void narrow_from_f32_parallel(DType t, const float* src, void* dst, std::int64_t n) {
  const std::size_t es = dtype_size(t);
  parallel_ranges(n, [&](std::int64_t b, std::int64_t e) {
    narrow_from_f32(t, src + b, static_cast<char*>(dst) + b * es, e - b);
  }, kParallelMin);
}

const char* f16_conversion_isa() { return f16().isa; }

std::vector<F16Conversions> f16_conversions_available() {
  std::vector<F16Conversions> out;
#ifdef HETNN_X86
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    out.push_back({widen_f16_avx512, narrow_f16_avx512, "AVX-512"});
  // F16C is CPUID.1:ECX bit 29 (clang 14's __builtin_cpu_supports knows no "f16c"); "avx" checks the OS state too
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)))
    out.push_back({widen_f16c, narrow_f16c, "F16C"});
#endif
  out.push_back({widen_f16_soft, narrow_f16_soft, "software"});
  return out;
}

F32Scratch::F32Scratch(HostAllocator& pool, std::int64_t n) : pool_(pool) {
  const std::size_t bytes = static_cast<std::size_t>(n > 0 ? n : 1) * sizeof(float);
  p_ = static_cast<float*>(pool_.acquire(bytes, &capacity_));
  if (!p_) throw OutOfMemory("cannot allocate " + std::to_string(bytes) + " bytes of float32 work space on cpu");
}

F32Scratch::F32Scratch(HostAllocator& pool, std::int64_t n, DType t, const void* src) : F32Scratch(pool, n) {
  widen_to_f32_parallel(t, src, p_, n);
}

F32Scratch::~F32Scratch() { pool_.release(p_, capacity_); }

}  // namespace hetnn
