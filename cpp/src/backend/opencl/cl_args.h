// Kernel-launch helpers shared by the OpenCL backend's op files.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "backend/opencl/cl_check.h"
#include "core/dtype.h"

namespace hetnn::opencl {

// The dtype's name in the build options of ew_types.cl (-DTIN_<code> / -DTOUT_<code>).
inline const char* type_code(DType t) {
  switch (t) {
    case DType::f32: return "F32";
    case DType::f64: return "F64";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
    case DType::u8: return "U8";
    case DType::i8: return "I8";
    case DType::b8: return "B8";
  }
  return "F32";
}

// The buffers of the kernel whose arguments this thread set last (ArgSetter): the enqueue orders them against the
// other queues of the device (ClBackend::submit).
inline std::vector<cl_mem>& kernel_mems() {
  thread_local std::vector<cl_mem> mems;
  return mems;
}

// clSetKernelArg for each argument in order; the failing index is named in the error.
struct ArgSetter {
  cl_kernel k;
  const char* kernel_name;
  cl_uint i = 0;
  template <class T>
  ArgSetter& operator()(const T& v) {
    return raw(sizeof(T), &v);
  }
  ArgSetter& operator()(cl_mem m) {
    raw(sizeof(m), &m);
    if (m) kernel_mems().push_back(m);
    return *this;
  }
  // A REAL scalar of the kernel: double for float64 kernels, float otherwise.
  ArgSetter& real(double v, DType t) {
    if (t == DType::f64) return (*this)(v);
    return (*this)(static_cast<float>(v));
  }
  ArgSetter& raw(std::size_t size, const void* p) {
    if (i == 0) kernel_mems().clear();  // a new kernel's arguments
    const cl_int st = clSetKernelArg(k, i, size, p);
    if (st != CL_SUCCESS) throw_cl_error(st, std::string("clSetKernelArg(") + kernel_name + ", " + std::to_string(i) + ")");
    ++i;
    return *this;
  }
};

inline std::size_t round_up(std::size_t v, std::size_t m) { return m ? (v + m - 1) / m * m : v; }

// The range of a two-dimensional flat kernel over rows x cols items (CPU-type devices' strided element-wise calls):
// square groups of 32 x 32 (within the device's work-group limit: 16 x 16, 8 x 8) where there are that many rows (a
// transposed operand's lines then serve the group's rows while cached: a transposed add of 64 MiB on PoCL 23.5 ms
// with 64 x 16, 28 with 128 x 8, 18.8 with 32 x 32), else one row of up to `flat` items.
struct Range2d {
  std::size_t global[2], local[2];
};
inline Range2d range_2d(std::int64_t rows, std::int64_t cols, std::size_t flat, std::size_t limit) {
  Range2d r{};
  std::size_t tile = 32;
  while (tile > 1 && tile * tile > limit) tile /= 2;
  r.local[1] = tile >= 8 && rows >= static_cast<std::int64_t>(tile) ? tile : 1;
  r.local[0] = r.local[1] > 1 ? tile : std::min(flat, round_up(static_cast<std::size_t>(cols), 16));
  r.global[0] = round_up(static_cast<std::size_t>(cols), r.local[0]);
  r.global[1] = round_up(static_cast<std::size_t>(rows), r.local[1]);
  return r;
}


}  // namespace hetnn::opencl
