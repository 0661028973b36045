// Device ceilings for the bench's peak suite (kernels/peak.cl), timed with the queue's profiling events.
#include <algorithm>

#include "backend/opencl/cl_args.h"
#include "backend/opencl/cl_backend.h"
#include "core/errors.h"

namespace hetnn::opencl {

namespace {
double event_seconds(cl_event ev) {
  cl_ulong t0 = 0, t1 = 0;
  HETNN_CL_CHECK(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, nullptr));
  HETNN_CL_CHECK(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr));
  return static_cast<double>(t1 - t0) * 1e-9;
}

// The FMA kernel's vector width (kernels/peak.cl, PEAK_VEC): 8 on a CPU device of an x86 host without AVX-512
// (its 16 vector registers hold 8 chains of 8 floats, not of 16), 16 elsewhere.
int peak_vector_width(const std::string& device_type) {
#if defined(__x86_64__) || defined(__i386__)
  if (device_type == "cpu" && !__builtin_cpu_supports("avx512f")) return 8;
#endif
  (void)device_type;
  return 16;
}
}  // namespace

std::pair<double, double> ClBackend::measure_peak(std::size_t triad_bytes, int repeats) {
  std::lock_guard<std::mutex> lock(mu_);
  const int vec = peak_vector_width(info_.type);
  const std::string opts = common_options(DType::f32);
  const auto run = [&](cl_kernel k, std::size_t global, std::size_t local) {
    cl_event ev = nullptr;
    HETNN_CL_CHECK(clEnqueueNDRangeKernel(queue_.get(), k, 1, nullptr, &global, &local, 0, nullptr, &ev));
    Event hold(ev);
    HETNN_CL_CHECK(clWaitForEvents(1, &ev));
    return event_seconds(ev);
  };
  // FMA: enough work-items to fill every compute unit several times over; iterations scaled until a run takes
  // about 50 ms, then the best of `repeats`.
  const std::size_t local = 64, global = static_cast<std::size_t>(std::max(1, info_.compute_units)) * 1024;
  // Own buffers, released on return (the scratch slots would keep a triad's 3 x 64 MiB for the process's life).
  const auto buffer = [&](std::size_t bytes) {
    cl_int st = CL_SUCCESS;
    Mem m(clCreateBuffer(context_.get(), CL_MEM_READ_WRITE, bytes, nullptr, &st));
    if (st != CL_SUCCESS) throw_cl_error(st, "clCreateBuffer(peak, " + std::to_string(bytes) + " bytes)");
    return m;
  };
  Mem out_buf = buffer(global * sizeof(float));
  cl_mem out = out_buf.get();
  cl_kernel kf = kernel("peak.cl", "fma_peak", opts + " -DPEAK_VEC=" + std::to_string(vec));
  int iters = 64;
  double best_flops = 0;
  for (int rep = 0, timed = 0; timed < repeats && rep < 40; ++rep) {
    ArgSetter a{kf, "fma_peak"};
    a(out)(static_cast<cl_int>(iters))(0.999999f)(1e-6f);
    const double t = run(kf, global, local);
    if (t < 0.05 && iters < (1 << 22)) {  // too short to time well: scale up and try again
      iters *= std::max(2, static_cast<int>(0.05 / std::max(t, 1e-6)));
      continue;
    }
    best_flops = std::max(best_flops, 16.0 * vec * iters * static_cast<double>(global) / t);
    ++timed;
  }
  // Triad over three buffers of triad_bytes each.
  const std::size_t n = triad_bytes / sizeof(float) / local * local;
  Mem ab = buffer(n * sizeof(float)), bb = buffer(n * sizeof(float)), cb = buffer(n * sizeof(float));
  cl_mem a = ab.get(), b = bb.get(), c = cb.get();
  const float zero = 0.f;
  for (cl_mem m : {a, b, c})
    HETNN_CL_CHECK(clEnqueueFillBuffer(queue_.get(), m, &zero, sizeof zero, 0, n * sizeof(float), 0, nullptr, nullptr));
  cl_kernel kt = kernel("peak.cl", "triad", opts);
  ArgSetter at{kt, "triad"};
  at(a)(b)(c)(3.0f);
  double best_bw = 0;
  run(kt, n, local);  // warm-up (first touch)
  for (int r = 0; r < repeats; ++r) best_bw = std::max(best_bw, 12.0 * static_cast<double>(n) / run(kt, n, local));
  return {best_flops / 1e9, best_bw / 1e9};
}

}  // namespace hetnn::opencl
