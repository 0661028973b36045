// Random numbers on hetnn's devices (hetnn.random): a counter-based stream (core/ops.h, RandomDesc: SplitMix64 over
// (seed, counter)), so a seed gives the same numbers on every device, uniform and integer draws bit for bit and
// normal ones up to the device's rounding of log, sqrt and cos. A Generator hands out consecutive counters.
#pragma once
#include <atomic>
#include <cstdint>

#include "core/array.h"
#include "core/ops.h"

namespace hetnn {

class Generator {
 public:
  explicit Generator(std::uint64_t seed) : seed_(seed) {}
  std::uint64_t seed() const { return seed_; }
  std::uint64_t offset() const { return offset_.load(); }

  // Uniform in [low, high) (a floating dtype); low < high, both finite.
  Array uniform(const DevicePtr& dev, const Shape& shape, DType t, double low, double high);
  // Normal with mean loc and standard deviation scale >= 0 (a floating dtype).
  Array normal(const DevicePtr& dev, const Shape& shape, DType t, double loc, double scale);
  // Integers in [low, last] (an integer dtype holding both); low <= last.
  Array integers(const DevicePtr& dev, const Shape& shape, DType t, std::int64_t low, std::int64_t last);

 private:
  Array draw(const DevicePtr& dev, const Shape& shape, RandomDesc d, std::uint64_t counters_per_element);
  std::uint64_t seed_;
  std::atomic<std::uint64_t> offset_{0};
};

}  // namespace hetnn
