// pack.cl: packs op(A) and op(B) into the zero-padded panels gemm_packed.cl reads (transposes and edges absorbed
// here, so the GEMM kernel itself has one shape). Kept apart from the GEMM kernel: these depend on TRANS_A/TRANS_B,
// the GEMM kernel does not, so fewer heavy programs are compiled.
#include "packed_layout.cl"

// One work item per (k, panel): it writes the panel's RM (RN) values of row k as one contiguous run, reading them
// from the operand's row (a contiguous run too) or, for the transposed layouts, from RM (RN) rows at stride K (a
// gather; neighbouring work items read neighbouring addresses of each row). A work item per element spent most of
// its time on index arithmetic under PoCL: 130 us to pack a 128x784 B, 3.3 ms a 1024x1024 A.

// Ap[p][k][i] = op(A)[p*RM + i][k] (0 beyond M). Global size: (K, Mpad / RM, batch entries): entry z reads A at
// a_off + z * a_bs and writes its panels at Ap + z * p_bs.
__kernel void pack_a(const int M, const int K, __global const STORAGE* restrict A, long a_off,
                     __global REAL* restrict Ap, const long a_bs, const long p_bs) {
  const int k = get_global_id(0), p = get_global_id(1);
  if (k >= K) return;
  a_off += get_global_id(2) * a_bs;
  __global REAL* dst = Ap + get_global_id(2) * p_bs + ((long)p * K + k) * RM;
  const int m0 = p * RM;
  if (m0 + RM <= M) {  // a full panel: no bounds test, so the loop vectorises
    for (int i = 0; i < RM; ++i)
#if TRANS_A
      dst[i] = LOAD1(A, a_off + (long)k * M + m0 + i);
#else
      dst[i] = LOAD1(A, a_off + (long)(m0 + i) * K + k);
#endif
    return;
  }
  for (int i = 0; i < RM; ++i) {
    const int m = m0 + i;
#if TRANS_A
    dst[i] = m < M ? LOAD1(A, a_off + (long)k * M + m) : (REAL)0;
#else
    dst[i] = m < M ? LOAD1(A, a_off + (long)m * K + k) : (REAL)0;
#endif
  }
}

// Bp[p][k][j] = op(B)[k][p*RN + j] (0 beyond N). Global size: (K, Npad / RN, batch entries), as pack_a.
__kernel void pack_b(const int K, const int N, __global const STORAGE* restrict B, long b_off,
                     __global REAL* restrict Bp, const long b_bs, const long p_bs) {
  const int k = get_global_id(0), p = get_global_id(1);
  if (k >= K) return;
  b_off += get_global_id(2) * b_bs;
  __global REAL* dst = Bp + get_global_id(2) * p_bs + ((long)p * K + k) * RN;
  const int n0 = p * RN;
  if (n0 + RN <= N) {  // a full panel: no bounds test, so the loop vectorises
    for (int j = 0; j < RN; ++j)
#if TRANS_B
      dst[j] = LOAD1(B, b_off + (long)(n0 + j) * K + k);
#else
      dst[j] = LOAD1(B, b_off + (long)k * N + n0 + j);
#endif
    return;
  }
  for (int j = 0; j < RN; ++j) {
    const int n = n0 + j;
#if TRANS_B
    dst[j] = n < N ? LOAD1(B, b_off + (long)n * K + k) : (REAL)0;
#else
    dst[j] = n < N ? LOAD1(B, b_off + (long)k * N + n) : (REAL)0;
#endif
  }
}
