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
