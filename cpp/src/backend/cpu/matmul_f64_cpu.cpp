// Float64 GEMM for the CPU device (oneDNN's CPU matmul supports no f64). Classic blocked scheme: pack a KC x NC
// panel of op(B) and an MC x KC block of op(A) into contiguous, zero-padded buffers, then a register-tiled
// micro-kernel keeps MR x (NV vectors) accumulators in registers. The micro-kernel is written with GCC vector types
// and instantiated per instruction set (AVX-512: 6 x 2 zmm; AVX2+FMA: 4 x 3 ymm; baseline: 4 x 2 xmm), chosen at run
// time from the CPU's features. Parallel over MC blocks with OpenMP.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_backend.h"

namespace hetnn {

namespace {

typedef double v8d __attribute__((vector_size(64)));
typedef double v4d __attribute__((vector_size(32)));
typedef double v2d __attribute__((vector_size(16)));

constexpr std::int64_t KC = 256, MC = 96, NC = 2048;

// C(mr x nr) += alpha * Ap(kc x MR, k-major) @ Bp(kc x NR), NR = NV * lanes of V.
template <class V, int MR, int NV>
__attribute__((always_inline)) inline void micro_body(std::int64_t kc, const double* __restrict Ap,
                                                      const double* __restrict Bp, double alpha,
                                                      double* __restrict C, std::int64_t ldc, std::int64_t mr,
                                                      std::int64_t nr) {
  constexpr int L = sizeof(V) / sizeof(double), NR = NV * L;
  V acc[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NV; ++j) acc[i][j] = V{};
  for (std::int64_t k = 0; k < kc; ++k) {
    V b[NV];
    for (int j = 0; j < NV; ++j) std::memcpy(&b[j], Bp + k * NR + j * L, sizeof(V));
    for (int i = 0; i < MR; ++i) {
      const V a = V{} + Ap[k * MR + i];
      for (int j = 0; j < NV; ++j) acc[i][j] += a * b[j];
    }
  }
  double out[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NV; ++j) std::memcpy(&out[i][j * L], &acc[i][j], sizeof(V));
  for (std::int64_t i = 0; i < mr; ++i)
    for (std::int64_t j = 0; j < nr; ++j) C[i * ldc + j] += alpha * out[i][j];
}

struct Kernel {
  void (*run)(std::int64_t, const double*, const double*, double, double*, std::int64_t, std::int64_t, std::int64_t);
  std::int64_t mr, nr;
};

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma"))) void micro_avx512(
    std::int64_t kc, const double* Ap, const double* Bp, double alpha, double* C, std::int64_t ldc, std::int64_t mr,
    std::int64_t nr) {
  micro_body<v8d, 6, 2>(kc, Ap, Bp, alpha, C, ldc, mr, nr);
}
__attribute__((target("avx2,fma"))) void micro_avx2(std::int64_t kc, const double* Ap, const double* Bp, double alpha,
                                                    double* C, std::int64_t ldc, std::int64_t mr, std::int64_t nr) {
  micro_body<v4d, 4, 3>(kc, Ap, Bp, alpha, C, ldc, mr, nr);
}
void micro_base(std::int64_t kc, const double* Ap, const double* Bp, double alpha, double* C, std::int64_t ldc,
                std::int64_t mr, std::int64_t nr) {
  micro_body<v2d, 4, 2>(kc, Ap, Bp, alpha, C, ldc, mr, nr);
}

Kernel select_kernel() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma"))
    return {micro_avx512, 6, 16};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {micro_avx2, 4, 12};
  return {micro_base, 4, 4};
}

}  // namespace

void gemm_f64(std::int64_t M, std::int64_t N, std::int64_t K, double alpha, const double* A, std::int64_t a_rs,
              std::int64_t a_cs, const double* B, std::int64_t b_rs, std::int64_t b_cs, double beta, double* C,
              std::int64_t ldc) {
  // C = beta * C first; beta == 0 overwrites (C may hold NaN/garbage that must not leak through).
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0 ? 0.0 : beta * C[i * ldc + j];
  if (K == 0 || alpha == 0.0) return;

  static const Kernel kern = select_kernel();
  const std::int64_t MR = kern.mr, NR = kern.nr;
  std::vector<double> Bp;
  for (std::int64_t jc = 0; jc < N; jc += NC) {
    const std::int64_t nc = std::min(NC, N - jc);
    const std::int64_t n_panels = (nc + NR - 1) / NR;
    for (std::int64_t pc = 0; pc < K; pc += KC) {
      const std::int64_t kc = std::min(KC, K - pc);
      // Pack op(B)[pc:pc+kc, jc:jc+nc] as n_panels panels of kc x NR (zero-padded).
      Bp.assign(static_cast<std::size_t>(n_panels * kc * NR), 0.0);
#pragma omp parallel for schedule(static)
      for (std::int64_t p = 0; p < n_panels; ++p) {
        double* dst = Bp.data() + p * kc * NR;
        const std::int64_t j0 = jc + p * NR, nr = std::min(NR, N - j0);
        for (std::int64_t k = 0; k < kc; ++k)
          for (std::int64_t j = 0; j < nr; ++j) dst[k * NR + j] = B[(pc + k) * b_rs + (j0 + j) * b_cs];
      }
#pragma omp parallel
      {
        std::vector<double> Ap(static_cast<std::size_t>(((MC + MR - 1) / MR) * MR * KC));
#pragma omp for schedule(dynamic, 1)
        for (std::int64_t ic = 0; ic < M; ic += MC) {
          const std::int64_t mc = std::min(MC, M - ic);
          const std::int64_t m_panels = (mc + MR - 1) / MR;
          for (std::int64_t p = 0; p < m_panels; ++p) {  // pack op(A) block as k-major MR panels
            double* dst = Ap.data() + p * kc * MR;
            const std::int64_t i0 = ic + p * MR, mr = std::min(MR, M - i0);
            for (std::int64_t k = 0; k < kc; ++k)
              for (std::int64_t i = 0; i < MR; ++i)
                dst[k * MR + i] = i < mr ? A[(i0 + i) * a_rs + (pc + k) * a_cs] : 0.0;
          }
          for (std::int64_t q = 0; q < n_panels; ++q) {
            const std::int64_t j0 = jc + q * NR, nr = std::min(NR, N - j0);
            for (std::int64_t p = 0; p < m_panels; ++p) {
              const std::int64_t i0 = ic + p * MR, mr = std::min(MR, M - i0);
              kern.run(kc, Ap.data() + p * kc * MR, Bp.data() + q * kc * NR, alpha, C + i0 * ldc + j0, ldc, mr, nr);
            }
          }
        }
      }
    }
  }
}

}  // namespace hetnn
