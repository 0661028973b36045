// avg_pool.cl: 2-D average pooling over NCHW planes (PyTorch's avg_pool2d), one work-item per output: neighbouring
// work-items read neighbouring columns, which coalesces on GPUs and vectorises across work-items on PoCL.
// The window size is compiled in (-DKH/-DKW, one program per size and dtype, cached) so small windows unroll;
// 16-bit data is summed in float and each average rounded once (common.cl's STORE1).
#include "common.cl"
#ifndef KH
#define KH 2
#endif
#ifndef KW
#define KW 2
#endif

// count_include_pad: 1 -> divide by the window clipped to the padded input; divisor: > 0 overrides both.
__kernel void avg_pool2d_fwd(const int H, const int W, const int OH, const int OW, const int SH, const int SW,
                             const int PH, const int PW, const int count_include_pad, const int divisor,
                             __global const STORAGE* x, __global STORAGE* y) {
  const int ow = get_global_id(0), oh = get_global_id(1);
  const long plane = get_global_id(2);
  if (ow >= OW || oh >= OH) return;
  const int hs = oh * SH - PH, ws = ow * SW - PW;
  const int he = min(hs + KH, H + PH), we = min(ws + KW, W + PW);
  const int padded = (he - hs) * (we - ws);
  const int h0 = max(hs, 0), w0 = max(ws, 0), h1 = min(he, H), w1 = min(we, W);
  __global const STORAGE* xp = x + plane * H * W;
  REAL sum = 0;
#pragma unroll
  for (int i = 0; i < KH; ++i) {
    const int ih = hs + i;
    if (ih < h0 || ih >= h1) continue;
#pragma unroll
    for (int j = 0; j < KW; ++j) {
      const int iw = ws + j;
      if (iw >= w0 && iw < w1) sum += LOAD1(xp, ih * W + iw);
    }
  }
  const int inside = (h1 - h0) * (w1 - w0);
  const REAL div = divisor != 0 ? (REAL)divisor : (REAL)(count_include_pad ? padded : inside);
  STORE1(inside > 0 ? sum / div : (REAL)0, y, (plane * OH + oh) * OW + ow);
}

// The divisor of the window starting at (hs, ws) in padded coordinates: the forward's rule.
static inline REAL avg_divisor(const int hs, const int ws, const int H, const int W, const int PH, const int PW,
                        const int count_include_pad, const int divisor) {
  if (divisor != 0) return (REAL)divisor;
  const int he = min(hs + KH, H + PH), we = min(ws + KW, W + PW);
  if (count_include_pad) return (REAL)((he - hs) * (we - ws));
  return (REAL)((min(he, H) - max(hs, 0)) * (min(we, W) - max(ws, 0)));
}

// The backward gathers: one work-item per input element sums gy / divisor over the windows that hold it (no two
// work-items write the same element, so no atomics).
__kernel void avg_pool2d_bwd(const int H, const int W, const int OH, const int OW, const int SH, const int SW,
                             const int PH, const int PW, const int count_include_pad, const int divisor,
                             __global const STORAGE* gy, __global STORAGE* gx) {
  const int iw = get_global_id(0), ih = get_global_id(1);
  const long plane = get_global_id(2);
  if (iw >= W || ih >= H) return;
  const int qh = ih + PH - KH + 1, qw = iw + PW - KW + 1;
  const int oh0 = qh <= 0 ? 0 : (qh + SH - 1) / SH, oh1 = min((ih + PH) / SH, OH - 1);
  const int ow0 = qw <= 0 ? 0 : (qw + SW - 1) / SW, ow1 = min((iw + PW) / SW, OW - 1);
  __global const STORAGE* gp = gy + plane * OH * OW;
  REAL sum = 0;
  for (int oh = oh0; oh <= oh1; ++oh)
    for (int ow = ow0; ow <= ow1; ++ow)
      sum += LOAD1(gp, oh * OW + ow) /
             avg_divisor(oh * SH - PH, ow * SW - PW, H, W, PH, PW, count_include_pad, divisor);
  STORE1(sum, gx, (plane * H + ih) * W + iw);
}
