// float16 / bfloat16 arrays <-> float32 on the host: the CPU device's "converted" 16-bit paths (matmul where oneDNN
// has no native kernel for the processor, the training ops) keep the data in 16 bits and compute in float32.
// Widening is exact; narrowing rounds to nearest, ties to even, and keeps NaN a (quiet) NaN.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/dtype.h"

namespace hetnn {

class HostAllocator;

// dst[i] = float(src[i]) for n elements of t (float16 or bfloat16; float32 is copied).
void widen_to_f32(DType t, const void* src, float* dst, std::int64_t n);
// dst[i] = t(src[i]), rounded to nearest even.
void narrow_from_f32(DType t, const float* src, void* dst, std::int64_t n);
// Both over the OpenMP threads for large n.
void widen_to_f32_parallel(DType t, const void* src, float* dst, std::int64_t n);
void narrow_from_f32_parallel(DType t, const float* src, void* dst, std::int64_t n);

// The float16 conversions this processor can run, best first (the library is built for baseline x86-64, so the
// vector ones carry their own target): AVX-512 (16 per instruction, remainders masked), F16C (8; every x86-64
// processor since 2012: Ivy Bridge, Piledriver, Zen), core/half.h's bit arithmetic. The first is used; tests check
// them all.
struct F16Conversions {
  void (*widen)(const std::uint16_t*, float*, std::int64_t);
  void (*narrow)(const float*, std::uint16_t*, std::int64_t);
  const char* isa;
};
std::vector<F16Conversions> f16_conversions_available();

// The instructions that convert float16 here: "AVX-512", "F16C" or "software" (core/half.h's bit arithmetic).
// Used by every 16-bit path of the CPU device (matmul, pooling, training ops).
const char* f16_conversion_isa();

// A float32 work area from the device's host pool, returned when it goes out of scope.
class F32Scratch {
 public:
  F32Scratch(HostAllocator& pool, std::int64_t n);
  // ... holding the n elements of `src` (type t) widened to float32.
  F32Scratch(HostAllocator& pool, std::int64_t n, DType t, const void* src);
  ~F32Scratch();
  F32Scratch(const F32Scratch&) = delete;
  F32Scratch& operator=(const F32Scratch&) = delete;
  float* data() const { return p_; }

 private:
  HostAllocator& pool_;
  float* p_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace hetnn
