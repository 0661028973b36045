#include "backend/onednn/half_convert.h"

#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define HETNN_X86 1
#endif

#include "backend/onednn/cpu_loops.h"
#include "backend/onednn/host_pool.h"
#include "core/errors.h"
#include "core/half.h"

namespace hetnn {

namespace {

constexpr std::int64_t kParallelMin = 1 << 16;  // elements below which conversions stay on the calling thread

#ifdef HETNN_X86
// F16C (every x86-64 processor since 2012: Ivy Bridge, Piledriver, Zen) converts 8 values per instruction; the
// library is built for baseline x86-64, so these carry their own target and are picked at load time.
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
bool have_f16c() {  // CPUID.1:ECX bit 29 (clang 14's __builtin_cpu_supports knows no "f16c"); AVX checked for OS state
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}
const bool kHaveF16c = have_f16c();
#else
const bool kHaveF16c = false;
void widen_f16c(const std::uint16_t*, float*, std::int64_t) {}
void narrow_f16c(const float*, std::uint16_t*, std::int64_t) {}
#endif

void widen_f16_soft(const std::uint16_t* src, float* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = half_bits_to_float(src[i]);
}
void narrow_f16_soft(const float* src, std::uint16_t* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = float_to_half_bits(src[i]);
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
    case DType::f16: return kHaveF16c ? widen_f16c(s, dst, n) : widen_f16_soft(s, dst, n);
    case DType::bf16: return widen_bf16(s, dst, n);
    case DType::f32: std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float)); return;
    default: throw TypeError(std::string("widen_to_f32: not a 16-bit float type: ") + dtype_name(t));
  }
}

void narrow_from_f32(DType t, const float* src, void* dst, std::int64_t n) {
  auto* d = static_cast<std::uint16_t*>(dst);
  switch (t) {
    case DType::f16: return kHaveF16c ? narrow_f16c(src, d, n) : narrow_f16_soft(src, d, n);
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

const char* f16_conversion_isa() { return kHaveF16c ? "F16C" : "software"; }

F32Scratch::F32Scratch(HostPool& pool, std::int64_t n) : pool_(pool) {
  const std::size_t bytes = static_cast<std::size_t>(n > 0 ? n : 1) * sizeof(float);
  p_ = static_cast<float*>(pool_.acquire(bytes, &capacity_));
  if (!p_) throw OutOfMemory("cannot allocate " + std::to_string(bytes) + " bytes of float32 work space on cpu");
}

F32Scratch::~F32Scratch() { pool_.release(p_, capacity_); }

}  // namespace hetnn
