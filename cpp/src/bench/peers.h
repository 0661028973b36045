// Native measurements the benchmarks compare hetnn against, run in the same process: a raw oneDNN matmul loop
// (no hetnn layers), the CPU's FMA throughput from a register-only loop, and CLBlast's SGEMM on an OpenCL device.
#pragma once
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "core/array.h"

namespace hetnn::bench {

// A oneDNN primitive on the caller's memory with no hetnn layer between: created once; run() executes it and
// waits. The benchmarks time run() like every other peer.
class RawPrimitive {
 public:
  void run();

 protected:
  RawPrimitive() : eng_(dnnl::engine::kind::cpu, 0), stream_(eng_) {}
  dnnl::engine eng_;
  dnnl::stream stream_;
  dnnl::primitive prim_;
  std::unordered_map<int, dnnl::memory> args_;
};

// f32 matmul c = a @ b ((M,K) x (K,N), row-major).
class RawMatmul : public RawPrimitive {
 public:
  RawMatmul(const float* a, const float* b, float* c, int M, int N, int K);
};

// f32 convolution forward (inference) the way a oneDNN user writes the fastest loop: the layouts oneDNN picks
// for the primitive (blocked), x and w reordered into them once here, so run() times the convolution alone;
// fetch() reorders the last result into y (N, O, OH, OW) plain, outside the timing. With nchw_io, run() also does
// what a call on plain NCHW/OIHW arrays needs: x and w reordered in, the result reordered out.
class RawConv : public RawPrimitive {
 public:
  RawConv(const float* x, const float* w, float* y, int N, int C, int H, int W, int O, int k, int s, int p,
          bool nchw_io);
  void run();
  void fetch();

 private:
  bool nchw_io_;
  dnnl::memory src_, wei_, dst_, user_src_, user_wei_, user_dst_;
};

// Seconds per call of CLBlast's Sconvgemm (im2col folded into its GEMM) on x (N, C, H, W), w (O, C, k, k), y on
// one OpenCL device, each call bracketed by clFinish.
std::vector<double> clblast_convgemm(const Array& x, const Array& w, Array& y, int k, int s, int p, int n_warmup,
                                     int n_repeat);

// FP32 FMA throughput (GFLOP/s) of `threads` threads (0: all OpenMP threads) running independent vector FMAs
// on registers for about `seconds`. Returns {gflops, isa used}.
std::pair<double, std::string> cpu_fma_peak(int threads, double seconds);

// Seconds per call of CLBlast's SGEMM C = A @ B on the arrays' OpenCL device, each call bracketed by clFinish so
// that every kernel CLBlast enqueues is counted. `params`: Xgemm parameter overrides (name, value), may be empty.
// Throws ValueError when hetnn was built without CLBlast.
std::vector<double> clblast_sgemm(const Array& a, const Array& b, Array& c, int n_warmup, int n_repeat,
                                  const std::vector<std::pair<std::string, std::size_t>>& params);
bool have_clblast();

// STREAM-style memory bandwidth of the host with all OpenMP threads, over float64 arrays of `bytes_per_array`:
// best GB/s of `repeats` runs of copy (c = a: 16 bytes per element) and triad (a = b + s*c: 24 bytes per element),
// counted as STREAM counts them (no write-allocate traffic).
std::pair<double, double> stream_copy_triad(std::size_t bytes_per_array, int repeats);

// One pass of a STREAM-style kernel over n float32 elements of the caller's memory, with all OpenMP threads: the
// memory ceiling of one access pattern, timed as a case beside the ops it bounds (bench arrays). "triad": a = b +
// s*c (two reads, one write), "copy": a = b (one read, one write), "read": the sum of b (one read; returned, so the
// loads are observable). Pieces go to the threads dynamically, so a preempted thread holds back only its piece.
double stream_kernel(const std::string& kind, float* a, const float* b, const float* c, float s, std::int64_t n);

// Max-pooling forward (inference) on f32 memory: x (N, C, H, W) in `layout` "nchw" or "nhwc", y the output in the
// same layout; square kernel k, stride s, padding p.
class RawMaxPool : public RawPrimitive {
 public:
  RawMaxPool(const float* x, float* y, int N, int C, int H, int W, int k, int s, int p, const std::string& layout);
};

}  // namespace hetnn::bench
