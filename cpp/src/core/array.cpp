#include "core/array.h"

#include <cstdlib>
#include <limits>
#include <sstream>

#include "core/errors.h"

namespace hetnn {

bool poison_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("HETNN_POISON");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << (s.size() == 1 ? ",)" : ")");
  return os.str();
}

std::int64_t shape_size(const Shape& s, const char* what) {
  std::int64_t n = 1;
  for (auto d : s) {
    if (d < 0) throw ValueError(std::string(what) + " " + shape_str(s) + " has a negative dimension");
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / 8 / d)
      throw ValueError(std::string(what) + " " + shape_str(s) + " is too large to address");
    n *= d;
  }
  return n;
}

Array::Array(DevicePtr device, std::shared_ptr<Buffer> buffer, Shape shape, DType dtype)
    : device_(std::move(device)), buffer_(std::move(buffer)), shape_(std::move(shape)), dtype_(dtype) {}

std::int64_t Array::size() const {
  std::int64_t n = 1;
  for (auto d : shape_) n *= d;
  return n;
}

Array Array::empty(const DevicePtr& device, const Shape& shape, DType dtype) {
  device->require(dtype, "array");
  const std::int64_t n = shape_size(shape);
  const std::size_t bytes = static_cast<std::size_t>(n) * dtype_size(dtype);
  Array a(device, device->backend().alloc(bytes), shape, dtype);
  if (poison_enabled() && bytes) {  // NaN for float types; not part of any timing
    Recorder::Pause pause;
    device->backend().fill(*a.buffer_, 0, bytes, 0xFF);
  }
  return a;
}

Array Array::zeros(const DevicePtr& device, const Shape& shape, DType dtype) {
  Array a = empty(device, shape, dtype);
  if (a.nbytes()) device->backend().fill(*a.buffer_, 0, a.nbytes(), 0);
  return a;
}

Array Array::from_host(const DevicePtr& device, const void* data, const Shape& shape, DType dtype) {
  Array a = empty(device, shape, dtype);
  a.from_host_into(data);
  return a;
}

Array Array::wrap_host(const DevicePtr& device, void* data, const Shape& shape, DType dtype,
                       std::shared_ptr<void> owner) {
  device->require(dtype, "array");
  const std::size_t bytes = static_cast<std::size_t>(shape_size(shape)) * dtype_size(dtype);
  auto buf = device->backend().wrap_host(data, bytes, std::move(owner));
  if (!buf) return Array();
  return Array(device, std::move(buf), shape, dtype);
}

void Array::to_host(void* dst) const {
  if (nbytes()) device_->backend().read(*buffer_, 0, dst, nbytes());
}

void Array::from_host_into(const void* src) {
  if (nbytes()) device_->backend().write(*buffer_, 0, src, nbytes());
}

void Array::copy_from(const Array& src) {
  if (src.device() != device_)
    throw ValueError("copy_from: the source is on " + src.device()->id() + " but this array is on " + device_->id() +
                     "; use .to(device) to move between devices");
  if (src.dtype() != dtype_ || src.size() != size())
    throw ValueError("copy_from: the source is " + std::string(dtype_name(src.dtype())) + " " + shape_str(src.shape()) +
                     ", this array " + dtype_name(dtype_) + " " + shape_str(shape_) + " (dtype and size must match)");
  if (nbytes() && !same_memory(src)) device_->backend().copy(*src.buffer_, 0, *buffer_, 0, nbytes());
}

Array Array::reshape(const Shape& shape) const {
  const std::int64_t n = shape_size(shape);
  if (n != size())
    throw ValueError("cannot reshape an array of shape " + shape_str(shape_) + " (" + std::to_string(size()) +
                     " elements) into shape " + shape_str(shape) + " (" + std::to_string(n) + " elements)");
  return Array(device_, buffer_, shape, dtype_);
}

namespace {

// Bytes in one row of the leading axis; checks the row range.
std::size_t row_range(const Array& a, std::int64_t start, std::int64_t stop, const char* what) {
  if (a.ndim() == 0) throw ValueError(std::string(what) + ": a 0-d array has no rows");
  if (start < 0 || stop < start || stop > a.shape()[0])
    throw ValueError(std::string(what) + ": rows [" + std::to_string(start) + ", " + std::to_string(stop) +
                     ") are outside an array of shape " + shape_str(a.shape()));
  return a.shape()[0] ? a.nbytes() / static_cast<std::size_t>(a.shape()[0]) : 0;
}

}  // namespace

Array Array::rows(std::int64_t start, std::int64_t stop) const {
  const std::size_t row = row_range(*this, start, stop, "rows");
  Shape s = shape_;
  s[0] = stop - start;
  Array out = empty(device_, s, dtype_);
  if (out.nbytes()) device_->backend().copy(*buffer_, row * start, *out.buffer_, 0, out.nbytes());
  return out;
}

void Array::set_rows(std::int64_t start, std::int64_t stop, const Array& src) {
  const std::size_t row = row_range(*this, start, stop, "set_rows");
  Shape s = shape_;
  s[0] = stop - start;
  if (src.device() != device_)
    throw ValueError("set_rows: the source is on " + src.device()->id() + " but this array is on " + device_->id() +
                     "; use .to(device) to move between devices");
  if (src.dtype() != dtype_ || src.shape() != s)
    throw ValueError("set_rows: the source is " + std::string(dtype_name(src.dtype())) + " " +
                     shape_str(src.shape()) + " but rows [" + std::to_string(start) + ", " + std::to_string(stop) +
                     ") are " + dtype_name(dtype_) + " " + shape_str(s));
  if (src.nbytes() && !same_memory(src)) device_->backend().copy(*src.buffer_, 0, *buffer_, row * start, src.nbytes());
}

Array Array::to(const DevicePtr& device) const {
  if (device == device_) {
    Array out = empty(device, shape_, dtype_);
    if (nbytes()) device->backend().copy(*buffer_, 0, *out.buffer_, 0, nbytes());
    return out;
  }
  // Across devices: through host memory (explicit, and recorded as d2h + h2d).
  std::vector<unsigned char> host(nbytes());
  to_host(host.data());
  return from_host(device, host.data(), shape_, dtype_);
}

}  // namespace hetnn
