// The random-number front (core/random.h): arguments checked here, counters handed out, the draws made by the
// backends' random.
#include "core/random.h"

#include <cmath>
#include <limits>
#include <string>

#include "core/errors.h"

namespace hetnn {

namespace {

void floating(const char* name, DType t) {
  if (!is_floating(t))
    throw TypeError(std::string("hetnn.random: ") + name + " draws a floating dtype, got " + dtype_name(t));
}

}  // namespace

Array Generator::draw(const DevicePtr& dev, const Shape& shape, RandomDesc d, std::uint64_t per) {
  Array y = Array::empty(dev, shape, d.out);  // checks the shape and the device's dtypes
  d.n = y.size();
  d.seed = seed_;
  d.offset = offset_.fetch_add(static_cast<std::uint64_t>(d.n) * per);
  dev->backend().random(d, *y.buffer());
  return y;
}

Array Generator::uniform(const DevicePtr& dev, const Shape& shape, DType t, double low, double high) {
  floating("uniform", t);
  dev->require(t, "random.uniform");
  if (!std::isfinite(low) || !std::isfinite(high) || !(low < high))
    throw ValueError("hetnn.random: uniform needs finite low < high, got low " + std::to_string(low) + " and high " +
                     std::to_string(high));
  RandomDesc d;
  d.dist = RandDist::uniform;
  d.out = t;
  d.a = low;
  d.b = high;
  return draw(dev, shape, d, 1);
}

Array Generator::normal(const DevicePtr& dev, const Shape& shape, DType t, double loc, double scale) {
  floating("normal", t);
  dev->require(t, "random.normal");
  if (!std::isfinite(loc) || !std::isfinite(scale) || scale < 0)
    throw ValueError("hetnn.random: normal needs a finite loc and a finite scale >= 0, got loc " +
                     std::to_string(loc) + " and scale " + std::to_string(scale));
  RandomDesc d;
  d.dist = RandDist::normal;
  d.out = t;
  d.a = loc;
  d.b = scale;
  return draw(dev, shape, d, 2);
}

Array Generator::integers(const DevicePtr& dev, const Shape& shape, DType t, std::int64_t low, std::int64_t last) {
  if (is_floating(t) || t == DType::b8)
    throw TypeError(std::string("hetnn.random: integers draws an integer dtype, got ") + dtype_name(t));
  dev->require(t, "random.integers");
  if (low > last)
    throw ValueError("hetnn.random: integers needs low < high, got the empty range [" + std::to_string(low) + ", " +
                     std::to_string(last) + "]");
  std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
  switch (t) {
    case DType::i8: lo = -128, hi = 127; break;
    case DType::u8: lo = 0, hi = 255; break;
    case DType::i32: lo = std::numeric_limits<std::int32_t>::min(), hi = std::numeric_limits<std::int32_t>::max(); break;
    default: break;
  }
  if (low < lo || last > hi)
    throw ValueError("hetnn.random: integers in [" + std::to_string(low) + ", " + std::to_string(last) +
                     "] do not fit in " + dtype_name(t));
  RandomDesc d;
  d.dist = RandDist::integers;
  d.out = t;
  d.low = low;
  d.span = static_cast<std::uint64_t>(last) - static_cast<std::uint64_t>(low) + 1;  // 2^64 wraps to 0: all int64
  return draw(dev, shape, d, 1);
}

}  // namespace hetnn
