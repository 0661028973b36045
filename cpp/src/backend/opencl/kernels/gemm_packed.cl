// gemm_packed.cl: GEMM shaped for CPU devices (PoCL and other CPU OpenCL runtimes).
// op(A) and op(B) are first packed into zero-padded panels (pack_a, pack_b), which also absorbs transposes and edge
// sizes; then each work item computes an RM x (VW*NV) tile of C in registers with explicit VW-wide vectors and FMAs,
// streaming its A panel (K x RM) and B panel (K x VW*NV) from cache. No local memory, no barriers: on a CPU device a
// work item is a loop iteration of a thread, and what matters is the register tile and contiguous loads.
#include "common.cl"
#ifndef RM
#define RM 8
#endif
#ifndef VW
#define VW 16
#endif
#ifndef NV
#define NV 2
#endif
#ifndef TRANS_A
#define TRANS_A 0
#endif
#ifndef TRANS_B
#define TRANS_B 0
#endif
#define RN (VW * NV)
#define realV HETNN_CAT(REAL, VW)
#define VLOAD HETNN_CAT(vload, VW)
#define VSTORE HETNN_CAT(vstore, VW)

// Ap[p][k][i] = op(A)[p*RM + i][k] (0 beyond M). Global size: (K, ceil(M/RM)).
__kernel void pack_a(const int M, const int K, __global const REAL* restrict A, const long a_off,
                     __global REAL* restrict Ap) {
  const int k = get_global_id(0), p = get_global_id(1);
  if (k >= K) return;
  __global REAL* dst = Ap + ((long)p * K + k) * RM;
  for (int i = 0; i < RM; ++i) {
    const int m = p * RM + i;
#if TRANS_A
    dst[i] = m < M ? A[a_off + (long)k * M + m] : (REAL)0;
#else
    dst[i] = m < M ? A[a_off + (long)m * K + k] : (REAL)0;
#endif
  }
}

// Bp[p][k][j] = op(B)[k][p*RN + j] (0 beyond N). Global size: (ceil(N/RN)*RN, K).
__kernel void pack_b(const int K, const int N, __global const REAL* restrict B, const long b_off,
                     __global REAL* restrict Bp) {
  const int n = get_global_id(0), k = get_global_id(1);
  if (k >= K) return;
#if TRANS_B
  const REAL v = n < N ? B[b_off + (long)n * K + k] : (REAL)0;
#else
  const REAL v = n < N ? B[b_off + (long)k * N + n] : (REAL)0;
#endif
  Bp[((long)(n / RN) * K + k) * RN + n % RN] = v;
}

// C tile (pm, pn). Global size: (ceil(M/RM), ceil(N/RN)) rounded up to the local size.
__kernel void gemm_packed(const int M, const int N, const int K, const REAL alpha, const REAL beta,
                          __global const REAL* restrict Ap, __global const REAL* restrict Bp,
                          __global REAL* restrict C, const long c_off, __global const REAL* restrict bias) {
  const int pm = get_global_id(0), pn = get_global_id(1);
  if (pm * RM >= M || pn * RN >= N) return;
  const __global REAL* a = Ap + (long)pm * K * RM;
  const __global REAL* b = Bp + (long)pn * K * RN;
  realV acc[RM][NV];
  for (int i = 0; i < RM; ++i)
    for (int j = 0; j < NV; ++j) acc[i][j] = (realV)0;
  for (int k = 0; k < K; ++k) {
    realV bv[NV];
    for (int j = 0; j < NV; ++j) bv[j] = VLOAD(0, b + (long)k * RN + j * VW);
    for (int i = 0; i < RM; ++i) {
      const realV av = (realV)(a[(long)k * RM + i]);
      for (int j = 0; j < NV; ++j) acc[i][j] = fma(av, bv[j], acc[i][j]);
    }
  }
  C += c_off;
  for (int i = 0; i < RM; ++i) {
    const int m = pm * RM + i;
    if (m >= M) break;
    __global REAL* crow = C + (long)m * N;
    for (int j = 0; j < NV; ++j) {
      const int n0 = pn * RN + j * VW;
      if (n0 >= N) break;
      realV v = alpha * acc[i][j];
      if (n0 + VW <= N) {
        if (beta != (REAL)0) v += beta * VLOAD(0, crow + n0);
#if HAS_BIAS
        v += VLOAD(0, bias + n0);
#endif
        VSTORE(ACTIVATE(v), 0, crow + n0);
      } else {  // right edge: element by element
        REAL t[VW];
        VSTORE(v, 0, t);
        for (int e = 0; e < N - n0; ++e) {
          REAL x = t[e];
          if (beta != (REAL)0) x += beta * crow[n0 + e];
#if HAS_BIAS
          x += bias[n0 + e];
#endif
          crow[n0 + e] = ACTIVATE(x);
        }
      }
    }
  }
}
