// 2-D convolution on OpenCL devices: kernels/conv2d.cl (direct), one program per kernel size and dtype (cached).
#include <string>

#include "backend/opencl/cl_args.h"
#include "backend/opencl/cl_backend.h"

namespace hetnn::opencl {

void ClBackend::conv2d(const Conv2dDesc& d, const Buffer& x, const Buffer& w, const Buffer* bias, Buffer& y) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string opts = common_options(d.dtype) + " -DKH=" + std::to_string(d.kh) + " -DKW=" + std::to_string(d.kw);
  cl_kernel k = kernel("conv2d.cl", "conv2d_fwd", opts);
  ArgSetter a{k, "conv2d_fwd"};
  a(static_cast<cl_int>(d.C))(static_cast<cl_int>(d.H))(static_cast<cl_int>(d.W))(static_cast<cl_int>(d.O));
  a(static_cast<cl_int>(d.OH))(static_cast<cl_int>(d.OW));
  a(static_cast<cl_int>(d.C / d.groups))(static_cast<cl_int>(d.O / d.groups));
  a(cl_int{d.sh})(cl_int{d.sw})(cl_int{d.ph})(cl_int{d.pw})(cl_int{d.dh})(cl_int{d.dw});
  a(cl_int{d.has_bias})(static_cast<cl_int>(d.act))(mem(x))(mem(w))(bias ? mem(*bias) : mem(w))(mem(y));
  // GPUs: a warp of consecutive outputs per row; CPU devices (PoCL): 16 lanes, one AVX-512 float vector.
  const bool gpu = gpu_kernels();
  const std::size_t lx = gpu ? 32 : 16, ly = gpu ? 4 : 1;
  const std::size_t local[3] = {lx, ly, 1};
  const std::size_t global[3] = {round_up(static_cast<std::size_t>(d.OW), lx),
                                 round_up(static_cast<std::size_t>(d.OH), ly), static_cast<std::size_t>(d.N * d.O)};
  enqueue("conv2d", k, 3, global, local);
}

}  // namespace hetnn::opencl
