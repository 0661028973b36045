// gemm_vtiled.cl: C[b] = act(alpha * op(A[b]) * op(B[b]) + beta * C[b] + bias), row-major, any M, N, K: the GPU
// member of the GEMM family built for the FMA pipes' limit (gemm.cl is the plain tiled one, gemm_packed.cl the CPU
// one). Same arguments, launch shape and split-K contract as gemm_tiled, so the host runs either.
//  - A work-group computes a TS_M x TS_N tile of C; each work item a WPT_M x WPT_N register tile made of vectors
//    of VWM rows and VWN columns, spaced LM*VWM rows and LN*VWN columns apart: a quarter-warp's vector reads of local
//    memory are consecutive (no bank conflicts) and its stores to C are coalesced.
//  - TS_K-deep slices of A and B live in two local buffers: the next slice's global loads are issued into
//    registers before the current slice is multiplied, and stored to the other buffer after it (one barrier a
//    slice).
//  - has_bias: 1 adds bias[n] to each column (a dense layer), 2 bias[m] to each row (a convolution's channels).
//  - CONV_B: B is the im2col matrix of a convolution's input image, gathered by the loader from x (C, H, W) itself
//    (implicit GEMM: no column buffer); KH, KW are compile-time, the rest of the geometry kernel arguments.
//  - CONV_WG: the weight gradient of a convolution over the whole batch as one GEMM, gw (O, C*KH*KW) =
//    sum over images n of gy[n] (O, OH*OW) @ cols[n]^T: K runs over (n, position), A is gy (N, O, OH*OW) read as
//    (O, N*OH*OW), B^T the columns gathered from x (N, C, H, W) (TRANS_B's layout: consecutive work items read
//    consecutive positions). No column buffer, no per-image partial products; split-K spreads the long K.
//    16-bit data: the slices are summed in float32 (PARTS_REAL; every store raw) and rounded once by the reduction.
//  - Global loads are VA / VB wide along the operand's contiguous dimension; the host sets 4 where that dimension is
//    a multiple of 4 (so every vector is aligned: buffers start aligned) and the storage is the arithmetic type,
//    else 1. C is stored VWN wide where VC is set (N a multiple of VWN).
#include "common.cl"
#ifndef TS_M
#define TS_M 128
#endif
#ifndef TS_N
#define TS_N 128
#endif
#ifndef TS_K
#define TS_K 16
#endif
#ifndef WPT_M
#define WPT_M 8
#endif
#ifndef WPT_N
#define WPT_N 8
#endif
#ifndef VWM
#define VWM 4
#endif
#ifndef VWN
#define VWN 4
#endif
#ifndef VA
#define VA 1
#endif
#ifndef VB
#define VB 1
#endif
#ifndef VC
#define VC 0
#endif
#ifndef CONV_B
#define CONV_B 0
#endif
#if CONV_B && (VB != 1 || TRANS_B)
#error "CONV_B gathers B element by element, untransposed (VB = 1, TRANS_B = 0)"
#endif
#ifndef CONV_WG
#define CONV_WG 0
#endif
#if CONV_WG && (VB != 1 || !TRANS_B || TRANS_A || CONV_B)
#error "CONV_WG gathers B element by element in TRANS_B's layout, A untransposed (VB = 1, TRANS_B = 1, TRANS_A = 0)"
#endif
#ifndef PARTS_REAL  // 1: C is the split's slices of sums in the arithmetic type (16-bit data's weight gradient)
#define PARTS_REAL 0
#endif
#if PARTS_REAL && !CONV_WG
#error "PARTS_REAL: the weight gradient's float32 slices of 16-bit data (CONV_WG) only"
#endif
#if PARTS_REAL
#define CTYPE REAL
#else
#define CTYPE STORAGE
#endif
#define LM (TS_M / WPT_M)  // work items along M
#define LN (TS_N / WPT_N)  // work items along N
#define LSIZE (LM * LN)
#define VM (WPT_M / VWM)   // vectors per work item along M
#define VN (WPT_N / VWN)

#if VWM == 1
#define REALM REAL
#else
#define REALM HETNN_CAT(REAL, VWM)
#endif
#if VWN == 1
#define REALN REAL
#else
#define REALN HETNN_CAT(REAL, VWN)
#endif
#if VA == 1
#define REALA REAL
#else
#define REALA HETNN_CAT(REAL, VA)
#endif
#if VB == 1
#define REALB REAL
#else
#define REALB HETNN_CAT(REAL, VB)
#endif

// The components of a vector of width W into a scalar array (OpenCL has no run-time component index).
#define UNPACK1(v, arr, o) (arr)[o] = (v);
#define UNPACK2(v, arr, o) (arr)[o] = (v).s0; (arr)[(o) + 1] = (v).s1;
#define UNPACK4(v, arr, o) (arr)[o] = (v).s0; (arr)[(o) + 1] = (v).s1; (arr)[(o) + 2] = (v).s2; (arr)[(o) + 3] = (v).s3;
#define UNPACK8(v, arr, o) UNPACK4((v).lo, arr, o) UNPACK4((v).hi, arr, (o) + 4)
#define UNPACK(W, v, arr, o) HETNN_CAT(UNPACK, W)(v, arr, o)

#define A_LOADS (TS_M * TS_K / (VA * LSIZE))  // vectors of A each work item moves per slice
#define B_LOADS (TS_N * TS_K / (VB * LSIZE))

#if CONV_WG
#define A_PARAMS , const int ohw
#define A_ARGS , ohw
#else
#define A_PARAMS
#define A_ARGS
#endif

// Global -> registers: slice k0 of A as A_LOADS vectors of VA. A vector lies wholly inside or outside the matrix,
// since the host sets VA > 1 only when the contiguous dimension is a multiple of VA and slices start at multiples of
// TS_K; outside elements read as 0.
HOT void load_a(__global const STORAGE* restrict A, const int M, const int K, const int m0, const int k0,
                   const int ke, const int lid, REALA* ra A_PARAMS) {
#pragma unroll
  for (int l = 0; l < A_LOADS; ++l) {
    const int i = lid + l * LSIZE;
#if CONV_WG  // A[m][k] = gy[n][m][p] for k = n * OHW + p (VA > 1 only when OHW is a multiple of VA)
    const int kv = i % (TS_K / VA), mm = i / (TS_K / VA);
    const int gm = m0 + mm, gk = k0 + kv * VA;
    const bool in = gm < M && gk < ke;
    const int n = gk / ohw;
    const long at = ((long)n * M + gm) * ohw + (gk - n * ohw);
#elif TRANS_A  // A stored (K, M): vectors along M
    const int mv = i % (TS_M / VA), kk = i / (TS_M / VA);
    const int gm = m0 + mv * VA, gk = k0 + kk;
    const bool in = gm < M && gk < ke;
    const long at = (long)gk * M + gm;
#else  // A stored (M, K): vectors along K
    const int kv = i % (TS_K / VA), mm = i / (TS_K / VA);
    const int gm = m0 + mm, gk = k0 + kv * VA;
    const bool in = gm < M && gk < ke;
    const long at = (long)gm * K + gk;
#endif
#if VA == 1
    ra[l] = in ? LOAD1(A, at) : (REAL)0;
#else
    ra[l] = in ? *(__global const REALA*)(A + at) : (REALA)0;
#endif
  }
}

#if CONV_B
// Column p = oh * OW + ow of the im2col matrix starts at input row ihb = oh * SH - PH and column iwb = ow * SW - PW;
// each work item's B columns are fixed for the whole K loop, so their positions are computed once (ihb = INT_MIN / 2
// for columns past N: every row lands outside the image).
typedef struct {
  int C, H, W, sh, sw, ph, pw, dh, dw;
} ConvGeom;
#define CONV_PARAMS , const ConvGeom g, const int* ihb, const int* iwb
#define CONV_ARGS , g, ihb, iwb
#elif CONV_WG
// Column j = (c * KH + ki) * KW + kj of B (a weight) reads x[n, c, oh * SH + ki * DH - PH, ow * SW + kj * DW - PW]
// at K index n * OHW + oh * OW + ow: each work item's columns are fixed for the whole K loop, so (c, the row and
// column offsets) are computed once (c = -1 for columns past N).
typedef struct {
  int C, H, W, OW, OHW, sh, sw;
} ConvGeom;
#define CONV_PARAMS , const ConvGeom g, const int* jc, const int* jh, const int* jw
#define CONV_ARGS , g, jc, jh, jw
#else
#define CONV_PARAMS
#define CONV_ARGS
#endif

HOT void load_b(__global const STORAGE* restrict B, const int N, const int K, const int n0, const int k0,
                   const int ke, const int lid, REALB* rb CONV_PARAMS) {
#pragma unroll
  for (int l = 0; l < B_LOADS; ++l) {
    const int i = lid + l * LSIZE;
#if CONV_B  // B[k][p] = x[c, ihb + ki * DH, iwb + kj * DW] for k = (c * KH + ki) * KW + kj
    const int gk = k0 + i / TS_N;
    const int c = gk / (KH * KW), r = gk - c * (KH * KW), ki = r / KW, kj = r - ki * KW;
    const int ih = ihb[l] + ki * g.dh, iw = iwb[l] + kj * g.dw;
    const bool in = gk < ke && ih >= 0 && ih < g.H && iw >= 0 && iw < g.W;
    const long at = ((long)c * g.H + ih) * g.W + iw;
#elif CONV_WG  // B[k][j] (stored as B^T: TRANS_B's layout)
    const int gk = k0 + i % TS_K;
    const int n = gk / g.OHW, q = gk - n * g.OHW, oh = q / g.OW, ow = q - oh * g.OW;
    const int ih = oh * g.sh + jh[l], iw = ow * g.sw + jw[l];
    const bool in = gk < ke && jc[l] >= 0 && ih >= 0 && ih < g.H && iw >= 0 && iw < g.W;
    const long at = (((long)n * g.C + jc[l]) * g.H + ih) * g.W + iw;
#elif TRANS_B  // B stored (N, K): vectors along K
    const int kv = i % (TS_K / VB), nn = i / (TS_K / VB);
    const int gn = n0 + nn, gk = k0 + kv * VB;
    const bool in = gn < N && gk < ke;
    const long at = (long)gn * K + gk;
#else  // B stored (K, N): vectors along N
    const int nv = i % (TS_N / VB), kk = i / (TS_N / VB);
    const int gn = n0 + nv * VB, gk = k0 + kk;
    const bool in = gn < N && gk < ke;
    const long at = (long)gk * N + gn;
#endif
#if VB == 1
    rb[l] = in ? LOAD1(B, at) : (REAL)0;
#else
    rb[l] = in ? *(__global const REALB*)(B + at) : (REALB)0;
#endif
  }
}

// Registers -> local: As[k][m] and Bs[k][n] (k-major, so the multiply loop reads rows of both).
HOT void store_a(__local REAL* as, const int lid, const REALA* ra) {
#pragma unroll
  for (int l = 0; l < A_LOADS; ++l) {
    const int i = lid + l * LSIZE;
    REAL v[VA];
    UNPACK(VA, ra[l], v, 0)
#if TRANS_A
    const int mv = i % (TS_M / VA), kk = i / (TS_M / VA);
#pragma unroll
    for (int e = 0; e < VA; ++e) as[kk * TS_M + mv * VA + e] = v[e];
#else
    const int kv = i % (TS_K / VA), mm = i / (TS_K / VA);
#pragma unroll
    for (int e = 0; e < VA; ++e) as[(kv * VA + e) * TS_M + mm] = v[e];
#endif
  }
}

HOT void store_b(__local REAL* bs, const int lid, const REALB* rb) {
#pragma unroll
  for (int l = 0; l < B_LOADS; ++l) {
    const int i = lid + l * LSIZE;
    REAL v[VB];
    UNPACK(VB, rb[l], v, 0)
#if TRANS_B
    const int kv = i % (TS_K / VB), nn = i / (TS_K / VB);
#pragma unroll
    for (int e = 0; e < VB; ++e) bs[(kv * VB + e) * TS_N + nn] = v[e];
#else
    const int nv = i % (TS_N / VB), kk = i / (TS_N / VB);
#pragma unroll
    for (int e = 0; e < VB; ++e) bs[kk * TS_N + nv * VB + e] = v[e];
#endif
  }
}

// Slices [kb, ke) of the tile at (m0, n0) multiplied into acc (zeroed first); the slices double-buffered in As/Bs.
// Ends after a barrier, so the buffers may be refilled at once.
HOT void mac_tile(__global const STORAGE* restrict A, __global const STORAGE* restrict B, const int M,
                     const int N, const int K, const int m0, const int n0, const int kb, const int ke, const int lid,
                     const int tm, const int tn, __local REALM (*As)[TS_K][TS_M / VWM],
                     __local REALN (*Bs)[TS_K][TS_N / VWN], REAL (*acc)[WPT_N] A_PARAMS CONV_PARAMS) {
#pragma unroll
  for (int i = 0; i < WPT_M; ++i)
#pragma unroll
    for (int j = 0; j < WPT_N; ++j) acc[i][j] = (REAL)0;
  REALA ra[A_LOADS];
  REALB rb[B_LOADS];
  if (kb < ke) {
    load_a(A, M, K, m0, kb, ke, lid, ra A_ARGS);
    load_b(B, N, K, n0, kb, ke, lid, rb CONV_ARGS);
    store_a((__local REAL*)As[0], lid, ra);
    store_b((__local REAL*)Bs[0], lid, rb);
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  int buf = 0;
  for (int k0 = kb; k0 < ke; k0 += TS_K) {
    const int next = k0 + TS_K;
    if (next < ke) {  // in flight while this slice is multiplied
      load_a(A, M, K, m0, next, ke, lid, ra A_ARGS);
      load_b(B, N, K, n0, next, ke, lid, rb CONV_ARGS);
    }
#pragma unroll
    for (int kk = 0; kk < TS_K; ++kk) {
      REAL a[WPT_M], b[WPT_N];
#pragma unroll
      for (int i = 0; i < VM; ++i) {
        const REALM v = As[buf][kk][tm + i * LM];
        UNPACK(VWM, v, a, i * VWM)
      }
#pragma unroll
      for (int j = 0; j < VN; ++j) {
        const REALN v = Bs[buf][kk][tn + j * LN];
        UNPACK(VWN, v, b, j * VWN)
      }
#pragma unroll
      for (int i = 0; i < WPT_M; ++i)
#pragma unroll
        for (int j = 0; j < WPT_N; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
    if (next < ke) {
      store_a((__local REAL*)As[buf ^ 1], lid, ra);
      store_b((__local REAL*)Bs[buf ^ 1], lid, rb);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    buf ^= 1;
  }
}

// Epilogue. Work item (tm, tn) holds rows (tm + i * LM) * VWM + e and columns (tn + j * LN) * VWN + f. raw: the
// sums alone (split-K's partial products), else act(alpha * acc + beta * C + bias).
HOT void store_tile(__global CTYPE* restrict C, __global const STORAGE* restrict bias, const int M,
                       const int N, const REAL alpha, const REAL beta, const int has_bias, const int act,
                       const int raw, const int m0, const int n0, const int tm, const int tn, REAL (*acc)[WPT_N]) {
#pragma unroll
  for (int i = 0; i < VM; ++i) {
#pragma unroll
    for (int e = 0; e < VWM; ++e) {
      const int m = m0 + (tm + i * LM) * VWM + e;
      if (m >= M) continue;
#pragma unroll
      for (int j = 0; j < VN; ++j) {
        const int nb = n0 + (tn + j * LN) * VWN;
        if (nb >= N) continue;
        const long row = (long)m * N;
#if VC && VWN > 1  // N is a multiple of VWN: the whole vector is inside
        REALN v;
        REAL s[VWN];
#pragma unroll
        for (int f = 0; f < VWN; ++f) s[f] = acc[i * VWM + e][j * VWN + f];
        v = HETNN_CAT(vload, VWN)(0, s);
        __global REALN* cv = (__global REALN*)(C + row + nb);  // aligned: N and nb are multiples of VWN
        if (raw) {
          *cv = v;
          continue;
        }
        // beta == 0 overwrites: C may hold garbage or NaN that must not leak into the result.
        v = beta == (REAL)0 ? alpha * v : alpha * v + beta * *cv;
        if (has_bias == 1) v += *(__global const REALN*)(bias + nb);
        if (has_bias == 2) v += (REALN)LOAD1(bias, m);
        *cv = ACTIVATE(v, act);
#else
#pragma unroll
        for (int f = 0; f < VWN; ++f) {
          const int n = nb + f;
          if (n >= N) continue;
          const REAL r = acc[i * VWM + e][j * VWN + f];
#if PARTS_REAL
          C[row + n] = r;
#else
          if (raw) {
            STORE1(r, C, row + n);
            continue;
          }
          REAL v = beta == (REAL)0 ? alpha * r : alpha * r + beta * LOAD1(C, row + n);
          if (has_bias) v += LOAD1(bias, has_bias == 2 ? m : n);
          STORE1(ACTIVATE(v, act), C, row + n);
#endif
        }
#endif
      }
    }
  }
}

__kernel __attribute__((reqd_work_group_size(LN, LM, 1)))
void gemm_vtiled(const int M, const int N, const int K, const REAL alpha, const REAL beta,
                 __global const STORAGE* restrict A, const long a_batch_stride,
                 __global const STORAGE* restrict B, const long b_batch_stride,
                 __global CTYPE* restrict C, __global const STORAGE* restrict bias, const int has_bias,
                 const int act, const int k_chunk, const int splits
#if CONV_B || CONV_WG
                 , const int conv_c, const int conv_h, const int conv_w, const int conv_oh, const int conv_ow,
                 const int sh, const int sw, const int ph, const int pw, const int dh, const int dw
#endif
) {
  TILED_GEMM_PROLOGUE

  __local REALM As[2][TS_K][TS_M / VWM];
  __local REALN Bs[2][TS_K][TS_N / VWN];
  REAL acc[WPT_M][WPT_N];

#if CONV_B
  const ConvGeom g = {conv_c, conv_h, conv_w, sh, sw, ph, pw, dh, dw};
  int ihb[B_LOADS], iwb[B_LOADS];
#pragma unroll
  for (int l = 0; l < B_LOADS; ++l) {
    const int gn = n0 + (lid + l * LSIZE) % TS_N, oh = gn / conv_ow;
    ihb[l] = gn < N ? oh * sh - ph : INT_MIN / 2;
    iwb[l] = (gn - oh * conv_ow) * sw - pw;
  }
#elif CONV_WG
  const ConvGeom g = {conv_c, conv_h, conv_w, conv_ow, conv_oh * conv_ow, sh, sw};
  const int ohw = g.OHW;
  int jc[B_LOADS], jh[B_LOADS], jw[B_LOADS];
#pragma unroll
  for (int l = 0; l < B_LOADS; ++l) {
    const int gn = n0 + (lid + l * LSIZE) / TS_K;
    const int c = gn / (KH * KW), r = gn - c * (KH * KW), ki = r / KW, kj = r - ki * KW;
    jc[l] = gn < N ? c : -1;
    jh[l] = ki * dh - ph;
    jw[l] = kj * dw - pw;
  }
#endif
  mac_tile(A, B, M, N, K, m0, n0, kb, ke, lid, tm, tn, As, Bs, acc A_ARGS CONV_ARGS);
  store_tile(C, bias, M, N, alpha, beta, has_bias, act, splits > 1, m0, n0, tm, tn, acc);
}

#if !CONV_B && !CONV_WG
// Stream-K (Osama et al., 2023): the tiles' TS_K-deep slices, tiles x ceil(K / TS_K) in all, dealt out evenly
// to `groups` work-groups in one wave, each taking a contiguous run that may begin and end inside a tile. A
// tile a work-group covers wholly is stored with its epilogue; a part of a tile goes raw to the work-group's
// partial slot (0 for the first tile it touches, 1 for its last), and gemm_sk_fixup adds the parts. No tile count
// leaves the device's last wave part idle (split-K only divides tiles that are too few).
__kernel __attribute__((reqd_work_group_size(LN, LM, 1)))
void gemm_vtiled_sk(const int M, const int N, const int K, const REAL alpha, const REAL beta,
                    __global const STORAGE* restrict A, __global const STORAGE* restrict B,
                    __global STORAGE* restrict C, __global const STORAGE* restrict bias, const int has_bias,
                    const int act, const int groups, __global REAL* restrict partials) {
  const int tn = get_local_id(0), tm = get_local_id(1), lid = tm * LN + tn;
  const long g = get_group_id(0);
  const int tiles_n = (N + TS_N - 1) / TS_N, ipt = (K + TS_K - 1) / TS_K;
  const long total = (long)((M + TS_M - 1) / TS_M) * tiles_n * ipt, end = (g + 1) * total / groups;
  __local REALM As[2][TS_K][TS_M / VWM];
  __local REALN Bs[2][TS_K][TS_N / VWN];
  REAL acc[WPT_M][WPT_N];
  int slot = 0;
  for (long it = g * total / groups; it < end;) {
    const int t = (int)(it / ipt), k0 = (int)(it - (long)t * ipt);
    const int k1 = (int)min((long)ipt, end - (long)t * ipt);
    const int m0 = t / tiles_n * TS_M, n0 = t % tiles_n * TS_N;
    mac_tile(A, B, M, N, K, m0, n0, k0 * TS_K, min(K, k1 * TS_K), lid, tm, tn, As, Bs, acc);
    if (k0 == 0 && k1 == ipt) {
      store_tile(C, bias, M, N, alpha, beta, has_bias, act, 0, m0, n0, tm, tn, acc);
    } else {  // raw, at (row, column) of the tile
      __global REAL* p = partials + (g * 2 + slot) * (TS_M * TS_N);
#pragma unroll
      for (int i = 0; i < VM; ++i)
#pragma unroll
        for (int e = 0; e < VWM; ++e)
#pragma unroll
          for (int j = 0; j < VN; ++j)
#pragma unroll
            for (int f = 0; f < VWN; ++f)
              p[((tm + i * LM) * VWM + e) * TS_N + (tn + j * LN) * VWN + f] = acc[i * VWM + e][j * VWN + f];
    }
    slot = 1;
    it = (long)t * ipt + k1;
  }
}

// Element (m, n) of a tile stream-K's work-groups shared: their parts added, then the epilogue (a tile one
// work-group covered is already stored and left alone). Work-group g's run is [g * total / groups,
// (g + 1) * total / groups).
__kernel void gemm_sk_fixup(const int M, const int N, const int K, const REAL alpha, const REAL beta,
                            __global STORAGE* restrict C, __global const STORAGE* restrict bias, const int has_bias,
                            const int act, const int groups, __global const REAL* restrict partials) {
  const int n = get_global_id(0), m = get_global_id(1);
  if (m >= M || n >= N) return;
  const int tiles_n = (N + TS_N - 1) / TS_N, ipt = (K + TS_K - 1) / TS_K;
  const long total = (long)((M + TS_M - 1) / TS_M) * tiles_n * ipt;
  const long lo = (long)(m / TS_M * tiles_n + n / TS_N) * ipt, hi = lo + ipt;  // the tile's slices
  long g = lo * groups / total;  // the work-group whose run holds slice lo
  while (g > 0 && g * total / groups > lo) --g;
  while ((g + 1) * total / groups <= lo) ++g;
  if (g * total / groups <= lo && (g + 1) * total / groups >= hi) return;
  const int at = (m % TS_M) * TS_N + n % TS_N;
  REAL r = (REAL)0;
  for (; g < groups; ++g) {
    const long s = g * total / groups, e = (g + 1) * total / groups;
    if (s >= hi) break;
    if (e > s) r += partials[(g * 2 + (s >= lo ? 0 : 1)) * (TS_M * TS_N) + at];
  }
  const long i = (long)m * N + n;
  REAL v = beta == (REAL)0 ? alpha * r : alpha * r + beta * LOAD1(C, i);
  if (has_bias) v += LOAD1(bias, has_bias == 2 ? m : n);
  STORE1(ACTIVATE(v, act), C, i);
}
#endif
