// random on the CPU device (core/ops.h, RandomDesc): the draws in chunks per thread, computed in double (float64) or
// float (the other floating types, as on OpenCL devices), then stored.
#include <cmath>
#include <cstdint>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_convert.h"
#include "backend/cpu/cpu_threads.h"

namespace hetnn {

namespace {

constexpr std::int64_t kChunk = 256;

int unit_bits(DType t) {
  switch (t) {
    case DType::f64: return 53;
    case DType::f16: return 11;
    case DType::bf16: return 8;
    default: return 24;
  }
}

// The chunk [i, i + m) of the draws as C (double or float for floating outputs, int64 for integers).
template <class C>
void draw(const RandomDesc& d, std::int64_t i, std::int64_t m, C* r) {
  const std::uint64_t base = d.offset + static_cast<std::uint64_t>(i);
  if (d.dist == RandDist::integers) {
    for (std::int64_t j = 0; j < m; ++j) {
      const std::uint64_t x = splitmix64(d.seed, base + static_cast<std::uint64_t>(j));
      const std::uint64_t k = d.span ? static_cast<std::uint64_t>((static_cast<unsigned __int128>(x) * d.span) >> 64) : x;
      r[j] = static_cast<C>(static_cast<std::int64_t>(static_cast<std::uint64_t>(d.low) + k));
    }
    return;
  }
  if (d.dist == RandDist::uniform) {
    const int bits = unit_bits(d.out);
    const C lo = static_cast<C>(d.a), width = static_cast<C>(d.b - d.a);
    for (std::int64_t j = 0; j < m; ++j) {
      const C u = static_cast<C>(unit_from_bits(splitmix64(d.seed, base + static_cast<std::uint64_t>(j)), bits));
      r[j] = lo + width * u;
    }
    return;
  }
  // normal: counters 2k and 2k + 1 of element k
  const int bits = d.out == DType::f64 ? 53 : 24;
  const C loc = static_cast<C>(d.a), scale = static_cast<C>(d.b);
  const C two_pi = static_cast<C>(6.283185307179586476925286766559);
  for (std::int64_t j = 0; j < m; ++j) {
    const std::uint64_t c = d.offset + 2 * static_cast<std::uint64_t>(i + j);
    const double step = 1.0 / static_cast<double>(std::uint64_t{1} << bits);
    const C u1 = static_cast<C>(unit_from_bits(splitmix64(d.seed, c), bits) + step);  // (0, 1]
    const C u2 = static_cast<C>(unit_from_bits(splitmix64(d.seed, c + 1), bits));
    r[j] = loc + scale * (std::sqrt(C(-2) * std::log(u1)) * std::cos(two_pi * u2));
  }
}

template <class C>
void draw_all(const RandomDesc& d, void* out) {
  const std::int64_t chunks = (d.n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (d.n >= 4 * kChunk)
  for (std::int64_t c = 0; c < chunks; ++c) {
    C r[kChunk];
    const std::int64_t i = c * kChunk, m = std::min(kChunk, d.n - i);
    draw<C>(d, i, m, r);
    store(d.out, out, i, m, r);
  }
}

}  // namespace

void CpuBackend::random(const RandomDesc& d, Buffer& out) {
  if (d.n == 0) return;
  cpu_threads::apply();
  timed("random", static_cast<std::uint64_t>(d.n) * dtype_size(d.out), [&] {
    if (d.dist == RandDist::integers) draw_all<std::int64_t>(d, out.host_ptr());
    else if (d.out == DType::f64) draw_all<double>(d, out.host_ptr());
    else draw_all<float>(d, out.host_ptr());
  });
}

}  // namespace hetnn
