// copy_strided on OpenCL devices (core/ops.h, CopyDesc): kernels/copy.cl, one work-item per element.
#include <string>

#include "backend/opencl/cl_args.h"
#include "backend/opencl/cl_backend.h"

namespace hetnn::opencl {

void ClBackend::copy_strided(const CopyDesc& d, const Buffer& src, Buffer& out) {
  if (d.n == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  const std::string name = "copy_strided_" + std::to_string(d.elem);
  cl_kernel k = kernel("copy.cl", name, "-cl-std=CL1.2");
  cl_long8 shape{}, ss{}, so{};
  for (std::size_t i = 0; i < d.shape.size(); ++i) {
    shape.s[i] = d.shape[i];
    ss.s[i] = d.ss[i];
    so.s[i] = d.so[i];
  }
  ArgSetter s{k, name.c_str()};
  s(cl_long{d.n})(static_cast<cl_int>(d.shape.size()))(shape)(ss)(so)(cl_long{d.os})(cl_long{d.oo})(mem(src))(
      mem(out));
  const std::size_t l[1] = {flat_local(d.n)}, g[1] = {round_up(static_cast<std::size_t>(d.n), l[0])};
  enqueue("copy_strided", k, 1, g, l);
}

}  // namespace hetnn::opencl
