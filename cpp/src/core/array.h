// An n-dimensional array living in one device's memory: a buffer and a strided view of it (offset and strides in
// elements). New arrays are dense (row-major from the buffer's start); indexing, transposes and flips give views.
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
  // As to_host / from_host_into, left running where the host memory is the device's page-locked memory
  // (Backend::read_async / write_async); true when it was.
  bool to_host_async(void* dst) const;
  bool from_host_into_async(const void* src);
  // Device -> device copy of src (same device, dtype and size) into this array (asynchronous, like an op).
  void copy_from(const Array& src);
  Array to(const DevicePtr& device) const;       // copy onto another (or the same) device
  Array copy() const { return to(device_); }
  // The same memory seen with another shape of the same size (a view: writes through one show in the other) where
  // the elements' order allows it (a dense array, or a view whose merged axes split into the new shape); else an
  // invalid Array. ValueError when the sizes differ.
  Array reshape_view(const Shape& shape) const;
  // reshape_view, or a dense copy reshaped when no view of that shape exists (NumPy's reshape).
  Array reshape(const Shape& shape) const;
  // A view of this array's memory: element idx at offset + sum(idx * strides) (elements; strides may be negative
  // or 0). Error if any element would lie outside the buffer (the fronts compute views; this is their check).
  Array view(Shape shape, std::vector<std::int64_t> strides, std::int64_t offset) const;
  // Rows [start, stop) of the leading axis as a new dense array on the same device (a device -> device copy).
  // 0 <= start <= stop <= shape[0].
  Array rows(std::int64_t start, std::int64_t stop) const;
  // Writes src (same device and dtype, shape (stop - start, *shape[1:])) into rows [start, stop).
  void set_rows(std::int64_t start, std::int64_t stop, const Array& src);

  bool valid() const { return buffer_ != nullptr; }
  const DevicePtr& device() const { return device_; }
  // A dense array's memory. Ops that read arrays only as dense ones take buffer() of x.dense(); buffer() of a view
  // is a defect of hetnn (Error), so no op can read a view as if it were dense.
  const std::shared_ptr<Buffer>& buffer() const;
  // The memory under a view (strided readers: element-wise, reductions, copies, user kernels).
  const std::shared_ptr<Buffer>& storage() const { return buffer_; }
  std::vector<std::int64_t> strides() const;
  std::int64_t offset() const { return offset_; }
  // Row-major from the buffer's start (extent-1 axes' strides aside).
  bool is_dense() const { return dense_; }
  // This array when dense, else a dense copy on its device (one strided pass).
  Array dense() const;
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  std::int64_t size() const;
  std::size_t nbytes() const { return static_cast<std::size_t>(size()) * dtype_size(dtype_); }
  bool same_memory(const Array& o) const { return buffer_ && buffer_ == o.buffer_; }
  // Same memory, offset and strides: each element of one is the element at the same index of the other.
  bool same_layout(const Array& o) const;

 private:
  void set_dense();
  DevicePtr device_;
  std::shared_ptr<Buffer> buffer_;
  Shape shape_;
  DType dtype_ = DType::f32;
  std::vector<std::int64_t> strides_;  // a view's; empty for a dense array (its shape's row-major strides)
  std::int64_t offset_ = 0;
  bool dense_ = true;
};

// For ops that write only dense arrays (out= and in-place arguments of the NN ops): ValueError naming `what` when a
// is a view.
void require_dense(const Array& a, const std::string& op, const char* what);

// Row-major element strides of a dense array of `shape`.
std::vector<std::int64_t> dense_strides(const Shape& shape);

// The one strided copy every front uses: dst[oo + idx . so] = src[os + idx . ss] over `shape`, in storage elements
// of the two arrays' buffers (each array's own offset and strides are not applied: callers pass them composed).
// Dimensions of extent 1 are dropped and neighbours merged; every element is checked to lie inside its buffer.
// `name`: the call, for errors.
void move_elements(const char* name, const Array& src, std::vector<std::int64_t> ss, std::int64_t os, Array& dst,
                   const Shape& shape, std::vector<std::int64_t> so, std::int64_t oo);

}  // namespace hetnn
