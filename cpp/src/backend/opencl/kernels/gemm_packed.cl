// gemm_packed.cl: GEMM shaped for CPU devices (PoCL and other CPU OpenCL runtimes).
// op(A) and op(B) are read from zero-padded panels (pack.cl), which absorb transposes and edge sizes, or directly
// from the operands where their layout allows (float32/64, and for B no transpose with N a multiple of RN): the
// packing passes cost as much as the GEMM itself on small problems. Each work item computes an RM x (VW*NV) tile of C in registers with explicit VW-wide vectors and FMAs,
// streaming its A panel (K x RM) and B panel (K x VW*NV) from cache. No local memory, no barriers: on a CPU device a
// work item is a loop iteration of a thread, and what matters is the register tile and contiguous loads.
#include "packed_layout.cl"
#define realV HETNN_CAT(REAL, VW)
#define VLOAD HETNN_CAT(vload, VW)
#define VSTORE HETNN_CAT(vstore, VW)

// C tile (pm, pn) of batch entry z. Global size: (ceil(M/RM), ceil(N/RN)) rounded up to the local size, and the
// batch entries: entry z reads A at a_off + z * a_bs, B at b_off + z * b_bs, writes C at c_off + z * c_bs (one
// enqueue for a whole batch: per-entry enqueues cost PoCL about 45 us each).
// A addressing: element (row r = pm*RM + i, k) at Ap[a_off + a_ps*pm + a_is*min(i, rows - 1) + a_ks*k], where
// rows = RM or what is left of M (rows past M repeat the last one; their results are never stored).
//   packed panels: a_off = 0, a_ps = K*RM, a_is = 1, a_ks = RM;  A (M, K): a_ps = RM*K, a_is = K, a_ks = 1;
//   A stored (K, M): a_ps = RM, a_is = 1, a_ks = M.
// B addressing: row k of the panel at Bp[b_off + b_ps*pn + b_ks*k], RN contiguous values:
//   packed: b_ps = K*RN, b_ks = RN;  B (K, N) with N % RN == 0: b_ps = RN, b_ks = N.
// has_bias 1: bias[n] added to column n (a dense layer's); 2: bias[m] to row m (a convolution's output channel).
__kernel void gemm_packed(const int M, const int N, const int K, const REAL alpha, const REAL beta,
                          __global const REAL* restrict Ap, const long a_off, const long a_ps, const long a_is,
                          const long a_ks, __global const REAL* restrict Bp, const long b_off, const long b_ps,
                          const long b_ks, __global STORAGE* restrict C, const long c_off,
                          __global const STORAGE* restrict bias, const int has_bias, const int act, const long a_bs,
                          const long b_bs, const long c_bs) {
  const int pm = get_global_id(0), pn = get_global_id(1);
  if (pm * RM >= M || pn * RN >= N) return;
  const long z = get_global_id(2);
  const __global REAL* a = Ap + a_off + z * a_bs + a_ps * pm;
  const __global REAL* b = Bp + b_off + z * b_bs + b_ps * pn;
#if DIRECT_A
  const int rows = min(RM, M - pm * RM);
  long a_row[RM];
#pragma unroll
  for (int i = 0; i < RM; ++i) a_row[i] = a_is * min(i, rows - 1);
#define A_AT(i, k) a[a_row[i] + (k) * a_ks]
#else
#define A_AT(i, k) a[(long)(k) * RM + (i)]  /* packed panel: compile-time strides */
#endif
#if DIRECT_B
#define B_ROW(k) (b + (k) * b_ks)
#else
#define B_ROW(k) (b + (long)(k) * RN)
#endif
  // Fully unrolled so that acc stays in registers (a private array indexed in a loop would live in memory).
  realV acc[RM][NV];
#pragma unroll
  for (int i = 0; i < RM; ++i)
#pragma unroll
    for (int j = 0; j < NV; ++j) acc[i][j] = (realV)0;
#if defined(KU) && KU > 1
#pragma unroll KU
#endif
  for (int k = 0; k < K; ++k) {
    realV bv[NV];
#pragma unroll
    for (int j = 0; j < NV; ++j) bv[j] = VLOAD(0, B_ROW(k) + j * VW);
#pragma unroll
    for (int i = 0; i < RM; ++i) {
      const realV av = (realV)(A_AT(i, k));
#pragma unroll
      for (int j = 0; j < NV; ++j) acc[i][j] = fma(av, bv[j], acc[i][j]);
    }
  }
  C += c_off + z * c_bs;
#pragma unroll
  for (int i = 0; i < RM; ++i) {
    const int m = pm * RM + i;
    if (m >= M) break;
    __global STORAGE* crow = C + (long)m * N;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int n0 = pn * RN + j * VW;
      if (n0 >= N) break;
      realV v = alpha * acc[i][j];
#ifdef NATIVE_STORAGE
      if (n0 + VW <= N) {
        if (beta != (REAL)0) v += beta * VLOAD(0, crow + n0);
        if (has_bias == 1) v += VLOAD(0, bias + n0);
        else if (has_bias == 2) v += (realV)(bias[m]);
        VSTORE(ACTIVATE(v, act), 0, crow + n0);
      } else  // right edge: element by element
#endif
      {  // (always element by element for float16/bfloat16 storage: converted on load and store)
        REAL t[VW];
        VSTORE(v, 0, t);
        const int count = min(VW, N - n0);
        for (int e = 0; e < count; ++e) {
          REAL x = t[e];
          if (beta != (REAL)0) x += beta * LOAD1(crow, n0 + e);
          if (has_bias == 1) x += LOAD1(bias, n0 + e);
          else if (has_bias == 2) x += LOAD1(bias, m);
          STORE1(ACTIVATE(x, act), crow, n0 + e);
        }
      }
    }
  }
}
