// libFuzzer target: random shapes and parameters fed to the argument validation of matmul and max pooling and
// to the pooling shape logic, then (when small) to the ops themselves on the CPU device on nonzero values, checked
// against naive references. Any crash, sanitizer report, unexpected exception type, refusal of a valid input or
// wrong value is a finding.
//
//   build: scripts/sanitize.sh (clang -fsanitize=fuzzer,address,undefined)
//   run:   build/fuzz/hetnn_fuzz_shapes -max_total_time=60
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/array.h"
#include "core/device.h"
#include "core/errors.h"
#include "core/matmul.h"
#include "core/pool2d.h"

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

// Deterministic nonzero values in [-4, 4] (a product of zeros would hide a wrong index).
std::vector<float> values(std::int64_t n, std::uint32_t salt) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(((i + salt) * 2654435761u) % 9) - 4.f;
  return v;
}

void fuzz_matmul(Reader& r, const DevicePtr& cpu) {
  const std::int64_t M = r.wild(), N = r.wild(), K = r.wild(), K2 = r.take(0, 1) ? K : r.wild();
  const bool ta = r.take(0, 1), tb = r.take(0, 1);
  const DType t = r.take(0, 3) ? DType::f32 : DType::i32;
  const std::int64_t lim = 1 << 16;  // compared factor by factor: the products of wild sizes overflow
  if (M < 0 || N < 0 || K < 0 || K2 < 0) {
    try {  // a negative size is refused before any allocation, with a typed error
      (void)shape_size({M, K});
      (void)shape_size({K2, N});
    } catch (const ValueError&) {
      return;
    }
    finding("shape_size accepted a negative size");
  }
  if (M > lim || N > lim || K > lim || K2 > lim || M * K > lim || K2 * N > lim) return;  // too large to allocate here
  const bool valid = K == K2 && t == DType::f32;
  const auto A = values(M * K, 1), B = values(K2 * N, 7);
  const std::vector<std::int32_t> Bi(B.begin(), B.end());
  try {
    Array a = Array::from_host(cpu, A.data(), ta ? Shape{K, M} : Shape{M, K}, DType::f32);
    Array b = t == DType::f32 ? Array::from_host(cpu, B.data(), tb ? Shape{N, K2} : Shape{K2, N}, t)
                              : Array::from_host(cpu, Bi.data(), tb ? Shape{N, K2} : Shape{K2, N}, t);
    MatmulArgs args;
    args.trans_a = ta;
    args.trans_b = tb;
    Shape out;
    MatmulDesc d = matmul_plan(a, b, nullptr, args, &out);
    if (!valid) finding("matmul_plan accepted mismatched operands");
    if (out != Shape{M, N} || d.M != M || d.N != N || d.K != K) finding("matmul_plan: wrong result shape");
    if (M * N * K > 4096) return;
    Array c = matmul(a, b, nullptr, args);
    std::vector<float> h(static_cast<std::size_t>(M * N), NAN);
    if (!h.empty()) c.to_host(h.data());
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) {
        double s = 0;  // small integers: exact in float32 as well
        for (std::int64_t k = 0; k < K; ++k) s += double(A[ta ? k * M + i : i * K + k]) * B[tb ? j * K + k : k * N + j];
        if (h[i * N + j] != s) finding("matmul differs from the naive product");
      }
  } catch (const ValueError&) {
    if (valid) finding("matmul refused valid operands (ValueError)");
  } catch (const TypeError&) {
    if (valid) finding("matmul refused valid operands (TypeError)");
  }
}

// PyTorch's output size of a pooling window (pooling_output_shape; below 1: no valid output), computed here apart
// from the core's. Floor division: in ceil mode a window longer than the padded input still gives one output.
std::int64_t torch_out(std::int64_t in, int k, int s, int p, int d, bool ceil) {
  const std::int64_t num = in + 2 * p - std::int64_t(d) * (k - 1) - 1 + (ceil ? s - 1 : 0);
  std::int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil && (out - 1) * s >= in + p) --out;
  return out;
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
  bool window_ok = true;
  for (int i = 0; i < 2; ++i)
    window_ok &= p.kernel[i] >= 1 && p.stride[i] >= 1 && p.dilation[i] >= 1 && p.padding[i] >= 0 &&
                 2 * p.padding[i] <= p.kernel[i];
  // inputs PyTorch accepts, small enough to run here: a refusal of one of these is a finding
  const bool valid = small && window_ok && n >= 1 && c >= 1 && h >= 1 && w >= 1 &&
                     torch_out(h, p.kernel[0], p.stride[0], p.padding[0], p.dilation[0], p.ceil_mode) >= 1 &&
                     torch_out(w, p.kernel[1], p.stride[1], p.padding[1], p.dilation[1], p.ceil_mode) >= 1;
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
    if (small && (d.OH != torch_out(h, p.kernel[0], p.stride[0], p.padding[0], p.dilation[0], p.ceil_mode) ||
                  d.OW != torch_out(w, p.kernel[1], p.stride[1], p.padding[1], p.dilation[1], p.ceil_mode))) {
      std::fprintf(stderr, "input %lldx%lld, kernel %dx%d, stride %dx%d, padding %dx%d, dilation %dx%d, ceil %d: "
                   "%lldx%lld\n", (long long)h, (long long)w, p.kernel[0], p.kernel[1], p.stride[0], p.stride[1],
                   p.padding[0], p.padding[1], p.dilation[0], p.dilation[1], int(p.ceil_mode), (long long)d.OH,
                   (long long)d.OW);
      finding("pool2d_plan: output size differs from PyTorch's formula");
    }
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
    if (valid) finding("max_pool2d refused inputs PyTorch accepts (ValueError)");
  } catch (const TypeError&) {
    if (valid) finding("max_pool2d refused inputs PyTorch accepts (TypeError)");
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
