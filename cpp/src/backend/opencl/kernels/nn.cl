// nn.cl: training ops (core/nn.h): activations, softmax, losses, metrics, SGD, bias gradients, minibatch gathers.
// REAL is float or double (-DREAL=double -DUSE_FP64 on devices with fp64); float16 and bfloat16 data (STORAGE,
// common.cl) are loaded into float and rounded back on store. Losses and metrics write one value per
// row into a float scratch; add_sum folds those into the one-element accumulator (a single work-item: a minibatch
// has tens to thousands of rows, and a fixed summation order keeps runs reproducible).
#include "common.cl"
#include "splitmix.cl"
#ifdef USE_FP64
#define MIN_NORMAL DBL_MIN
#else
#define MIN_NORMAL FLT_MIN
#endif

// act: 1 relu, 2 sigmoid, 3 tanh (Activation in core/ops.h).
static inline REAL act_value(REAL v, int act) { return ACTIVATE(v, act); }  // common.cl: the one formula
static inline REAL act_grad(REAL dy, REAL y, int act) {  // from the activation's output
  // relu as PyTorch's threshold_backward: y <= 0 ? 0 : dy (no 0 * inf = NaN; a NaN output passes dy on)
  return act == 1 ? (y <= 0 ? (REAL)0 : dy) : dy * (act == 2 ? y * ((REAL)1 - y) : (REAL)1 - y * y);
}

__kernel void act_fwd(const long n, const int act, __global const STORAGE* x, __global STORAGE* y) {
  const long i = get_global_id(0);
  if (i < n) STORE1(act_value(LOAD1(x, i), act), y, i);
}

__kernel void act_bwd(const long n, const int act, __global const STORAGE* dy, __global const STORAGE* y,
                      __global STORAGE* dx) {
  const long i = get_global_id(0);
  if (i < n) STORE1(act_grad(LOAD1(dy, i), LOAD1(y, i), act), dx, i);
}

// Row maximum (NaN wins, so a NaN row gives NaN everywhere) and log sum exp(x - max).
static inline REAL row_max(__global const STORAGE* x, const int cols) {
  REAL m = LOAD1(x, 0);
  for (int c = 1; c < cols; ++c) {
    const REAL v = LOAD1(x, c);
    m = (v > m || isnan(v)) ? v : m;
  }
  return m;
}
static inline REAL row_lse(__global const STORAGE* x, const int cols, const REAL m) {
  REAL s = 0;
  for (int c = 0; c < cols; ++c) s += exp(LOAD1(x, c) - m);
  return log(s);
}

// A work-item per row.
__kernel void softmax_rows(const int rows, const int cols, __global const STORAGE* x, __global STORAGE* y) {
  const int r = get_global_id(0);
  if (r >= rows) return;
  __global const STORAGE* xr = x + (long)r * cols;
  __global STORAGE* yr = y + (long)r * cols;
  const REAL m = row_max(xr, cols), lse = row_lse(xr, cols, m);
  for (int c = 0; c < cols; ++c) STORE1(exp(LOAD1(xr, c) - m - lse), yr, c);
}

// kind: 0 cross-entropy with int64 labels, 1 cross-entropy with (rows, cols) targets, 2 squared error (LossKind).
// row_loss[r] = the row's loss; grad (when has_grad) = gs * its gradient.
__kernel void loss_rows(const int kind, const int rows, const int cols, const REAL gs, const int has_grad,
                        __global const STORAGE* x, __global const long* labels, __global const STORAGE* t,
                        __global STORAGE* grad, __global float* row_loss) {
  const int r = get_global_id(0);
  if (r >= rows) return;
  __global const STORAGE* xr = x + (long)r * cols;
  __global STORAGE* gr = grad + (long)r * cols;
  REAL row = 0;
  if (kind == 2) {
    __global const STORAGE* tr = t + (long)r * cols;
    for (int c = 0; c < cols; ++c) {
      const REAL e = LOAD1(xr, c) - LOAD1(tr, c);
      row += e * e;
      if (has_grad) STORE1(gs * 2 * e, gr, c);
    }
  } else {
    const REAL m = row_max(xr, cols), lse = row_lse(xr, cols, m);
    if (kind == 0) {
      const int label = (int)clamp(labels[r], (long)0, (long)(cols - 1));  // the front checks labels
      row = -(LOAD1(xr, label) - m - lse);
      if (has_grad)
        for (int c = 0; c < cols; ++c)
          STORE1(gs * (exp(LOAD1(xr, c) - m - lse) - (c == label ? (REAL)1 : (REAL)0)), gr, c);
    } else {
      __global const STORAGE* tr = t + (long)r * cols;
      REAL tsum = 0;
      for (int c = 0; c < cols; ++c) {
        const REAL tc = LOAD1(tr, c);
        row -= tc * (LOAD1(xr, c) - m - lse);
        tsum += tc;
      }
      if (has_grad)
        for (int c = 0; c < cols; ++c) STORE1(gs * (exp(LOAD1(xr, c) - m - lse) * tsum - LOAD1(tr, c)), gr, c);
    }
  }
  row_loss[r] = (float)row;
}

// kind: 0 correct argmax (first maximum, NaN wins), 1 correct threshold at 0.5, 2 absolute error (MetricKind).
__kernel void metric_rows(const int kind, const int rows, const int cols, __global const STORAGE* x,
                          __global const long* labels, __global const STORAGE* t, __global float* row_val) {
  const int r = get_global_id(0);
  if (r >= rows) return;
  __global const STORAGE* xr = x + (long)r * cols;
  float v = 0;
  if (kind == 0) {
    int best = 0;
    REAL xb = LOAD1(xr, 0);
    for (int c = 1; c < cols; ++c) {
      const REAL xc = LOAD1(xr, c);
      if (xc > xb || (isnan(xc) && !isnan(xb))) {
        best = c;
        xb = xc;
      }
    }
    v = best == labels[r] ? 1.0f : 0.0f;
  } else {
    __global const STORAGE* tr = t + (long)r * cols;
    for (int c = 0; c < cols; ++c) {
      const REAL xc = LOAD1(xr, c), tc = LOAD1(tr, c);
      v += kind == 2 ? (float)fabs(xc - tc) : ((xc > (REAL)0.5) == (tc > (REAL)0.5) ? 1.0f : 0.0f);
    }
  }
  row_val[r] = v;
}

// acc[0] += scale * sum(vals[0..n)), summed in order by one work-item.
__kernel void add_sum(const int n, const float scale, __global const float* vals, __global float* acc) {
  if (get_global_id(0) != 0) return;
  float s = 0;
  for (int i = 0; i < n; ++i) s += vals[i];
  acc[0] += scale * s;
}

__kernel void sgd(const long n, const REAL lr, const REAL mom, const REAL wd, const int nesterov, const int has_v,
                  __global STORAGE* p, __global const STORAGE* g, __global STORAGE* v) {
  const long i = get_global_id(0);
  if (i >= n) return;
  const REAL pi = LOAD1(p, i), gi = LOAD1(g, i) + wd * pi;
  if (!has_v) {
    STORE1(pi - lr * gi, p, i);
    return;
  }
  REAL vi = mom * LOAD1(v, i) + gi;
  vi = fabs(vi) < (REAL)MIN_NORMAL ? (REAL)0 : vi;  // subnormal velocities are slow on CPU devices (nn_cpu.cpp)
  STORE1(vi, v, i);
  STORE1(pi - lr * (nesterov ? gi + mom * vi : vi), p, i);
}

// Adam / AdamW, one step (AdamDesc in core/ops.h; has_vmax: amsgrad).
__kernel void adam(const long n, const REAL b1, const REAL b2, const REAL eps, const REAL step_size,
                   const REAL inv_bc2, const REAL decay, const REAL shrink, const int has_vmax, __global STORAGE* p,
                   __global const STORAGE* g, __global STORAGE* m, __global STORAGE* v, __global STORAGE* vmax) {
  const long i = get_global_id(0);
  if (i >= n) return;
  const REAL pi = LOAD1(p, i) * shrink, gi = LOAD1(g, i) + decay * pi, m0 = LOAD1(m, i);
  REAL mi = m0 + ((REAL)1 - b1) * (gi - m0);
  REAL vi = b2 * LOAD1(v, i) + ((REAL)1 - b2) * gi * gi;
  mi = fabs(mi) < (REAL)MIN_NORMAL ? (REAL)0 : mi;  // as in sgd
  vi = vi < (REAL)MIN_NORMAL ? (REAL)0 : vi;
  STORE1(mi, m, i);
  STORE1(vi, v, i);
  REAL vu = vi;
  if (has_vmax) {
    vu = fmax(LOAD1(vmax, i), vi);
    STORE1(vu, vmax, i);
  }
  STORE1(pi - step_size * mi / (sqrt(vu) * inv_bc2 + eps), p, i);
}

// Inverted dropout (DropoutDesc): the draw is core/ops.h's dropout_draw, 24 bits of SplitMix64 over (seed, i).
static inline uint dropout_draw(const ulong seed, const ulong i) { return (uint)(splitmix64(seed, i) >> 40); }

__kernel void dropout(const long n, const ulong seed, const uint threshold, const REAL scale,
                      __global const STORAGE* x, __global STORAGE* y) {
  const long i = get_global_id(0);
  if (i < n) STORE1(LOAD1(x, i) * (dropout_draw(seed, (ulong)i) >= threshold ? scale : (REAL)0), y, i);
}

// A work-item per column: out[c] = beta * out[c] + sum_r x[r, c] (neighbouring work-items read neighbouring
// addresses).
__kernel void sum_rows(const int rows, const int cols, const REAL beta, __global const STORAGE* x,
                       __global STORAGE* out) {
  const int c = get_global_id(0);
  if (c >= cols) return;
  REAL s = 0;
  for (int r = 0; r < rows; ++r) s += LOAD1(x, (long)r * cols + c);
  STORE1(beta == 0 ? s : beta * LOAD1(out, c) + s, out, c);
}

// Row r of out = row clamp(idx[offset + r]) of src, in 4-byte words (take_rows_bytes: any row size).
// global = (units per row, rows).
#define TAKE_ROWS(NAME, T)                                                                                      \
  __kernel void NAME(const long units, const long src_rows, const long offset, __global const T* src,          \
                     __global const long* idx, __global T* out) {                                              \
    const long w = get_global_id(0), r = get_global_id(1);                                                      \
    if (w >= units) return;                                                                                     \
    const long i = clamp(idx[offset + r], (long)0, src_rows - 1);                                               \
    out[r * units + w] = src[i * units + w];                                                                    \
  }
TAKE_ROWS(take_rows_words, uint)
TAKE_ROWS(take_rows_bytes, uchar)
