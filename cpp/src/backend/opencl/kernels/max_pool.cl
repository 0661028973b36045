// max_pool.cl: 2-D max pooling over NCHW planes, forward and backward (PyTorch semantics).
//
// The kernel size is compiled in (-DKH/-DKW, one program per size and dtype, cached like every other kernel) so
// the tap loops of small windows unroll fully; stride, padding and dilation are arguments, so a parameter sweep does not pay a
// compile per combination. One work-item per output (forward, index check) or per input element
// (backward): neighbouring work-items touch neighbouring addresses, which coalesces on GPUs and vectorises across
// work-items on CPU devices (PoCL).
#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#ifndef KH
#define KH 2
#endif
#ifndef KW
#define KW 2
#endif
// Small windows unroll fully. Wide ones loop: an unrolled (1, 65) window took 34-43 s to compile when its binary was
// exported for the disk cache (1.3 s otherwise), (1, 255) 158 s.
#if KH * KW <= 64
#define TAPS_UNROLL _Pragma("unroll")
#else
#define TAPS_UNROLL _Pragma("nounroll")
#endif
// Storage and compare types. 16-bit data is compared in float and copied bit-exact (a max selects, never rounds);
// gradients are summed in float and rounded once.
#if defined(INT_T)
// Integer images (int8, uint8, int32, int64): compared as themselves, no NaN, an empty window's maximum the type's
// lowest value (INT_LOWEST). Max pooling only: the backward takes floating-point gradients.
#define STORAGE INT_T
#define VAL(p, i) ((p)[i])
#define ACC INT_T
#define STORE_ACC(v, p, i) ((p)[i] = (v))
#define NEG_INF_STORAGE ((INT_T)(INT_LOWEST))
#define ACC_LOWEST ((INT_T)(INT_LOWEST))
#define IS_NAN(v) 0
#define NEG_ZERO(v) 0
#elif defined(STORE_HALF)
#define STORAGE ushort
#define VAL(p, i) vload_half((i), (__global const half*)(p))
#define ACC float
#define STORE_ACC(v, p, i) vstore_half_rte((v), (i), (__global half*)(p))
#define NEG_INF_STORAGE ((ushort)0xFC00)
#elif defined(STORE_BF16)
#define STORAGE ushort
#define VAL(p, i) as_float(((uint)(p)[i]) << 16)
#define ACC float
#include "bf16.cl"
#define STORE_ACC(v, p, i) ((p)[i] = bf16_from_float(v))
#define NEG_INF_STORAGE ((ushort)0xFF80)
#else
#ifndef REAL
#define REAL float
#endif
#define STORAGE REAL
#define VAL(p, i) ((p)[i])
#define ACC REAL
#define STORE_ACC(v, p, i) ((p)[i] = (v))
#define NEG_INF_STORAGE ((REAL)(-INFINITY))
#endif
#ifndef ACC_LOWEST
#define ACC_LOWEST (-INFINITY)
#define IS_NAN(v) isnan(v)
#define NEG_ZERO(v) (((v) == 0) & signbit(v))
#endif

// First in-bounds position of a dilated window starting at `s` (PyTorch's initial index).
static inline int first_inside(int s, int d) { return s >= 0 ? s : s + (-s + d - 1) / d * d; }

// The window arguments every kernel starts with.
#define POOL_ARGS const int H, const int W, const int OH, const int OW, const int SH, const int SW, const int PH, \
    const int PW, const int DH, const int DW

// Row of a flat index without a division per element: float estimate, then exact integer fix-up.
static inline int row_of(long v, int W, float inv_w) {
  long r = (long)((float)v * inv_w);
  while (r * W > v) --r;
  while ((r + 1) * W <= v) ++r;
  return (int)r;
}

// Whether index v of output (oh, ow) lies on its window's grid inside the plane, or the window holds no input
// position at all (then its index carries no gradient and is not checked).
// Whether index v lies on window (oh, ow)'s grid inside the plane: the only indices that carry a gradient.
static inline int index_in_window(long v, int oh, int ow, POOL_ARGS, float inv_w) {
  const int hs = oh * SH - PH, ws = ow * SW - PW;
  if (v < 0 || v >= (long)H * W) return 0;
  const int r = row_of(v, W, inv_w), c = (int)(v - (long)r * W);
  const int dr = r - hs, dc = c - ws;
  return dr >= 0 && dc >= 0 && dr <= (KH - 1) * DH && dc <= (KW - 1) * DW && (DH == 1 || dr % DH == 0) &&
         (DW == 1 || dc % DW == 0);
}

#ifdef ZERO_PAD
// Zero padding (-DZERO_PAD): a tap of window (oh, ow) on rows [-PH, 0) or [H, H + PH), or on the matching columns,
// reads 0 at index -1 (core/pool2d.cpp's pool_window_padded).
static inline int window_padded(int oh, int ow, POOL_ARGS) {
  const int hs = oh * SH - PH, ws = ow * SW - PW;
  int row_in = 0, row_pad = 0, col_in = 0, col_pad = 0;
  for (int i = 0; i < KH; ++i) {
    const int r = hs + i * DH;
    row_in |= r >= 0 && r < H;
    row_pad |= r < 0 || (r >= H && r < H + PH);
  }
  for (int j = 0; j < KW; ++j) {
    const int c = ws + j * DW;
    col_in |= c >= 0 && c < W;
    col_pad |= c < 0 || (c >= W && c < W + PW);
  }
  return (row_pad && (col_in || col_pad)) || (col_pad && row_in);
}
#endif

// A valid index: on its window's grid, or any value for a window with no input position at all (its forward wrote
// the window's first grid point, which may alias another element: such an index must never receive a gradient),
// or -1 where the zero padding won.
static inline int index_ok(long v, int oh, int ow, POOL_ARGS, float inv_w) {
  if (index_in_window(v, oh, ow, H, W, OH, OW, SH, SW, PH, PW, DH, DW, inv_w)) return 1;
#ifdef ZERO_PAD
  if (v == -1 && window_padded(oh, ow, H, W, OH, OW, SH, SW, PH, PW, DH, DW)) return 1;
#endif
  const int hs = oh * SH - PH, ws = ow * SW - PW;
  const int h0 = first_inside(hs, DH), w0 = first_inside(ws, DW);
  return h0 >= H || h0 > hs + (KH - 1) * DH || w0 >= W || w0 > ws + (KW - 1) * DW;
}

// global = (OW, OH, planes), rounded up to the work-group size.
__kernel void max_pool2d_fwd(POOL_ARGS, const int with_indices, __global const STORAGE* x, __global STORAGE* y,
                             __global long* indices) {
  const int ow = get_global_id(0), oh = get_global_id(1);
  const long plane = get_global_id(2);
  if (ow >= OW || oh >= OH) return;
  __global const STORAGE* xp = x + plane * H * W;
  const int hs = oh * SH - PH, ws = ow * SW - PW;
  STORAGE best = NEG_INF_STORAGE;
  ACC bestv = ACC_LOWEST;
  int where = first_inside(hs, DH) * W + first_inside(ws, DW);
TAPS_UNROLL
  for (int i = 0; i < KH; ++i) {
    const int ih = hs + i * DH;
    if (ih < 0 || ih >= H) continue;
TAPS_UNROLL
    for (int j = 0; j < KW; ++j) {
      const int iw = ws + j * DW;
      if (iw < 0 || iw >= W) continue;
      const int at = ih * W + iw;
      const STORAGE s = xp[at];
      const ACC v = VAL(xp, at);
      if (v > bestv || IS_NAN(v)) {  // NaN propagates; ties keep the first maximum
        bestv = v;
        best = s;
        where = at;
      }
    }
  }
  const long o = (plane * OH + oh) * OW + ow;
  y[o] = best;
  if (with_indices) indices[o] = where;
}

#ifdef ZERO_PAD
// Zero padding: the windows that may reach the padding (core/pool2d.h's PoolPadBands) recomputed after the forward
// with the padding's taps read as 0 at index -1, in the forward's order (NaN wins, else the first maximum).
// rows_band 1: global = (OW, T + OH - B, planes), the whole rows [0, T) and [B, OH); 0: global = (L + OW - R,
// B - T, planes), columns [0, L) and [R, OW) of the rows between.
__kernel void max_pool2d_zero_pad(POOL_ARGS, const int T, const int B, const int L, const int R, const int rows_band,
                                  const int with_indices, __global const STORAGE* x, __global STORAGE* y,
                                  __global long* indices) {
  const int gx = get_global_id(0), gy = get_global_id(1);
  const long plane = get_global_id(2);
  int oh, ow;
  if (rows_band) {
    ow = gx;
    oh = gy < T ? gy : B + (gy - T);
    if (ow >= OW || oh >= OH) return;
  } else {
    ow = gx < L ? gx : R + (gx - L);
    oh = T + gy;
    if (ow >= OW || oh >= B) return;
  }
  __global const STORAGE* xp = x + plane * H * W;
  const int hs = oh * SH - PH, ws = ow * SW - PW;
  int found = 0;
  STORAGE best = NEG_INF_STORAGE;
  ACC bestv = ACC_LOWEST;
  long where = 0;
  for (int i = 0; i < KH; ++i) {
    const int r = hs + i * DH;
    const int rin = r >= 0 && r < H;
    if (!rin && !(r < 0 || r < H + PH)) continue;  // past the bottom padding (ceil_mode)
    for (int j = 0; j < KW; ++j) {
      const int c = ws + j * DW;
      const int cin = c >= 0 && c < W;
      if (!cin && !(c < 0 || c < W + PW)) continue;
      STORAGE s = (STORAGE)0;
      long at = -1;
      if (rin && cin) {
        at = (long)r * W + c;
        s = xp[at];
      }
      const ACC v = rin && cin ? VAL(xp, at) : (ACC)0;
      if (!found || v > bestv || IS_NAN(v)) {
        found = 1;
        bestv = v;
        best = s;
        where = at;
      }
    }
  }
  if (!found) return;  // no tap on the input or its padding: the forward's result stands
  const long o = (plane * OH + oh) * OW + ow;
  y[o] = best;
  if (with_indices) indices[o] = where;
}
#endif

// Sets *bad to 1 when an index does not lie on its window's grid inside the plane (the host then finds and names
// the first one); windows with no input position at all are skipped (their index carries no gradient).
__kernel void max_pool2d_check(POOL_ARGS, __global const long* indices, __global int* bad) {
  const int ow = get_global_id(0), oh = get_global_id(1);
  const long plane = get_global_id(2);
  if (ow >= OW || oh >= OH) return;
  if (!index_ok(indices[(plane * OH + oh) * OW + ow], oh, ow, H, W, OH, OW, SH, SW, PH, PW, DH, DW, 1.0f / W))
    *bad = 1;  // a benign race: every writer stores 1
}

// Gather form of the scatter: each input element sums the gradients of the windows that contain it and chose it,
// so overlapping windows need no atomics and the result does not depend on scheduling.
// global = (W, H, planes), rounded up.
__kernel void max_pool2d_bwd(POOL_ARGS, __global const STORAGE* gy, __global const long* indices,
                             __global STORAGE* gx) {
  const int iw = get_global_id(0), ih = get_global_id(1);
  const long plane = get_global_id(2);
  if (iw >= W || ih >= H) return;
  const long me = (long)ih * W + iw;
  const long obase = plane * OH * OW;
  ACC acc = 0;
TAPS_UNROLL
  for (int i = 0; i < KH; ++i) {
    const int t = ih + PH - i * DH;  // = oh * SH for the window (oh) whose row i is ih
    if (t < 0 || t % SH) continue;
    const int oh = t / SH;
    if (oh >= OH) continue;
TAPS_UNROLL
    for (int j = 0; j < KW; ++j) {
      const int u = iw + PW - j * DW;
      if (u < 0 || u % SW) continue;
      const int ow = u / SW;
      if (ow >= OW) continue;
      const long o = obase + (long)oh * OW + ow;
      if (indices[o] == me) acc += VAL(gy, o);
    }
  }
  STORE_ACC(acc, gx, plane * H * W + me);
}

// ---- CPU-device variants -------------------------------------------------------------------------------------
// One work-item per output row (forward, check) or input row (backward), work-groups of one: the column loop is a
// plain loop over contiguous memory that the device compiler vectorises, as the host loops in max_pool_cpu.cpp (a
// work-item per output left PoCL at 2 GB/s on a 32x64x112x112 input, these reach the host's memory speed).

// NaN wins; ties keep the first maximum. The indexed and plain scans are separate loops so that neither carries
// the other's stores (a conditional store to a possibly aliased buffer blocks vectorisation).
#define ROW_SCAN(STRIDE)                                   \
  for (int ow = lo; ow < hi; ++ow) {                       \
    const int at = ih * W + ow * (STRIDE) + off;           \
    const STORAGE s = xp[at];                              \
    const ACC v = VAL(xp, at), cur = VAL(yr, ow);          \
    yr[ow] = ((v > cur) | IS_NAN(v)) ? s : yr[ow];          \
  }
#define ROW_SCAN_IDX(STRIDE)                               \
  for (int ow = lo; ow < hi; ++ow) {                       \
    const int at = ih * W + ow * (STRIDE) + off;           \
    const STORAGE s = xp[at];                              \
    const ACC v = VAL(xp, at), cur = VAL(yr, ow);          \
    const int take = (v > cur) | IS_NAN(v);                 \
    yr[ow] = take ? s : yr[ow];                            \
    ir[ow] = take ? (long)at : ir[ow];                     \
  }
#define ROW_SCANS(SCAN) \
  if (SW == 1) {        \
    SCAN(1)             \
  } else if (SW == 2) { \
    SCAN(2)             \
  } else {              \
    SCAN(SW)            \
  }

// Output columns [tap_lo, tap_hi) read an input column inside the row for a tap at offset off (iw = ow * SW + off).
static inline int tap_lo(const int off, const int SW) { return off >= 0 ? 0 : (-off + SW - 1) / SW; }
static inline int tap_hi(const int off, const int W, const int OW, const int SW) {
  return W - 1 - off >= 0 ? min(OW, (W - 1 - off) / SW + 1) : 0;
}
// SCAN over every tap (i, j) of output row oh's window whose input row is inside.
#define FOR_EACH_TAP(SCAN)                                       \
  for (int i = 0; i < KH; ++i) {                                 \
    const int ih = hs + i * DH;                                  \
    if (ih < 0 || ih >= H) continue;                             \
    for (int j = 0; j < KW; ++j) {                               \
      const int off = j * DW - PW;                               \
      const int lo = tap_lo(off, SW), hi = tap_hi(off, W, OW, SW); \
      ROW_SCANS(SCAN)                                            \
    }                                                            \
  }

// Values only: output row yr (window rows from hs) one tap at a time.
static inline void fwd_row_taps(POOL_ARGS, __global const STORAGE* restrict xp, __global STORAGE* restrict yr,
                         const int hs) {
  for (int ow = 0; ow < OW; ++ow) yr[ow] = NEG_INF_STORAGE;
  FOR_EACH_TAP(ROW_SCAN)
}

__kernel void max_pool2d_fwd_rows(POOL_ARGS, const int with_indices, __global const STORAGE* restrict x,
                                  __global STORAGE* restrict y, __global long* restrict indices) {
  const int oh = get_global_id(0);
  const long plane = get_global_id(1);
  if (oh >= OH) return;
  __global const STORAGE* restrict xp = x + plane * H * W;
  __global STORAGE* restrict yr = y + (plane * OH + oh) * OW;
  const int hs = oh * SH - PH;
  if (!with_indices) {
    fwd_row_taps(H, W, OH, OW, SH, SW, PH, PW, DH, DW, xp, yr, hs);
    return;
  }
  __global long* restrict ir = indices + (plane * OH + oh) * OW;
  for (int ow = 0; ow < OW; ++ow) yr[ow] = NEG_INF_STORAGE;
  const int h0 = first_inside(hs, DH);
  const int inside_from = min(OW, (PW + SW - 1) / SW);  // windows starting at w >= 0 need no adjustment
  for (int ow = 0; ow < inside_from; ++ow) ir[ow] = (long)h0 * W + first_inside(ow * SW - PW, DW);
  for (int ow = inside_from; ow < OW; ++ow) ir[ow] = (long)h0 * W + ow * SW - PW;
  FOR_EACH_TAP(ROW_SCAN_IDX)
}

// Values only, windows of several rows: the column-wise maximum of the window's rows first (`vb`, W entries of
// local memory: one contiguous pass, no strided loads), then the taps of that single row (`hb`, OW entries, holds
// the edge outputs whose taps leave the input). A row outside the input is replaced by one inside (a repeated row
// changes no maximum). Exact for ordinary values and NaN (NaN is kept once taken); among equal zeros the first in
// window order decides the sign, which a column-wise maximum loses, so a row holding -0 takes the tap-by-tap loops.
#define VB_SCAN(STRIDE)                                   \
  for (int ow = lo; ow < hi; ++ow) {                      \
    const ACC v = vb[ow * (STRIDE) + off], cur = hb[ow];  \
    hb[ow] = ((v > cur) | IS_NAN(v)) ? v : cur;            \
  }
#define VB_FUSED(STRIDE)                                  \
  for (int ow = lo_all; ow < hi_all; ++ow) {              \
    ACC b = vb[ow * (STRIDE) + off0];                     \
    _Pragma("unroll") for (int j = 1; j < KW; ++j) {      \
      const ACC v = vb[ow * (STRIDE) + off0 + j * DW];    \
      b = ((v > b) | IS_NAN(v)) ? v : b;                   \
    }                                                     \
    STORE_ACC(b, yr, ow);                                 \
  }

__kernel void max_pool2d_fwd_rows_sep(POOL_ARGS, __global const STORAGE* restrict x, __global STORAGE* restrict y,
                                      __local ACC* restrict vb, __local ACC* restrict hb) {
  const int oh = get_global_id(0);
  const long plane = get_global_id(1);
  if (oh >= OH) return;
  __global const STORAGE* restrict xp = x + plane * H * W;
  __global STORAGE* restrict yr = y + (plane * OH + oh) * OW;
  const int hs = oh * SH - PH, h0 = first_inside(hs, DH);
  if (h0 >= H || h0 > hs + (KH - 1) * DH) {  // no window row inside the input
    for (int ow = 0; ow < OW; ++ow) yr[ow] = NEG_INF_STORAGE;
    return;
  }
  __global const STORAGE* r[KH];
TAPS_UNROLL
  for (int i = 0; i < KH; ++i) {
    const int ih = hs + i * DH;
    r[i] = xp + (long)(ih >= 0 && ih < H ? ih : h0) * W;
  }
  int negzero = 0;
  for (int iw = 0; iw < W; ++iw) {
    ACC v = VAL(r[0], iw);
    negzero |= NEG_ZERO(v);
TAPS_UNROLL
    for (int i = 1; i < KH; ++i) {
      const ACC u = VAL(r[i], iw);
      negzero |= NEG_ZERO(u);
      v = ((u > v) | IS_NAN(u)) ? u : v;
    }
    vb[iw] = v;
  }
  if (negzero) {
    fwd_row_taps(H, W, OH, OW, SH, SW, PH, PW, DH, DW, xp, yr, hs);
    return;
  }
  // Tap j reads input column ow*SW + off_j for outputs [lo_j, hi_j); [lo_all, hi_all) is where every tap does.
  const int off0 = -PW;
  int lo_all = 0, hi_all = OW;
TAPS_UNROLL
  for (int j = 0; j < KW; ++j) {
    lo_all = max(lo_all, tap_lo(j * DW - PW, SW));
    hi_all = min(hi_all, tap_hi(j * DW - PW, W, OW, SW));
  }
  if (lo_all >= hi_all) lo_all = hi_all = 0;  // narrow rows: all outputs go through the tap loops
  for (int ow = 0; ow < OW; ++ow) hb[ow] = ACC_LOWEST;
TAPS_UNROLL
  for (int j = 0; j < KW; ++j) {  // edge outputs, one tap at a time
    const int off = j * DW - PW;
    const int tlo = tap_lo(off, SW), thi = tap_hi(off, W, OW, SW);
    int lo = tlo, hi = min(thi, lo_all);
    ROW_SCANS(VB_SCAN)
    lo = max(tlo, hi_all), hi = thi;
    ROW_SCANS(VB_SCAN)
  }
  for (int ow = 0; ow < lo_all; ++ow) STORE_ACC(hb[ow], yr, ow);
  for (int ow = hi_all; ow < OW; ++ow) STORE_ACC(hb[ow], yr, ow);
  if (SW == 1) {
    VB_FUSED(1)
  } else if (SW == 2) {
    VB_FUSED(2)
  } else {
    VB_FUSED(SW)
  }
}


// Whether every index of output row oh (indices ir) lies on its window's grid inside the plane. Undilated windows:
// v is tap (i, j) iff v - (hs*W + ws) - i*W lies in [0, KW) for some window row i inside the input (such windows
// are never empty); branch-free, so the loop vectorises. Dilated ones: index_ok per index.
static inline int row_indices_ok(POOL_ARGS, __global const long* restrict ir, const int oh, const float inv_w) {
  int fail = 0;
  if (DH == 1 && DW == 1) {
    const int hs = oh * SH - PH;
    for (int ow = 0; ow < OW; ++ow) {
      const int ws = ow * SW - PW;
      const long rel = ir[ow] - ((long)hs * W + ws);
      int ok = 0;
TAPS_UNROLL
      for (int i = 0; i < KH; ++i) {
        const long j = rel - (long)i * W;
        ok |= ((ulong)j < (ulong)KW) & ((uint)(hs + i) < (uint)H) & ((ulong)(ws + j) < (ulong)W);
      }
      fail |= !ok;
    }
  } else {
    for (int ow = 0; ow < OW; ++ow) fail |= !index_ok(ir[ow], oh, ow, H, W, OH, OW, SH, SW, PH, PW, DH, DW, inv_w);
  }
  return !fail;
}

// Scatter of whole output rows into a zeroed gradient (CPU devices; a float accumulator for 16-bit data), checking
// each index on the way (sets *bad; a bad index is not written). Work-item (b, plane) takes output rows [b*R, b*R + R) of block b = gid * block_step + block_first; blocks are chosen by the host so
// that blocks running together never reach the same input rows (every block when windows do not overlap in H,
// else even blocks, then odd ones).
__kernel void max_pool2d_bwd_scatter(POOL_ARGS, const int R, const int block_step, const int block_first,
                                     const int blocks, const int zero_mode, __global const STORAGE* restrict gy,
                                     __global const long* restrict indices, __global ACC* restrict gx,
                                     __global int* bad) {
  const int b = get_global_id(0) * block_step + block_first;
  const float inv_w = 1.0f / W;
  int fail = 0;
  const long plane = get_global_id(1);
  const int oh0 = b * R, oh1 = min(OH, oh0 + R);
  const long hw = (long)H * W;
  __global ACC* gp = gx + plane * hw;
  // Zero the rows this block owns (zero_mode 1; PoolScatterBlocks::owned_rows in core/max_pool.cpp), or its own and the
  // next block's (2: overlapping windows, first phase), just before scattering into them: no separate fill pass.
  if (zero_mode) {
    const int last = zero_mode == 2 && b + 1 < blocks ? b + 1 : b;
    const int z0 = b == 0 ? 0 : clamp(b * R * SH - PH, 0, H);
    const int z1 = last >= blocks - 1 ? H : clamp((last + 1) * R * SH - PH, 0, H);
    for (long q = (long)z0 * W; q < (long)z1 * W; ++q) gp[q] = 0;
  }
  const int plain = DH == 1 && DW == 1;
  for (int oh = oh0; oh < oh1; ++oh) {
    __global const long* ir = indices + (plane * OH + oh) * OW;
    __global const STORAGE* g = gy + (plane * OH + oh) * OW;
    if (plain && row_indices_ok(H, W, OH, OW, SH, SW, PH, PW, DH, DW, ir, oh, inv_w)) {
      for (int ow = 0; ow < OW; ++ow) gp[ir[ow]] += VAL(g, ow);
      continue;
    }
    for (int ow = 0; ow < OW; ++ow) {
      const long v = ir[ow];
      const int inside = index_in_window(v, oh, ow, H, W, OH, OW, SH, SW, PH, PW, DH, DW, inv_w);
      fail |= !inside && !index_ok(v, oh, ow, H, W, OH, OW, SH, SW, PH, PW, DH, DW, inv_w);
      if (inside) gp[v] += VAL(g, ow);
    }
  }
  if (fail) *bad = 1;
}

// 16-bit gradients: the scatter above sums into a float buffer; this rounds it once into the 16-bit gradient.
// Work-item i takes elements [i*CH, i*CH + CH).
__kernel void max_pool2d_narrow(const long n, const int CH, __global const ACC* restrict acc,
                                __global STORAGE* restrict out) {
  const long b = (long)get_global_id(0) * CH, e = min(n, b + CH);
  for (long i = b; i < e; ++i) STORE_ACC(acc[i], out, i);
}
