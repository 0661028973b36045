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

// Convolutions on the packed GEMM (CPU-type devices) with no column buffer: the panels are packed from the images
// themselves (im2col's pass and pack_b's read of its output were two thirds of a LeNet epoch's convolution time on
// PoCL). Image z's columns cols[z] (CK x OH*OW, CK = C*KH*KW): row r = (c*KH + i)*KW + j, column q = oh*OW + ow,
// holding x[z][c][oh*SH - PH + i*DH][ow*SW - PW + j*DW] (0 outside the image).
#ifndef KH
#define KH 3
#endif
#ifndef KW
#define KW 3
#endif
#ifndef CONV_SW
#define CONV_SW 1
#endif

// The forward's B: op(B) = cols[z] (K = CK, N = OH*OW), panels as pack_b's. Global (K, Npad / RN, images); image z
// at x_off + z * x_bs; SW is CONV_SW (compiled in: the bounds below divide by it). Row k of op(B) is tap (c, i, j);
// its RN values are output positions n0 .. n0 + RN - 1: stretches of output rows, each zeros, a (strided) copy of
// an input row and zeros, as conv2d_im2col_rows writes them.
__kernel void pack_b_conv(const int K, const int N, __global const STORAGE* restrict x, long x_off,
                          __global REAL* restrict Bp, const long x_bs, const long p_bs, const int H, const int W,
                          const int OW, const int SH, const int PH, const int PW, const int DH, const int DW) {
  const int k = get_global_id(0), p = get_global_id(1);
  if (k >= K) return;
  x_off += get_global_id(2) * x_bs;
  __global REAL* dst = Bp + get_global_id(2) * p_bs + ((long)p * K + k) * RN;
  const int n0 = p * RN;
  const int j = k % KW, i = (k / KW) % KH, c = k / (KW * KH);
  x_off += (long)c * H * W;
  const int off = j * DW - PW;  // output column ow reads input column ow * CONV_SW + off
  const int lo = off >= 0 ? 0 : min(OW, (-off + CONV_SW - 1) / CONV_SW);  // the first ow inside the image
  const int hi = max(lo, W - off <= 0 ? 0 : min(OW, (W - off + CONV_SW - 1) / CONV_SW));  // the first ow past it
  const int end = min(RN, N - n0);
  int oh = n0 / OW, ow = n0 - oh * OW, e = 0;
  for (; e < end; e += OW - ow, ow = 0, ++oh) {
    const int stop = min(OW, ow + end - e);  // this output row's columns [ow, stop)
    const int ih = oh * SH - PH + i * DH;
    __global REAL* d = dst + e - ow;
    const int a = ih < 0 || ih >= H ? stop : clamp(lo, ow, stop), b = max(a, min(hi, stop));
    for (int u = ow; u < a; ++u) d[u] = (REAL)0;
    const long src = x_off + (long)ih * W + off;
    for (int u = a; u < b; ++u) d[u] = LOAD1(x, src + (long)u * CONV_SW);
    for (int u = b; u < stop; ++u) d[u] = (REAL)0;
  }
  for (e = max(end, 0); e < RN; ++e) dst[e] = (REAL)0;
}

// The weight gradient gw (O x CK) = the sum over images of gy[z] (O x Q) @ cols[z]^T, Q = OH*OW, as one product
// over K = images x positions, cut into slices of KC rows of K (slice s: rows s*KC .. s*KC + KC - 1; rows past KT,
// the last, zero), each slice's panels at s * p_bs (global dimension 2: slices s0, s0 + 1, ...).
// A: Ap[s][p][k][i] = gy[n][p*RM + i][q] for row s*KC + k = n*Q + q. Global (KC, Mpad / RM, slices).
__kernel void pack_a_images(const int M, const int Q, const int KT, const int KC, const int s0,
                            __global const STORAGE* restrict A, __global REAL* restrict Ap, const long p_bs) {
  const int k = get_global_id(0), p = get_global_id(1), s = get_global_id(2), kg = (s0 + s) * KC + k;
  __global REAL* dst = Ap + s * p_bs + ((long)p * KC + k) * RM;
  const int live = kg < KT, n = live ? kg / Q : 0;  // int: K < 2^31 (a 64-bit division cost half the time)
  const long at = ((long)n * M + p * RM) * Q + (kg - n * Q);
#pragma unroll
  for (int i = 0; i < RM; ++i) {
    const int in = live && p * RM + i < M;
    const REAL v = LOAD1(A, in ? at + (long)i * Q : 0);
    dst[i] = in ? v : (REAL)0;
  }
}

// B: op(B)[k][r] = cols[n][r][q] for row s*KC + k = n*Q + q: Bp[s][p][k][e], its RN values taps p*RN + e, whose
// offsets come from `taps` (per tap r < Npad: c*H*W + i*DH*W + j*DW, i*DH, j*DW; past CK an i*DH no row reaches)
// so that the unrolled loop is the same straight code for every work item, which PoCL vectorises across them (a
// walk over (c, i, j) in the loop took 2-3x as long). Global (KC, Npad / RN, slices), exactly: no early return.
__kernel void pack_b_conv_t(const int Q, const int KT, const int KC, const int s0, __global const STORAGE* restrict x,
                            const long x_bs, __global REAL* restrict Bp, const long p_bs, const int H, const int W,
                            const int OW, const int SH, const int SW, const int PH, const int PW,
                            __global const int* restrict taps) {
  const int k = get_global_id(0), p = get_global_id(1), s = get_global_id(2), kg = (s0 + s) * KC + k;
  __global REAL* dst = Bp + s * p_bs + ((long)p * KC + k) * RN;
  const int live = kg < KT, n = live ? kg / Q : 0, q = kg - n * Q;
  const int oh = q / OW, h0 = oh * SH - PH, w0 = (q - oh * OW) * SW - PW;
  const long at = n * x_bs + (long)h0 * W + w0;
  __global const int* t = taps + 3 * p * RN;
#pragma unroll
  for (int e = 0; e < RN; ++e) {
    const int ih = h0 + t[3 * e + 1], iw = w0 + t[3 * e + 2];
    const int in = live && ih >= 0 && ih < H && iw >= 0 && iw < W;
    const REAL v = LOAD1(x, in ? at + t[3 * e] : 0);  // an address inside x either way
    dst[e] = in ? v : (REAL)0;
  }
}
