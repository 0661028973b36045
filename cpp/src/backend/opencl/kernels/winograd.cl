// winograd.cl: 3x3 stride-1 convolutions as Winograd F(m x m, 3x3) (Lavin and Gray, 2016), m = WINO_M (2 or 4).
// Each m x m output tile comes from a t x t input tile (t = m + 2) with t^2 products per input channel instead of
// 9 m^2 (F(2x2): 16 for 36; F(4x4): 36 for 144):
//   U[e][o][c] = (G g[o][c] G^T)[e]            filters, e = t * row + column of the t x t transform
//   V[e][c][p] = (B^T d[c][p] B)[e]            the P = N * TH * TW input tiles (rows m * th - PH .. + t - 1)
//   M[e] = U[e] (O x C) @ V[e] (C x P)         t^2 GEMMs, one batched call on hetnn's GEMM kernels
//   y[n][o][m th + i][m tw + j] = act((A^T M A)[i][j] + bias[o])
// F(2x2): G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1], B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],
// A^T = [1 1 1 0; 0 1 -1 -1]; entries 0, +-1, +-1/2, so the error stays of the order of the direct sum's.
// F(4x4) (interpolation points 0, +-1, +-2, infinity): G rows [1/4 0 0], -[1 1 1]/6, -[1 -1 1]/6,
// [1/24 1/12 1/6], [1/24 -1/12 1/6], [0 0 1]; B^T rows [4 0 -5 0 1 0], [0 -4 -4 1 1 0], [0 4 -4 -1 1 0],
// [0 -2 -1 2 1 0], [0 2 -1 -2 1 0], [0 4 0 -5 0 1]; A^T rows [1 1 1 1 1 0], [0 1 -1 2 -2 0], [0 1 1 4 4 0],
// [0 1 -1 8 -8 1]. Its larger entries let rounding errors grow with the transformed magnitudes: tests bound the
// error by (C + 32) u (|A^T| sum_c (|G| |g| |G^T|) . (|B^T| |d| |B|) |A|) (tests/test_conv_winograd.py).
// U, V and M are REAL (float32 also for float16/bfloat16 storage, float64 for float64).
#include "common.cl"

#ifndef WINO_M
#define WINO_M 2
#endif
#define WT (WINO_M + 2)  // the input tile's side

// The 1-D transforms, on WT (or 3, or WINO_M) values spaced `s` apart.
static inline void filter_1d(const REAL* g, const int gs, REAL* u, const int us) {  // u = G g
#if WINO_M == 2
  u[0] = g[0];
  u[us] = (g[0] + g[gs] + g[2 * gs]) * (REAL)0.5;
  u[2 * us] = (g[0] - g[gs] + g[2 * gs]) * (REAL)0.5;
  u[3 * us] = g[2 * gs];
#else
  const REAL g0 = g[0], g1 = g[gs], g2 = g[2 * gs];
  u[0] = g0 * (REAL)0.25;
  u[us] = -(g0 + g1 + g2) / (REAL)6;
  u[2 * us] = -(g0 - g1 + g2) / (REAL)6;
  u[3 * us] = g0 / (REAL)24 + g1 / (REAL)12 + g2 / (REAL)6;
  u[4 * us] = g0 / (REAL)24 - g1 / (REAL)12 + g2 / (REAL)6;
  u[5 * us] = g2;
#endif
}

static inline void input_1d(const REAL* d, const int ds, REAL* t, const int ts) {  // t = B^T d
#if WINO_M == 2
  t[0] = d[0] - d[2 * ds];
  t[ts] = d[ds] + d[2 * ds];
  t[2 * ts] = d[2 * ds] - d[ds];
  t[3 * ts] = d[ds] - d[3 * ds];
#else
  const REAL d0 = d[0], d1 = d[ds], d2 = d[2 * ds], d3 = d[3 * ds], d4 = d[4 * ds], d5 = d[5 * ds];
  t[0] = (REAL)4 * d0 - (REAL)5 * d2 + d4;
  t[ts] = d3 + d4 - (REAL)4 * (d1 + d2);
  t[2 * ts] = d4 - d3 + (REAL)4 * (d1 - d2);
  t[3 * ts] = d4 - d2 + (REAL)2 * (d3 - d1);
  t[4 * ts] = d4 - d2 - (REAL)2 * (d3 - d1);
  t[5 * ts] = (REAL)4 * d1 - (REAL)5 * d3 + d5;
#endif
}

static inline void output_1d(const REAL* m, const int ms, REAL* y, const int ys) {  // y = A^T m
#if WINO_M == 2
  y[0] = m[0] + m[ms] + m[2 * ms];
  y[ys] = m[ms] - m[2 * ms] - m[3 * ms];
#else
  const REAL m0 = m[0], m1 = m[ms], m2 = m[2 * ms], m3 = m[3 * ms], m4 = m[4 * ms], m5 = m[5 * ms];
  const REAL a = m1 + m2, b = m1 - m2, c = m3 + m4, e = m3 - m4;
  y[0] = m0 + a + c;
  y[ys] = b + (REAL)2 * e;
  y[2 * ys] = a + (REAL)4 * c;
  y[3 * ys] = b + (REAL)8 * e + m5;
#endif
}

__kernel void winograd_filter(const int O, const int C, __global const STORAGE* restrict w,
                              __global REAL* restrict u) {
  const int c = get_global_id(0), o = get_global_id(1);
  if (c >= C || o >= O) return;
  __global const STORAGE* src = w + ((long)o * C + c) * 9;
  REAL g[9], t[WT * 3], r[WT * WT];
  for (int i = 0; i < 9; ++i) g[i] = LOAD1(src, i);
  for (int j = 0; j < 3; ++j) filter_1d(g + j, 3, t + j, 3);         // t (WT x 3) = G g
  for (int i = 0; i < WT; ++i) filter_1d(t + 3 * i, 1, r + WT * i, 1);  // r = t G^T
  const long plane = (long)O * C, at = (long)o * C + c;
  for (int e = 0; e < WT * WT; ++e) u[e * plane + at] = r[e];
}

// global (TH * TW, C, N): one work item per input tile and channel.
__kernel void winograd_input(const int C, const int H, const int W, const int TH, const int TW, const int PH,
                             const int PW, const long P, __global const STORAGE* restrict x,
                             __global REAL* restrict v) {
  const int q = get_global_id(0), c = get_global_id(1);
  const long n = get_global_id(2);
  if (q >= TH * TW) return;
  const int th = q / TW, tw = q - th * TW;
  const int ih0 = WINO_M * th - PH, iw0 = WINO_M * tw - PW;
  __global const STORAGE* img = x + (n * C + c) * (long)H * W;
  REAL d[WT * WT], t[WT * WT], r[WT * WT];
  for (int i = 0; i < WT; ++i)
    for (int j = 0; j < WT; ++j) {
      const int ih = ih0 + i, iw = iw0 + j;
      d[WT * i + j] = ih >= 0 && ih < H && iw >= 0 && iw < W ? LOAD1(img, (long)ih * W + iw) : (REAL)0;
    }
  for (int j = 0; j < WT; ++j) input_1d(d + j, WT, t + j, WT);         // t = B^T d
  for (int i = 0; i < WT; ++i) input_1d(t + WT * i, 1, r + WT * i, 1);  // r = t B
  const long plane = (long)C * P, at = (long)c * P + n * TH * TW + q;
  for (int e = 0; e < WT * WT; ++e) v[e * plane + at] = r[e];
}

// global (TH * TW, O, N): one work item per output tile and channel.
__kernel void winograd_output(const int O, const int OH, const int OW, const int TH, const int TW, const long P,
                              __global const REAL* restrict m, __global const STORAGE* restrict bias,
                              const int has_bias, const int act, __global STORAGE* restrict y) {
  const int q = get_global_id(0), o = get_global_id(1);
  const long n = get_global_id(2);
  if (q >= TH * TW) return;
  const int th = q / TW, tw = q - th * TW;
  const long plane = (long)O * P, at = (long)o * P + n * TH * TW + q;
  REAL mt[WT * WT], s[WINO_M * WT], r[WINO_M * WINO_M];
  for (int e = 0; e < WT * WT; ++e) mt[e] = m[e * plane + at];
  for (int j = 0; j < WT; ++j) output_1d(mt + j, WT, s + j, WT);                 // s = A^T M
  for (int i = 0; i < WINO_M; ++i) output_1d(s + WT * i, 1, r + WINO_M * i, 1);  // r = s A
  const REAL b = has_bias ? LOAD1(bias, o) : (REAL)0;
  __global STORAGE* out = y + (n * O + o) * (long)OH * OW;
  for (int i = 0; i < WINO_M; ++i) {
    const int oh = WINO_M * th + i;
    if (oh >= OH) break;
    for (int j = 0; j < WINO_M; ++j) {
      const int ow = WINO_M * tw + j;
      if (ow < OW) STORE1(ACTIVATE(r[WINO_M * i + j] + b, act), out, (long)oh * OW + ow);
    }
  }
}
