// Average pooling on OpenCL devices: kernels/avg_pool.cl, one program per window size and dtype (cached).
#include "backend/opencl/cl_args.h"
#include "backend/opencl/cl_backend.h"
#include "core/pool2d.h"

namespace hetnn::opencl {

void ClBackend::avg_pool2d(const AvgPool2dDesc& d, const Buffer& x, Buffer& y) {
  std::lock_guard<std::mutex> lock(mu_);
  cl_kernel k = kernel("avg_pool.cl", "avg_pool2d_fwd", pool_options(d));
  ArgSetter a{k, "avg_pool2d_fwd"};
  a(static_cast<cl_int>(d.H))(static_cast<cl_int>(d.W))(static_cast<cl_int>(d.OH))(static_cast<cl_int>(d.OW));
  a(cl_int{d.sh})(cl_int{d.sw})(cl_int{d.ph})(cl_int{d.pw});
  a(cl_int{d.count_include_pad})(cl_int{d.divisor_override})(mem(x))(mem(y));
  // GPUs: a warp of consecutive outputs per row; CPU devices (PoCL): 16 lanes, one AVX-512 float vector.
  const bool gpu = gpu_kernels();
  const std::size_t lx = gpu ? 32 : 16, ly = gpu ? 4 : 1;
  const std::size_t local[3] = {lx, ly, 1};
  const std::size_t global[3] = {round_up(static_cast<std::size_t>(d.OW), lx),
                                 round_up(static_cast<std::size_t>(d.OH), ly), static_cast<std::size_t>(d.N * d.C)};
  enqueue("avg_pool2d", k, 3, global, local);
}

}  // namespace hetnn::opencl
