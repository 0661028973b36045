// An n-dimensional, contiguous, row-major array living in one device's memory.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"

namespace hetnn {

// Shape: core/ops.h.

// HETNN_POISON=1 (read once): every new uninitialised Array is filled with 0xFF bytes (NaN in float types), so a
// kernel that leaves part of its output unwritten fails the tests instead of passing by luck.
bool poison_enabled();

std::string shape_str(const Shape& s);  // "(2, 3)"
std::int64_t shape_size(const Shape& s, const char* what = "shape");  // validates: non-negative, no overflow

class Array {
 public:
  Array() = default;
  Array(DevicePtr device, std::shared_ptr<Buffer> buffer, Shape shape, DType dtype);

  // Uninitialised storage. Throws ValueError (bad shape), TypeError (dtype not on device), OutOfMemory.
  static Array empty(const DevicePtr& device, const Shape& shape, DType dtype);
  static Array zeros(const DevicePtr& device, const Shape& shape, DType dtype);
  // Copies `data` (size(shape) elements of dtype) onto the device.
  static Array from_host(const DevicePtr& device, const void* data, const Shape& shape, DType dtype);
  // Zero-copy view of host memory on a host-addressable device (the CPU device); null Array elsewhere.
  // `owner` keeps the memory alive as long as the Array.
  static Array wrap_host(const DevicePtr& device, void* data, const Shape& shape, DType dtype,
                         std::shared_ptr<void> owner);

  void to_host(void* dst) const;                 // blocking device -> host copy of the whole array
  void from_host_into(const void* src);          // blocking host -> device copy into this array
  // Device -> device copy of src (same device, dtype and size) into this array (asynchronous, like an op).
  void copy_from(const Array& src);
  Array to(const DevicePtr& device) const;       // copy onto another (or the same) device
  Array copy() const { return to(device_); }
  // The same memory seen with another shape of the same size (a view: writes through one show in the other).
  Array reshape(const Shape& shape) const;
  // Rows [start, stop) of the leading axis as a new array on the same device (a device -> device copy; hetnn
  // arrays are whole buffers, so a part of one cannot be a view). 0 <= start <= stop <= shape[0].
  Array rows(std::int64_t start, std::int64_t stop) const;
  // Writes src (same device and dtype, shape (stop - start, *shape[1:])) into rows [start, stop).
  void set_rows(std::int64_t start, std::int64_t stop, const Array& src);

  bool valid() const { return buffer_ != nullptr; }
  const DevicePtr& device() const { return device_; }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  std::int64_t size() const;
  std::size_t nbytes() const { return static_cast<std::size_t>(size()) * dtype_size(dtype_); }
  bool same_memory(const Array& o) const { return buffer_ && buffer_ == o.buffer_; }

 private:
  DevicePtr device_;
  std::shared_ptr<Buffer> buffer_;
  Shape shape_;
  DType dtype_ = DType::f32;
};

}  // namespace hetnn
