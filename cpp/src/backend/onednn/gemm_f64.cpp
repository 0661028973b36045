// Float64 GEMM for the CPU device (oneDNN's CPU matmul supports no f64). Classic blocked scheme: pack a KC x NC
// panel of op(B) and an MC x KC block of op(A) into contiguous, zero-padded buffers, then a register-tiled
// micro-kernel (MR x NR accumulators) that the compiler vectorises; compiled for AVX-512, AVX2 and a baseline,
// chosen at run time. Parallel over MC blocks with OpenMP.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "backend/onednn/cpu_backend.h"

namespace hetnn {

namespace {

constexpr std::int64_t MR = 4, NR = 16, KC = 256, MC = 64, NC = 1024;

// acc(MR x NR) = Ap(MR x kc, k-major) * Bp(kc x NR); C(MR x NR) += alpha * acc (only the valid mr x nr part).
__attribute__((target_clones("arch=skylake-avx512", "arch=haswell", "default")))
void micro_kernel(std::int64_t kc, const double* __restrict Ap, const double* __restrict Bp, double alpha,
                  double* __restrict C, std::int64_t ldc, std::int64_t mr, std::int64_t nr) {
  double acc[MR][NR] = {};
  for (std::int64_t k = 0; k < kc; ++k) {
    const double* b = Bp + k * NR;
    const double* a = Ap + k * MR;
    for (std::int64_t i = 0; i < MR; ++i)
      for (std::int64_t j = 0; j < NR; ++j) acc[i][j] += a[i] * b[j];
  }
  for (std::int64_t i = 0; i < mr; ++i)
    for (std::int64_t j = 0; j < nr; ++j) C[i * ldc + j] += alpha * acc[i][j];
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
        std::vector<double> Ap(static_cast<std::size_t>(MC * KC));
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
              micro_kernel(kc, Ap.data() + p * kc * MR, Bp.data() + q * kc * NR, alpha, C + i0 * ldc + j0, ldc,
                           mr, nr);
            }
          }
        }
      }
    }
  }
}

}  // namespace hetnn
