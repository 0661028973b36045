#include "bench/peers.h"

#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/cpu/cpu_loops.h"
#include "backend/cpu/cpu_threads.h"
#include "backend/cpu/stream_store.h"
#include "core/errors.h"
#ifdef HETNN_HAVE_CLBLAST
#include <clblast_c.h>

#include "backend/opencl/cl_backend.h"
#include "backend/opencl/cl_check.h"
#endif

namespace hetnn::bench {

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

typedef float v16f __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));

// 12 independent accumulator chains hide the FMA latency; the result is stored so the loop is not removed. Each ISA
// gets its register width (V, LANES floats): 12 accumulators and 2 constants must stay in its 16 (AVX2, SSE) or 32
// (AVX-512) vector registers, and the chains are unrolled at any optimisation level, or the loop goes through memory
// and reads a fraction of the peak (an AVX2 build of the 512-bit vectors read 6 GFLOP/s where the GEMM ran at 60).
#define HETNN_FMA_LOOP_BODY(V, LANES)                                         \
  V acc[12];                                                                  \
  const V mul = (V){} + 0.999999f, add = (V){} + 1e-7f;                       \
  for (int i = 0; i < 12; ++i) acc[i] = (V){} + static_cast<float>(i);       \
  for (long it = 0; it < iters; ++it) {                                       \
    _Pragma("GCC unroll 12") for (int i = 0; i < 12; ++i) acc[i] = acc[i] * mul + add; \
  }                                                                           \
  V s = {};                                                                   \
  for (int i = 0; i < 12; ++i) s += acc[i];                                   \
  float t = 0;                                                                \
  for (int i = 0; i < LANES; ++i) t += s[i];                                  \
  *sink = t;                                                                  \
  return static_cast<double>(iters) * 12 * LANES * 2;

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma"))) double fma_loop_avx512(long iters, float* sink) {
  HETNN_FMA_LOOP_BODY(v16f, 16)
}
__attribute__((target("avx2,fma"))) double fma_loop_avx2(long iters, float* sink) { HETNN_FMA_LOOP_BODY(v8f, 8) }
double fma_loop_baseline(long iters, float* sink) { HETNN_FMA_LOOP_BODY(v4f, 4) }

const char* fma_isa() {
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma"))
    return "avx512";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "avx2+fma";
  return "baseline";
}

double fma_loop(long iters, float* sink) {
  static const std::string isa = fma_isa();
  if (isa == "avx512") return fma_loop_avx512(iters, sink);
  if (isa == "avx2+fma") return fma_loop_avx2(iters, sink);
  return fma_loop_baseline(iters, sink);
}
}  // namespace

void RawPrimitive::run() {
  cpu_threads::apply();
  prim_.execute(stream_, args_);
  stream_.wait();
}

RawMatmul::RawMatmul(const float* a, const float* b, float* c, int M, int N, int K) {
  using namespace dnnl;
  if (M < 1 || N < 1 || K < 1) throw ValueError("RawMatmul: M, N, K must be >= 1");
  const memory::desc a_md({M, K}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc b_md({K, N}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc c_md({M, N}, memory::data_type::f32, memory::format_tag::ab);
  prim_ = dnnl::matmul(dnnl::matmul::primitive_desc(eng_, a_md, b_md, c_md));
  args_ = {{DNNL_ARG_SRC, memory(a_md, eng_, const_cast<float*>(a))},
           {DNNL_ARG_WEIGHTS, memory(b_md, eng_, const_cast<float*>(b))},
           {DNNL_ARG_DST, memory(c_md, eng_, c)}};
}

namespace {
// [lo, hi) of a = b + s * c (copy: a = b), stored as the CPU device's element-wise ops and copies store an output of
// that size (stream_store.h): a ceiling measured as the rows it bounds are. The copy goes straight from b: through a
// buffer its loop became `rep movs`, which reads memory at half the rate of vector loads on an Emerald Rapids VM.
template <class T>
inline __attribute__((always_inline)) void span_body(T* a, const T* b, const T* c, T s, std::int64_t lo,
                                                     std::int64_t hi, bool copy, bool streamed) {
  const auto bytes = static_cast<std::size_t>(hi - lo) * sizeof(T);
  if (copy) {
    if (streamed) {
      stream_copy(a + lo, b + lo, bytes);
      stream_fence();
    } else {
      std::memcpy(a + lo, b + lo, bytes);
    }
    return;
  }
  if (!streamed) {
    for (std::int64_t i = lo; i < hi; ++i) a[i] = b[i] + s * c[i];
    return;
  }
  alignas(64) T buf[512];
  for (std::int64_t i = lo; i < hi; i += 512) {
    const std::int64_t m = std::min<std::int64_t>(512, hi - i);
    for (std::int64_t j = 0; j < m; ++j) buf[j] = b[i + j] + s * c[i + j];
    stream_copy(a + i, buf, static_cast<std::size_t>(m) * sizeof(T));
  }
  stream_fence();
}
HETNN_CLONES void span_f32(float* a, const float* b, const float* c, float s, std::int64_t lo, std::int64_t hi,
                           bool copy, bool streamed) {
  span_body(a, b, c, s, lo, hi, copy, streamed);
}
HETNN_CLONES void span_f64(double* a, const double* b, const double* c, double s, std::int64_t lo, std::int64_t hi,
                           bool copy, bool streamed) {
  span_body(a, b, c, s, lo, hi, copy, streamed);
}

// a = b + s * c (copy: a = b) over n doubles, the threads' even shares (the host's ceiling: a quiet machine's)
void host_span(double* a, const double* b, const double* c, double s, std::int64_t n, bool copy) {
  const bool streamed = stream_output(static_cast<std::size_t>(n) * sizeof(double));
#pragma omp parallel
  {
    const std::int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    span_f64(a, b, c, s, n * t / nt, n * (t + 1) / nt, copy, streamed);
  }
}

// The timed-case kernels hand out pieces dynamically: a ceiling must not wait for a thread the VM preempted (an even
// split does, and a busy neighbour then lets a one-thread loop beat it).
constexpr std::int64_t kStreamPiece = 1 << 16;

// A thread's share of the read kernel: 32 partial sums, so the loads, not the additions' latency, bound it.
HETNN_CLONES double read_sum(const float* b, std::int64_t n) {
  float acc[32] = {};
  std::int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int j = 0; j < 32; ++j) acc[j] += b[i + j];
  double total = 0;
  for (; i < n; ++i) total += b[i];
  for (const float v : acc) total += v;
  return total;
}

}  // namespace

double stream_kernel(const std::string& kind, float* a, const float* b, const float* c, float s, std::int64_t n) {
  cpu_threads::apply();
  if (kind != "triad" && kind != "copy" && kind != "read")
    throw ValueError("stream_kernel: kind must be triad, copy or read, got " + kind);
  const std::int64_t pieces = (n + kStreamPiece - 1) / kStreamPiece;
  std::vector<double> part(static_cast<std::size_t>(kind == "read" ? pieces : 0));
  const int k = kind == "triad" ? 0 : kind == "copy" ? 1 : 2;
  const bool streamed = stream_output(static_cast<std::size_t>(n) * sizeof(float));
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t p = 0; p < pieces; ++p) {
    const std::int64_t lo = p * kStreamPiece, hi = std::min(n, lo + kStreamPiece);
    if (k < 2) {
      span_f32(a, b, c, s, lo, hi, k == 1, streamed);
    } else {
      part[static_cast<std::size_t>(p)] = read_sum(b + lo, hi - lo);
    }
  }
  double total = 0;
  for (const double v : part) total += v;  // in order: the same sum whatever the schedule
  return total;
}

std::pair<double, double> stream_copy_triad(std::size_t bytes_per_array, int repeats) {
  cpu_threads::apply();
  const std::int64_t n = static_cast<std::int64_t>(bytes_per_array / sizeof(double));
  if (n < 1) throw ValueError("stream: bytes_per_array must hold at least one double");
  // Uninitialised storage: the parallel loop below is the first touch of every page. 2 MiB-aligned blocks advised
  // for huge pages, as the CPU device's allocator (and NumPy) give large arrays: with 4 KiB pages the TLB misses of
  // a 128 MiB stream held the triad at 0.68-0.75x (a 2-vCPU EPYC VM), below the ops it bounds.
  constexpr std::size_t kHuge = std::size_t{2} << 20;
  const std::size_t bytes = (static_cast<std::size_t>(n) * sizeof(double) + kHuge - 1) / kHuge * kHuge;
  auto block = [&] {
    void* p = std::aligned_alloc(kHuge, bytes);
    if (!p) throw OutOfMemory("stream: no memory for a " + std::to_string(bytes >> 20) + " MiB array");
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);  // a hint: ignored where transparent huge pages are off
#endif
    return std::unique_ptr<double, void (*)(void*)>(static_cast<double*>(p), std::free);
  };
  const auto a = block(), b = block(), c = block();
  double* pa = a.get();
  double* pb = b.get();
  double* pc = c.get();
#pragma omp parallel for schedule(static)  // first touch by the threads that will use the pages
  for (std::int64_t i = 0; i < n; ++i) pa[i] = 1.0, pb[i] = 2.0, pc[i] = 0.0;
  double copy = 0, triad = 0;
  const double scalar = 3.0;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    double t0 = now();
    host_span(pc, pa, nullptr, 0.0, n, true);
    copy = std::max(copy, 16.0 * n / (now() - t0) / 1e9);
    t0 = now();
    host_span(pa, pb, pc, scalar, n, false);
    triad = std::max(triad, 24.0 * n / (now() - t0) / 1e9);
  }
  volatile double keep = pa[n / 2] + pc[n / 3];  // the stores are observable
  (void)keep;
  return {copy, triad};
}

RawMaxPool::RawMaxPool(const float* x, float* y, int N, int C, int H, int W, int k, int s, int p,
                       const std::string& layout) {
  using namespace dnnl;
  using tag = memory::format_tag;
  if (layout != "nchw" && layout != "nhwc") throw ValueError("RawMaxPool: layout must be nchw or nhwc");
  if (N < 1 || C < 1 || k < 1 || s < 1 || p < 0 || H + 2 * p < k || W + 2 * p < k)
    throw ValueError("RawMaxPool: the window does not fit the input");
  const int OH = (H + 2 * p - k) / s + 1, OW = (W + 2 * p - k) / s + 1;
  const tag t = layout == "nchw" ? tag::nchw : tag::nhwc;
  const memory::desc src({N, C, H, W}, memory::data_type::f32, t), dst({N, C, OH, OW}, memory::data_type::f32, t);
  const pooling_forward::primitive_desc pd(eng_, prop_kind::forward_inference, algorithm::pooling_max, src, dst,
                                           {s, s}, {k, k}, {0, 0}, {p, p}, {p, p});
  prim_ = pooling_forward(pd);
  args_ = {{DNNL_ARG_SRC, memory(src, eng_, const_cast<float*>(x))}, {DNNL_ARG_DST, memory(dst, eng_, y)}};
}

RawConv::RawConv(const float* x, const float* w, float* y, int N, int C, int H, int W, int O, int k, int s, int p,
                 bool nchw_io)
    : nchw_io_(nchw_io) {
  using namespace dnnl;
  using tag = memory::format_tag;
  if (N < 1 || C < 1 || O < 1 || k < 1 || s < 1 || p < 0 || H + 2 * p < k || W + 2 * p < k)
    throw ValueError("RawConv: the kernel does not fit the input");
  const int OH = (H + 2 * p - k) / s + 1, OW = (W + 2 * p - k) / s + 1;
  const auto f32 = memory::data_type::f32;
  const memory::desc usrc({N, C, H, W}, f32, tag::nchw), uwei({O, C, k, k}, f32, tag::oihw),
      udst({N, O, OH, OW}, f32, tag::nchw);
  const convolution_forward::primitive_desc pd(
      eng_, prop_kind::forward_inference, algorithm::convolution_direct, memory::desc({N, C, H, W}, f32, tag::any),
      memory::desc({O, C, k, k}, f32, tag::any), memory::desc({N, O, OH, OW}, f32, tag::any), {s, s}, {0, 0},
      {p, p}, {p, p});
  prim_ = convolution_forward(pd);
  src_ = memory(pd.src_desc(), eng_), wei_ = memory(pd.weights_desc(), eng_), dst_ = memory(pd.dst_desc(), eng_);
  user_src_ = memory(usrc, eng_, const_cast<float*>(x));
  user_wei_ = memory(uwei, eng_, const_cast<float*>(w));
  user_dst_ = memory(udst, eng_, y);
  reorder(user_src_, src_).execute(stream_, user_src_, src_);
  reorder(user_wei_, wei_).execute(stream_, user_wei_, wei_);
  stream_.wait();
  args_ = {{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, wei_}, {DNNL_ARG_DST, dst_}};
}

void RawConv::run() {
  if (!nchw_io_) return RawPrimitive::run();
  cpu_threads::apply();
  dnnl::reorder(user_src_, src_).execute(stream_, user_src_, src_);
  dnnl::reorder(user_wei_, wei_).execute(stream_, user_wei_, wei_);
  prim_.execute(stream_, args_);
  dnnl::reorder(dst_, user_dst_).execute(stream_, dst_, user_dst_);
  stream_.wait();
}

void RawConv::fetch() {
  dnnl::reorder(dst_, user_dst_).execute(stream_, dst_, user_dst_);
  stream_.wait();
}

std::pair<double, std::string> cpu_fma_peak(int threads, double seconds) {
  cpu_threads::apply();
  const int nt = threads > 0 ? threads : omp_get_max_threads();
  const char* isa = fma_isa();
  float sink = 0;
  // Calibrate the iteration count on one thread, then run all threads together.
  long iters = 1 << 16;
  for (;;) {
    const double t0 = now();
    fma_loop(iters, &sink);
    const double dt = now() - t0;
    if (dt > 0.02) {
      iters = static_cast<long>(iters * seconds / dt);
      break;
    }
    iters *= 4;
  }
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    double flops = 0;
    const double t0 = now();
#pragma omp parallel num_threads(nt) reduction(+ : flops)
    {
      float local_sink = 0;
      flops += fma_loop(iters, &local_sink);
      if (local_sink == 12345.f) sink += 1;  // keep the result alive
    }
    best = std::max(best, flops / (now() - t0) / 1e9);
  }
  return {best, isa};
}

bool have_clblast() {
#ifdef HETNN_HAVE_CLBLAST
  return true;
#else
  return false;
#endif
}

#ifdef HETNN_HAVE_CLBLAST
namespace {
// Seconds per call of `call` (CLBlast enqueues), each bracketed by clFinish: every kernel CLBlast enqueued is
// counted, not only the one its event covers.
template <class Fn>
std::vector<double> time_cl_calls(cl_command_queue q, Fn&& call, int n_warmup, int n_repeat) {
  for (int i = 0; i < n_warmup; ++i) call();
  HETNN_CL_CHECK(clFinish(q));
  std::vector<double> times;
  for (int i = 0; i < n_repeat; ++i) {
    const double t0 = now();
    call();
    HETNN_CL_CHECK(clFinish(q));
    times.push_back(now() - t0);
  }
  return times;
}
}  // namespace
#endif

std::vector<double> clblast_sgemm(const Array& a, const Array& b, Array& c, int n_warmup, int n_repeat,
                                  const std::vector<std::pair<std::string, std::size_t>>& params) {
#ifdef HETNN_HAVE_CLBLAST
  auto* cl = find_extension<opencl::RawHandles>(a.device()->backend());
  if (!cl) throw ValueError("clblast_sgemm: the arrays are not on an OpenCL device");
  if (a.dtype() != DType::f32 || b.dtype() != DType::f32 || c.dtype() != DType::f32 || a.ndim() != 2 ||
      b.ndim() != 2 || c.ndim() != 2 || a.shape()[1] != b.shape()[0] || c.shape()[0] != a.shape()[0] ||
      c.shape()[1] != b.shape()[1] || b.device() != a.device() || c.device() != a.device())
    throw ValueError("clblast_sgemm: needs float32 (M,K) @ (K,N) -> (M,N) on one device");
  const std::size_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
  cl_command_queue q = cl->queue();
  if (!params.empty()) {
    std::vector<const char*> names;
    std::vector<std::size_t> values;
    for (const auto& [n, v] : params) {
      names.push_back(n.c_str());
      values.push_back(v);
    }
    const CLBlastStatusCode st = CLBlastOverrideParameters(cl->device_id(), "Xgemm", CLBlastPrecisionSingle,
                                                           names.size(), names.data(), values.data());
    if (st != CLBlastSuccess) throw ValueError("CLBlastOverrideParameters failed: status " + std::to_string(st));
  }
  using opencl::ClBackend;
  cl_mem am = ClBackend::mem(*a.buffer()), bm = ClBackend::mem(*b.buffer()), cm = ClBackend::mem(*c.buffer());
  auto call = [&] {
    cl_event ev = nullptr;
    const CLBlastStatusCode st = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, M, N, K,
                                              1.0f, am, 0, K, bm, 0, N, 0.0f, cm, 0, N, &q, &ev);
    if (st != CLBlastSuccess) throw ValueError("CLBlastSgemm failed: status " + std::to_string(st));
    if (ev) clReleaseEvent(ev);
  };
  return time_cl_calls(q, call, n_warmup, n_repeat);
#else
  throw ValueError("hetnn was built without CLBlast (install Debian's libclblast-dev and rebuild)");
#endif
}

std::vector<double> clblast_convgemm(const Array& x, const Array& w, Array& y, int k, int s, int p, int n_warmup,
                                     int n_repeat) {
#ifdef HETNN_HAVE_CLBLAST
  auto* cl = find_extension<opencl::RawHandles>(x.device()->backend());
  if (!cl) throw ValueError("clblast_convgemm: the arrays are not on an OpenCL device");
  if (x.dtype() != DType::f32 || w.dtype() != DType::f32 || y.dtype() != DType::f32 || x.ndim() != 4 ||
      w.ndim() != 4 || y.ndim() != 4 || w.device() != x.device() || y.device() != x.device() ||
      w.shape()[1] != x.shape()[1] || w.shape()[2] != k || w.shape()[3] != k || k < 1 || s < 1 || p < 0)
    throw ValueError("clblast_convgemm: needs float32 x (N, C, H, W), w (O, C, k, k), y on one device");
  const std::size_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3], O = w.shape()[0];
  const std::int64_t OH = (static_cast<std::int64_t>(H) + 2 * p - k) / s + 1,
                     OW = (static_cast<std::int64_t>(W) + 2 * p - k) / s + 1;
  if (y.shape() != Shape{static_cast<std::int64_t>(N), static_cast<std::int64_t>(O), OH, OW})
    throw ValueError("clblast_convgemm: y must be (N, O, OH, OW)");
  cl_command_queue q = cl->queue();
  using opencl::ClBackend;
  cl_mem xm = ClBackend::mem(*x.buffer()), wm = ClBackend::mem(*w.buffer()), ym = ClBackend::mem(*y.buffer());
  auto call = [&] {
    cl_event ev = nullptr;
    const CLBlastStatusCode st = CLBlastSconvgemm(CLBlastKernelModeCrossCorrelation, C, H, W, k, k, p, p, s, s, 1, 1,
                                                  O, N, xm, 0, wm, 0, ym, 0, &q, &ev);
    if (st != CLBlastSuccess) throw ValueError("CLBlastSconvgemm failed: status " + std::to_string(st));
    if (ev) clReleaseEvent(ev);
  };
  return time_cl_calls(q, call, n_warmup, n_repeat);
#else
  (void)x, (void)w, (void)y, (void)k, (void)s, (void)p, (void)n_warmup, (void)n_repeat;
  throw ValueError("hetnn was built without CLBlast (install Debian's libclblast-dev and rebuild)");
#endif
}

}  // namespace hetnn::bench
