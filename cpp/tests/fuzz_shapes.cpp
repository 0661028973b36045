// libFuzzer target: random shapes and parameters fed to the argument validation of matmul and max pooling and
// to the pooling shape logic, then (when small) to the ops themselves on the CPU device, checked against naive
// references. Any crash, sanitizer report, unexpected exception type or wrong value is a finding.
//
//   build: scripts/sanitize.sh (clang -fsanitize=fuzzer,address,undefined)
//   run:   build/fuzz/hetnn_fuzz_shapes -max_total_time=60
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/array.h"
#include "core/device.h"
#include "core/errors.h"
#include "core/matmul.h"
#include "core/max_pool.h"

using namespace hetnn;

namespace {

struct Reader {
  const std::uint8_t* p;
  std::size_t n;
  std::int64_t take(std::int64_t lo, std::int64_t hi) {  // a value in [lo, hi]
    std::uint32_t v = 0;
    for (int i = 0; i < 4 && n; ++i, ++p, --n) v = (v << 8) | *p;
    return lo + std::int64_t(v % std::uint64_t(hi - lo + 1));
  }
  std::int64_t wild() {  // mostly small, sometimes huge or negative
    switch (take(0, 7)) {
      case 0: return -take(0, 3);
      case 1: return take(1LL << 20, 1LL << 40);
      case 2: return std::int64_t(1) << take(31, 62);
      default: return take(0, 9);
    }
  }
};

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "finding: %s\n", what);
  std::abort();
}

void fuzz_matmul(Reader& r, const DevicePtr& cpu) {
  const std::int64_t M = r.wild(), N = r.wild(), K = r.wild(), K2 = r.take(0, 1) ? K : r.wild();
  const bool ta = r.take(0, 1), tb = r.take(0, 1);
  const DType t = r.take(0, 3) ? DType::f32 : DType::i32;
  // shapes are validated before any allocation: the plan must reject what it cannot run, with a typed error
  try {
    const std::int64_t lim = 1 << 16;  // compared factor by factor: the products of wild sizes overflow
    if (M < 0 || N < 0 || K < 0 || K2 < 0 || M > lim || N > lim || K > lim || K2 > lim || M * K > lim ||
        K2 * N > lim) {
      (void)shape_size({M, K});
      (void)shape_size({K2, N});
      return;  // legal but too large to allocate in a fuzz iteration
    }
    Array a = Array::zeros(cpu, ta ? Shape{K, M} : Shape{M, K}, DType::f32);
    Array b = Array::zeros(cpu, tb ? Shape{N, K2} : Shape{K2, N}, t);
    MatmulArgs args;
    args.trans_a = ta;
    args.trans_b = tb;
    Shape out;
    MatmulDesc d = matmul_plan(a, b, nullptr, args, &out);
    if (K != K2 || t != DType::f32) finding("matmul_plan accepted mismatched operands");
    if (out != Shape{M, N} || d.M != M || d.N != N || d.K != K) finding("matmul_plan: wrong result shape");
    if (M * N * K <= 4096) {
      Array c = matmul(a, b, nullptr, args);
      std::vector<float> h(static_cast<std::size_t>(M * N), 1.f);
      if (!h.empty()) c.to_host(h.data());
      for (float v : h)
        if (v != 0.f) finding("matmul of zeros is not zero");
    }
  } catch (const ValueError&) {
  } catch (const TypeError&) {
  }
}

void fuzz_pool(Reader& r, const DevicePtr& cpu) {
  Pool2dArgs p;
  for (int i = 0; i < 2; ++i) {
    p.kernel[i] = int(r.take(-1, 6));
    p.stride[i] = int(r.take(-1, 6));
    p.padding[i] = int(r.take(-1, 4));
    p.dilation[i] = int(r.take(-1, 4));
  }
  p.ceil_mode = r.take(0, 1);
  const std::int64_t n = r.take(0, 2), c = r.take(0, 3), h = r.wild(), w = r.wild();
  const bool small = h >= 0 && w >= 0 && h <= 4096 && w <= 4096;  // products below cannot overflow
  try {
    const Pool2dDesc d = pool2d_plan({n, c, h, w}, DType::f32, *cpu, p, "fuzz");
    // accepted: the parameters must be ones PyTorch accepts, and the output sizes its formula's
    for (int i = 0; i < 2; ++i)
      if (p.kernel[i] < 1 || p.stride[i] < 1 || p.dilation[i] < 1 || p.padding[i] < 0 || 2 * p.padding[i] > p.kernel[i])
        finding("pool2d_plan accepted an invalid window");
    if (d.OH != pool_output_size(h, p.kernel[0], p.stride[0], p.padding[0], p.dilation[0], p.ceil_mode) ||
        d.OW != pool_output_size(w, p.kernel[1], p.stride[1], p.padding[1], p.dilation[1], p.ceil_mode) ||
        d.OH < 1 || d.OW < 1)
      finding("pool2d_plan: output size differs from pool_output_size");
    if (!small || n * c * h * w > 4096 || d.OH > 4096 || d.OW > 4096 || n * c * d.OH * d.OW > 4096) return;
    std::vector<float> x(static_cast<std::size_t>(n * c * h * w));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = float((i * 2654435761u) % 1000) - 500.f;
    Array X = Array::from_host(cpu, x.data(), {n, c, h, w}, DType::f32);
    Array idx;
    Array y = max_pool2d(X, p, nullptr, &idx);
    std::vector<float> Y(static_cast<std::size_t>(y.size()));
    std::vector<std::int64_t> I(static_cast<std::size_t>(y.size()));
    if (!Y.empty()) y.to_host(Y.data()), idx.to_host(I.data());
    for (std::int64_t plane = 0; plane < n * c; ++plane)
      for (std::int64_t oh = 0; oh < d.OH; ++oh)
        for (std::int64_t ow = 0; ow < d.OW; ++ow) {
          float best = -INFINITY;
          for (int i = 0; i < p.kernel[0]; ++i)
            for (int j = 0; j < p.kernel[1]; ++j) {
              const std::int64_t rr = oh * p.stride[0] - p.padding[0] + std::int64_t(i) * p.dilation[0];
              const std::int64_t qq = ow * p.stride[1] - p.padding[1] + std::int64_t(j) * p.dilation[1];
              if (rr >= 0 && rr < h && qq >= 0 && qq < w) best = std::max(best, x[(plane * h + rr) * w + qq]);
            }
          const std::size_t o = static_cast<std::size_t>((plane * d.OH + oh) * d.OW + ow);
          if (Y[o] != best) finding("max_pool2d value differs from the naive reference");
          if (best != -INFINITY && x[plane * h * w + I[o]] != best) finding("max_pool2d index does not hold the max");
        }
    Array gy = Array::from_host(cpu, Y.data(), y.shape(), DType::f32);
    (void)max_pool2d_backward(gy, idx, X.shape(), p, nullptr);
  } catch (const ValueError&) {
  } catch (const TypeError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const DevicePtr cpu = find_device("cpu");
  Reader r{data, size};
  if (r.take(0, 1))
    fuzz_matmul(r, cpu);
  else
    fuzz_pool(r, cpu);
  return 0;
}
