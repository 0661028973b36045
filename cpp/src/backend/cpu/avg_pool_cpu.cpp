// Average pooling on the CPU device: one output row per step, its windows' column sums taken from the input rows
// the row's windows cover; 16-bit data is widened to float and each average rounded once.
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

}  // namespace

void CpuBackend::avg_pool2d(const AvgPool2dDesc& d, const Buffer& x, Buffer& y) {
  cpu_threads::apply();
  const std::uint64_t bytes = d.N * d.C * (d.H * d.W + d.OH * d.OW) * dtype_size(d.dtype);
  const void* xp = x.host_ptr();
  void* yp = y.host_ptr();
  const auto same = [](auto v) { return v; };
  timed("avg_pool2d", bytes, [&] {
    switch (d.dtype) {
      case DType::f32:
        run<float, float>(d, xp, yp, same, [](const float* o, float* dst, std::int64_t n) {
          std::memcpy(dst, o, static_cast<std::size_t>(n) * sizeof(float));
        });
        break;
      case DType::f64:
        run<double, double>(d, xp, yp, same, [](const double* o, double* dst, std::int64_t n) {
          std::memcpy(dst, o, static_cast<std::size_t>(n) * sizeof(double));
        });
        break;
      case DType::f16:
      case DType::bf16: {
        const DType t = d.dtype;
        const auto narrow = [t](const float* o, std::uint16_t* dst, std::int64_t n) {
          narrow_from_f32(t, o, dst, n);  // round to nearest even, once per average
        };
        if (t == DType::f16)
          run<std::uint16_t, float>(d, xp, yp, [](std::uint16_t v) { return half_bits_to_float(v); }, narrow);
        else
          run<std::uint16_t, float>(d, xp, yp, [](std::uint16_t v) {
            const std::uint32_t u = static_cast<std::uint32_t>(v) << 16;  // bfloat16: the top half of a float
            float f;
            std::memcpy(&f, &u, 4);
            return f;
          }, narrow);
        break;
      }
      default: throw TypeError(std::string("avg_pool2d: unsupported dtype ") + dtype_name(d.dtype));
    }
  });
}

}  // namespace hetnn
