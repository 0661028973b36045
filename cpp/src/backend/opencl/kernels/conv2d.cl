// conv2d.cl: direct 2-D convolution (PyTorch's conv2d, a cross-correlation), NCHW input, OIHW weights, one
// work-item per output element: neighbouring work-items take neighbouring output columns, which coalesces on GPUs
// and vectorises across work-items on PoCL. Bias and activation are applied before the single store; 16-bit data
// is summed in float and rounded once (common.cl). The kernel size is compiled in (-DKH/-DKW) so loops unroll.
#include "common.cl"
#ifndef KH
#define KH 3
#endif
#ifndef KW
#define KW 3
#endif

// CG: input channels per group; OG: output channels per group; y is (N, O, OH, OW), global (OW, OH, N * O).
__kernel void conv2d_fwd(const int C, const int H, const int W, const int O, const int OH, const int OW,
                         const int CG, const int OG, const int SH, const int SW, const int PH, const int PW,
                         const int DH, const int DW, const int has_bias, const int act,
                         __global const STORAGE* x, __global const STORAGE* w, __global const STORAGE* bias,
                         __global STORAGE* y) {
  const int ow = get_global_id(0), oh = get_global_id(1);
  const long no = get_global_id(2);
  if (ow >= OW || oh >= OH) return;
  const int o = (int)(no % O);
  const long n = no / O;
  const int c0 = (o / OG) * CG;
  const int hs = oh * SH - PH, ws = ow * SW - PW;
  REAL sum = has_bias ? LOAD1(bias, o) : (REAL)0;
  for (int c = 0; c < CG; ++c) {
    __global const STORAGE* xp = x + (n * C + c0 + c) * H * W;
    __global const STORAGE* wp = w + ((long)o * CG + c) * (KH * KW);
#pragma unroll
    for (int i = 0; i < KH; ++i) {
      const int ih = hs + i * DH;
      if (ih < 0 || ih >= H) continue;
#pragma unroll
      for (int j = 0; j < KW; ++j) {
        const int iw = ws + j * DW;
        if (iw >= 0 && iw < W) sum += LOAD1(xp, ih * W + iw) * LOAD1(wp, i * KW + j);
      }
    }
  }
  STORE1(ACTIVATE(sum, act), y, (no * OH + oh) * OW + ow);
}

// im2col for the GEMM path: cols (N, CK, OH*OW) with CK = C*KH*KW, row (c*KH + i)*KW + j holding the input each
// output position sees through kernel tap (i, j) of channel c (0 outside the input). global (OH*OW, CK, N).
__kernel void conv2d_im2col(const int C, const int H, const int W, const int OH, const int OW, const int SH,
                            const int SW, const int PH, const int PW, const int DH, const int DW,
                            __global const STORAGE* x, __global STORAGE* cols) {
  const int p = get_global_id(0), r = get_global_id(1);
  const long n = get_global_id(2);
  const int ohw = OH * OW;
  if (p >= ohw) return;
  const int j = r % KW, i = (r / KW) % KH, c = r / (KW * KH);
  const int ih = (p / OW) * SH - PH + i * DH, iw = (p % OW) * SW - PW + j * DW;
  const long dst = (n * (C * KH * KW) + r) * ohw + p;
  const int inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
  STORE1(inside ? LOAD1(x, ((n * C + c) * H + ih) * W + iw) : (REAL)0, cols, dst);
}

// The same columns for CPU-like devices, one output row per work-item (global (OH, CK, N)): the row's inside
// stretch [lo, hi) is a plain strided copy (contiguous for stride 1, which the compiler vectorises) and the rest
// zeros. The one-element-per-work-item form spent most of its time on index arithmetic under PoCL (2.6 GB/s).
__kernel void conv2d_im2col_rows(const int C, const int H, const int W, const int OH, const int OW, const int SH,
                                 const int SW, const int PH, const int PW, const int DH, const int DW,
                                 __global const STORAGE* x, __global STORAGE* cols) {
  const int oh = get_global_id(0), r = get_global_id(1);
  const long n = get_global_id(2);
  if (oh >= OH) return;
  const int j = r % KW, i = (r / KW) % KH, c = r / (KW * KH);
  const int ih = oh * SH - PH + i * DH, off = j * DW - PW;  // column ow reads input column ow * SW + off
  __global STORAGE* dst = cols + ((n * (C * KH * KW) + r) * OH + oh) * (long)OW;
  int lo = OW, hi = OW;
  if (ih >= 0 && ih < H) {
    lo = off >= 0 ? 0 : min(OW, (-off + SW - 1) / SW);       // first ow with ow * SW + off >= 0
    hi = W - off <= 0 ? 0 : min(OW, (W - off + SW - 1) / SW);  // first ow with ow * SW + off >= W
    hi = max(hi, lo);
  }
  for (int ow = 0; ow < lo; ++ow) STORE1((REAL)0, dst, ow);
  if (hi > lo) {
    __global const STORAGE* src = x + ((n * C + c) * H + ih) * (long)W + off;
    if (SW == 1)
      for (int ow = lo; ow < hi; ++ow) STORE1(LOAD1(src, ow), dst, ow);
    else
      for (int ow = lo; ow < hi; ++ow) STORE1(LOAD1(src, (long)ow * SW), dst, ow);
  }
  for (int ow = hi; ow < OW; ++ow) STORE1((REAL)0, dst, ow);
}

// y (N, O, P) = act(y + bias[o]) in place, after the GEMM. global (P, O, N).
__kernel void conv2d_bias_act(const int O, const int P, const int act, __global const STORAGE* bias,
                              __global STORAGE* y) {
  const int p = get_global_id(0), o = get_global_id(1);
  const long n = get_global_id(2);
  if (p >= P) return;
  const long i = (n * O + o) * P + p;
  STORE1(ACTIVATE(LOAD1(y, i) + LOAD1(bias, o), act), y, i);
}

// The output position whose window reaches input position `in` through tap `t` (one axis), or -1 when none does:
// in = out * stride - pad + t * dil. Shared by the two data-gradient kernels (gathering and col2im).
static inline int tap_output(const int in, const int pad, const int t, const int dil, const int stride,
                             const int out_size) {
  const int q = in + pad - t * dil;
  if (q < 0 || q % stride) return -1;
  const int out = q / stride;
  return out < out_size ? out : -1;
}

// Backward, by gathering (no atomics): gx[n, c, ih, iw] = sum over the outputs o of c's group and the kernel taps
// (i, j) whose window position lands on (ih, iw) of gy[n, o, oh, ow] * w[o, c', i, j]. global (W, H, N * C).
__kernel void conv2d_bwd_data(const int C, const int H, const int W, const int O, const int OH, const int OW,
                              const int CG, const int OG, const int SH, const int SW, const int PH, const int PW,
                              const int DH, const int DW, __global const STORAGE* gy, __global const STORAGE* w,
                              __global STORAGE* gx) {
  const int iw = get_global_id(0), ih = get_global_id(1);
  const long nc = get_global_id(2);
  if (iw >= W || ih >= H) return;
  const int c = (int)(nc % C);
  const long n = nc / C;
  const int g = c / CG, cl = c % CG;
  REAL sum = 0;
  for (int o = g * OG; o < (g + 1) * OG; ++o) {
    __global const STORAGE* yp = gy + (n * O + o) * OH * OW;
    __global const STORAGE* wp = w + ((long)o * CG + cl) * (KH * KW);
    for (int i = 0; i < KH; ++i) {
      const int oh = tap_output(ih, PH, i, DH, SH, OH);
      if (oh < 0) continue;
      for (int j = 0; j < KW; ++j) {
        const int ow = tap_output(iw, PW, j, DW, SW, OW);
        if (ow >= 0) sum += LOAD1(yp, oh * OW + ow) * LOAD1(wp, i * KW + j);
      }
    }
  }
  STORE1(sum, gx, (nc * H + ih) * W + iw);
}

// gw[o, c', i, j] = sum over n, oh, ow of gy[n, o, oh, ow] * x[n, c, ih, iw]; one work-item per weight element,
// global (KH * KW, CG, O). gb[o] (has_bias) by the work-item (0, 0, o).
__kernel void conv2d_bwd_weights(const int N, const int C, const int H, const int W, const int O, const int OH,
                                 const int OW, const int CG, const int OG, const int SH, const int SW, const int PH,
                                 const int PW, const int DH, const int DW, const int has_bias,
                                 __global const STORAGE* gy, __global const STORAGE* x, __global STORAGE* gw,
                                 __global STORAGE* gb) {
  const int tap = get_global_id(0), cl = get_global_id(1), o = get_global_id(2);
  if (tap >= KH * KW) return;
  const int i = tap / KW, j = tap % KW, c = (o / OG) * CG + cl;
  REAL sum = 0, bsum = 0;
  for (int n = 0; n < N; ++n) {
    __global const STORAGE* yp = gy + ((long)n * O + o) * OH * OW;
    __global const STORAGE* xp = x + ((long)n * C + c) * H * W;
    for (int oh = 0; oh < OH; ++oh) {
      const int ih = oh * SH - PH + i * DH;
      const int row_in = ih >= 0 && ih < H;
      for (int ow = 0; ow < OW; ++ow) {
        const REAL g = LOAD1(yp, oh * OW + ow);
        bsum += g;
        const int iw = ow * SW - PW + j * DW;
        if (row_in && iw >= 0 && iw < W) sum += g * LOAD1(xp, ih * W + iw);
      }
    }
  }
  STORE1(sum, gw, ((long)o * CG + cl) * (KH * KW) + tap);
  if (has_bias && tap == 0 && cl == 0) STORE1(bsum, gb, o);
}

// col2im for the GEMM backward: gx[n, c, ih, iw] = sum of dcols[n, (c*KH + i)*KW + j, oh*OW + ow] over the taps
// (i, j) whose window position (oh, ow) lands on (ih, iw). Gathers (no atomics). global (W, H, N * C).
__kernel void conv2d_col2im(const int C, const int H, const int W, const int OH, const int OW, const int SH,
                            const int SW, const int PH, const int PW, const int DH, const int DW,
                            __global const STORAGE* dcols, __global STORAGE* gx) {
  const int iw = get_global_id(0), ih = get_global_id(1);
  const long nc = get_global_id(2);
  if (iw >= W || ih >= H) return;
  const int c = (int)(nc % C);
  const long n = nc / C;
  const int ohw = OH * OW;
  __global const STORAGE* base = dcols + (n * C + c) * (long)(KH * KW) * ohw;
  REAL sum = 0;
  for (int i = 0; i < KH; ++i) {
    const int oh = tap_output(ih, PH, i, DH, SH, OH);
    if (oh < 0) continue;
    for (int j = 0; j < KW; ++j) {
      const int ow = tap_output(iw, PW, j, DW, SW, OW);
      if (ow >= 0) sum += LOAD1(base, (long)(i * KW + j) * ohw + oh * OW + ow);
    }
  }
  STORE1(sum, gx, (nc * H + ih) * W + iw);
}

// col2im for CPU-like devices, used for float32 and float64 (the row accumulates in place, in the data type): one
// input row (n, c, ih) per work-item, global (H, C, N). Each tap (i, j) adds a shifted run of its column row to the
// input row, in the order of conv2d_col2im's sum (same result); for stride 1 the run is a contiguous add that
// vectorises.
__kernel void conv2d_col2im_rows(const int C, const int H, const int W, const int OH, const int OW, const int SH,
                                 const int SW, const int PH, const int PW, const int DH, const int DW,
                                 __global const STORAGE* dcols, __global STORAGE* gx) {
  const int ih = get_global_id(0), c = get_global_id(1);
  const long n = get_global_id(2);
  if (ih >= H) return;
  const int ohw = OH * OW;
  __global const STORAGE* base = dcols + (n * C + c) * (long)(KH * KW) * ohw;
  __global STORAGE* out = gx + ((n * C + c) * H + ih) * (long)W;
  for (int iw = 0; iw < W; ++iw) STORE1((REAL)0, out, iw);
  for (int i = 0; i < KH; ++i) {
    const int oh = tap_output(ih, PH, i, DH, SH, OH);
    if (oh < 0) continue;
    for (int j = 0; j < KW; ++j) {
      __global const STORAGE* src = base + (long)(i * KW + j) * ohw + oh * OW;
      if (SW == 1) {  // ow = iw + shift
        const int shift = PW - j * DW, lo = max(0, -shift), hi = min(W, OW - shift);
        for (int iw = lo; iw < hi; ++iw) STORE1(LOAD1(out, iw) + LOAD1(src, iw + shift), out, iw);
      } else {
        for (int iw = 0; iw < W; ++iw) {
          const int ow = tap_output(iw, PW, j, DW, SW, OW);
          if (ow >= 0) STORE1(LOAD1(out, iw) + LOAD1(src, ow), out, iw);
        }
      }
    }
  }
}

// part[g * O + o] = sum over the images n of group g ([g * per_group, + per_group)) and positions p of gy[n, o, p]:
// a work-group of BIAS_LOCAL work-items per (o, g), reduced in local memory. With one group (G = 1) part is gb;
// otherwise (partials != 0) part holds REAL partials (not rounded to a 16-bit storage type: partials that cancel
// lost several ulps of the result) and the host sums the G rows.
#ifndef BIAS_LOCAL
#define BIAS_LOCAL 64
#endif
__kernel __attribute__((reqd_work_group_size(BIAS_LOCAL, 1, 1)))
void conv2d_bias_grad(const int N, const int O, const int P, const int per_group, const int partials,
                      __global const STORAGE* gy, __global STORAGE* part) {
  __local REAL acc[BIAS_LOCAL];
  const int t = get_local_id(0), g = get_group_id(0), o = get_group_id(1);
  const int n1 = min(N, (g + 1) * per_group);
  REAL s = 0;
  for (int n = g * per_group; n < n1; ++n) {
    const long base = ((long)n * O + o) * P;
    for (int p = t; p < P; p += BIAS_LOCAL) s += LOAD1(gy, base + p);
  }
  acc[t] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = BIAS_LOCAL / 2; h > 0; h /= 2) {
    if (t < h) acc[t] += acc[t + h];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (t != 0) return;
  if (partials) ((__global REAL*)part)[(long)g * O + o] = acc[0];
  else STORE1(acc[0], part, (long)g * O + o);
}

// The same for CPU-type devices, a work item per (o, n) (global (O, N)): part[n * O + o] (REAL partials, or gb
// itself where N = 1) = the sum of gy[n, o, :], read in order by eight accumulators, which the compiler turns into
// one vector (the work-group reduction above ran at 6.5 GB/s on PoCL).
__kernel void conv2d_bias_grad_rows(const int O, const long P, const int partials, __global const STORAGE* gy,
                                    __global STORAGE* part) {
  const int o = get_global_id(0);
  const long n = get_global_id(1), base = (n * O + o) * P;
  REAL s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  long p = 0;
  for (; p + 8 <= P; p += 8)
#pragma unroll
    for (int u = 0; u < 8; ++u) s[u] += LOAD1(gy, base + p + u);
  for (int u = 0; p < P; ++p, ++u) s[u] += LOAD1(gy, base + p);
  const REAL t = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
  if (partials) ((__global REAL*)part)[n * O + o] = t;
  else STORE1(t, part, n * O + o);
}
