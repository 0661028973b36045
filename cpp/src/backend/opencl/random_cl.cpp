// random on OpenCL devices (core/ops.h, RandomDesc): kernels/random.cl, one work-item per element.
#include <string>

#include "backend/opencl/cl_args.h"
#include "backend/opencl/cl_backend.h"

namespace hetnn::opencl {

void ClBackend::random(const RandomDesc& d, Buffer& out) {
  if (d.n == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  const bool ints = d.dist == RandDist::integers;
  const bool f64 = d.out == DType::f64;
  const int bits = f64 ? 53 : d.out == DType::f16 ? 11 : d.out == DType::bf16 ? 8 : 24;
  const std::string opts = std::string("-cl-std=CL1.2 -w -DTIN_") + (ints ? "I64" : f64 ? "F64" : "F32") +
                           " -DTOUT_" + type_code(d.out) + " -DUNIT_BITS=" + std::to_string(bits);
  cl_kernel k = kernel("random.cl", "random_fill", opts);
  ArgSetter s{k, "random_fill"};
  s(cl_long{d.n})(static_cast<cl_int>(d.dist))(cl_ulong{d.seed})(cl_ulong{d.offset});
  if (ints) s(cl_long{0})(cl_long{0});
  else if (f64) s(d.a)(d.b);
  else s(static_cast<float>(d.a))(static_cast<float>(d.b));
  s(cl_long{d.low})(cl_ulong{d.span})(mem(out));
  const std::size_t l[1] = {flat_local(d.n)}, g[1] = {round_up(static_cast<std::size_t>(d.n), l[0])};
  enqueue("random", k, 1, g, l);
}

}  // namespace hetnn::opencl
