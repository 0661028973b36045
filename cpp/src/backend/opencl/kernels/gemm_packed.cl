// gemm_packed.cl: GEMM shaped for CPU devices (PoCL and other CPU OpenCL runtimes).
// op(A) and op(B) are first packed into zero-padded panels (pack.cl), which also absorbs transposes and edge sizes;
// then each work item computes an RM x (VW*NV) tile of C in registers with explicit VW-wide vectors and FMAs,
// streaming its A panel (K x RM) and B panel (K x VW*NV) from cache. No local memory, no barriers: on a CPU device a
// work item is a loop iteration of a thread, and what matters is the register tile and contiguous loads.
#include "packed_layout.cl"
#define realV HETNN_CAT(REAL, VW)
#define VLOAD HETNN_CAT(vload, VW)
#define VSTORE HETNN_CAT(vstore, VW)

// C tile (pm, pn). Global size: (ceil(M/RM), ceil(N/RN)) rounded up to the local size.
__kernel void gemm_packed(const int M, const int N, const int K, const REAL alpha, const REAL beta,
                          __global const REAL* restrict Ap, __global const REAL* restrict Bp,
                          __global STORAGE* restrict C, const long c_off, __global const STORAGE* restrict bias,
                          const int has_bias, const int act) {
  const int pm = get_global_id(0), pn = get_global_id(1);
  if (pm * RM >= M || pn * RN >= N) return;
  const __global REAL* a = Ap + (long)pm * K * RM;
  const __global REAL* b = Bp + (long)pn * K * RN;
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
    for (int j = 0; j < NV; ++j) bv[j] = VLOAD(0, b + (long)k * RN + j * VW);
#pragma unroll
    for (int i = 0; i < RM; ++i) {
      const realV av = (realV)(a[(long)k * RM + i]);
#pragma unroll
      for (int j = 0; j < NV; ++j) acc[i][j] = fma(av, bv[j], acc[i][j]);
    }
  }
  C += c_off;
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
        if (has_bias) v += VLOAD(0, bias + n0);
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
          if (has_bias) x += LOAD1(bias, n0 + e);
          STORE1(ACTIVATE(x, act), crow, n0 + e);
        }
      }
    }
  }
}
