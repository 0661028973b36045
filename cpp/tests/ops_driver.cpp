// Exercises every op of the core front on every device, in repeated create/run/free cycles: results checked
// against naive double references, bad calls checked to throw typed errors. Built and run twice by the test
// script: normally (then it also checks that resident memory does not grow from cycle to cycle: a leak check) and
// under AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer checks at exit).
//
//   hetnn_ops_driver [cycles [device-id]]      exit status 0 when every check passed
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/array.h"
#include "core/half.h"
#include "core/linalg.h"
#include "core/manipulation.h"
#include "core/random.h"
#include "core/user_kernel.h"
#include "core/device.h"
#include "core/elementwise.h"
#include "core/errors.h"
#include "core/matmul.h"
#include "core/nn.h"
#include "core/pool2d.h"
#include "core/reduction.h"
#include "core/sort.h"
#include "core/train/trainer.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HETNN_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define HETNN_ASAN 1
#endif

using namespace hetnn;

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  }
}

template <class E, class F>
void expect_throw(F&& f, const std::string& what) {
  try {
    f();
  } catch (const E&) {
    return;
  } catch (const std::exception& e) {
    check(false, what + ": wrong exception type (" + e.what() + ")");
    return;
  }
  check(false, what + ": did not throw");
}

std::vector<float> randv(std::mt19937& g, std::size_t n) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

std::vector<float> host(const Array& a) {
  std::vector<float> v(static_cast<std::size_t>(a.size()));
  if (!v.empty()) a.to_host(v.data());
  return v;
}

void run_matmul(const DevicePtr& dev, std::mt19937& g) {
  std::uniform_int_distribution<int> sz(1, 70);
  const int M = sz(g), N = sz(g), K = sz(g);
  const bool ta = g() & 1, tb = g() & 1;
  auto A = randv(g, std::size_t(M) * K), B = randv(g, std::size_t(K) * N), bias = randv(g, std::size_t(N));
  Array a = Array::from_host(dev, A.data(), ta ? Shape{K, M} : Shape{M, K}, DType::f32);
  Array b = Array::from_host(dev, B.data(), tb ? Shape{N, K} : Shape{K, N}, DType::f32);
  Array bb = Array::from_host(dev, bias.data(), {N}, DType::f32);
  MatmulArgs args;
  args.trans_a = ta;
  args.trans_b = tb;
  args.act = Activation::relu;
  args.bias = &bb;
  Array c = matmul(a, b, nullptr, args);
  auto C = host(c);
  double worst = 0;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double s = bias[n];
      for (int k = 0; k < K; ++k) s += double(ta ? A[k * M + m] : A[m * K + k]) * double(tb ? B[n * K + k] : B[k * N + n]);
      worst = std::max(worst, std::abs(C[m * N + n] - std::max(s, 0.0)));
    }
  check(worst < 1e-4, dev->id() + " matmul " + std::to_string(M) + "x" + std::to_string(N) + "x" +
                          std::to_string(K) + " error " + std::to_string(worst));
  if (dev->info().fp64) {
    std::vector<double> Ad(A.begin(), A.end()), Bd(B.begin(), B.end());
    Array ad = Array::from_host(dev, Ad.data(), ta ? Shape{K, M} : Shape{M, K}, DType::f64);
    Array bd = Array::from_host(dev, Bd.data(), tb ? Shape{N, K} : Shape{K, N}, DType::f64);
    MatmulArgs plain;
    plain.trans_a = ta;
    plain.trans_b = tb;
    Array cd = matmul(ad, bd, nullptr, plain);
    std::vector<double> Cd(static_cast<std::size_t>(M) * N);
    cd.to_host(Cd.data());
    bool ok64 = true;  // every element against a naive double product
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double s = 0, mag = 0;
        for (int k = 0; k < K; ++k) {
          const double t = Ad[ta ? k * M + i : i * K + k] * Bd[tb ? j * K + k : k * N + j];
          s += t;
          mag += std::abs(t);
        }
        ok64 &= std::abs(Cd[std::size_t(i) * N + j] - s) <= 1e-13 * (mag + 1);
      }
    check(ok64, dev->id() + " matmul f64");
  }
  // bad calls: typed errors, never a crash
  Array wrong = Array::zeros(dev, {K + 1, N}, DType::f32);
  MatmulArgs none;
  expect_throw<ValueError>([&] { matmul(ta ? Array::zeros(dev, {M, K}, DType::f32) : a, wrong, nullptr, none); },
                           "matmul inner-size mismatch");
  Array ints = Array::zeros(dev, {K, N}, DType::i32);
  MatmulArgs relu;
  relu.act = Activation::relu;
  expect_throw<TypeError>([&] { matmul(Array::zeros(dev, {M, K}, DType::f32), ints, nullptr, relu); },
                          "matmul int32 operand with an activation");
}

void check_pool(const DevicePtr& dev, std::mt19937& g, const Pool2dArgs& p, int n, int c, int h, int w) {
  auto X = randv(g, std::size_t(n) * c * h * w);
  Array x = Array::from_host(dev, X.data(), {n, c, h, w}, DType::f32);
  Array idx;
  Array y = max_pool2d(x, p, nullptr, &idx);
  const auto& s = y.shape();
  auto Y = host(y);
  const std::int64_t OH = s[2], OW = s[3];
  bool ok = OH == pool_output_size(h, p.kernel[0], p.stride[0], p.padding[0], p.dilation[0], p.ceil_mode) &&
            OW == pool_output_size(w, p.kernel[1], p.stride[1], p.padding[1], p.dilation[1], p.ceil_mode);
  for (int plane = 0; plane < n * c && ok; ++plane)
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        float best = -INFINITY;
        for (int i = 0; i < p.kernel[0]; ++i)
          for (int j = 0; j < p.kernel[1]; ++j) {
            const std::int64_t r = oh * p.stride[0] - p.padding[0] + i * p.dilation[0];
            const std::int64_t q = ow * p.stride[1] - p.padding[1] + j * p.dilation[1];
            const bool in = r >= 0 && r < h && q >= 0 && q < w;
            const bool pad = p.zero_padding && !in && r < h + p.padding[0] && q < w + p.padding[1];
            if (in || pad) best = std::max(best, in ? X[(plane * h + r) * w + q] : 0.0f);
          }
        if (Y[(plane * OH + oh) * OW + ow] != best) ok = false;
      }
  check(ok, dev->id() + " max_pool2d forward");
  check(host(max_pool2d(x, p, nullptr, nullptr)) == Y, dev->id() + " max_pool2d forward, values only");
  // backward: each output's gradient lands on its window's first maximum (row-major window order), summed
  auto G = randv(g, static_cast<std::size_t>(y.size()));
  Array gy = Array::from_host(dev, G.data(), y.shape(), DType::f32);
  Array gx = max_pool2d_backward(gy, idx, x.shape(), p, nullptr);
  std::vector<double> want(static_cast<std::size_t>(x.size()), 0.0);
  for (int plane = 0; plane < n * c; ++plane)
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        float best = -INFINITY;
        std::int64_t at = -1;
        for (int i = 0; i < p.kernel[0]; ++i)
          for (int j = 0; j < p.kernel[1]; ++j) {
            const std::int64_t r = oh * p.stride[0] - p.padding[0] + i * p.dilation[0];
            const std::int64_t q = ow * p.stride[1] - p.padding[1] + j * p.dilation[1];
            const bool in = r >= 0 && r < h && q >= 0 && q < w;
            const bool pad = p.zero_padding && !in && r < h + p.padding[0] && q < w + p.padding[1];
            const float v = in ? X[(plane * h + r) * w + q] : 0.0f;
            if ((in || pad) && v > best) best = v, at = in ? r * w + q : -1;
          }
        if (at >= 0) want[std::size_t(plane) * h * w + at] += G[(plane * OH + oh) * OW + ow];
      }
  const auto GX = host(gx);
  bool back_ok = true;
  for (std::size_t i = 0; i < want.size(); ++i) back_ok &= std::abs(GX[i] - want[i]) <= 1e-5 * (1 + std::abs(want[i]));
  check(back_ok, dev->id() + " max_pool2d backward");
  Pool2dArgs bad = p;
  bad.kernel = {0, 2};
  expect_throw<ValueError>([&] { max_pool2d(x, bad, nullptr, nullptr); }, "max_pool2d kernel 0");
}

void run_pool(const DevicePtr& dev, std::mt19937& g) {
  std::uniform_int_distribution<int> small(1, 3), img(4, 29), wide(8, 100);
  Pool2dArgs p;
  p.kernel = {small(g) + 1, small(g)};
  p.stride = {small(g), small(g)};
  p.zero_padding = g() & 1;  // padding_mode="zeros": any padding, the padding's taps read 0 (index -1)
  p.padding = {p.zero_padding ? small(g) : std::min(p.kernel[0] / 2, small(g) - 1), p.zero_padding ? small(g) - 1 : 0};
  p.dilation = {1, small(g)};
  p.ceil_mode = g() & 1;
  check_pool(dev, g, p, small(g), small(g), img(g), wide(g));
  // Rows that end a stride-2 chunk of 16 outputs on their last column: the CPU kernel's 32-float loads once read
  // one float past the input there
  for (int w : {63, 64}) {
    Pool2dArgs q;
    q.kernel = {2, 2};
    q.stride = {2, 2};
    check_pool(dev, g, q, 1, 2, 2, w);
  }
}

// The training ops, one function per op-table row, each on its own random inputs against a double reference
// (float32 results: relative 1e-5).
bool near(double got, double want, double tol = 1e-5) { return std::abs(got - want) <= tol * (1 + std::abs(want)); }

void run_avg_pool(const DevicePtr& dev, std::mt19937& g) {
  // widths up to 100: rows of several 16-float vectors, so that the vector loads' row ends are exercised
  std::uniform_int_distribution<int> small(1, 3), img(4, 29), wide(8, 100);
  Pool2dArgs p;
  p.kernel = {small(g) + 1, small(g)};
  p.stride = {small(g), small(g)};
  p.padding = {std::min(p.kernel[0] / 2, small(g) - 1), p.kernel[1] / 2};
  p.ceil_mode = g() & 1;
  const bool include_pad = g() & 1;
  const std::optional<int> divisor = g() & 1 ? std::optional<int>(1 + int(g() % 5)) : std::nullopt;
  const int n = small(g), c = small(g), h = img(g), w = img(g) + 4;
  auto X = randv(g, std::size_t(n) * c * h * w);
  Array x = Array::from_host(dev, X.data(), {n, c, h, w}, DType::f32);
  Array y = avg_pool2d(x, p, include_pad, divisor, nullptr);
  const std::int64_t OH = y.shape()[2], OW = y.shape()[3];
  const auto Y = host(y);
  bool ok = OH == pool_output_size(h, p.kernel[0], p.stride[0], p.padding[0], 1, p.ceil_mode) &&
            OW == pool_output_size(w, p.kernel[1], p.stride[1], p.padding[1], 1, p.ceil_mode);
  for (int plane = 0; plane < n * c && ok; ++plane)
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        const std::int64_t r0 = oh * p.stride[0] - p.padding[0], q0 = ow * p.stride[1] - p.padding[1];
        const std::int64_t r1 = std::min<std::int64_t>(r0 + p.kernel[0], h + p.padding[0]);
        const std::int64_t q1 = std::min<std::int64_t>(q0 + p.kernel[1], w + p.padding[1]);
        double sum = 0;
        int inside = 0;
        for (std::int64_t r = std::max<std::int64_t>(r0, 0); r < std::min<std::int64_t>(r1, h); ++r)
          for (std::int64_t q = std::max<std::int64_t>(q0, 0); q < std::min<std::int64_t>(q1, w); ++q)
            sum += X[(plane * h + r) * w + q], ++inside;
        const double div = divisor ? *divisor : include_pad ? double((r1 - r0) * (q1 - q0)) : inside;
        if (!near(Y[(plane * OH + oh) * OW + ow], sum / div)) ok = false;
      }
  check(ok, dev->id() + " avg_pool2d");
  expect_throw<ValueError>([&] { avg_pool2d(x, p, true, 0, nullptr); }, "avg_pool2d divisor 0");
  // backward: each window's gradient spread over the input positions it averaged, divided alike
  auto G = randv(g, std::size_t(n) * c * OH * OW);
  Array gy = Array::from_host(dev, G.data(), y.shape(), DType::f32);
  Array gx = avg_pool2d_backward(gy, x.shape(), p, include_pad, divisor, nullptr);
  std::vector<double> want(X.size(), 0.0);
  for (int plane = 0; plane < n * c; ++plane)
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        const std::int64_t r0 = oh * p.stride[0] - p.padding[0], q0 = ow * p.stride[1] - p.padding[1];
        const std::int64_t r1 = std::min<std::int64_t>(r0 + p.kernel[0], h + p.padding[0]);
        const std::int64_t q1 = std::min<std::int64_t>(q0 + p.kernel[1], w + p.padding[1]);
        const std::int64_t a0 = std::max<std::int64_t>(r0, 0), a1 = std::min<std::int64_t>(r1, h);
        const std::int64_t b0 = std::max<std::int64_t>(q0, 0), b1 = std::min<std::int64_t>(q1, w);
        const double div = divisor ? *divisor : include_pad ? double((r1 - r0) * (q1 - q0)) : (a1 - a0) * (b1 - b0);
        for (std::int64_t r = a0; r < a1; ++r)
          for (std::int64_t q = b0; q < b1; ++q) want[(plane * h + r) * w + q] += G[(plane * OH + oh) * OW + ow] / div;
      }
  const auto GX = host(gx);
  bool back_ok = true;
  for (std::size_t i = 0; i < want.size(); ++i) back_ok &= near(GX[i], want[i]);
  check(back_ok, dev->id() + " avg_pool2d backward");
  expect_throw<ValueError>([&] { avg_pool2d_backward(gy, {n, c, h + 40, w}, p, true, std::nullopt, nullptr); },
                           "avg_pool2d_backward wrong input_shape");
}

void run_conv2d(const DevicePtr& dev, std::mt19937& g) {
  std::uniform_int_distribution<int> small(1, 3), img(3, 12);
  Conv2dArgs a;
  a.groups = small(g);
  const int n = small(g) - 1, cg = small(g), og = small(g), kh = small(g), kw = small(g);
  const int C = cg * a.groups, O = og * a.groups, h = img(g) + kh, w = img(g) + kw;
  a.stride = {small(g), small(g)};
  a.dilation = {small(g) % 2 + 1, 1};
  a.padding = {small(g) - 1, small(g) - 1};
  a.act = static_cast<Activation>(g() % 4);
  auto X = randv(g, std::size_t(n) * C * h * w), Wt = randv(g, std::size_t(O) * cg * kh * kw), B = randv(g, O);
  Array x = Array::from_host(dev, X.data(), {n, C, h, w}, DType::f32);
  Array wt = Array::from_host(dev, Wt.data(), {O, cg, kh, kw}, DType::f32);
  Array b = Array::from_host(dev, B.data(), {O}, DType::f32);
  Array y = conv2d(x, wt, &b, a, nullptr);
  const std::int64_t OH = y.shape()[2], OW = y.shape()[3];
  const auto Y = host(y);
  bool ok = OH == (h + 2 * a.padding[0] - a.dilation[0] * (kh - 1) - 1) / a.stride[0] + 1 &&
            OW == (w + 2 * a.padding[1] - (kw - 1) - 1) / a.stride[1] + 1;
  for (int i = 0; i < n && ok; ++i)
    for (int o = 0; o < O; ++o)
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          double s = B[o];
          const int c0 = (o / og) * cg;
          for (int c = 0; c < cg; ++c)
            for (int r = 0; r < kh; ++r)
              for (int q = 0; q < kw; ++q) {
                const std::int64_t ih = oh * a.stride[0] - a.padding[0] + r * a.dilation[0];
                const std::int64_t iw = ow * a.stride[1] - a.padding[1] + q;
                if (ih >= 0 && ih < h && iw >= 0 && iw < w)
                  s += double(X[((std::int64_t(i) * C + c0 + c) * h + ih) * w + iw]) *
                       Wt[((std::int64_t(o) * cg + c) * kh + r) * kw + q];
              }
          const double ref = a.act == Activation::relu      ? std::max(s, 0.0)
                             : a.act == Activation::sigmoid ? 1 / (1 + std::exp(-s))
                             : a.act == Activation::tanh    ? std::tanh(s)
                                                            : s;
          if (!near(Y[((std::int64_t(i) * O + o) * OH + oh) * OW + ow], ref)) ok = false;
        }
  check(ok, dev->id() + " conv2d");
  // backward against the adjoint identity sum(gy * conv(x, w)) = sum(gx * x) = sum(gw * w) (no bias, no activation)
  Conv2dArgs lin = a;
  lin.act = Activation::none;
  if (n > 0) {
    Array y0 = conv2d(x, wt, nullptr, lin, nullptr);
    auto GY = randv(g, std::size_t(y0.size()));
    Array gy = Array::from_host(dev, GY.data(), y0.shape(), DType::f32);
    const auto [gin, gwt, gbias] = conv2d_backward(gy, x, wt, lin, true, true, true);
    const auto Y0 = host(y0), GX = host(gin), GW = host(gwt), GB = host(gbias);
    double s_y = 0, s_x = 0, s_w = 0, s_b = 0, s_gy = 0;
    for (std::size_t i = 0; i < Y0.size(); ++i) s_y += double(GY[i]) * Y0[i], s_gy += GY[i];
    for (std::size_t i = 0; i < GX.size(); ++i) s_x += double(GX[i]) * X[i];
    for (std::size_t i = 0; i < GW.size(); ++i) s_w += double(GW[i]) * Wt[i];
    for (float v : GB) s_b += v;
    check(near(s_x, s_y, 1e-4) && near(s_w, s_y, 1e-4) && near(s_b, s_gy, 1e-4), dev->id() + " conv2d_backward");
    // into the caller's arrays (the Trainer's gradient buffers): the same values, in place
    Array ox = Array::empty(dev, x.shape(), DType::f32), ow = Array::empty(dev, wt.shape(), DType::f32),
          ob = Array::empty(dev, {wt.shape()[0]}, DType::f32);
    const auto [rx, rw, rb] = conv2d_backward(gy, x, wt, lin, true, true, true, Conv2dGradOut{&ox, &ow, &ob});
    check(rx.same_memory(ox) && rw.same_memory(ow) && rb.same_memory(ob) && host(ox) == GX && host(ow) == GW &&
              host(ob) == GB,
          dev->id() + " conv2d_backward into given arrays");
    expect_throw<ValueError>(
        [&] { conv2d_backward(gy, x, wt, lin, false, true, false, Conv2dGradOut{nullptr, &ob, nullptr}); },
        "conv2d_backward weight gradient array of the wrong shape");
    expect_throw<ValueError>(
        [&] { conv2d_backward(gy, x, wt, lin, true, false, false, Conv2dGradOut{&x, nullptr, nullptr}); },
        "conv2d_backward input gradient array that is x");
  }
  Conv2dArgs bad = a;
  bad.groups = 0;
  expect_throw<ValueError>([&] { conv2d(x, wt, &b, bad, nullptr); }, "conv2d groups 0");
}

struct Batch {  // rows x cols predictions and one label per row, on the device and on the host
  int rows, cols;
  std::vector<float> P;
  std::vector<std::int64_t> L;
  Array pred, labels;
  Batch(const DevicePtr& dev, std::mt19937& g) : rows(1 + int(g() % 17)), cols(2 + int(g() % 9)) {
    P = randv(g, n());
    L.resize(rows);
    for (auto& l : L) l = std::int64_t(g() % cols);
    pred = Array::from_host(dev, P.data(), {rows, cols}, DType::f32);
    labels = Array::from_host(dev, L.data(), {rows}, DType::i64);
  }
  std::size_t n() const { return std::size_t(rows) * cols; }
  std::vector<double> softmax() const {
    std::vector<double> out(n());
    for (int r = 0; r < rows; ++r) {
      double m = -INFINITY, z = 0;
      for (int c = 0; c < cols; ++c) m = std::max(m, double(P[r * cols + c]));
      for (int c = 0; c < cols; ++c) z += std::exp(double(P[r * cols + c]) - m);
      for (int c = 0; c < cols; ++c) out[r * cols + c] = std::exp(double(P[r * cols + c]) - m) / z;
    }
    return out;
  }
};

void run_batch_loss(const DevicePtr& dev, std::mt19937& g) {
  // cross-entropy over labels: loss_scale * sum of rows' losses, grad = grad_scale * (softmax - onehot)
  Batch b(dev, g);
  const auto soft = b.softmax();
  double want = 0;
  for (int r = 0; r < b.rows; ++r) want += -std::log(soft[r * b.cols + b.L[r]]);
  Array acc = Array::zeros(dev, {1}, DType::f32);
  Array grad = Array::empty(dev, {b.rows, b.cols}, DType::f32);
  loss("cross_entropy", b.pred, b.labels, acc, &grad, 0.5, 1.0 / b.rows);
  bool ok = near(host(acc)[0], 0.5 * want);
  const auto GR = host(grad);
  for (int r = 0; r < b.rows; ++r)
    for (int c = 0; c < b.cols; ++c) ok &= near(GR[r * b.cols + c], (soft[r * b.cols + c] - (c == b.L[r])) / b.rows);
  check(ok, dev->id() + " cross-entropy loss and gradient");
  expect_throw<ValueError>([&] { loss("hinge", b.pred, b.labels, acc, nullptr, 1, 1); }, "unknown loss");
}

void run_metric(const DevicePtr& dev, std::mt19937& g) {
  Batch b(dev, g);
  double want = 0;
  for (int r = 0; r < b.rows; ++r)
    want += std::max_element(b.P.begin() + r * b.cols, b.P.begin() + (r + 1) * b.cols) - (b.P.begin() + r * b.cols) ==
            b.L[r];
  Array hits = Array::zeros(dev, {1}, DType::f32);
  metric("correct_argmax", b.pred, b.labels, hits);
  check(host(hits)[0] == want, dev->id() + " correct_argmax metric");
}

void run_softmax(const DevicePtr& dev, std::mt19937& g) {
  Batch b(dev, g);
  const auto soft = b.softmax();
  const auto S = host(softmax(b.pred, nullptr));
  bool ok = true;
  for (std::size_t i = 0; i < b.n(); ++i) ok &= near(S[i], soft[i]);
  check(ok, dev->id() + " softmax");
}

double act64(Activation a, double x) {
  return a == Activation::relu ? std::max(x, 0.0) : a == Activation::sigmoid ? 1 / (1 + std::exp(-x)) : std::tanh(x);
}

void run_activation(const DevicePtr& dev, std::mt19937& g) {
  Batch b(dev, g);
  for (Activation a : {Activation::relu, Activation::sigmoid, Activation::tanh}) {
    const auto Y = host(activation(b.pred, a, nullptr));
    bool ok = true;
    for (std::size_t i = 0; i < b.n(); ++i) ok &= near(Y[i], act64(a, b.P[i]));
    check(ok, dev->id() + " activation " + std::to_string(int(a)));
  }
}

void run_activation_backward(const DevicePtr& dev, std::mt19937& g) {
  Batch b(dev, g);
  const auto G = randv(g, b.n());
  Array grad = Array::from_host(dev, G.data(), {b.rows, b.cols}, DType::f32);
  for (Activation a : {Activation::relu, Activation::sigmoid, Activation::tanh}) {
    std::vector<float> Yf(b.n());
    for (std::size_t i = 0; i < b.n(); ++i) Yf[i] = float(act64(a, b.P[i]));
    Array y = Array::from_host(dev, Yf.data(), {b.rows, b.cols}, DType::f32);
    const auto DY = host(activation_backward(grad, y, a, nullptr));
    bool ok = true;
    for (std::size_t i = 0; i < b.n(); ++i) {
      const double yi = Yf[i], d = a == Activation::relu ? (yi > 0 ? 1.0 : 0.0) : a == Activation::sigmoid
                                                                              ? yi * (1 - yi) : 1 - yi * yi;
      ok &= near(DY[i], G[i] * d);
    }
    check(ok, dev->id() + " activation_backward " + std::to_string(int(a)));
  }
}

void run_sum_rows(const DevicePtr& dev, std::mt19937& g) {
  Batch b(dev, g);
  const auto CS = host(sum_rows(b.pred, nullptr, 0.0));
  bool ok = true;
  for (int c = 0; c < b.cols; ++c) {
    double s = 0, mag = 0;
    for (int r = 0; r < b.rows; ++r) s += b.P[r * b.cols + c], mag += std::abs(b.P[r * b.cols + c]);
    ok &= std::abs(CS[c] - s) <= 1e-6 * (mag + 1e-30) + 1e-12;
  }
  check(ok, dev->id() + " sum_rows");
}

void run_sgd_update(const DevicePtr& dev, std::mt19937& g) {
  // Nesterov SGD with weight decay from a nonzero velocity: PyTorch's definition (optim.py)
  Batch b(dev, g);
  const auto GR = randv(g, b.n()), V0 = randv(g, b.n());
  Array grad = Array::from_host(dev, GR.data(), {b.rows, b.cols}, DType::f32);
  Array vel = Array::from_host(dev, V0.data(), {b.rows, b.cols}, DType::f32);
  sgd_update(b.pred, grad, &vel, 0.1, 0.9, 1e-2, true);
  const auto Q = host(b.pred), V = host(vel);
  bool ok = true;
  for (std::size_t i = 0; i < b.n(); ++i) {
    const double d = double(GR[i]) + 1e-2 * b.P[i], v = 0.9 * V0[i] + d;
    ok &= near(V[i], v) && near(Q[i], b.P[i] - 0.1 * (d + 0.9 * v));
  }
  check(ok, dev->id() + " SGD step (Nesterov, weight decay)");
  expect_throw<ValueError>([&] { sgd_update(b.pred, grad, nullptr, 0.1, 0.9, 0, false); },
                           "momentum without velocity");
}

void run_adam_update(const DevicePtr& dev, std::mt19937& g) {
  // AdamW with amsgrad, step 3, from nonzero moments: PyTorch's definition (AdamDesc in core/ops.h)
  Batch b(dev, g);
  const auto GR = randv(g, b.n()), M0 = randv(g, b.n());
  std::vector<float> V0(b.n()), X0(b.n());
  for (std::size_t i = 0; i < b.n(); ++i) V0[i] = GR[i] * GR[i], X0[i] = (i % 2) ? 2 * V0[i] : 0.5f * V0[i];
  const Shape s{b.rows, b.cols};
  Array grad = Array::from_host(dev, GR.data(), s, DType::f32), m = Array::from_host(dev, M0.data(), s, DType::f32);
  Array v = Array::from_host(dev, V0.data(), s, DType::f32), vmax = Array::from_host(dev, X0.data(), s, DType::f32);
  adam_update(b.pred, grad, m, v, &vmax, 0.01, 0.9, 0.99, 1e-3, 0.1, 3, true, true);
  const auto Q = host(b.pred), M = host(m), V = host(v), X = host(vmax);
  bool ok = true;
  for (std::size_t i = 0; i < b.n(); ++i) {
    const double p = b.P[i] * (1 - 0.01 * 0.1), gi = GR[i];
    const double mi = 0.9 * M0[i] + 0.1 * gi, vi = 0.99 * V0[i] + 0.01 * gi * gi, xi = std::max<double>(X0[i], vi);
    const double q = p - 0.01 / (1 - std::pow(0.9, 3)) * mi / (std::sqrt(xi) / std::sqrt(1 - std::pow(0.99, 3)) + 1e-3);
    ok &= near(M[i], mi) && near(V[i], vi) && near(X[i], xi) && near(Q[i], q);
  }
  check(ok, dev->id() + " AdamW step (amsgrad)");
  expect_throw<ValueError>([&] { adam_update(b.pred, grad, m, v, nullptr, 0.01, 0.9, 0.99, 1e-8, 0, 1, true, false); },
                           "amsgrad without vmax");
  expect_throw<ValueError>([&] { adam_update(b.pred, grad, m, m, nullptr, 0.01, 0.9, 0.99, 1e-8, 0, 1, false, false); },
                           "m and v the same array");
}

void run_dropout(const DevicePtr& dev, std::mt19937& g) {
  Batch b(dev, g);
  const std::uint64_t seed = (std::uint64_t(g()) << 32) | g();
  const auto Y = host(dropout(b.pred, 0.25, seed, nullptr));
  bool ok = true;
  for (std::size_t i = 0; i < b.n(); ++i) {
    const bool keep = dropout_draw(seed, i) >= (1u << 22);  // p = 0.25 of 2^24
    ok &= keep ? near(Y[i], b.P[i] / 0.75) : Y[i] == 0.0f;
  }
  check(ok, dev->id() + " dropout");
  expect_throw<ValueError>([&] { dropout(b.pred, 1.5, seed, nullptr); }, "dropout p > 1");
}

void run_take_rows(const DevicePtr& dev, std::mt19937& g) {
  Batch b(dev, g);
  std::vector<std::int64_t> I(b.rows);
  for (int i = 0; i < b.rows; ++i) I[i] = (3 * i + 1) % b.rows;
  Array idx = Array::from_host(dev, I.data(), {b.rows}, DType::i64);
  const auto T = host(take_rows(b.pred, idx, 0, b.rows, nullptr));
  bool ok = true;
  for (int r = 0; r < b.rows; ++r)
    for (int c = 0; c < b.cols; ++c) ok &= T[r * b.cols + c] == b.P[std::size_t(I[r]) * b.cols + c];
  check(ok, dev->id() + " take_rows");
}

// An element-wise add with a row broadcast down a matrix and a compare giving bool, against double references, and
// a bad call (shapes that do not broadcast).
void run_elementwise(const DevicePtr& dev, std::mt19937& g) {
  Batch b(dev, g);
  const auto R = randv(g, b.cols);
  Array row = Array::from_host(dev, R.data(), {b.cols}, DType::f32);
  const auto S = host(elementwise(EwOp::add, b.pred, &row, nullptr));
  Array gt = elementwise(EwOp::greater, b.pred, &row, nullptr);
  std::vector<std::uint8_t> G(b.n());
  gt.to_host(G.data());
  bool ok = true;
  for (int r = 0; r < b.rows; ++r)
    for (int c = 0; c < b.cols; ++c) {
      const std::size_t i = std::size_t(r) * b.cols + c;
      ok &= near(S[i], double(b.P[i]) + R[c]) && G[i] == (b.P[i] > R[c] ? 1 : 0);
    }
  check(ok, dev->id() + " elementwise add / greater (broadcast row)");
  bool threw = false;
  try {
    const auto W = randv(g, b.cols + 1);
    Array wrong = Array::from_host(dev, W.data(), {b.cols + 1}, DType::f32);
    elementwise(EwOp::add, b.pred, &wrong, nullptr);
  } catch (const ValueError&) {
    threw = true;
  }
  check(threw, dev->id() + " elementwise: shapes that do not broadcast are refused");
}

void run_reduce(const DevicePtr& dev, std::mt19937& g) {
  Batch b(dev, g);
  Axes last;
  last.all = false;
  last.list = {-1};
  const auto S = host(reduce(RedOp::sum, b.pred, last, false));
  Array am = reduce(RedOp::argmax, b.pred, last, false);
  std::vector<std::int64_t> A(static_cast<std::size_t>(b.rows));
  am.to_host(A.data());
  const auto C = host(cumulative_sum(b.pred, 1, std::nullopt, false));
  const auto M = host(reduce(RedOp::max, b.pred, Axes{}, false));
  bool ok = true;
  double all_max = -INFINITY;
  for (int r = 0; r < b.rows; ++r) {
    double s = 0, best = -INFINITY;
    std::int64_t arg = 0;
    for (int c = 0; c < b.cols; ++c) {
      const double v = b.P[std::size_t(r) * b.cols + c];
      s += v;
      ok &= near(C[std::size_t(r) * b.cols + c], s);
      if (v > best) best = v, arg = c;
    }
    all_max = std::max(all_max, best);
    ok &= near(S[std::size_t(r)], s) && A[std::size_t(r)] == arg;
  }
  ok &= M[0] == all_max;
  check(ok, dev->id() + " reduce sum / argmax along rows, max of all, cumulative_sum");
  bool threw = false;
  try {
    Axes bad;
    bad.all = false;
    bad.list = {2};
    reduce(RedOp::sum, b.pred, bad, false);
  } catch (const ValueError&) {
    threw = true;
  }
  check(threw, dev->id() + " reduce: an axis out of range is refused");
}

// copy_strided through its fronts: a stepped, reversed selection, a transpose, a flip, a concat, a take and an
// assignment, each against the host's indices.
void run_copy_strided(const DevicePtr& dev, std::mt19937& g) {
  Batch b(dev, g);
  const int R = b.rows, C = b.cols;
  auto at = [&](int r, int c) { return b.P[std::size_t(r) * C + c]; };
  bool ok = true;
  // x[::-1, 1::2]
  Index key(2);
  key[0].kind = key[1].kind = IndexItem::Kind::slice;
  key[0].step = -1;
  key[1].start = 1;
  key[1].step = 2;
  const auto S = host(getitem(b.pred, key));
  const int half = C / 2;
  ok &= S.size() == std::size_t(R) * half;
  for (int r = 0; ok && r < R; ++r)
    for (int j = 0; j < half; ++j) ok &= S[std::size_t(r) * half + j] == at(R - 1 - r, 1 + 2 * j);
  const auto T = host(permute_dims(b.pred, {1, 0}));
  const auto F = host(flip(b.pred, std::vector<int>{1}));
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c)
      ok &= T[std::size_t(c) * R + r] == at(r, c) && F[std::size_t(r) * C + c] == at(r, C - 1 - c);
  const auto K = host(concat({b.pred, b.pred}, 1));
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < 2 * C; ++c) ok &= K[std::size_t(r) * 2 * C + c] == at(r, c % C);
  const auto Tk = host(take(b.pred, b.labels, 1));  // column labels[j] of every row
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < R; ++j) ok &= Tk[std::size_t(r) * R + j] == at(r, int(b.L[std::size_t(j)]));
  Array y = Array::zeros(dev, {R, C}, DType::f32);
  Index col(2);
  col[0].kind = IndexItem::Kind::slice;
  col[1].index = C - 1;
  setitem(y, col, getitem(b.pred, col));
  const auto Y = host(y);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) ok &= Y[std::size_t(r) * C + c] == (c == C - 1 ? at(r, c) : 0.0f);
  check(ok, dev->id() + " copy_strided: a stepped reversed selection, transpose, flip, concat, take, assignment");
  bool threw = false;
  try {
    Index bad(1);
    bad[0].index = R;
    getitem(b.pred, bad);
  } catch (const IndexError&) {
    threw = true;
  }
  check(threw, dev->id() + " getitem: an index out of bounds is an IndexError");
}

// random: uniform float32 draws against SplitMix64's definition, a stream continued across calls, integers in range.
void run_random(const DevicePtr& dev, std::mt19937& g) {
  const std::uint64_t seed = (std::uint64_t(g()) << 32) | g();
  Generator gen(seed);
  const int n = 1 + int(g() % 300);
  const auto U = host(gen.uniform(dev, {n}, DType::f32, 0.0, 1.0));
  const auto V = host(gen.uniform(dev, {n}, DType::f32, 0.0, 1.0));
  bool ok = true;
  for (int i = 0; i < n; ++i) {
    ok &= U[std::size_t(i)] == static_cast<float>(unit_from_bits(splitmix64(seed, std::uint64_t(i)), 24));
    ok &= V[std::size_t(i)] == static_cast<float>(unit_from_bits(splitmix64(seed, std::uint64_t(n + i)), 24));
  }
  Array ints = gen.integers(dev, {n}, DType::i64, -3, 3);
  std::vector<std::int64_t> I(static_cast<std::size_t>(n));
  ints.to_host(I.data());
  for (std::int64_t v : I) ok &= v >= -3 && v <= 3;
  check(ok, dev->id() + " random: uniform draws as defined, the stream continued, integers in range");
  bool threw = false;
  try {
    gen.normal(dev, {2}, DType::f32, 0.0, -1.0);
  } catch (const ValueError&) {
    threw = true;
  }
  check(threw, dev->id() + " random: a negative scale is refused");
}

// A user element-wise kernel (compiled for the device: OpenCL C, or C with the system's compiler on the CPU
// device), broadcast and with a number, against the host's arithmetic.
void run_elementwise_kernel(const DevicePtr& dev, std::mt19937& g) {
  static const ElementwiseKernel k("T x, T y, float32 s", "T z", "z = x * y + s", "ops_driver_kernel", "");
  Batch b(dev, g);
  std::vector<float> col(static_cast<std::size_t>(b.cols));
  for (auto& v : col) v = float(g() % 100) / 10.0f;
  const Array c = Array::from_host(dev, col.data(), {b.cols}, DType::f32);
  ElementwiseKernel::Input in[3];
  in[0].array = &b.pred;
  in[1].array = &c;
  in[2].scalar.is_float = true;
  in[2].scalar.f = 0.5;
  const auto Z = host(k({in[0], in[1], in[2]}, {})[0]);
  bool ok = Z.size() == b.n();
  for (int r = 0; ok && r < b.rows; ++r)
    for (int j = 0; j < b.cols; ++j) {
      const std::size_t e = std::size_t(r) * b.cols + j;
      ok &= Z[e] == b.P[e] * col[std::size_t(j)] + 0.5f || std::fabs(Z[e] - (b.P[e] * col[std::size_t(j)] + 0.5f)) < 1e-5f;
    }
  check(ok, dev->id() + " user elementwise kernel: broadcast operand and a number");
}

// A user reduction kernel: the sums of squares of the rows, against the host's.
void run_reduction_kernel(const DevicePtr& dev, std::mt19937& g) {
  static const ReductionKernel k("T x", "T y", "x * x", "a + b", "y = a", "0", "ops_driver_red", std::nullopt, "");
  Batch b(dev, g);
  ElementwiseKernel::Input in;
  in.array = &b.pred;
  Axes rows;
  rows.all = false;
  rows.list = {1};
  const auto Y = host(k({in}, rows, false, {})[0]);
  bool ok = Y.size() == std::size_t(b.rows);
  for (int r = 0; ok && r < b.rows; ++r) {
    double s = 0;
    for (int c = 0; c < b.cols; ++c) s += double(b.P[std::size_t(r) * b.cols + c]) * b.P[std::size_t(r) * b.cols + c];
    ok &= std::fabs(Y[std::size_t(r)] - s) <= 1e-5 * std::max(1.0, s);
  }
  check(ok, dev->id() + " user reduction kernel: sums of squares of the rows");
}

// One entry per row of the op table (tests/op_table.py; tests/test_op_table.py fails when the names differ).
// max_pool2d's function checks its backward too.
// sort / argsort of random lines with ties (values from 7 levels) along a random axis, both orders: the values
// must be ordered, and argsort's positions must give them back stably (equal values keep their order).
void run_sort(const DevicePtr& dev, std::mt19937& g) {
  std::uniform_int_distribution<int> len(1, 40), lv(-3, 3);
  const std::int64_t a = len(g), b = len(g);
  std::vector<float> X(static_cast<std::size_t>(a * b));
  for (auto& v : X) v = static_cast<float>(lv(g));
  Array x = Array::from_host(dev, X.data(), {a, b}, DType::f32);
  const int axis = static_cast<int>(g() & 1);
  const bool desc = g() & 1;
  const auto S = host(sort(x, axis, desc, true));
  Array idx = argsort(x, axis, desc, true);
  std::vector<std::int64_t> I(static_cast<std::size_t>(a * b));
  idx.to_host(I.data());
  bool ok = true;
  const std::int64_t lines = axis == 0 ? b : a, n = axis == 0 ? a : b;
  for (std::int64_t l = 0; l < lines; ++l)
    for (std::int64_t j = 0; j < n; ++j) {
      const auto at = [&](std::int64_t k) { return axis == 0 ? k * b + l : l * b + k; };
      const std::int64_t p = I[static_cast<std::size_t>(at(j))];
      ok &= p >= 0 && p < n && X[static_cast<std::size_t>(at(p))] == S[static_cast<std::size_t>(at(j))];
      if (j > 0) {
        const float u = S[static_cast<std::size_t>(at(j - 1))], v = S[static_cast<std::size_t>(at(j))];
        ok &= desc ? u >= v : u <= v;
        if (u == v) ok &= I[static_cast<std::size_t>(at(j - 1))] < p;  // stable
      }
    }
  check(ok, dev->id() + " sort / argsort");
  expect_throw<ValueError>([&] { sort(x, 2, false, true); }, "sort axis out of bounds");
  // searchsorted of random values in a sorted 1-D line: left = how many are smaller, right = how many not larger
  std::vector<float> V(static_cast<std::size_t>(b));
  for (auto& v : V) v = static_cast<float>(lv(g));
  Array line = sort(Array::from_host(dev, X.data(), {a * b}, DType::f32), 0, false, true);
  Array q = Array::from_host(dev, V.data(), {b}, DType::f32);
  for (const char* side : {"left", "right"}) {
    std::vector<std::int64_t> P(static_cast<std::size_t>(b));
    searchsorted(line, q, side, nullptr).to_host(P.data());
    bool found = true;
    for (std::int64_t j = 0; j < b; ++j) {
      std::int64_t want = 0;
      for (const float e : X) want += std::string(side) == "left" ? e < V[j] : e <= V[j];
      found &= P[static_cast<std::size_t>(j)] == want;
    }
    check(found, dev->id() + " searchsorted " + side);
  }
  expect_throw<ValueError>([&] { searchsorted(x, q, "left", nullptr); }, "searchsorted 2-D x1");
}

// tensordot of small integer-valued operands (exact in float32 too) against a host loop: a (m, k) with b (n, k)
// summed over their axes 1, in float32 and int32.
void run_tensordot(const DevicePtr& dev, std::mt19937& g) {
  std::uniform_int_distribution<int> len(0, 6), lv(-4, 4);
  const std::int64_t m = len(g), k = len(g), n = len(g);
  std::vector<std::int32_t> A(static_cast<std::size_t>(m * k)), B(static_cast<std::size_t>(n * k));
  for (auto& v : A) v = lv(g);
  for (auto& v : B) v = lv(g);
  std::vector<std::int32_t> want(static_cast<std::size_t>(m * n), 0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t s = 0; s < k; ++s)
        want[static_cast<std::size_t>(i * n + j)] += A[static_cast<std::size_t>(i * k + s)] *
                                                    B[static_cast<std::size_t>(j * k + s)];
  const Array ai = Array::from_host(dev, A.data(), {m, k}, DType::i32);
  const Array bi = Array::from_host(dev, B.data(), {n, k}, DType::i32);
  std::vector<std::int32_t> got(want.size());
  const Array yi = tensordot(ai, bi, {1}, {-1});
  if (!got.empty()) yi.to_host(got.data());
  check(yi.shape() == Shape{m, n} && got == want, dev->id() + " tensordot int32");
  const Array yf = tensordot(astype(ai, DType::f32), astype(bi, DType::f32), {1}, {1});
  const std::vector<float> gf = host(yf);
  bool ok = yf.shape() == Shape{m, n};
  for (std::size_t i = 0; ok && i < want.size(); ++i) ok = gf[i] == static_cast<float>(want[i]);
  check(ok, dev->id() + " tensordot float32");
  const Array c23 = Array::zeros(dev, {2, 3}, DType::f32);
  expect_throw<ValueError>([&] { tensordot(c23, c23, {1}, {0}); }, "tensordot mismatched extents");
}

// matmul's stacked forms (matmul_stacked) of small integer-valued operands against a host loop: a stack (s, 1, m, k)
// times (t, k, n) broadcast to (s, t, m, n) in int32 and float32, and a vector times a matrix.
void run_matmul_stacked(const DevicePtr& dev, std::mt19937& g) {
  std::uniform_int_distribution<int> len(0, 4), lv(-4, 4);
  const std::int64_t s = len(g), t = len(g), m = len(g), k = len(g), n = len(g);
  std::vector<std::int32_t> A(static_cast<std::size_t>(s * m * k)), B(static_cast<std::size_t>(t * k * n));
  for (auto& v : A) v = lv(g);
  for (auto& v : B) v = lv(g);
  std::vector<std::int32_t> want(static_cast<std::size_t>(s * t * m * n), 0);
  for (std::int64_t p = 0; p < s; ++p)
    for (std::int64_t q = 0; q < t; ++q)
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j)
          for (std::int64_t r = 0; r < k; ++r)
            want[static_cast<std::size_t>(((p * t + q) * m + i) * n + j)] +=
                A[static_cast<std::size_t>((p * m + i) * k + r)] * B[static_cast<std::size_t>((q * k + r) * n + j)];
  const Array ai = Array::from_host(dev, A.data(), {s, 1, m, k}, DType::i32);
  const Array bi = Array::from_host(dev, B.data(), {t, k, n}, DType::i32);
  const Array yi = matmul(ai, bi, nullptr, MatmulArgs{});
  std::vector<std::int32_t> got(want.size());
  if (!got.empty()) yi.to_host(got.data());
  check(yi.shape() == Shape{s, t, m, n} && got == want, dev->id() + " matmul stacks int32");
  const Array yf = matmul(astype(ai, DType::f32), astype(bi, DType::f32), nullptr, MatmulArgs{});
  const std::vector<float> gf = host(yf);
  bool ok = yf.shape() == Shape{s, t, m, n};
  for (std::size_t i = 0; ok && i < want.size(); ++i) ok = gf[i] == static_cast<float>(want[i]);
  check(ok, dev->id() + " matmul stacks float32");
  if (s > 0 && m > 0 && t > 0) {  // the first row of a's first matrix as a vector, times b's first matrix
    const Array v = getitem(astype(ai, DType::f32), Index{IndexItem{}, IndexItem{}, IndexItem{}});
    const Array bm = getitem(astype(bi, DType::f32), Index{IndexItem{}});
    const std::vector<float> gv = host(matmul(v, bm, nullptr, MatmulArgs{}));
    bool okv = gv.size() == static_cast<std::size_t>(n);
    for (std::size_t j = 0; okv && j < gv.size(); ++j) okv = gv[j] == static_cast<float>(want[j]);
    check(okv, dev->id() + " matmul vector @ matrix");
  }
  const Array c23 = Array::zeros(dev, {2, 3}, DType::i32);
  expect_throw<ValueError>([&] { matmul(c23, c23, nullptr, MatmulArgs{}); }, "matmul stacks misaligned");
  MatmulArgs relu;
  relu.act = Activation::relu;
  expect_throw<TypeError>([&] { matmul(c23, Array::zeros(dev, {3, 2}, DType::i32), nullptr, relu); },
                          "matmul integer with an activation");
}

// x[mask] and x[mask] = 2 * x[mask] on a (r, c) float32 array with a random row mask, against host selection.
void run_mask_index(const DevicePtr& dev, std::mt19937& g) {
  std::uniform_int_distribution<int> rows(1, 8), cols(0, 5), lv(-9, 9);
  const std::int64_t r = rows(g), c = cols(g);
  std::vector<float> X(static_cast<std::size_t>(r * c));
  for (auto& v : X) v = static_cast<float>(lv(g));
  std::vector<std::uint8_t> M(static_cast<std::size_t>(r));
  for (auto& v : M) v = static_cast<std::uint8_t>(g() & 1);
  Array x = Array::from_host(dev, X.data(), {r, c}, DType::f32);
  const Array mask = Array::from_host(dev, M.data(), {r}, DType::b8);
  const Array sel = getitem_mask(x, mask);
  std::vector<float> want;
  for (std::int64_t i = 0; i < r; ++i)
    if (M[static_cast<std::size_t>(i)])
      want.insert(want.end(), X.begin() + i * c, X.begin() + (i + 1) * c);
  check(sel.ndim() == 2 && sel.shape()[1] == c && host(sel) == want, dev->id() + " x[mask]");
  EwScalar two;
  two.i = 2;
  two.f = 2;
  setitem_mask(x, mask, elementwise(EwOp::multiply, sel, two, false, nullptr));
  const std::vector<float> after = host(x);
  bool ok = true;
  for (std::int64_t i = 0; i < r * c; ++i)
    ok &= after[static_cast<std::size_t>(i)] == (M[static_cast<std::size_t>(i / std::max<std::int64_t>(c, 1))]
                                                      ? 2 : 1) * X[static_cast<std::size_t>(i)];
  check(ok, dev->id() + " x[mask] = value");
  const Array wrong = Array::zeros(dev, {r + 1}, DType::b8);
  expect_throw<IndexError>([&] { getitem_mask(x, wrong); }, "a mask of the wrong shape");
}

struct OpCase {
  const char* name;
  void (*run)(const DevicePtr&, std::mt19937&);
};
const OpCase kOps[] = {
    {"matmul", run_matmul},
    {"max_pool2d", run_pool},
    {"max_pool2d_backward", nullptr},  // in run_pool, on the forward's indices
    {"avg_pool2d", run_avg_pool},
    {"avg_pool2d_backward", nullptr},  // in run_avg_pool, on the forward's shapes
    {"conv2d", run_conv2d},
    {"conv2d_backward", nullptr},  // in run_conv2d, on the forward's operands
    {"activation", run_activation},
    {"activation_backward", run_activation_backward},
    {"softmax", run_softmax},
    {"batch_loss", run_batch_loss},
    {"metric", run_metric},
    {"sgd_update", run_sgd_update},
    {"adam_update", run_adam_update},
    {"dropout", run_dropout},
    {"sum_rows", run_sum_rows},
    {"take_rows", run_take_rows},
    {"elementwise", run_elementwise},
    {"reduce", run_reduce},
    {"copy_strided", run_copy_strided},
    {"random", run_random},
    {"elementwise_kernel", run_elementwise_kernel},
    {"reduction_kernel", run_reduction_kernel},
    {"sort", run_sort},
    {"argsort", nullptr},       // in run_sort, on the same input
    {"searchsorted", nullptr},  // in run_sort, in the sorted input
    {"tensordot", run_tensordot},
    {"matmul_stacked", run_matmul_stacked},
    {"mask_index", run_mask_index},
};

// float16 and bfloat16 (stored in 16 bits, float32 arithmetic where the hardware has none): matmul with bias and
// beta, activation and its backward, softmax, a loss with gradient, bias gradients and an SGD step, each against a
// double reference computed from the rounded inputs. `converted` forces the CPU device's converted path.
void run_half(const DevicePtr& dev, std::mt19937& g, DType t, bool converted) {
  force_cpu_half_conversion(converted);
  const bool f16 = t == DType::f16;
  auto to16 = [&](float v) -> std::uint16_t {
    if (f16) return float_to_half_bits(v);
    std::uint32_t b;
    std::memcpy(&b, &v, 4);
    return static_cast<std::uint16_t>((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
  };
  auto from16 = [&](std::uint16_t h) -> double {
    if (f16) return half_bits_to_float(h);
    const std::uint32_t b = static_cast<std::uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  };
  auto make = [&](std::size_t n, std::vector<double>& ref) {
    std::vector<std::uint16_t> v(n);
    ref.resize(n);
    for (std::size_t i = 0; i < n; ++i) ref[i] = from16(v[i] = to16(std::uniform_real_distribution<float>(-1, 1)(g)));
    return v;
  };
  auto read = [&](const Array& a) {
    std::vector<std::uint16_t> v(static_cast<std::size_t>(a.size()));
    a.to_host(v.data());
    std::vector<double> d(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) d[i] = from16(v[i]);
    return d;
  };
  const double tol = (f16 ? 0x1p-11 : 0x1p-8) * 8;
  const std::string what = dev->id() + " " + dtype_name(t) + (converted ? " (converted)" : "");
  const int M = 1 + int(g() % 40), N = 1 + int(g() % 40), K = 1 + int(g() % 60);
  std::vector<double> A, B, C0, bias;
  auto a16 = make(std::size_t(M) * K, A), b16 = make(std::size_t(K) * N, B), c16 = make(std::size_t(M) * N, C0),
       bias16 = make(std::size_t(N), bias);
  Array a = Array::from_host(dev, a16.data(), {M, K}, t), b = Array::from_host(dev, b16.data(), {K, N}, t);
  Array c = Array::from_host(dev, c16.data(), {M, N}, t), bb = Array::from_host(dev, bias16.data(), {N}, t);
  MatmulArgs args;
  args.beta = 0.5;
  args.bias = &bb;
  matmul(a, b, &c, args);
  auto C = read(c);
  double worst = 0;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double s = bias[n] + 0.5 * C0[m * N + n];
      for (int k = 0; k < K; ++k) s += A[m * K + k] * B[k * N + n];
      worst = std::max(worst, std::abs(C[m * N + n] - s) / (1.0 + std::abs(s)));
    }
  check(worst < tol * std::sqrt(double(K)), what + " matmul error " + std::to_string(worst));

  Array y = activation(a, Activation::tanh, nullptr);
  Array dx = activation_backward(a, y, Activation::tanh, nullptr);
  auto Y = read(y), DX = read(dx);
  worst = 0;
  for (std::size_t i = 0; i < A.size(); ++i)
    worst = std::max({worst, std::abs(Y[i] - std::tanh(A[i])), std::abs(DX[i] - A[i] * (1 - Y[i] * Y[i]))});
  check(worst < tol, what + " activation error " + std::to_string(worst));
  auto S = read(softmax(a, nullptr));
  worst = 0;
  for (int m = 0; m < M; ++m) {
    double sum = 0;
    for (int k = 0; k < K; ++k) sum += std::exp(A[m * K + k]);
    for (int k = 0; k < K; ++k) worst = std::max(worst, std::abs(S[m * K + k] - std::exp(A[m * K + k]) / sum));
  }
  check(worst < tol, what + " softmax error " + std::to_string(worst));
  std::vector<std::int64_t> L(M);
  for (auto& l : L) l = std::int64_t(g() % K);
  Array labels = Array::from_host(dev, L.data(), {M}, DType::i64);
  Array acc = Array::zeros(dev, {1}, DType::f32), grad = Array::empty(dev, {M, K}, t);
  loss("cross_entropy", a, labels, acc, &grad, 1.0, 1.0);
  float got_loss = 0;
  acc.to_host(&got_loss);
  double want_loss = 0;
  for (int m = 0; m < M; ++m) {
    double sum = 0;
    for (int k = 0; k < K; ++k) sum += std::exp(A[m * K + k]);
    want_loss += std::log(sum) - A[m * K + L[m]];
  }
  check(std::abs(got_loss - want_loss) < 1e-4 * (1 + want_loss), what + " loss");
  auto colsum = read(sum_rows(a, nullptr, 0.0));
  worst = 0;
  for (int k = 0; k < K; ++k) {
    double s = 0;
    for (int m = 0; m < M; ++m) s += A[m * K + k];
    worst = std::max(worst, std::abs(colsum[k] - s) / (1.0 + std::abs(s)));
  }
  check(worst < tol, what + " sum_rows error " + std::to_string(worst));
  Array vel = Array::zeros(dev, {M, K}, t);
  sgd_update(a, grad, &vel, 0.25, 0.9, 0.01, false);  // first step: v = grad + 0.01 p, p -= 0.25 v
  auto P = read(a), G = read(grad);
  worst = 0;
  for (std::size_t i = 0; i < A.size(); ++i) worst = std::max(worst, std::abs(P[i] - (A[i] - 0.25 * (G[i] + 0.01 * A[i]))));
  check(worst < tol, what + " sgd error " + std::to_string(worst));
  force_cpu_half_conversion(false);
}

void run_trainer(const DevicePtr& dev, std::mt19937& g) {
  const int n = 96, fin = 12, hid = 16, out = 3, batch = 32;
  auto Xh = randv(g, std::size_t(n) * fin);
  std::vector<std::int64_t> Yh(n), I(n);
  for (int i = 0; i < n; ++i) Yh[i] = i % out, I[i] = (i * 37) % n;
  Array X = Array::from_host(dev, Xh.data(), {n, fin}, DType::f32);
  Array Y = Array::from_host(dev, Yh.data(), {n}, DType::i64);
  Array idx = Array::from_host(dev, I.data(), {n}, DType::i64);
  auto W1h = randv(g, std::size_t(hid) * fin), W2h = randv(g, std::size_t(out) * hid);
  Array W1 = Array::from_host(dev, W1h.data(), {hid, fin}, DType::f32), b1 = Array::zeros(dev, {hid}, DType::f32);
  Array W2 = Array::from_host(dev, W2h.data(), {out, hid}, DType::f32), b2 = Array::zeros(dev, {out}, DType::f32);
  Array dW1 = Array::empty(dev, {hid, fin}, DType::f32), db1 = Array::empty(dev, {hid}, DType::f32);
  Array dW2 = Array::empty(dev, {out, hid}, DType::f32), db2 = Array::empty(dev, {out}, DType::f32);
  Array v[4] = {Array::zeros(dev, {hid, fin}, DType::f32), Array::zeros(dev, {hid}, DType::f32),
                Array::zeros(dev, {out, hid}, DType::f32), Array::zeros(dev, {out}, DType::f32)};
  Trainer t;
  t.add_dense(W1, &b1, dW1, &db1, Activation::relu);
  t.add_dense(W2, &b2, dW2, &db2, Activation::none);
  t.set_loss("cross_entropy");
  t.add_param(W1, dW1, &v[0]);
  t.add_param(b1, db1, &v[1]);
  t.add_param(W2, dW2, &v[2]);
  t.add_param(b2, db2, &v[3]);
  t.set_sgd(0.9, 0.0, false);
  Array acc = Array::zeros(dev, {1}, DType::f32);
  float first = 0, last = 0;
  for (int e = 0; e < 5; ++e) {
    acc = Array::zeros(dev, {1}, DType::f32);
    t.run_epoch(X, Y, nullptr, idx, batch, 0.05, acc);
    float l = host(acc)[0];
    if (e == 0) first = l;
    last = l;
  }
  check(std::isfinite(last) && last < first, dev->id() + " trainer: the loss falls (" + std::to_string(first) +
                                                  " -> " + std::to_string(last) + ")");
}

// A small CNN (conv 16 -> relu -> pool -> conv 16 -> relu layer -> overlapping pool -> dropout -> dense) with Adam:
// on the CPU device its activations stay in oneDNN's blocked layouts (core/blocked.h) between the convolutions,
// pools and activations, and are reordered around dropout and flatten; the loss must fall.
void run_cnn_trainer(const DevicePtr& dev, std::mt19937& g) {
  const int n = 24, c = 3, hw = 9, o1 = 16, o2 = 16, out = 3, batch = 8;
  auto Xh = randv(g, std::size_t(n) * c * hw * hw);
  std::vector<std::int64_t> Yh(n), I(n);
  for (int i = 0; i < n; ++i) Yh[i] = i % out, I[i] = (i * 7) % n;
  Array X = Array::from_host(dev, Xh.data(), {n, c, hw, hw}, DType::f32);
  Array Y = Array::from_host(dev, Yh.data(), {n}, DType::i64);
  Array idx = Array::from_host(dev, I.data(), {n}, DType::i64);
  std::vector<Array> params, grads;
  const auto param = [&](const Shape& s, float scale) {
    std::int64_t sz = 1;
    for (auto v : s) sz *= v;
    auto h = randv(g, std::size_t(sz));
    for (float& v : h) v *= scale;
    params.push_back(Array::from_host(dev, h.data(), s, DType::f32));
    grads.push_back(Array::empty(dev, s, DType::f32));
  };
  param({o1, c, 3, 3}, 0.3f), param({o1}, 0.1f), param({o2, o1, 3, 3}, 0.1f), param({o2}, 0.1f);
  param({out, o2}, 0.2f), param({out}, 0.1f);  // 9x9 -> 9x9 -> 4x4 -> 2x2 -> 1x1
  Trainer t;
  Conv2dArgs a1, a2;
  a1.padding = {1, 1}, a1.act = Activation::relu;
  t.add_conv(params[0], &params[1], grads[0], &grads[1], a1);
  Pool2dArgs p1, p2;
  p1.kernel = {2, 2}, p1.stride = {2, 2};
  t.add_maxpool(p1);
  t.add_conv(params[2], &params[3], grads[2], &grads[3], a2);
  t.add_activation(Activation::relu);
  p2.kernel = {2, 2}, p2.stride = {1, 1};
  t.add_maxpool(p2);
  t.add_dropout(0.1, 7);
  t.add_flatten();
  t.add_dense(params[4], &params[5], grads[4], &grads[5], Activation::none);
  t.set_loss("cross_entropy");
  t.set_adam(0.9, 0.999, 1e-8, 0.0, false, false, 0);
  std::vector<Array> moments;
  for (std::size_t i = 0; i < params.size(); ++i) {
    moments.push_back(Array::zeros(dev, params[i].shape(), DType::f32));
    moments.push_back(Array::zeros(dev, params[i].shape(), DType::f32));
    t.add_adam_param(params[i], grads[i], moments[2 * i], moments[2 * i + 1], nullptr);
  }
  float first = 0, last = 0;
  for (int e = 0; e < 8; ++e) {
    Array acc = Array::zeros(dev, {1}, DType::f32);
    t.run_epoch(X, Y, nullptr, idx, batch, 0.01, acc);
    const float l = host(acc)[0];
    if (e == 0) first = l;
    last = l;
  }
  check(std::isfinite(last) && last < first, dev->id() + " CNN trainer: the loss falls (" + std::to_string(first) +
                                                  " -> " + std::to_string(last) + ")");
}

long resident_kib() {
  long pages = 0, res = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
    std::fclose(f);
  }
  return res * 4;  // 4 KiB pages
}

}  // namespace

int main(int argc, char** argv) {
  const int cycles = argc > 1 ? std::max(1, std::atoi(argv[1])) : 30;
  const std::string only = argc > 2 ? argv[2] : "";  // a device id: run on that one only
  long after_warmup = 0;
  const int warm = std::min(5, cycles - 1);
  std::string running;  // the case and device under way, for an exception's report
  try {
    for (int cycle = 0; cycle < cycles; ++cycle) {
      // the same shapes every cycle: caches (primitives and kernels by shape, pooled blocks) are full after the
      // first one, so any later growth of resident memory is a leak
      std::mt19937 g(12345);
      for (int round = 0; round < 4; ++round)
        for (const auto& dev : all_devices()) {
          if (!only.empty() && dev->id() != only) continue;
          for (const OpCase& op : kOps)
            if (op.run) running = std::string(op.name) + " on " + dev->id(), op.run(dev, g);
          running = "the trainers on " + dev->id();
          run_trainer(dev, g);
          run_cnn_trainer(dev, g);
          running = "16-bit data on " + dev->id();
          for (DType t : {DType::f16, DType::bf16})
            for (bool converted : {false, true}) run_half(dev, g, t, converted);
        }
      if (cycle == warm) after_warmup = resident_kib();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAIL: unexpected exception in %s: %s\n", running.c_str(), e.what());
    return 2;
  }
  const long end = resident_kib();
  std::printf("hetnn_ops_driver: %d cycles on %zu device(s), %d failure(s); resident memory %ld KiB after cycle %d, "
              "%ld KiB at the end\n", cycles, all_devices().size(), failures, after_warmup, warm, end);
#ifndef HETNN_ASAN
  if (cycles >= 20 && end - after_warmup > 2 * 1024) {
    std::fprintf(stderr, "FAIL: resident memory grew by %ld KiB over %d cycles: a leak\n", end - after_warmup,
                 cycles - warm - 1);
    ++failures;
  }
#endif
  return failures ? 1 : 0;
}
