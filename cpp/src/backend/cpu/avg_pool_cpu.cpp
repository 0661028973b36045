// Average pooling on the CPU device: one output row per step, its windows' column sums taken from the input rows
// the row's windows cover; 16-bit data is widened to float and each average rounded once. The backward gathers:
// one input row per step, from the output windows that hold it (no two steps write the same element).
#include <omp.h>

#include <algorithm>
#include <cstring>
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

// y rows [r0, r1) of the flattened (N*C*OH) output; A is the accumulation type, `load` widens one element.
template <class S, class A, class Load, class Store>
void rows(const AvgPool2dDesc& d, const S* x, S* y, std::int64_t r0, std::int64_t r1, Load load, Store store) {
  std::vector<A> acc(static_cast<std::size_t>(d.W));
  std::vector<A> out(static_cast<std::size_t>(d.OW));
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::int64_t plane = r / d.OH, oh = r % d.OH;
    const Span h = span(oh, d.kh, d.sh, d.ph, d.H);
    const S* xp = x + plane * d.H * d.W;
    std::fill(acc.begin(), acc.end(), A(0));
    for (std::int64_t ih = h.lo; ih < h.hi; ++ih)  // column sums over the window's rows
      for (std::int64_t iw = 0; iw < d.W; ++iw) acc[iw] += load(xp[ih * d.W + iw]);
    for (std::int64_t ow = 0; ow < d.OW; ++ow) {
      const Span w = span(ow, d.kw, d.sw, d.pw, d.W);
      A sum = 0;
      for (std::int64_t iw = w.lo; iw < w.hi; ++iw) sum += acc[iw];
      const std::int64_t inside = (h.hi - h.lo) * (w.hi - w.lo);
      const A div = d.divisor_override ? A(d.divisor_override)
                                       : A(d.count_include_pad ? h.padded * w.padded : inside);
      out[ow] = inside > 0 ? sum / div : A(0);
    }
    store(out.data(), y + r * d.OW, d.OW);
  }
}

template <class S, class A, class Load, class Store>
void run(const AvgPool2dDesc& d, const void* x, void* y, Load load, Store store) {
  parallel_ranges(d.N * d.C * d.OH, [&](std::int64_t r0, std::int64_t r1) {
    rows<S, A>(d, static_cast<const S*>(x), static_cast<S*>(y), r0, r1, load, store);
  });
}

// The output windows along one axis that hold input position i: [first, last] (empty when first > last).
std::pair<std::int64_t, std::int64_t> windows_holding(std::int64_t i, int k, int s, int p, std::int64_t out) {
  const std::int64_t q = i + p - k + 1;
  const std::int64_t first = q <= 0 ? 0 : (q + s - 1) / s;
  return {first, std::min<std::int64_t>((i + p) / s, out - 1)};
}

// The divisor of window (oh, ow): the same rule as the forward's.
template <class A>
A divisor(const AvgPool2dDesc& d, const Span& h, const Span& w) {
  if (d.divisor_override) return A(d.divisor_override);
  return A(d.count_include_pad ? h.padded * w.padded : (h.hi - h.lo) * (w.hi - w.lo));
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
