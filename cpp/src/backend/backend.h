// The interface every device backend implements. Backends only compute: arguments have been validated by the
// front (core/*.cpp) before any of these is called, so a backend may assume consistent shapes, dtypes and devices.
//
// Adding an op touches: core/<op>.h/.cpp (front: validation + descriptor), a virtual here, its implementation in
// backend/onednn and backend/opencl (+ a .cl file), the binding in python/module.cpp, python/hetnn/_ops.py, and tests.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "core/recorder.h"

namespace hetnn {

// Device memory. Backends subclass it; host_ptr() is non-null only for host-addressable memory (the CPU device).
class Buffer {
 public:
  explicit Buffer(std::size_t nbytes) : nbytes(nbytes) {}
  virtual ~Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  virtual void* host_ptr() const { return nullptr; }
  const std::size_t nbytes;
};

// Activation applied by fused epilogues (matmul, dense layers).
enum class Activation : std::uint8_t { none = 0, relu = 1, sigmoid = 2, tanh = 3 };
const char* activation_name(Activation a);

// C[b] = act(alpha * op(A[b]) @ op(B[b]) + beta * C[b] + bias), all operands contiguous row-major; bias has N
// elements and is broadcast over rows (optional).
// A is stored (M, K), or (K, M) when trans_a; B is stored (K, N), or (N, K) when trans_b; C is (M, N).
// batch_a / batch_b are either `batch` or 1 (broadcast). K may be 0 (then C = beta * C); M, N, batch are > 0.
struct MatmulDesc {
  std::int64_t batch = 1, M = 0, N = 0, K = 0;
  std::int64_t batch_a = 1, batch_b = 1;
  bool trans_a = false, trans_b = false;
  DType dtype = DType::f32;
  double alpha = 1.0, beta = 0.0;
  bool has_bias = false;
  Activation act = Activation::none;
};

// 2-D max pooling over NCHW planes (PyTorch semantics; see core/pool.h). Window (oh, ow) covers rows
// oh*sh - ph + i*dh (i < kh) and columns ow*sw - pw + j*dw (j < kw); positions outside the input are skipped (-inf).
struct Pool2dDesc {
  std::int64_t N = 0, C = 0, H = 0, W = 0, OH = 0, OW = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  bool ceil_mode = false;
  DType dtype = DType::f32;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // Memory. alloc throws OutOfMemory; wrap_host returns null where device memory is not host memory.
  virtual std::shared_ptr<Buffer> alloc(std::size_t nbytes) = 0;
  virtual std::shared_ptr<Buffer> wrap_host(void* ptr, std::size_t nbytes, std::shared_ptr<void> owner) {
    return nullptr;
  }
  // Transfers. write/read block until the host memory may be reused / holds the data.
  virtual void write(Buffer& dst, std::size_t offset, const void* src, std::size_t n) = 0;
  virtual void read(const Buffer& src, std::size_t offset, void* dst, std::size_t n) = 0;
  virtual void copy(const Buffer& src, std::size_t src_offset, Buffer& dst, std::size_t dst_offset,
                    std::size_t n) = 0;
  // Sets n bytes to `value` (0 for zeros; 0xFF, a NaN pattern, to poison new memory in debug runs).
  virtual void fill(Buffer& dst, std::size_t offset, std::size_t n, unsigned char value) = 0;
  // Waits until every command issued so far has finished.
  virtual void synchronize() = 0;
  // Frees the blocks kept for reuse after their arrays went away (host_pool.h, mem_pool.h); returns the bytes freed.
  virtual std::size_t release_cached_memory() { return 0; }

  // Ops.
  virtual void matmul(const MatmulDesc& d, const Buffer& a, const Buffer& b, Buffer& c, const Buffer* bias) = 0;
  // y (N, C, OH, OW) = window maxima of x (N, C, H, W); NaN wins, else the first maximum in row-major window order.
  // indices (int64, optional): flat h*W + w of each maximum in its input plane.
  virtual void max_pool2d(const Pool2dDesc& d, const Buffer& x, Buffer& y, Buffer* indices) = 0;
  // gx (N, C, H, W) = sum of gy over the windows whose index points at each position. Throws ValueError when an
  // index does not point inside its own window (a corrupt or foreign indices array).
  virtual void max_pool2d_backward(const Pool2dDesc& d, const Buffer& gy, const Buffer& indices, Buffer& gx) = 0;

  // Device-time capture (see core/recorder.h).
  std::size_t capture_begin() { return recorder_.begin(); }
  std::vector<OpRecord> capture_end(std::size_t token) {
    synchronize();
    return recorder_.end(token, [this](PendingRecord& p) { resolve(p); });
  }

 protected:
  // Fills in device times of a record whose handle is set (called after synchronize()).
  virtual void resolve(PendingRecord& p) {}
  Recorder recorder_;
};

}  // namespace hetnn
