// pack.cl: packs op(A) and op(B) into the zero-padded panels gemm_packed.cl reads (transposes and edges absorbed
// here, so the GEMM kernel itself has one shape). Kept apart from the GEMM kernel: these depend on TRANS_A/TRANS_B,
// the GEMM kernel does not, so fewer heavy programs are compiled.
#include "packed_layout.cl"

// One work item per element; dimension 0 follows the operand's contiguous axis so that neighbouring work items
// (which CPU runtimes vectorise together, and GPUs coalesce) read neighbouring addresses.

// Ap[p][k][i] = op(A)[p*RM + i][k] (0 beyond M). Global size: (K, Mpad) when A is (M, K); (Mpad, K) when A is
// stored (K, M) (TRANS_A). Mpad = ceil(M/RM)*RM.
__kernel void pack_a(const int M, const int K, __global const STORAGE* restrict A, const long a_off,
                     __global REAL* restrict Ap) {
#if TRANS_A
  const int m = get_global_id(0), k = get_global_id(1);
#else
  const int k = get_global_id(0), m = get_global_id(1);
#endif
  if (k >= K) return;
#if TRANS_A
  const REAL v = m < M ? LOAD1(A, a_off + (long)k * M + m) : (REAL)0;
#else
  const REAL v = m < M ? LOAD1(A, a_off + (long)m * K + k) : (REAL)0;
#endif
  Ap[((long)(m / RM) * K + k) * RM + m % RM] = v;
}

// Bp[p][k][j] = op(B)[k][p*RN + j] (0 beyond N). Global size: (Npad, K) when B is (K, N); (K, Npad) when B is stored
// (N, K) (TRANS_B). Npad = ceil(N/RN)*RN.
__kernel void pack_b(const int K, const int N, __global const STORAGE* restrict B, const long b_off,
                     __global REAL* restrict Bp) {
#if TRANS_B
  const int k = get_global_id(0), n = get_global_id(1);
#else
  const int n = get_global_id(0), k = get_global_id(1);
#endif
  if (k >= K) return;
#if TRANS_B
  const REAL v = n < N ? LOAD1(B, b_off + (long)n * K + k) : (REAL)0;
#else
  const REAL v = n < N ? LOAD1(B, b_off + (long)k * N + n) : (REAL)0;
#endif
  Bp[((long)(n / RN) * K + k) * RN + n % RN] = v;
}
