// Average pooling on OpenCL devices, forward and backward: kernels/avg_pool.cl, one program per window size and
// dtype (cached).
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
  enqueue_planes("avg_pool2d", k, d.OW, d.OH, d.N * d.C);
}

void ClBackend::avg_pool2d_backward(const AvgPool2dDesc& d, const Buffer& gy, Buffer& gx) {
  std::lock_guard<std::mutex> lock(mu_);
  cl_kernel k = kernel("avg_pool.cl", "avg_pool2d_bwd", pool_options(d));
  ArgSetter a{k, "avg_pool2d_bwd"};
  a(static_cast<cl_int>(d.H))(static_cast<cl_int>(d.W))(static_cast<cl_int>(d.OH))(static_cast<cl_int>(d.OW));
  a(cl_int{d.sh})(cl_int{d.sw})(cl_int{d.ph})(cl_int{d.pw});
  a(cl_int{d.count_include_pad})(cl_int{d.divisor_override})(mem(gy))(mem(gx));
  enqueue_planes("avg_pool2d_backward", k, d.W, d.H, d.N * d.C);
}

}  // namespace hetnn::opencl
