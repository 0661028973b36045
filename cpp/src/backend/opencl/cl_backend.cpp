#include "backend/opencl/cl_backend.h"

#include <algorithm>
#include <sstream>

#include "backend/opencl/cl_check.h"
#include "core/errors.h"

namespace hetnn::opencl {

namespace {

class ClBuffer final : public Buffer {
 public:
  ClBuffer(Mem m, std::size_t n) : Buffer(n), mem(std::move(m)) {}
  Mem mem;
};

cl_mem mem_of(const Buffer& b) { return static_cast<const ClBuffer&>(b).mem.get(); }

// GEMM tile parameters. Defaults suit GPUs; CPU devices (PoCL) prefer smaller work-groups.
// (The tuned, per-device database replaces this choice in the GEMM issue.)
struct GemmParams {
  int ts_m, ts_n, ts_k, wpt_m, wpt_n;
  int local_m() const { return ts_m / wpt_m; }
  int local_n() const { return ts_n / wpt_n; }
};

GemmParams gemm_params(const DeviceInfo& info) {
  GemmParams p = info.type == "cpu" ? GemmParams{32, 32, 16, 4, 4} : GemmParams{64, 64, 16, 4, 4};
  while (static_cast<std::uint64_t>(p.local_m() * p.local_n()) > info.max_work_group_size && p.ts_m > 8) {
    p.ts_m /= 2;
    p.ts_n /= 2;
  }
  return p;
}

Context make_context(cl_platform_id platform, cl_device_id device) {
  cl_int st = CL_SUCCESS;
  const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform), 0};
  Context c(clCreateContext(props, 1, &device, nullptr, nullptr, &st));
  HETNN_CL_CHECK(st);
  return c;
}

Queue make_queue(const Context& context, cl_device_id device) {
  cl_int st = CL_SUCCESS;
  Queue q(clCreateCommandQueue(context.get(), device, CL_QUEUE_PROFILING_ENABLE, &st));
  HETNN_CL_CHECK(st);
  return q;
}

}  // namespace

ClBackend::ClBackend(cl_platform_id platform, cl_device_id device, DeviceInfo info)
    : device_(device),
      info_(std::move(info)),
      context_(make_context(platform, device)),
      queue_(make_queue(context_, device)),
      programs_(context_.get(), device_, info_.name) {}

ClBackend::~ClBackend() {
  if (queue_) clFinish(queue_.get());  // let pending commands finish before their buffers go; status ignored
}

void ClBackend::record(const char* name, cl_event ev, double host_enqueue, std::uint64_t bytes) {
  if (!ev) return;
  OpRecord r;
  r.name = name;
  r.host_enqueue = host_enqueue;
  r.bytes = bytes;
  recorder_.add({std::move(r), std::shared_ptr<void>(ev, [](void* e) { clReleaseEvent(static_cast<cl_event>(e)); })});
}

void ClBackend::resolve(PendingRecord& p) {
  cl_event ev = static_cast<cl_event>(p.handle.get());
  cl_ulong start = 0, end = 0;
  if (clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr) == CL_SUCCESS &&
      clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr) == CL_SUCCESS) {
    p.rec.start = static_cast<double>(start) * 1e-9;
    p.rec.end = static_cast<double>(end) * 1e-9;
  }
}

std::shared_ptr<Buffer> ClBackend::alloc(std::size_t nbytes) {
  if (nbytes > info_.max_alloc)
    throw OutOfMemory("cannot allocate " + std::to_string(nbytes) + " bytes on " + info_.id + " (" + info_.name +
                      "): its largest allocation is " + std::to_string(info_.max_alloc) + " bytes");
  cl_int st = CL_SUCCESS;
  Mem m(clCreateBuffer(context_.get(), CL_MEM_READ_WRITE, std::max<std::size_t>(nbytes, 4), nullptr, &st));
  if (st != CL_SUCCESS) throw_cl_error(st, "clCreateBuffer(" + std::to_string(nbytes) + " bytes)");
  return std::make_shared<ClBuffer>(std::move(m), nbytes);
}

void ClBackend::write(Buffer& dst, std::size_t off, const void* src, std::size_t n) {
  cl_event ev = nullptr;
  const double t = host_seconds();
  HETNN_CL_CHECK(clEnqueueWriteBuffer(queue_.get(), mem_of(dst), CL_TRUE, off, n, src, 0, nullptr, event_slot(ev)));
  record("h2d", ev, t, n);
}

void ClBackend::read(const Buffer& src, std::size_t off, void* dst, std::size_t n) {
  cl_event ev = nullptr;
  const double t = host_seconds();
  HETNN_CL_CHECK(clEnqueueReadBuffer(queue_.get(), mem_of(src), CL_TRUE, off, n, dst, 0, nullptr, event_slot(ev)));
  record("d2h", ev, t, n);
}

void ClBackend::copy(const Buffer& src, std::size_t so, Buffer& dst, std::size_t d_off, std::size_t n) {
  cl_event ev = nullptr;
  const double t = host_seconds();
  HETNN_CL_CHECK(
      clEnqueueCopyBuffer(queue_.get(), mem_of(src), mem_of(dst), so, d_off, n, 0, nullptr, event_slot(ev)));
  record("d2d", ev, t, n);
}

void ClBackend::fill(Buffer& dst, std::size_t off, std::size_t n, unsigned char value) {
  cl_event ev = nullptr;
  const double t = host_seconds();
  const cl_uchar pattern = value;
  HETNN_CL_CHECK(clEnqueueFillBuffer(queue_.get(), mem_of(dst), &pattern, 1, off, n, 0, nullptr, event_slot(ev)));
  record("fill", ev, t, n);
}

void ClBackend::build_source(const std::string& source, const std::string& options) {
  build_program(context_.get(), device_, source.c_str(), "<source>", options, info_.name);
}

void ClBackend::synchronize() { HETNN_CL_CHECK(clFinish(queue_.get())); }

cl_kernel ClBackend::kernel(const std::string& file, const std::string& name, const std::string& options) {
  const std::string key = file + '\n' + name + '\n' + options;
  auto it = kernels_.find(key);
  if (it != kernels_.end()) return it->second.get();
  cl_program prog = programs_.get(file, options);
  cl_int st = CL_SUCCESS;
  Kernel k(clCreateKernel(prog, name.c_str(), &st));
  if (st != CL_SUCCESS) throw_cl_error(st, "clCreateKernel(" + name + ")");
  return kernels_.emplace(key, std::move(k)).first->second.get();
}

void ClBackend::matmul(const MatmulDesc& d, const Buffer& a, const Buffer& b, Buffer& c) {
  const GemmParams p = gemm_params(info_);
  const bool f64 = d.dtype == DType::f64;
  std::ostringstream opts;
  opts << "-cl-std=CL1.2 -DREAL=" << (f64 ? "double -DUSE_FP64=1" : "float") << " -DTS_M=" << p.ts_m
       << " -DTS_N=" << p.ts_n << " -DTS_K=" << p.ts_k << " -DWPT_M=" << p.wpt_m << " -DWPT_N=" << p.wpt_n
       << " -DTRANS_A=" << d.trans_a << " -DTRANS_B=" << d.trans_b;

  std::lock_guard<std::mutex> lock(mu_);
  cl_kernel k = kernel("gemm.cl", "gemm_tiled", opts.str());
  const cl_int M = static_cast<cl_int>(d.M), N = static_cast<cl_int>(d.N), K = static_cast<cl_int>(d.K);
  const cl_long sa = d.batch_a == 1 ? 0 : d.M * d.K, sb = d.batch_b == 1 ? 0 : d.K * d.N;
  const float alpha_f = static_cast<float>(d.alpha), beta_f = static_cast<float>(d.beta);
  const std::size_t real_size = f64 ? sizeof(double) : sizeof(float);
  const void* alpha = f64 ? static_cast<const void*>(&d.alpha) : &alpha_f;
  const void* beta = f64 ? static_cast<const void*>(&d.beta) : &beta_f;
  cl_mem am = mem_of(a), bm = mem_of(b), cm = mem_of(c);
  int arg = 0;
  HETNN_CL_CHECK(clSetKernelArg(k, arg++, sizeof(M), &M));
  HETNN_CL_CHECK(clSetKernelArg(k, arg++, sizeof(N), &N));
  HETNN_CL_CHECK(clSetKernelArg(k, arg++, sizeof(K), &K));
  HETNN_CL_CHECK(clSetKernelArg(k, arg++, real_size, alpha));
  HETNN_CL_CHECK(clSetKernelArg(k, arg++, real_size, beta));
  HETNN_CL_CHECK(clSetKernelArg(k, arg++, sizeof(cl_mem), &am));
  HETNN_CL_CHECK(clSetKernelArg(k, arg++, sizeof(sa), &sa));
  HETNN_CL_CHECK(clSetKernelArg(k, arg++, sizeof(cl_mem), &bm));
  HETNN_CL_CHECK(clSetKernelArg(k, arg++, sizeof(sb), &sb));
  HETNN_CL_CHECK(clSetKernelArg(k, arg++, sizeof(cl_mem), &cm));
  const std::size_t local[3] = {static_cast<std::size_t>(p.local_n()), static_cast<std::size_t>(p.local_m()), 1};
  const std::size_t global[3] = {static_cast<std::size_t>((d.N + p.ts_n - 1) / p.ts_n) * local[0],
                                 static_cast<std::size_t>((d.M + p.ts_m - 1) / p.ts_m) * local[1],
                                 static_cast<std::size_t>(d.batch)};
  cl_event ev = nullptr;
  const double t = host_seconds();
  HETNN_CL_CHECK(clEnqueueNDRangeKernel(queue_.get(), k, 3, nullptr, global, local, 0, nullptr, event_slot(ev)));
  record("matmul", ev, t, 0);
}

}  // namespace hetnn::opencl
