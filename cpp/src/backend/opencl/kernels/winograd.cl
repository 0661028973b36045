// winograd.cl: 3x3 stride-1 convolutions as Winograd F(2x2, 3x3) (Lavin and Gray, 2016). Each 2x2 output tile comes
// from a 4x4 input tile with 16 products per input channel instead of 36:
//   U[e][o][c] = (G g[o][c] G^T)[e]            filters, e = 4 * row + column of the 4x4 transform
//   V[e][c][p] = (B^T d[c][p] B)[e]            the P = N * TH * TW input tiles (rows 2 * th - PH .. + 3)
//   M[e] = U[e] (O x C) @ V[e] (C x P)         16 GEMMs, one batched call on hetnn's GEMM kernels
//   y[n][o][2 th + i][2 tw + j] = act((A^T M A)[i][j] + bias[o])
// with G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1], B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],
// A^T = [1 1 1 0; 0 1 -1 -1]. Their entries are 0, +-1 and +-1/2, so the transforms add a few roundings per element:
// the error stays of the order of the direct sum's (tests/test_conv_winograd.py bounds it against float64).
// U, V and M are REAL (float32 also for float16/bfloat16 storage, float64 for float64).
#include "common.cl"

__kernel void winograd_filter(const int O, const int C, __global const STORAGE* restrict w,
                              __global REAL* restrict u) {
  const int c = get_global_id(0), o = get_global_id(1);
  if (c >= C || o >= O) return;
  __global const STORAGE* g = w + ((long)o * C + c) * 9;
  REAL t[4][3];
  for (int j = 0; j < 3; ++j) {  // t = G g
    const REAL g0 = LOAD1(g, j), g1 = LOAD1(g, 3 + j), g2 = LOAD1(g, 6 + j);
    t[0][j] = g0;
    t[1][j] = (g0 + g1 + g2) * (REAL)0.5;
    t[2][j] = (g0 - g1 + g2) * (REAL)0.5;
    t[3][j] = g2;
  }
  const long plane = (long)O * C, at = (long)o * C + c;
  for (int i = 0; i < 4; ++i) {  // U = t G^T
    u[(4 * i + 0) * plane + at] = t[i][0];
    u[(4 * i + 1) * plane + at] = (t[i][0] + t[i][1] + t[i][2]) * (REAL)0.5;
    u[(4 * i + 2) * plane + at] = (t[i][0] - t[i][1] + t[i][2]) * (REAL)0.5;
    u[(4 * i + 3) * plane + at] = t[i][2];
  }
}

// global (TH * TW, C, N): one work item per input tile and channel.
__kernel void winograd_input(const int C, const int H, const int W, const int TH, const int TW, const int PH,
                             const int PW, const long P, __global const STORAGE* restrict x,
                             __global REAL* restrict v) {
  const int q = get_global_id(0), c = get_global_id(1);
  const long n = get_global_id(2);
  if (q >= TH * TW) return;
  const int th = q / TW, tw = q - th * TW;
  const int ih0 = 2 * th - PH, iw0 = 2 * tw - PW;
  __global const STORAGE* img = x + (n * C + c) * (long)H * W;
  REAL d[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const int ih = ih0 + i, iw = iw0 + j;
      d[i][j] = ih >= 0 && ih < H && iw >= 0 && iw < W ? LOAD1(img, (long)ih * W + iw) : (REAL)0;
    }
  REAL t[4][4];
  for (int j = 0; j < 4; ++j) {  // t = B^T d
    t[0][j] = d[0][j] - d[2][j];
    t[1][j] = d[1][j] + d[2][j];
    t[2][j] = d[2][j] - d[1][j];
    t[3][j] = d[1][j] - d[3][j];
  }
  const long plane = (long)C * P, at = (long)c * P + n * TH * TW + q;
  for (int i = 0; i < 4; ++i) {  // V = t B
    v[(4 * i + 0) * plane + at] = t[i][0] - t[i][2];
    v[(4 * i + 1) * plane + at] = t[i][1] + t[i][2];
    v[(4 * i + 2) * plane + at] = t[i][2] - t[i][1];
    v[(4 * i + 3) * plane + at] = t[i][1] - t[i][3];
  }
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
  REAL s[2][4];
  for (int j = 0; j < 4; ++j) {  // s = A^T M
    const REAL m0 = m[j * plane + at], m1 = m[(4 + j) * plane + at], m2 = m[(8 + j) * plane + at],
               m3 = m[(12 + j) * plane + at];
    s[0][j] = m0 + m1 + m2;
    s[1][j] = m1 - m2 - m3;
  }
  const REAL b = has_bias ? LOAD1(bias, o) : (REAL)0;
  __global STORAGE* out = y + (n * O + o) * (long)OH * OW;
  for (int i = 0; i < 2; ++i) {  // A^T M A
    const int oh = 2 * th + i;
    if (oh >= OH) break;
    const REAL r[2] = {s[i][0] + s[i][1] + s[i][2], s[i][1] - s[i][2] - s[i][3]};
    for (int j = 0; j < 2; ++j) {
      const int ow = 2 * tw + j;
      if (ow < OW) STORE1(ACTIVATE(r[j] + b, act), out, (long)oh * OW + ow);
    }
  }
}
