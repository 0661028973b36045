// SipHash-2-4 (Aumasson & Bernstein): a keyed 64-bit hash, used as the MAC of on-disk cache entries so that only
// entries written with the cache's secret key reach the OpenCL driver.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

namespace hetnn {

using SipKey = std::array<unsigned char, 16>;

std::uint64_t siphash24(const SipKey& key, const void* data, std::size_t n);

}  // namespace hetnn
