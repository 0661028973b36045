// Kernel-launch helpers shared by the OpenCL backend's op files.
#pragma once
#include <string>

#include "backend/opencl/cl_check.h"
#include "core/dtype.h"

namespace hetnn::opencl {

// clSetKernelArg for each argument in order; the failing index is named in the error.
struct ArgSetter {
  cl_kernel k;
  const char* kernel_name;
  cl_uint i = 0;
  template <class T>
  ArgSetter& operator()(const T& v) {
    return raw(sizeof(T), &v);
  }
  // A REAL scalar of the kernel: double for float64 kernels, float otherwise.
  ArgSetter& real(double v, DType t) {
    if (t == DType::f64) return (*this)(v);
    return (*this)(static_cast<float>(v));
  }
  ArgSetter& raw(std::size_t size, const void* p) {
    const cl_int st = clSetKernelArg(k, i, size, p);
    if (st != CL_SUCCESS) throw_cl_error(st, std::string("clSetKernelArg(") + kernel_name + ", " + std::to_string(i) + ")");
    ++i;
    return *this;
  }
};

inline std::size_t round_up(std::size_t v, std::size_t m) { return m ? (v + m - 1) / m * m : v; }


}  // namespace hetnn::opencl
