// float32 C = A @ B (row-major, plain layouts, as hetnn's CPU device receives them) through oneDNN's two GEMM paths:
// the matmul primitive (brgemm kernels, B copied into blocks on every call) and dnnl_sgemm (oneDNN's JIT BLAS-style
// GEMM, which packs both operands itself). hetnn picks one per processor and shape class (cpu_gemm_paths.cpp); this
// program is the evidence for that table: interleaved rounds per shape, each path's median GFLOP/s, the time ratio
// matmul / sgemm with its range over the rounds, and a register-only FMA loop timed in the same rounds (the ceiling
// the GEMM targets are stated against).
// Build and run (scripts/cpu_session.sh, stage paths, does both):
//   g++ -O2 -fopenmp -std=c++17 -I.venv/include scripts/onednn_gemm_paths.cpp -L.venv/lib -ldnnl
//       -Wl,-rpath,$PWD/.venv/lib
#include "onednn_bench_common.h"
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {

typedef float v16f __attribute__((vector_size(64)));
// 12 chains of 512-bit FMAs (hetnn bench peak's loop), per thread; returns FLOP.
__attribute__((target("avx512f,fma"), noinline)) double fma_loop(long iters, float* sink) {
  v16f acc[12];
  const v16f mul = (v16f){} + 0.999999f, add = (v16f){} + 1e-7f;
  for (int i = 0; i < 12; ++i) acc[i] = (v16f){} + static_cast<float>(i);
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = acc[i] * mul + add;
  }
  v16f s = {};
  for (int i = 0; i < 12; ++i) s += acc[i];
  *sink = s[0];
  return static_cast<double>(iters) * 12 * 16 * 2;
}
double fma_gflops() {
  double flops = 0;
  const double t0 = seconds();
#pragma omp parallel reduction(+ : flops)
  {
    float sink = 0;
    flops += fma_loop(4000000, &sink);
    if (sink == 12345.f) std::printf(" ");
  }
  return flops / (seconds() - t0) / 1e9;
}
}  // namespace

int main() {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const dnnl_version_t* v = dnnl_version();
  const bool avx512 = __builtin_cpu_supports("avx512f");
  std::printf("oneDNN %d.%d.%d, %d threads; M x N x K; 9 interleaved rounds; ratio = matmul time / sgemm time "
              "(>1: sgemm faster), median (range)%s\n",
              v->major, v->minor, v->patch, omp_get_max_threads(), avx512 ? "; FMA loop in the same rounds" : "");
  const int shapes[][3] = {{12544, 64, 147}, {3136, 64, 64},   {3136, 64, 576},  {3136, 256, 64},  {3136, 64, 256},
                           {3136, 128, 256}, {784, 128, 1152}, {784, 512, 128},  {784, 512, 256},  {784, 128, 512},
                           {784, 256, 512},  {196, 256, 2304}, {196, 1024, 256}, {196, 1024, 512}, {196, 256, 1024},
                           {196, 512, 1024}, {49, 512, 4608},  {49, 2048, 512},  {49, 2048, 1024}, {49, 512, 2048},
                           {256, 256, 256},  {512, 512, 512},  {1024, 1024, 1024}, {2048, 2048, 2048},
                           {64, 128, 784},   {256, 128, 784},  {256, 784, 128},  {784, 128, 256}};
  double tot_mm = 0, tot_sg = 0;
  for (const auto& sh : shapes) {
    const memory::dim M = sh[0], N = sh[1], K = sh[2];
    const memory::desc a({M, K}, dt::f32, tag::ab), b({K, N}, dt::f32, tag::ab), c({M, N}, dt::f32, tag::ab);
    std::vector<float> A(static_cast<size_t>(M * K)), B(static_cast<size_t>(K * N)), C(static_cast<size_t>(M * N));
    for (size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(i % 97) * 0.01f;
    for (size_t i = 0; i < B.size(); ++i) B[i] = static_cast<float>(i % 89) * 0.01f;
    memory ma(a, eng, A.data()), mb(b, eng, B.data()), mc(c, eng, C.data());
    const dnnl::matmul mm(dnnl::matmul::primitive_desc(eng, a, b, c));
    const double flop = 2.0 * static_cast<double>(M * N * K);
    const int reps = static_cast<int>(std::max(3.0, 2e10 / flop));
    std::vector<double> t_mm, t_sg, ratio, fma;
    for (int r = 0; r < 9; ++r) {
      if (avx512) fma.push_back(fma_gflops());
      for (int which = 0; which < 2; ++which) {
        auto call = [&] {
          if (which == 0) {
            mm.execute(s, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
            s.wait();
          } else {
            dnnl_sgemm('N', 'N', M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, C.data(), N);
          }
        };
        call();
        const double t0 = seconds();
        for (int i = 0; i < reps; ++i) call();
        (which ? t_sg : t_mm).push_back((seconds() - t0) / reps);
      }
      ratio.push_back(t_mm.back() / t_sg.back());
    }
    std::sort(ratio.begin(), ratio.end());
    const bool resnet = &sh - shapes < 20;
    if (resnet) tot_mm += median(t_mm), tot_sg += median(t_sg);
    std::printf("%5lldx%4lldx%4lld  matmul %6.1f GFLOP/s  sgemm %6.1f GFLOP/s  matmul/sgemm %.2fx (%.2f-%.2f)",
                static_cast<long long>(M), static_cast<long long>(N), static_cast<long long>(K),
                flop / median(t_mm) / 1e9, flop / median(t_sg) / 1e9, ratio[4], ratio[0], ratio[8]);
    if (avx512) std::printf("  FMA loop %6.1f: matmul %.2f, sgemm %.2f of it", median(fma),
                            flop / median(t_mm) / 1e9 / median(fma), flop / median(t_sg) / 1e9 / median(fma));
    std::printf("\n");
    std::fflush(stdout);
  }
  std::printf("ResNet-50's 20 shapes, total time: matmul / sgemm %.3fx\n", tot_mm / tot_sg);
  return 0;
}
