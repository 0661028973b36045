// Average pooling on the CPU device: one output row per step, its windows' column sums taken from the input rows
// the row's windows cover, the windows inside the input summed in one vectorised loop (float and double compiled
// per ISA level); 16-bit data is widened to float and each average rounded once. The backward gathers:
// one input row per step, from the output windows that hold it (no two steps write the same element).
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_loops.h"
#include "backend/cpu/cpu_threads.h"
#include "backend/cpu/half_convert.h"
#include "core/errors.h"
#include "core/half.h"
#include "core/pool2d.h"

namespace hetnn {

namespace {

// The divisor of window (oh, ow), as PyTorch's avg_pool2d computes it (rows and columns apart).
struct Span {
  std::int64_t lo, hi;  // the input positions [lo, hi) the window covers
  std::int64_t padded;  // its extent clipped to the padded input
};
Span span(std::int64_t o, int k, int s, int p, std::int64_t in) {
  const std::int64_t start = o * s - p, end = std::min<std::int64_t>(start + k, in + p);
  return {std::max<std::int64_t>(start, 0), std::min(end, in), end - start};
}

// The divisor of window (oh, ow), forward and backward alike.
template <class A>
A divisor(const AvgPool2dDesc& d, const Span& h, const Span& w) {
  if (d.divisor_override) return A(d.divisor_override);
  return A(d.count_include_pad ? h.padded * w.padded : (h.hi - h.lo) * (w.hi - w.lo));
}

// The output columns [c0, c1) whose windows lie wholly inside the input (lo >= 0, lo + kw <= W): their sums need
// no clipping and share one divisor per row, so they run as one loop the compiler vectorises; the columns outside
// it (padding) take the clipped path.
struct Interior {
  std::int64_t c0, c1;
};
Interior interior(const AvgPool2dDesc& d) {
  std::int64_t c0 = 0, c1 = d.OW;
  while (c0 < d.OW && c0 * d.sw - d.pw < 0) ++c0;
  while (c1 > c0 && (c1 - 1) * d.sw - d.pw + d.kw > d.W) --c1;
  return {c0, std::max(c0, c1)};
}

// One output row: acc[iw] = the column sums over the window's input rows [h.lo, h.hi) (rows of W at xp), then
// o[ow] = the window's sum / its divisor. KW > 0 fixes the window width of the interior loop (0: d.kw at run time).
template <int KW, class S, class A, class Load>
inline __attribute__((always_inline)) void avg_row(const AvgPool2dDesc& d, const Interior& in, const S* xp,
                                                   const Span& h, A* acc, A* o, Load load) {
  const std::int64_t W = d.W;
  if (h.hi > h.lo) {
    const S* r = xp + h.lo * W;
    for (std::int64_t iw = 0; iw < W; ++iw) acc[iw] = load(r[iw]);
    for (std::int64_t ih = h.lo + 1; ih < h.hi; ++ih) {
      r = xp + ih * W;
      for (std::int64_t iw = 0; iw < W; ++iw) acc[iw] += load(r[iw]);
    }
  } else {
    std::fill(acc, acc + W, A(0));
  }
  const auto edge = [&](std::int64_t ow) {
    const Span w = span(ow, d.kw, d.sw, d.pw, d.W);
    A sum = 0;
    for (std::int64_t iw = w.lo; iw < w.hi; ++iw) sum += acc[iw];
    o[ow] = (h.hi - h.lo) * (w.hi - w.lo) > 0 ? sum / divisor<A>(d, h, w) : A(0);
  };
  for (std::int64_t ow = 0; ow < in.c0; ++ow) edge(ow);
  if (h.hi > h.lo) {
    const int kw = KW > 0 ? KW : d.kw;
    const A div = divisor<A>(d, h, Span{0, kw, kw});  // an inside window: kw columns, none of them padding
    const std::int64_t sw = d.sw, pw = d.pw;
    for (std::int64_t ow = in.c0; ow < in.c1; ++ow) {
      A sum = 0;  // from +0, as the clipped path and PyTorch (a window of -0.0 averages to +0)
      for (int j = 0; j < kw; ++j) sum += acc[ow * sw - pw + j];
      o[ow] = sum / div;
    }
  } else {
    for (std::int64_t ow = in.c0; ow < in.c1; ++ow) edge(ow);
  }
  for (std::int64_t ow = in.c1; ow < d.OW; ++ow) edge(ow);
}

// y rows [r0, r1) of the flattened (N*C*OH) output; A is the accumulation type, `load` widens one element. Float
// and double rows are written in place; 16-bit rows through a float row and `store` (one rounding each).
template <int KW, class S, class A, class Load, class Store>
inline __attribute__((always_inline)) void rows(const AvgPool2dDesc& d, const S* x, S* y, std::int64_t r0,
                                                std::int64_t r1, Load load, Store store) {
  std::vector<A> acc(static_cast<std::size_t>(d.W));
  std::vector<A> out(static_cast<std::size_t>(d.OW));
  const Interior in = interior(d);
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::int64_t plane = r / d.OH, oh = r % d.OH;
    const Span h = span(oh, d.kh, d.sh, d.ph, d.H);
    if constexpr (std::is_same_v<S, A>) {
      avg_row<KW>(d, in, x + plane * d.H * d.W, h, acc.data(), y + r * d.OW, load);
    } else {
      avg_row<KW>(d, in, x + plane * d.H * d.W, h, acc.data(), out.data(), load);
      store(out.data(), y + r * d.OW, d.OW);
    }
  }
}

// Per-ISA entry points for the float types (target_clones needs plain functions); 2x2 and 3x3 windows get their
// width fixed at compile time.
template <class T>
inline __attribute__((always_inline)) void rows_plain(const AvgPool2dDesc& d, const T* x, T* y, std::int64_t r0,
                                                      std::int64_t r1) {
  const auto same = [](T v) { return v; };
  const auto none = [](const T*, T*, std::int64_t) {};
  if (d.kw == 2)
    rows<2, T, T>(d, x, y, r0, r1, same, none);
  else if (d.kw == 3)
    rows<3, T, T>(d, x, y, r0, r1, same, none);
  else
    rows<0, T, T>(d, x, y, r0, r1, same, none);
}
HETNN_CLONES void rows_f32(const AvgPool2dDesc& d, const float* x, float* y, std::int64_t r0, std::int64_t r1) {
  rows_plain(d, x, y, r0, r1);
}
HETNN_CLONES void rows_f64(const AvgPool2dDesc& d, const double* x, double* y, std::int64_t r0, std::int64_t r1) {
  rows_plain(d, x, y, r0, r1);
}

template <class S, class A, class Load, class Store>
void run(const AvgPool2dDesc& d, const void* x, void* y, Load load, Store store) {
  parallel_ranges(d.N * d.C * d.OH, [&](std::int64_t r0, std::int64_t r1) {
    const S* xs = static_cast<const S*>(x);
    S* ys = static_cast<S*>(y);
    if constexpr (std::is_same_v<S, float> && std::is_same_v<A, float>)
      rows_f32(d, xs, ys, r0, r1);
    else if constexpr (std::is_same_v<S, double>)
      rows_f64(d, xs, ys, r0, r1);
    else
      rows<0, S, A>(d, xs, ys, r0, r1, load, store);
  });
}

// The output windows along one axis that hold input position i: [first, last] (empty when first > last).
std::pair<std::int64_t, std::int64_t> windows_holding(std::int64_t i, int k, int s, int p, std::int64_t out) {
  const std::int64_t q = i + p - k + 1;
  const std::int64_t first = q <= 0 ? 0 : (q + s - 1) / s;
  return {first, std::min<std::int64_t>((i + p) / s, out - 1)};
}

// gx rows [r0, r1) of the flattened (N*C*H) input gradient: first the sum over the row's windows oh of
// gy[oh, ow] / divisor per output column, then each input column's sum over the columns' windows that hold it.
template <class S, class A, class Load, class Store>
void backward_rows(const AvgPool2dDesc& d, const S* gy, S* gx, std::int64_t r0, std::int64_t r1, Load load,
                   Store store) {
  std::vector<A> acc(static_cast<std::size_t>(d.OW));
  std::vector<A> out(static_cast<std::size_t>(d.W));
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::int64_t plane = r / d.H, ih = r % d.H;
    const S* gp = gy + plane * d.OH * d.OW;
    std::fill(acc.begin(), acc.end(), A(0));
    const auto [oh0, oh1] = windows_holding(ih, d.kh, d.sh, d.ph, d.OH);
    for (std::int64_t oh = oh0; oh <= oh1; ++oh) {
      const Span h = span(oh, d.kh, d.sh, d.ph, d.H);
      for (std::int64_t ow = 0; ow < d.OW; ++ow)
        acc[ow] += load(gp[oh * d.OW + ow]) / divisor<A>(d, h, span(ow, d.kw, d.sw, d.pw, d.W));
    }
    for (std::int64_t iw = 0; iw < d.W; ++iw) {
      const auto [ow0, ow1] = windows_holding(iw, d.kw, d.sw, d.pw, d.OW);
      A sum = 0;
      for (std::int64_t ow = ow0; ow <= ow1; ++ow) sum += acc[ow];
      out[iw] = sum;
    }
    store(out.data(), gx + r * d.W, d.W);
  }
}

template <class S, class A, class Load, class Store>
void run_backward(const AvgPool2dDesc& d, const void* gy, void* gx, Load load, Store store) {
  parallel_ranges(d.N * d.C * d.H, [&](std::int64_t r0, std::int64_t r1) {
    backward_rows<S, A>(d, static_cast<const S*>(gy), static_cast<S*>(gx), r0, r1, load, store);
  });
}

// Runs `body(tag, load, store)` for the descriptor's dtype: S the storage type, A the accumulation type.
template <class Body>
void by_dtype(DType t, const char* op, Body&& body) {
  const auto same = [](auto v) { return v; };
  switch (t) {
    case DType::f32:
      body(float{}, float{}, same, [](const float* o, float* dst, std::int64_t n) {
        std::memcpy(dst, o, static_cast<std::size_t>(n) * sizeof(float));
      });
      break;
    case DType::f64:
      body(double{}, double{}, same, [](const double* o, double* dst, std::int64_t n) {
        std::memcpy(dst, o, static_cast<std::size_t>(n) * sizeof(double));
      });
      break;
    case DType::f16:
    case DType::bf16: {
      const auto narrow = [t](const float* o, std::uint16_t* dst, std::int64_t n) {
        narrow_from_f32(t, o, dst, n);  // round to nearest even, once per result
      };
      if (t == DType::f16)
        body(std::uint16_t{}, float{}, [](std::uint16_t v) { return half_bits_to_float(v); }, narrow);
      else
        body(std::uint16_t{}, float{}, [](std::uint16_t v) {
          const std::uint32_t u = static_cast<std::uint32_t>(v) << 16;  // bfloat16: the top half of a float
          float f;
          std::memcpy(&f, &u, 4);
          return f;
        }, narrow);
      break;
    }
    default: throw TypeError(std::string(op) + ": unsupported dtype " + dtype_name(t));
  }
}

}  // namespace

void CpuBackend::avg_pool2d(const AvgPool2dDesc& d, const Buffer& x, Buffer& y) {
  cpu_threads::apply();
  const std::uint64_t bytes = d.N * d.C * (d.H * d.W + d.OH * d.OW) * dtype_size(d.dtype);
  const void* xp = x.host_ptr();
  void* yp = y.host_ptr();
  timed("avg_pool2d", bytes, [&] {
    by_dtype(d.dtype, "avg_pool2d", [&](auto s, auto a, auto load, auto store) {
      run<decltype(s), decltype(a)>(d, xp, yp, load, store);
    });
  });
}

void CpuBackend::avg_pool2d_backward(const AvgPool2dDesc& d, const Buffer& gy, Buffer& gx) {
  cpu_threads::apply();
  const std::uint64_t bytes = d.N * d.C * (d.H * d.W + d.OH * d.OW) * dtype_size(d.dtype);
  const void* gp = gy.host_ptr();
  void* xp = gx.host_ptr();
  timed("avg_pool2d_backward", bytes, [&] {
    by_dtype(d.dtype, "avg_pool2d_backward", [&](auto s, auto a, auto load, auto store) {
      run_backward<decltype(s), decltype(a)>(d, gp, xp, load, store);
    });
  });
}

}  // namespace hetnn
