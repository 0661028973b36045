// gemm.cl: C[b] = act(alpha * op(A[b]) * op(B[b]) + beta * C[b] + bias), row-major, any M, N, K (edge tiles guarded).
// A work-group computes a TS_M x TS_N tile of C, staging TS_K-deep slices of A and B in local memory; each work
// item accumulates a WPT_M x WPT_N register tile with a stride of (TS_M/WPT_M, TS_N/WPT_N) so that neighbouring
// work items touch neighbouring elements. The GPU-shaped member of the GEMM family (gemm_packed.cl is the CPU
// one). Tunables are overridden with -D by the host (per-device parameters).
// Split-K (splits > 1): the z dimension runs batch x splits work-groups per tile; slice z % splits covers
// K elements [slice * k_chunk, + k_chunk) and stores its raw partial sums at C + z * M * N, which
// gemm_split_reduce then adds up with the epilogue. This keeps every compute unit busy on products with few output
// tiles and a long K (a dense layer's forward pass on a flattened feature map).
#include "common.cl"
#ifndef TS_M
#define TS_M 64
#endif
#ifndef TS_N
#define TS_N 64
#endif
#ifndef TS_K
#define TS_K 16
#endif
#ifndef WPT_M
#define WPT_M 4
#endif
#ifndef WPT_N
#define WPT_N 4
#endif
#define LM (TS_M / WPT_M)
#define LN (TS_N / WPT_N)
#define LSIZE (LM * LN)

__kernel __attribute__((reqd_work_group_size(LN, LM, 1)))
void gemm_tiled(const int M, const int N, const int K, const REAL alpha, const REAL beta,
                __global const STORAGE* restrict A, const long a_batch_stride,
                __global const STORAGE* restrict B, const long b_batch_stride,
                __global STORAGE* restrict C, __global const STORAGE* restrict bias, const int has_bias,
                const int act, const int k_chunk, const int splits) {
  TILED_GEMM_PROLOGUE

  __local REAL As[TS_K][TS_M];
  __local REAL Bs[TS_K][TS_N];
  REAL acc[WPT_M][WPT_N];
  for (int i = 0; i < WPT_M; ++i)
    for (int j = 0; j < WPT_N; ++j) acc[i][j] = (REAL)0;

  for (int k0 = kb; k0 < ke; k0 += TS_K) {
    for (int i = lid; i < TS_M * TS_K; i += LSIZE) {
#if TRANS_A  // A stored (K, M)
      const int mm = i % TS_M, kk = i / TS_M;
      const int gm = m0 + mm, gk = k0 + kk;
      As[kk][mm] = (gm < M && gk < ke) ? LOAD1(A, (long)gk * M + gm) : (REAL)0;
#else        // A stored (M, K)
      const int kk = i % TS_K, mm = i / TS_K;
      const int gm = m0 + mm, gk = k0 + kk;
      As[kk][mm] = (gm < M && gk < ke) ? LOAD1(A, (long)gm * K + gk) : (REAL)0;
#endif
    }
    for (int i = lid; i < TS_N * TS_K; i += LSIZE) {
#if TRANS_B  // B stored (N, K)
      const int kk = i % TS_K, nn = i / TS_K;
      const int gn = n0 + nn, gk = k0 + kk;
      Bs[kk][nn] = (gn < N && gk < ke) ? LOAD1(B, (long)gn * K + gk) : (REAL)0;
#else        // B stored (K, N)
      const int nn = i % TS_N, kk = i / TS_N;
      const int gn = n0 + nn, gk = k0 + kk;
      Bs[kk][nn] = (gn < N && gk < ke) ? LOAD1(B, (long)gk * N + gn) : (REAL)0;
#endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < TS_K; ++kk) {
      REAL a[WPT_M], b[WPT_N];
      for (int i = 0; i < WPT_M; ++i) a[i] = As[kk][tm + i * LM];
      for (int j = 0; j < WPT_N; ++j) b[j] = Bs[kk][tn + j * LN];
      for (int i = 0; i < WPT_M; ++i)
        for (int j = 0; j < WPT_N; ++j) acc[i][j] += a[i] * b[j];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }

  for (int i = 0; i < WPT_M; ++i) {
    const int m = m0 + tm + i * LM;
    if (m >= M) continue;
    for (int j = 0; j < WPT_N; ++j) {
      const int n = n0 + tn + j * LN;
      if (n >= N) continue;
      const long idx = (long)m * N + n;
      if (splits > 1) {
        STORE1(acc[i][j], C, idx);
        continue;
      }
      // beta == 0 overwrites: C may hold garbage or NaN that must not leak into the result.
      REAL v = beta == (REAL)0 ? alpha * acc[i][j] : alpha * acc[i][j] + beta * LOAD1(C, idx);
      if (has_bias) v += LOAD1(bias, n);
      STORE1(ACTIVATE(v, act), C, idx);
    }
  }
}

// C[b] = act(alpha * (sum of the split-K partial products of batch b) + beta * C[b] + bias) (has_bias 1: bias[n],
// 2: bias[m], as gemm_vtiled): one work-item per
// element of C, the partials at part + (b * splits + slice) * M * N, in the data type or, with PARTS_REAL, in the
// arithmetic type (the matrix-unit weight gradient's float32 sums of 16-bit data).
#ifdef PARTS_REAL
#define PART REAL
#define LOAD_PART(p, i) (p)[i]
#else
#define PART STORAGE
#define LOAD_PART(p, i) LOAD1(p, i)
#endif
__kernel void gemm_split_reduce(const int M, const int N, const int splits, const REAL alpha, const REAL beta,
                                __global const PART* restrict part, __global STORAGE* restrict C,
                                __global const STORAGE* restrict bias, const int has_bias, const int act) {
  const long mn = (long)M * N, idx = get_global_id(0), b = get_global_id(1);
  if (idx >= mn) return;
  part += b * splits * mn + idx;
  C += b * mn;
  REAL s = (REAL)0;
  for (int i = 0; i < splits; ++i) s += LOAD_PART(part, i * mn);
  REAL v = beta == (REAL)0 ? alpha * s : alpha * s + beta * LOAD1(C, idx);
  if (has_bias) v += LOAD1(bias, has_bias == 2 ? idx / N : idx % N);  // 2: a bias per row
  STORE1(ACTIVATE(v, act), C, idx);
}
