// Training ops on the CPU device (core/nn.h): elementwise activations, softmax, losses, metrics, SGD, bias
// gradients and minibatch gathering. Plain loops the compiler vectorises, threaded with OpenMP only where the work
// is large enough to pay for waking the threads (a 64x128 minibatch tensor is not).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_threads.h"
#include "backend/cpu/cpu_loops.h"
#include "backend/cpu/half_convert.h"
#include "core/errors.h"

namespace hetnn {

namespace {

constexpr std::int64_t kParallelMin = 1 << 16;  // elements below which a loop stays on the calling thread

template <class T>
T* ptr(Buffer& b) { return static_cast<T*>(b.host_ptr()); }
template <class T>
const T* ptr(const Buffer& b) { return static_cast<const T*>(b.host_ptr()); }

// Elementwise chunks: inlined into the per-ISA entry points below, which parallel_ranges calls per thread share.
template <class T>
inline __attribute__((always_inline)) void act_fwd(Activation a, std::int64_t n, const T* x, T* y) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = activate(x[i], a);
}

template <class T>
inline __attribute__((always_inline)) void act_bwd(Activation a, std::int64_t n, const T* dy, const T* y, T* dx) {
  if (a == Activation::relu) {  // PyTorch's threshold_backward: y <= 0 ? 0 : dy (no 0 * inf = NaN; NaN y passes dy)
    for (std::int64_t i = 0; i < n; ++i) dx[i] = y[i] <= T(0) ? T(0) : dy[i];
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const T v = y[i];
    dx[i] = dy[i] * (a == Activation::sigmoid ? v * (T(1) - v) : T(1) - v * v);
  }
}

template <class T>
inline __attribute__((always_inline)) void sgd_chunk(const SgdDesc& d, std::int64_t n, T* p, const T* g, T* v) {
  const T lr = static_cast<T>(d.lr), mom = static_cast<T>(d.momentum), wd = static_cast<T>(d.weight_decay);
  if (!v) {
    for (std::int64_t i = 0; i < n; ++i) p[i] -= lr * (g[i] + wd * p[i]);
    return;
  }
  // A velocity whose gradient stays 0 (weights of always-zero inputs, such as image borders) decays geometrically
  // into subnormal numbers, which x86 computes about 100x slower: measured, one Fashion-MNIST epoch's updates took
  // 1.5 s instead of 0.07 s. Such a velocity is flushed to zero (it is below 1e-38 of a step).
  const T tiny = std::numeric_limits<T>::min();
  if (d.nesterov) {
    for (std::int64_t i = 0; i < n; ++i) {
      const T gi = g[i] + wd * p[i];
      T vi = mom * v[i] + gi;
      vi = std::fabs(vi) < tiny ? T(0) : vi;
      v[i] = vi;
      p[i] -= lr * (gi + mom * vi);
    }
  } else {
    for (std::int64_t i = 0; i < n; ++i) {
      T vi = mom * v[i] + g[i] + wd * p[i];
      vi = std::fabs(vi) < tiny ? T(0) : vi;
      v[i] = vi;
      p[i] -= lr * vi;
    }
  }
}

template <class T>
inline __attribute__((always_inline)) void col_sums_chunk(std::int64_t rows, std::int64_t cols, std::int64_t c0,
                                                          std::int64_t c1, const T* x, T* out, T beta) {
  for (std::int64_t c = c0; c < c1; ++c) out[c] = beta == T(0) ? T(0) : beta * out[c];
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    for (std::int64_t c = c0; c < c1; ++c) out[c] += xr[c];
  }
}

// One loop per amsgrad setting, free of branches, so that it vectorises (a test of vmax inside kept it scalar: 3.5 ns
// an element, half of LeNet's step in the optimizer's small arrays).
template <class T, bool AMSGRAD>
inline __attribute__((always_inline)) void adam_loop(const AdamDesc& d, std::int64_t n, T* __restrict p,
                                                     const T* __restrict g, T* __restrict m, T* __restrict v,
                                                     T* __restrict vmax) {
  const T b1 = static_cast<T>(d.beta1), b2 = static_cast<T>(d.beta2), eps = static_cast<T>(d.eps);
  const T c1 = T(1) - b1, c2 = T(1) - b2, ss = static_cast<T>(d.step_size);
  const T inv_bc2 = static_cast<T>(1.0 / d.bias2_sqrt), dec = static_cast<T>(d.decay);
  const T shrink = static_cast<T>(d.shrink);
  const T tiny = std::numeric_limits<T>::min();  // moments of gradients that stay 0 decay into subnormals (see sgd)
  for (std::int64_t i = 0; i < n; ++i) {
    const T pi = p[i] * shrink, gi = g[i] + dec * pi;
    T mi = m[i] + c1 * (gi - m[i]);  // PyTorch's lerp_(grad, 1 - beta1)
    T vi = b2 * v[i] + c2 * gi * gi;
    mi = std::fabs(mi) < tiny ? T(0) : mi;
    vi = vi < tiny ? T(0) : vi;
    m[i] = mi;
    v[i] = vi;
    T vu = vi;
    if constexpr (AMSGRAD) vu = vmax[i] = std::max(vmax[i], vi);
    p[i] = pi - ss * mi / (std::sqrt(vu) * inv_bc2 + eps);
  }
}

template <class T>
inline __attribute__((always_inline)) void adam_chunk(const AdamDesc& d, std::int64_t n, T* p, const T* g, T* m,
                                                      T* v, T* vmax) {
  if (vmax) adam_loop<T, true>(d, n, p, g, m, v, vmax);
  else adam_loop<T, false>(d, n, p, g, m, v, nullptr);
}

template <class T>
inline __attribute__((always_inline)) void dropout_chunk(const DropoutDesc& d, std::int64_t i0, std::int64_t n,
                                                         const T* x, T* y) {
  const T scale = static_cast<T>(d.scale);
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = x[i] * (dropout_draw(d.seed, static_cast<std::uint64_t>(i0 + i)) >= d.threshold ? scale : T(0));
}

#define HETNN_NN_ENTRIES(T, S)                                                                                 \
  HETNN_CLONES void act_fwd_##S(Activation a, std::int64_t n, const T* x, T* y) { act_fwd(a, n, x, y); }       \
  HETNN_CLONES void act_bwd_##S(Activation a, std::int64_t n, const T* dy, const T* y, T* dx) {                \
    act_bwd(a, n, dy, y, dx);                                                                                  \
  }                                                                                                            \
  HETNN_CLONES void sgd_##S(const SgdDesc& d, std::int64_t n, T* p, const T* g, T* v) {                       \
    sgd_chunk(d, n, p, g, v);                                                                                  \
  }                                                                                                            \
  HETNN_CLONES void adam_##S(const AdamDesc& d, std::int64_t n, T* p, const T* g, T* m, T* v, T* vmax) {     \
    adam_chunk(d, n, p, g, m, v, vmax);                                                                        \
  }                                                                                                            \
  HETNN_CLONES void dropout_##S(const DropoutDesc& d, std::int64_t i0, std::int64_t n, const T* x, T* y) {     \
    dropout_chunk(d, i0, n, x, y);                                                                             \
  }                                                                                                            \
  HETNN_CLONES void col_sums_##S(std::int64_t rows, std::int64_t cols, std::int64_t c0, std::int64_t c1,       \
                                 const T* x, T* out, T beta) {                                                 \
    col_sums_chunk(rows, cols, c0, c1, x, out, beta);                                                          \
  }
HETNN_NN_ENTRIES(float, f32)
HETNN_NN_ENTRIES(double, f64)
#undef HETNN_NN_ENTRIES

template <class T>
void softmax_rows(std::int64_t rows, std::int64_t cols, const T* x, T* y) {
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelMin)
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* p = y + r * cols;
    T m = xr[0];  // NaN wins the maximum, so a NaN row gives NaN everywhere
    for (std::int64_t c = 1; c < cols; ++c) m = xr[c] > m || std::isnan(xr[c]) ? xr[c] : m;
    T s = 0;
    for (std::int64_t c = 0; c < cols; ++c) {
      p[c] = std::exp(xr[c] - m);
      s += p[c];
    }
    const T inv = T(1) / s;
    for (std::int64_t c = 0; c < cols; ++c) p[c] *= inv;
  }
}

template <class T>
double loss_rows(const LossDesc& d, const T* x, const void* target, T* grad) {
  const std::int64_t rows = d.rows, cols = d.cols;
  const T gs = static_cast<T>(d.grad_scale);
  double total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total) if (rows * cols >= kParallelMin)
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* gr = grad ? grad + r * cols : nullptr;
    double row = 0;
    if (d.kind == LossKind::mse) {
      const T* t = static_cast<const T*>(target) + r * cols;
      for (std::int64_t c = 0; c < cols; ++c) {
        const T e = xr[c] - t[c];
        row += static_cast<double>(e) * e;
        if (gr) gr[c] = gs * T(2) * e;
      }
    } else {
      // -sum_c t_c log p_c with log p_c = x_c - max - log sum exp(x - max); the gradient is p - t. One exp per
      // element, in the data's precision (the row's exponentials are kept in the gradient row when there is one).
      T m = xr[0];
      for (std::int64_t c = 1; c < cols; ++c) m = xr[c] > m || std::isnan(xr[c]) ? xr[c] : m;
      T local[64];
      T* e = gr ? gr : (cols <= 64 ? local : nullptr);
      double s = 0;
      for (std::int64_t c = 0; c < cols; ++c) {
        const T v = std::exp(xr[c] - m);
        if (e) e[c] = v;
        s += v;
      }
      const double lse = std::log(s);
      const T inv = static_cast<T>(1.0 / s);
      if (d.kind == LossKind::cross_entropy_labels) {
        std::int64_t label = static_cast<const std::int64_t*>(target)[r];
        label = std::clamp<std::int64_t>(label, 0, cols - 1);  // the front checks labels where it can
        row = -(static_cast<double>(xr[label] - m) - lse);
        if (gr) {
          for (std::int64_t c = 0; c < cols; ++c) gr[c] = gs * (e[c] * inv);
          gr[label] -= gs;
        }
      } else {
        const T* t = static_cast<const T*>(target) + r * cols;
        double tsum = 0;
        for (std::int64_t c = 0; c < cols; ++c) {
          row -= static_cast<double>(t[c]) * (static_cast<double>(xr[c] - m) - lse);
          tsum += t[c];
        }
        // d/dx_c of -sum_k t_k log p_k = p_c * sum_k t_k - t_c (sum_k t_k = 1 for one-hot or probabilities).
        if (gr) {
          const T ts = static_cast<T>(tsum);
          for (std::int64_t c = 0; c < cols; ++c) gr[c] = gs * (e[c] * inv * ts - t[c]);
        }
      }
    }
    total += row;
  }
  return total;
}

template <class T>
double metric_rows(const MetricDesc& d, const T* x, const void* target) {
  const std::int64_t rows = d.rows, cols = d.cols;
  double total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total) if (rows * cols >= kParallelMin)
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    if (d.kind == MetricKind::correct_argmax) {
      std::int64_t best = 0;
      for (std::int64_t c = 1; c < cols; ++c)
        if (xr[c] > xr[best] || (std::isnan(xr[c]) && !std::isnan(xr[best]))) best = c;
      total += best == static_cast<const std::int64_t*>(target)[r] ? 1.0 : 0.0;
    } else {
      const T* t = static_cast<const T*>(target) + r * cols;
      for (std::int64_t c = 0; c < cols; ++c)
        total += d.kind == MetricKind::abs_error ? std::fabs(static_cast<double>(xr[c] - t[c]))
                                                 : ((xr[c] > T(0.5)) == (t[c] > T(0.5)) ? 1.0 : 0.0);
    }
  }
  return total;
}


// float16 / bfloat16: stored in 16 bits, computed in float32. Elementwise ops widen a chunk at a time into stack
// buffers; row ops widen whole operands into work areas from the host pool.
constexpr std::int64_t kChunk = 1024;
bool is16(DType t) { return t == DType::f16 || t == DType::bf16; }
template <class B>
auto at16(B& b, std::int64_t i) {  // element i of a 16-bit buffer
  using C = std::conditional_t<std::is_const_v<B>, const char, char>;
  return static_cast<C*>(b.host_ptr()) + 2 * i;
}

}  // namespace

void CpuBackend::activation(Activation act, DType t, std::int64_t n, const Buffer& x, Buffer& out) {
  cpu_threads::apply();
  timed("activation", 2 * n * dtype_size(t), [&] {
    parallel_ranges(n, [&](std::int64_t b, std::int64_t e) {
      if (is16(t)) {
        float xb[kChunk];
        for (std::int64_t i = b; i < e; i += kChunk) {
          const std::int64_t m = std::min(kChunk, e - i);
          widen_to_f32(t, at16(x, i), xb, m);
          act_fwd_f32(act, m, xb, xb);
          narrow_from_f32(t, xb, at16(out, i), m);
        }
      } else if (t == DType::f64) act_fwd_f64(act, e - b, ptr<double>(x) + b, ptr<double>(out) + b);
      else act_fwd_f32(act, e - b, ptr<float>(x) + b, ptr<float>(out) + b);
    }, kParallelMin);
  });
}

void CpuBackend::activation_backward(Activation act, DType t, std::int64_t n, const Buffer& dy, const Buffer& y,
                                     Buffer& dx) {
  cpu_threads::apply();
  timed("activation_backward", 3 * n * dtype_size(t), [&] {
    parallel_ranges(n, [&](std::int64_t b, std::int64_t e) {
      if (is16(t)) {
        float dyb[kChunk], yb[kChunk];
        for (std::int64_t i = b; i < e; i += kChunk) {
          const std::int64_t m = std::min(kChunk, e - i);
          widen_to_f32(t, at16(dy, i), dyb, m);
          widen_to_f32(t, at16(y, i), yb, m);
          act_bwd_f32(act, m, dyb, yb, dyb);
          narrow_from_f32(t, dyb, at16(dx, i), m);
        }
      } else if (t == DType::f64) act_bwd_f64(act, e - b, ptr<double>(dy) + b, ptr<double>(y) + b, ptr<double>(dx) + b);
      else act_bwd_f32(act, e - b, ptr<float>(dy) + b, ptr<float>(y) + b, ptr<float>(dx) + b);
    }, kParallelMin);
  });
}

void CpuBackend::softmax(DType t, std::int64_t rows, std::int64_t cols, const Buffer& x, Buffer& y) {
  cpu_threads::apply();
  timed("softmax", 2 * rows * cols * dtype_size(t), [&] {
    if (is16(t)) {
      F32Scratch w(*pool_, rows * cols, t, x.host_ptr());
      softmax_rows(rows, cols, w.data(), w.data());
      narrow_from_f32_parallel(t, w.data(), y.host_ptr(), rows * cols);
    } else if (t == DType::f64) softmax_rows(rows, cols, ptr<double>(x), ptr<double>(y));
    else softmax_rows(rows, cols, ptr<float>(x), ptr<float>(y));
  });
}

void CpuBackend::loss(const LossDesc& d, const Buffer& pred, const Buffer& target, Buffer& acc, Buffer* grad) {
  cpu_threads::apply();
  timed("loss", (grad ? 3 : 2) * d.rows * d.cols * dtype_size(d.dtype), [&] {
    if (is16(d.dtype)) {
      const std::int64_t n = d.rows * d.cols;
      const bool labels = d.kind == LossKind::cross_entropy_labels;
      F32Scratch x32(*pool_, n, d.dtype, pred.host_ptr()), g32(*pool_, grad ? n : 1);
      F32Scratch t32 = labels ? F32Scratch(*pool_, 1) : F32Scratch(*pool_, n, d.dtype, target.host_ptr());
      const double s = loss_rows(d, x32.data(), labels ? target.host_ptr() : t32.data(), grad ? g32.data() : nullptr);
      if (grad) narrow_from_f32_parallel(d.dtype, g32.data(), grad->host_ptr(), n);
      *ptr<float>(acc) += static_cast<float>(d.loss_scale * s);
      return;
    }
    const double s = d.dtype == DType::f64
                         ? loss_rows(d, ptr<double>(pred), target.host_ptr(), grad ? ptr<double>(*grad) : nullptr)
                         : loss_rows(d, ptr<float>(pred), target.host_ptr(), grad ? ptr<float>(*grad) : nullptr);
    *ptr<float>(acc) += static_cast<float>(d.loss_scale * s);
  });
}

void CpuBackend::metric(const MetricDesc& d, const Buffer& pred, const Buffer& target, Buffer& acc) {
  cpu_threads::apply();
  timed("metric", 2 * d.rows * d.cols * dtype_size(d.dtype), [&] {
    if (is16(d.dtype)) {
      const std::int64_t n = d.rows * d.cols;
      const bool labels = d.kind == MetricKind::correct_argmax;
      F32Scratch x32(*pool_, n, d.dtype, pred.host_ptr());
      F32Scratch t32 = labels ? F32Scratch(*pool_, 1) : F32Scratch(*pool_, n, d.dtype, target.host_ptr());
      *ptr<float>(acc) += static_cast<float>(metric_rows(d, x32.data(), labels ? target.host_ptr() : t32.data()));
      return;
    }
    const double s = d.dtype == DType::f64 ? metric_rows(d, ptr<double>(pred), target.host_ptr())
                                           : metric_rows(d, ptr<float>(pred), target.host_ptr());
    *ptr<float>(acc) += static_cast<float>(s);
  });
}

void CpuBackend::sgd_update(const SgdDesc& d, Buffer& param, const Buffer& grad, Buffer* velocity) {
  cpu_threads::apply();
  timed("sgd_update", (velocity ? 5 : 3) * d.n * dtype_size(d.dtype), [&] {
    parallel_ranges(d.n, [&](std::int64_t b, std::int64_t e) {
      if (is16(d.dtype)) {
        float pb[kChunk], gb[kChunk], vb[kChunk];
        for (std::int64_t i = b; i < e; i += kChunk) {
          const std::int64_t m = std::min(kChunk, e - i);
          widen_to_f32(d.dtype, at16(param, i), pb, m);
          widen_to_f32(d.dtype, at16(grad, i), gb, m);
          if (velocity) widen_to_f32(d.dtype, at16(*velocity, i), vb, m);
          sgd_f32(d, m, pb, gb, velocity ? vb : nullptr);
          narrow_from_f32(d.dtype, pb, at16(param, i), m);
          if (velocity) narrow_from_f32(d.dtype, vb, at16(*velocity, i), m);
        }
      } else if (d.dtype == DType::f64)
        sgd_f64(d, e - b, ptr<double>(param) + b, ptr<double>(grad) + b, velocity ? ptr<double>(*velocity) + b : nullptr);
      else
        sgd_f32(d, e - b, ptr<float>(param) + b, ptr<float>(grad) + b, velocity ? ptr<float>(*velocity) + b : nullptr);
    }, kParallelMin);
  });
}

void CpuBackend::adam_update(const AdamDesc& d, Buffer& param, const Buffer& grad, Buffer& m, Buffer& v,
                             Buffer* vmax) {
  cpu_threads::apply();
  timed("adam_update", (vmax ? 9 : 7) * d.n * dtype_size(d.dtype), [&] {
    parallel_ranges(d.n, [&](std::int64_t b, std::int64_t e) {
      if (is16(d.dtype)) {
        float pb[kChunk], gb[kChunk], mb[kChunk], vb[kChunk], xb[kChunk];
        for (std::int64_t i = b; i < e; i += kChunk) {
          const std::int64_t c = std::min(kChunk, e - i);
          widen_to_f32(d.dtype, at16(param, i), pb, c);
          widen_to_f32(d.dtype, at16(grad, i), gb, c);
          widen_to_f32(d.dtype, at16(m, i), mb, c);
          widen_to_f32(d.dtype, at16(v, i), vb, c);
          if (vmax) widen_to_f32(d.dtype, at16(*vmax, i), xb, c);
          adam_f32(d, c, pb, gb, mb, vb, vmax ? xb : nullptr);
          narrow_from_f32(d.dtype, pb, at16(param, i), c);
          narrow_from_f32(d.dtype, mb, at16(m, i), c);
          narrow_from_f32(d.dtype, vb, at16(v, i), c);
          if (vmax) narrow_from_f32(d.dtype, xb, at16(*vmax, i), c);
        }
      } else if (d.dtype == DType::f64) {
        adam_f64(d, e - b, ptr<double>(param) + b, ptr<double>(grad) + b, ptr<double>(m) + b, ptr<double>(v) + b,
                 vmax ? ptr<double>(*vmax) + b : nullptr);
      } else {
        adam_f32(d, e - b, ptr<float>(param) + b, ptr<float>(grad) + b, ptr<float>(m) + b, ptr<float>(v) + b,
                 vmax ? ptr<float>(*vmax) + b : nullptr);
      }
    }, kParallelMin);
  });
}

void CpuBackend::dropout(const DropoutDesc& d, const Buffer& x, Buffer& out) {
  cpu_threads::apply();
  timed("dropout", 2 * d.n * dtype_size(d.dtype), [&] {
    parallel_ranges(d.n, [&](std::int64_t b, std::int64_t e) {
      if (is16(d.dtype)) {
        float xb[kChunk];
        for (std::int64_t i = b; i < e; i += kChunk) {
          const std::int64_t c = std::min(kChunk, e - i);
          widen_to_f32(d.dtype, at16(x, i), xb, c);
          dropout_f32(d, i, c, xb, xb);
          narrow_from_f32(d.dtype, xb, at16(out, i), c);
        }
      } else if (d.dtype == DType::f64) {
        dropout_f64(d, b, e - b, ptr<double>(x) + b, ptr<double>(out) + b);
      } else {
        dropout_f32(d, b, e - b, ptr<float>(x) + b, ptr<float>(out) + b);
      }
    }, kParallelMin);
  });
}

void CpuBackend::sum_rows(DType t, std::int64_t rows, std::int64_t cols, const Buffer& x, Buffer& out, double beta) {
  cpu_threads::apply();
  timed("sum_rows", (rows + 1) * cols * dtype_size(t), [&] {
    if (is16(t)) {
      F32Scratch x32(*pool_, rows * cols, t, x.host_ptr()), o32(*pool_, cols);
      if (beta != 0.0) widen_to_f32(t, out.host_ptr(), o32.data(), cols);
      col_sums_f32(rows, cols, 0, cols, x32.data(), o32.data(), static_cast<float>(beta));
      narrow_from_f32(t, o32.data(), out.host_ptr(), cols);
      return;
    }
    // Columns split over the threads (each sums its columns over all rows, contiguous inner loop).
    parallel_ranges(cols, [&](std::int64_t c0, std::int64_t c1) {
      if (t == DType::f64) col_sums_f64(rows, cols, c0, c1, ptr<double>(x), ptr<double>(out), beta);
      else col_sums_f32(rows, cols, c0, c1, ptr<float>(x), ptr<float>(out), static_cast<float>(beta));
    }, rows * cols >= kParallelMin ? 0 : cols + 1);
  });
}

void CpuBackend::take_rows(std::size_t row_bytes, std::int64_t src_rows, const Buffer& src, const Buffer& idx,
                           std::int64_t offset, std::int64_t n, Buffer& out) {
  cpu_threads::apply();
  timed("take_rows", 2 * n * row_bytes, [&] {
    const auto* s = static_cast<const char*>(src.host_ptr());
    const std::int64_t* ix = ptr<std::int64_t>(idx) + offset;
    char* o = static_cast<char*>(out.host_ptr());
#pragma omp parallel for schedule(static) if (n * static_cast<std::int64_t>(row_bytes) >= (kParallelMin >> 1))
    for (std::int64_t r = 0; r < n; ++r) {
      const std::int64_t i = std::clamp<std::int64_t>(ix[r], 0, src_rows - 1);
      std::memcpy(o + r * row_bytes, s + i * row_bytes, row_bytes);
    }
  });
}

}  // namespace hetnn
