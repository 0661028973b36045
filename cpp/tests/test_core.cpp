// C++ unit tests of the core front and the backends (GoogleTest, run through CTest).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/blas_pool.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/half_convert.h"
#include "backend/cpu/stream_store.h"
#include "backend/opencl/cl_args.h"
#include "backend/opencl/program_cache.h"
#include "core/half.h"
#include "core/json.h"
#include "core/siphash.h"
#include "core/array.h"
#include "core/errors.h"
#include "core/matmul.h"
#include "core/pool2d.h"
#include "core/train/layer.h"

using namespace hetnn;

namespace {

std::vector<float> random_vec(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

// Naive reference in double: C = alpha*op(A)op(B) + beta*C.
std::vector<double> naive(int M, int N, int K, bool ta, bool tb, const std::vector<float>& A,
                          const std::vector<float>& B) {
  std::vector<double> C(static_cast<std::size_t>(M) * N, 0.0);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double s = 0;
      for (int k = 0; k < K; ++k) s += double(ta ? A[k * M + m] : A[m * K + k]) * double(tb ? B[n * K + k] : B[k * N + n]);
      C[m * N + n] = s;
    }
  return C;
}

}  // namespace

TEST(Shape, SizeAndValidation) {
  EXPECT_EQ(shape_size({2, 3, 4}), 24);
  EXPECT_EQ(shape_size({}), 1);
  EXPECT_EQ(shape_size({5, 0}), 0);
  EXPECT_THROW(shape_size({-1, 2}), ValueError);
  EXPECT_THROW(shape_size({1LL << 40, 1LL << 30}), ValueError);
  EXPECT_EQ(shape_str({3}), "(3,)");
  EXPECT_EQ(shape_str({2, 3}), "(2, 3)");
}

TEST(SipHash, ReferenceVectors) {  // the SipHash paper's vectors: key 00..0f, messages 00, 00 01, ..., 00..3f
  hetnn::SipKey key{};
  for (int i = 0; i < 16; ++i) key[i] = static_cast<unsigned char>(i);
  unsigned char msg[64];
  for (int i = 0; i < 64; ++i) msg[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(hetnn::siphash24(key, msg, 0), 0x726fdb47dd0e0e31ULL);
  EXPECT_EQ(hetnn::siphash24(key, msg, 8), 0x93f5f5799a932462ULL);
  EXPECT_EQ(hetnn::siphash24(key, msg, 15), 0xa129ca6149be45e5ULL);
  EXPECT_EQ(hetnn::siphash24(key, msg, 63), 0x958a324ceb064572ULL);
}

TEST(Json, RoundTripAndLimits) {
  namespace json = hetnn::json;
  const auto v = json::parse(R"( {"format": 1, "devices": {"a|b": {"float32": {"params": "x\ty\u00e9", "g": -1.5e3,
                                   "ok": true, "n": null, "l": [1, [2], {}]}}}} )");
  const json::Value* e = v.get("devices")->get("a|b")->get("float32");
  EXPECT_EQ(*e->get("params")->string(), "x\ty\xc3\xa9");
  EXPECT_EQ(*e->get("g")->number(), -1500.0);
  EXPECT_EQ(json::dump(json::parse(json::dump(v))), json::dump(v));
  for (const char* bad : {"", "{", "{\"a\" 1}", "[1,]", "nul", "\"\\q\"", "1 2", "1e999", "\"\x01\""})
    EXPECT_THROW(json::parse(bad), hetnn::ValueError) << bad;
  EXPECT_THROW(json::parse(std::string(100000, '[') + std::string(100000, ']')), hetnn::ValueError);
  EXPECT_NO_THROW(json::parse(std::string(60, '[') + std::string(60, ']')));
}

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64, DType::u8, DType::i8})
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  EXPECT_THROW(dtype_from_name("complex64"), TypeError);
  EXPECT_EQ(dtype_size(DType::f64), 8u);
}

TEST(Devices, CpuFirstAndSpecs) {
  const auto& devs = all_devices();
  ASSERT_FALSE(devs.empty());
  EXPECT_EQ(devs.front()->id(), "cpu");
  EXPECT_EQ(find_device("CPU"), devs.front());
  EXPECT_THROW(find_device("no-such-device"), ValueError);
  try {
    find_device("nothing");
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("available devices"), std::string::npos);
  }
  for (const auto& d : devs)
    if (d->info().kind == "opencl") EXPECT_EQ(find_device("opencl:" + std::to_string(d->info().ordinal)), d);
}

TEST(MatmulPlan, RejectsBadOperands) {
  auto cpu = find_device("cpu");
  Array a = Array::zeros(cpu, {3, 4}, DType::f32);
  Array b = Array::zeros(cpu, {5, 6}, DType::f32);
  Array i = Array::zeros(cpu, {4, 6}, DType::i32);
  Array v = Array::zeros(cpu, {4}, DType::f32);
  EXPECT_THROW(matmul_plan(a, b, nullptr, {}, nullptr), ValueError);
  EXPECT_THROW(matmul_plan(a, i, nullptr, {}, nullptr), TypeError);
  EXPECT_THROW(matmul_plan(a, v, nullptr, {}, nullptr), ValueError);
  MatmulArgs beta_only;
  beta_only.beta = 1.0;
  Array ok = Array::zeros(cpu, {4, 6}, DType::f32);
  EXPECT_THROW(matmul_plan(a, ok, nullptr, beta_only, nullptr), ValueError);
  Shape rs;
  MatmulDesc d = matmul_plan(a, ok, nullptr, {}, &rs);
  EXPECT_EQ(rs, (Shape{3, 6}));
  EXPECT_EQ(d.M, 3);
  EXPECT_EQ(d.N, 6);
  EXPECT_EQ(d.K, 4);
  Array bad_out = Array::zeros(cpu, {6, 3}, DType::f32);
  EXPECT_THROW(matmul_plan(a, ok, &bad_out, {}, nullptr), ValueError);
  EXPECT_THROW(matmul_plan(a, ok, &a, {}, nullptr), ValueError);
}

TEST(ArrayView, DenseFlagReshapeAndBounds) {
  auto cpu = find_device("cpu");
  float x[24];
  for (int i = 0; i < 24; ++i) x[i] = static_cast<float>(i);
  const Array a = Array::from_host(cpu, x, {4, 6}, DType::f32);
  EXPECT_TRUE(a.is_dense());
  EXPECT_EQ(a.strides(), (std::vector<std::int64_t>{6, 1}));
  const Array cols = a.view({4, 3}, {6, 1}, 1);  // a[:, 1:4]
  EXPECT_FALSE(cols.is_dense());
  EXPECT_THROW((void)cols.buffer(), Error);  // no op may read a view as a dense array
  EXPECT_TRUE(a.view({1, 6}, {99, 1}, 0).is_dense());  // an extent-1 axis's stride does not matter
  EXPECT_FALSE(a.view({6}, {1}, 6).is_dense());         // a row other than the first: offset
  EXPECT_THROW(a.view({4, 6}, {6, 1}, 1), Error);        // one element past the buffer
  EXPECT_THROW(a.view({2}, {-1}, 0), Error);             // one before it
  // (4, 3) with strides (6, 1): the rows split into (2, 2) as a view; merged into (12,) needs a copy
  const Array split = cols.reshape_view({2, 2, 3});
  ASSERT_TRUE(split.valid());
  EXPECT_EQ(split.strides(), (std::vector<std::int64_t>{12, 6, 1}));
  EXPECT_EQ(split.offset(), 1);
  EXPECT_TRUE(a.view({4, 3}, {6, 2}, 0).reshape_view({12}).valid());  // a[:, ::2]: one stride of 2 throughout
  EXPECT_FALSE(cols.reshape_view({12}).valid());
  const Array flat = cols.reshape({12});
  EXPECT_TRUE(flat.is_dense());
  float y[12];
  flat.to_host(y);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(y[i], static_cast<float>((i / 3) * 6 + i % 3 + 1));
  const Array back = a.view({4, 6}, {-6, -1}, 23);  // both axes reversed
  back.to_host(x);
  EXPECT_EQ(x[0], 23.0f);
  EXPECT_EQ(x[23], 0.0f);
}

TEST(Recorder, NestedCapturesSeeTheirOwnRecords) {
  Recorder r;
  const auto outer = r.begin();
  r.add({OpRecord{"a", 0, 0, 1, 0}, nullptr});
  const auto inner = r.begin();
  r.add({OpRecord{"b", 0, 1, 3, 0}, nullptr});
  auto in = r.end(inner, true, [](PendingRecord&) {});
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].name, "b");
  auto out = r.end(outer, true, [](PendingRecord&) {});
  EXPECT_EQ(out.size(), 2u);
  EXPECT_FALSE(r.active());
  r.add({OpRecord{"c", 0, 0, 1, 0}, nullptr});  // not recorded: no capture open
  const auto t = r.begin();
  EXPECT_TRUE(r.end(t, true, [](PendingRecord&) {}).empty());
}

TEST(Recorder, TotalsCapturesFoldEachNameIntoOneRecord) {
  Recorder r;
  const auto tok = r.begin(false);
  EXPECT_TRUE(r.active());
  EXPECT_FALSE(r.detailed());  // the ops build no operand strings
  for (int i = 0; i < 4; ++i) r.add({OpRecord{"a", 0, 1, 3, 8}, nullptr});
  r.add({OpRecord{"b", 0, 0, 1, 0}, nullptr});
  const auto inner = r.begin(true);  // a detailed capture inside: each record kept
  EXPECT_TRUE(r.detailed());
  r.add({OpRecord{"a", 0, 5, 6, 0}, nullptr});
  r.add({OpRecord{"a", 0, 6, 7, 0}, nullptr});
  EXPECT_EQ(r.end(inner, true, [](PendingRecord&) {}).size(), 2u);
  r.add({OpRecord{"a", 0, 0, 2, 0}, nullptr});
  const auto out = r.end(tok, false, [](PendingRecord&) {});
  ASSERT_EQ(out.size(), 5u);  // a (4 folded), b, a, a (the inner's), a (folded after it)
  EXPECT_EQ(out[0].name, "a");
  EXPECT_DOUBLE_EQ(out[0].end - out[0].start, 8.0);
  EXPECT_EQ(out[0].bytes, 32u);
  EXPECT_DOUBLE_EQ(out[4].end - out[4].start, 2.0);
  EXPECT_FALSE(r.active());
  EXPECT_FALSE(r.detailed());
}

class MatmulOnDevice : public ::testing::TestWithParam<std::string> {};

TEST_P(MatmulOnDevice, MatchesNaiveReferenceForOddSizesAndTransposes) {
  DevicePtr dev;
  for (const auto& d : all_devices())
    if (GetParam() == "cpu" ? d->id() == "cpu" : d->info().kind == "opencl") dev = d;
  if (!dev) GTEST_SKIP() << "no " << GetParam() << " device";
  const int sizes[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 65}, {70, 129, 31}};
  for (const auto& s : sizes)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const int M = s[0], N = s[1], K = s[2];
        auto A = random_vec(static_cast<std::size_t>(M) * K, 1), B = random_vec(static_cast<std::size_t>(K) * N, 2);
        Array a = Array::from_host(dev, A.data(), ta ? Shape{K, M} : Shape{M, K}, DType::f32);
        Array b = Array::from_host(dev, B.data(), tb ? Shape{N, K} : Shape{K, N}, DType::f32);
        MatmulArgs args;
        args.trans_a = ta;
        args.trans_b = tb;
        Array c = matmul(a, b, nullptr, args);
        std::vector<float> C(static_cast<std::size_t>(M) * N);
        c.to_host(C.data());
        auto ref = naive(M, N, K, ta, tb, A, B);
        for (std::size_t i = 0; i < C.size(); ++i) ASSERT_NEAR(C[i], ref[i], 1e-5 * (1 + std::abs(ref[i])));
      }
}

INSTANTIATE_TEST_SUITE_P(Devices, MatmulOnDevice, ::testing::Values("cpu", "opencl"));

TEST(GemmF64, StridedOperandsAndBeta) {
  const int M = 37, N = 53, K = 301;
  std::mt19937 g(7);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> A(M * K), B(K * N), C(M * N), C0(M * N);
  for (auto& x : A) x = u(g);
  for (auto& x : B) x = u(g);
  for (auto& x : C0) x = u(g);
  C = C0;
  // A used transposed: stored (K, M) -> row stride 1, column stride M.
  gemm_f64(M, N, K, 0.5, A.data(), 1, M, B.data(), N, 1, -2.0, C.data(), N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double s = 0;
      for (int k = 0; k < K; ++k) s += A[k * M + m] * B[k * N + n];
      ASSERT_NEAR(C[m * N + n], 0.5 * s - 2.0 * C0[m * N + n], 1e-12);
    }
}

TEST(TrainBuffers, HoldTheTwoBatchSizesUsedLast) {
  const hetnn::Array like = hetnn::Array::zeros(hetnn::find_device("cpu"), {1}, hetnn::DType::f32);
  hetnn::train::Buffers m;
  hetnn::Array& full = hetnn::train::buffer(m, like, {32, 4});
  hetnn::Array& last = hetnn::train::buffer(m, like, {7, 4});
  EXPECT_EQ(&full, &hetnn::train::buffer(m, like, {32, 4}));  // reused, not reallocated
  EXPECT_EQ(full.shape(), (hetnn::Shape{32, 4}));
  EXPECT_EQ(last.shape(), (hetnn::Shape{7, 4}));
  for (std::int64_t rows = 1; rows <= 100; ++rows) hetnn::train::buffer(m, like, {rows, 4});
  EXPECT_EQ(m.size(), 2u);  // a hundred sizes seen, two held
  hetnn::Array& again = hetnn::train::buffer(m, like, {100, 4});
  EXPECT_EQ(again.shape(), (hetnn::Shape{100, 4}));
  EXPECT_EQ(m.size(), 2u);
}

TEST(Pool, OutputSizeFollowsPyTorch) {
  // (in, k, s, p, d, ceil) -> PyTorch's pooling_output_shape
  EXPECT_EQ(pool_output_size(112, 3, 2, 1, 1, false), 56);
  EXPECT_EQ(pool_output_size(55, 3, 2, 0, 1, false), 27);
  EXPECT_EQ(pool_output_size(6, 3, 2, 0, 1, true), 3);   // 2.5 -> 3 with ceil_mode
  EXPECT_EQ(pool_output_size(5, 2, 2, 0, 1, true), 3);   // last window starts at 4 < 5: kept
  EXPECT_EQ(pool_output_size(4, 2, 2, 1, 1, true), 3);   // (4+2-2+1)/2+1 = 3; start 4 < 4+1: kept
  EXPECT_EQ(pool_output_size(3, 2, 2, 1, 1, true), 2);   // 3 would start at 4 >= 3+1: dropped
  EXPECT_EQ(pool_output_size(10, 3, 1, 0, 2, false), 6);
  EXPECT_LT(pool_output_size(2, 3, 1, 0, 1, false), 1);  // too small: the front raises
}

TEST(Pool, IndexChecks) {
  Pool2dDesc d;
  d.N = 1, d.C = 1, d.H = 6, d.W = 6, d.kh = d.kw = 2, d.sh = d.sw = 2, d.dh = d.dw = 2, d.ph = d.pw = 1;
  d.OH = pool_output_size(d.H, 2, 2, 1, 2, false);
  d.OW = d.OH;
  // window (1, 1) starts at (1, 1) and takes rows/columns 1 and 3
  EXPECT_TRUE(pool_index_inside(d, 1 * 6 + 3, 1, 1));
  EXPECT_TRUE(pool_index_inside(d, 3 * 6 + 3, 1, 1));
  EXPECT_FALSE(pool_index_inside(d, 2 * 6 + 3, 1, 1));  // between the dilated taps
  EXPECT_FALSE(pool_index_inside(d, -1, 1, 1));
  EXPECT_FALSE(pool_index_inside(d, 36, 1, 1));
  EXPECT_FALSE(pool_window_empty(d, 1, 1));
  // H = W = 1, k = 2, d = 2, p = 1: window (0, 0) takes -1 and 1, both outside the input
  Pool2dDesc e = d;
  e.H = e.W = 1;
  e.OH = e.OW = pool_output_size(1, 2, 1, 1, 2, false);
  e.sh = e.sw = 1;
  ASSERT_EQ(e.OH, 1);
  EXPECT_TRUE(pool_window_empty(e, 0, 0));
}

// stream_copy writes whole lines with streaming stores and the partial lines at either end with regular ones: every
// destination alignment within a line and lengths around the line size, bytes outside the range untouched.
TEST(Range2d, SquareGroupsWithinTheLimitElseARow) {
  using hetnn::opencl::range_2d;
  auto r = range_2d(4096, 4096, 1024, 4096);  // PoCL's limit: 32 x 32
  EXPECT_EQ(r.local[0], 32u);
  EXPECT_EQ(r.local[1], 32u);
  EXPECT_EQ(r.global[0], 4096u);
  EXPECT_EQ(r.global[1], 4096u);
  r = range_2d(100, 37, 64, 256);  // a limit of 256: 16 x 16, the range rounded up to whole groups
  EXPECT_EQ(r.local[0], 16u);
  EXPECT_EQ(r.local[1], 16u);
  EXPECT_EQ(r.global[0], 48u);
  EXPECT_EQ(r.global[1], 112u);
  r = range_2d(5, 1000, 64, 4096);  // fewer rows than a group: one row of up to `flat` items
  EXPECT_EQ(r.local[0], 64u);
  EXPECT_EQ(r.local[1], 1u);
  EXPECT_EQ(r.global[0], 1024u);
  EXPECT_EQ(r.global[1], 5u);
  r = range_2d(1000, 20, 1024, 32);  // a limit below 8 x 8: rows
  EXPECT_EQ(r.local[1], 1u);
  EXPECT_LE(r.local[0], 32u);
  EXPECT_EQ(r.global[0] % r.local[0], 0u);
}

TEST(StreamStore, CopiesEveryAlignmentAndLengthExactly) {
  std::vector<unsigned char> src(600), dst(800);
  std::mt19937 gen(7);
  for (auto& c : src) c = static_cast<unsigned char>(gen());
  alignas(64) static unsigned char base[1024];
  for (std::size_t offset = 0; offset < 64; ++offset)
    for (std::size_t len : {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{63}, std::size_t{64},
                            std::size_t{65}, std::size_t{127}, std::size_t{128}, std::size_t{200}, std::size_t{577}}) {
      std::memset(base, 0xA5, sizeof base);
      stream_copy(base + offset, src.data(), len);
      stream_fence();
      ASSERT_EQ(std::memcmp(base + offset, src.data(), len), 0) << "offset " << offset << " length " << len;
      for (std::size_t i = 0; i < sizeof base; ++i)
        if (i < offset || i >= offset + len) ASSERT_EQ(base[i], 0xA5) << "byte " << i << " written";
    }
}

TEST(StreamStore, ThresholdHookAndRule) {
  set_stream_store_threshold(0);
  EXPECT_TRUE(stream_output(1));
  set_stream_store_threshold(std::int64_t{1} << 62);
  EXPECT_FALSE(stream_output(std::size_t{1} << 40));
  EXPECT_THROW(set_stream_store_threshold(-2), ValueError);
  set_stream_store_threshold(-1);
  EXPECT_FALSE(stream_store_rule().empty());
}

// The array conversions of the CPU device's 16-bit paths against core/half.h's scalar bit arithmetic: every float16
// value widened, and float bit patterns across the whole range narrowed, in lengths that leave vector remainders;
// each float16 conversion this processor can run (AVX-512, F16C, software), and bfloat16.
TEST(HalfConvert, MatchesScalarConversions) {
  std::vector<std::uint16_t> h(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) h[i] = static_cast<std::uint16_t>(i);
  constexpr std::uint32_t kStep = 4099;  // a prime stride over all 2^32 float bit patterns
  std::vector<float> src;
  for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += kStep) {
    const std::uint32_t bits = static_cast<std::uint32_t>(b);
    float v;
    std::memcpy(&v, &bits, 4);
    src.push_back(v);
  }
  for (float v : {65504.f, 65519.99f, 65520.f, 6.1035156e-05f, 5.9604645e-08f, 2.9802322e-08f, 2.9802326e-08f})
    src.push_back(v), src.push_back(-v);
  auto bf16_bits = [](float v) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return static_cast<std::uint16_t>(
        ((bits & 0x7fffffffu) > 0x7f800000u ? bits | 0x00400000u : bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
  };
  auto bf16_value = [](std::uint16_t b) {
    const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
    float x;
    std::memcpy(&x, &bits, 4);
    return x;
  };
  auto check_widen = [](const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
    for (std::size_t i = 0; i < want.size(); ++i) {
      if (std::isnan(want[i])) {
        ASSERT_TRUE(std::isnan(got[i])) << what << " " << i;
      } else {
        ASSERT_EQ(std::memcmp(&want[i], &got[i], 4), 0) << what << " " << i;
      }
    }
  };

  const auto tiers = f16_conversions_available();
  ASSERT_FALSE(tiers.empty());
  EXPECT_STREQ(tiers.front().isa, f16_conversion_isa());
  std::vector<std::uint16_t> got(src.size());
  for (const auto& tier : tiers) {
    const std::string what = std::string("float16 ") + tier.isa;
    std::vector<float> f(h.size() - 3), want(h.size() - 3);
    tier.widen(h.data(), f.data(), static_cast<std::int64_t>(f.size()));
    for (std::size_t i = 0; i < want.size(); ++i) want[i] = half_bits_to_float(h[i]);
    check_widen(f, want, what + " widen");
    tier.narrow(src.data(), got.data(), static_cast<std::int64_t>(src.size()));
    for (std::size_t i = 0; i < src.size(); ++i)
      ASSERT_EQ(got[i], float_to_half_bits(src[i])) << what << " from " << src[i] << " (index " << i << ")";
  }
  // the public entry points (the best tier for float16), bfloat16, and widening what was narrowed
  for (DType t : {DType::f16, DType::bf16}) {
    narrow_from_f32(t, src.data(), got.data(), static_cast<std::int64_t>(src.size()));
    for (std::size_t i = 0; i < src.size(); ++i)
      ASSERT_EQ(got[i], t == DType::f16 ? float_to_half_bits(src[i]) : bf16_bits(src[i]))
          << dtype_name(t) << " from " << src[i] << " (index " << i << ")";
    std::vector<float> back(got.size()), want(got.size());
    widen_to_f32(t, got.data(), back.data(), static_cast<std::int64_t>(got.size()));
    for (std::size_t i = 0; i < got.size(); ++i)
      want[i] = t == DType::f16 ? half_bits_to_float(got[i]) : bf16_value(got[i]);
    check_widen(back, want, std::string(dtype_name(t)) + " widen");
  }
}

// OpenBLAS's jobs wait for each other (a threaded GEMM's packed panels): the pool must run all n at once, on its
// workers (cold) and on the warm OpenMP team, and from several threads in turn. A job that waited 10 s for the
// others records a failure instead of hanging the test.
namespace {
struct BarrierJob {
  std::atomic<int>* arrived;
  int n;
  int ran_as = -1;
  bool timed_out = false;
};
void barrier_job(int i, void* p, int) {
  auto* j = static_cast<BarrierJob*>(p);
  j->ran_as = i;
  j->arrived->fetch_add(1);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (j->arrived->load() < j->n)
    if (std::chrono::steady_clock::now() > end) {
      j->timed_out = true;
      return;
    }
}
void run_barrier(int n) {
  std::atomic<int> arrived{0};
  std::vector<BarrierJob> jobs(static_cast<std::size_t>(n), BarrierJob{&arrived, n});
  blas_pool::run(1, barrier_job, n, sizeof(BarrierJob), jobs.data(), 0);
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(jobs[static_cast<std::size_t>(i)].ran_as, i);
    ASSERT_FALSE(jobs[static_cast<std::size_t>(i)].timed_out) << "job " << i << " of " << n << " ran alone";
  }
  ASSERT_EQ(arrived.load(), n);
}
}  // namespace

TEST(BlasPool, JobsRunAtOnceOnWorkersAndOnTheWarmTeam) {
  const auto before = blas_pool::stats();
  for (int round = 0; round < 50; ++round)
    for (int n : {1, 2, 3, 5}) {
      if (round % 2) {  // as a hetnn op does: spinning workers told to stop at its start, its team warm at its end
        blas_pool::quiet();
        blas_pool::openmp_used();
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // hetnn's team cold: the pool's workers
      }
      run_barrier(n);
      if (round % 5 == 0) blas_pool::quiet();
    }
  const auto after = blas_pool::stats();
  EXPECT_EQ(after.calls - before.calls, 200);
  EXPECT_GT(after.on_openmp, before.on_openmp);
  EXPECT_GE(after.workers, 4);
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t)
    callers.emplace_back([] {
      for (int k = 0; k < 30; ++k) run_barrier(2 + k % 3);
    });
  for (auto& c : callers) c.join();
}

namespace {
void sleepy_job(int i, void*, int) {
  if (i == 1) std::this_thread::sleep_for(std::chrono::milliseconds(3));  // descheduled, as behind a busy CPU
}
// A call as right after a hetnn op (its team warm, the workers told to stop): on the team (1), on the workers because
// the team is held back (0), or, where this thread was descheduled long enough for the team to cool (0.5 ms), on the
// workers as any call then (-1: no verdict; the caller tries again).
int on_team(blas_pool::DoJob job) {
  blas_pool::quiet();
  blas_pool::openmp_used();
  const auto before = blas_pool::stats();
  if (job)
    blas_pool::run(1, job, 2, 0, nullptr, 0);
  else
    run_barrier(2);
  const auto after = blas_pool::stats();
  EXPECT_EQ(after.calls - before.calls, 1);
  if (after.on_openmp > before.on_openmp) return 1;
  return after.openmp_avoided > before.openmp_avoided ? 0 : -1;
}
int decided(blas_pool::DoJob job) {
  for (int i = 0; i < 50; ++i)
    if (const int r = on_team(job); r >= 0) return r;
  ADD_FAILURE() << "50 calls right after openmp_used() found hetnn's team cold";
  return -1;
}
}  // namespace

// Two calls in a row on hetnn's warm team whose threads spent most of them descheduled hand the next calls to the
// pool's workers (beside a busy CPU the team's threads are the ones held back, and OpenBLAS's jobs wait for each
// other) for at least 50 ms; at most a second later the team is tried again.
TEST(BlasPool, TeamHeldBackAfterItsThreadsLostTheirCallsThenTriedAgain) {
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // whatever came before, the team is due a try
  const auto before = blas_pool::stats();
  EXPECT_EQ(decided(sleepy_job), 1);
  decided(sleepy_job);  // on the team, or already held back after the first
  const auto tripped = std::chrono::steady_clock::now();
  EXPECT_GE(blas_pool::stats().openmp_preempted - before.openmp_preempted, 1);
  const int third = on_team(nullptr);  // its jobs all at once wherever it ran
  if (std::chrono::steady_clock::now() - tripped < std::chrono::milliseconds(40))
    EXPECT_EQ(third, 0) << "on the team while it was held back";
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(decided(nullptr), 1);
}

// A process at its thread limit: a call needing more workers than the pool has runs on hetnn's OpenMP team, its jobs
// all at once, instead of ending the process (std::thread's exception used to escape through OpenBLAS's C frames).
TEST(BlasPool, CallsRunOnTheTeamWhenNoWorkerCanStart) {
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  run_barrier(2);  // at least one worker (ctest runs each test in a process of its own)
  const int have = blas_pool::stats().workers;
  ASSERT_GE(have, 1);
  const auto before = blas_pool::stats();
  blas_pool::refuse_threads_for_tests(true);
  for (int n : {have + 2, 2}) {  // one worker more than the pool has; none more
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // hetnn's team cold: a call for the pool's workers
    run_barrier(n);
  }
  blas_pool::refuse_threads_for_tests(false);
  const auto after = blas_pool::stats();
  EXPECT_EQ(after.thread_failures - before.thread_failures, 1);
  EXPECT_EQ(after.workers, have);
  EXPECT_EQ(after.calls - before.calls, 2);
}

#if HETNN_HAVE_OPENCL
#include "backend/opencl/gemm_params.h"

// The GEMM parameter table matches the architecture first: an H200 runs what was tuned on an H100 (both sm_90),
// a driver that reports no architecture still finds the entry by name, another NVIDIA GPU gets the vendor's entry.
TEST(GemmParams, TableMatchesArchitectureThenNameThenVendor) {
  DeviceInfo d;
  d.type = "gpu";
  d.vendor = "NVIDIA Corporation";
  d.max_work_group_size = 1024;
  d.local_mem = 49152;
  const auto source = [&](const char* name, const char* arch, std::int64_t macs = -1) {
    d.name = name;
    d.arch = arch;
    return opencl::gemm_database_lookup(d, DType::f32, macs).source;
  };
  EXPECT_NE(source("NVIDIA H200", "sm_90").find("arch:sm_90"), std::string::npos);
  EXPECT_NE(source("NVIDIA GH200 480GB", "sm_90").find("arch:sm_90"), std::string::npos);
  EXPECT_NE(source("NVIDIA H100 80GB HBM3", "").find("arch:sm_90"), std::string::npos);  // by name
  EXPECT_EQ(source("NVIDIA H100 80GB HBM3", "sm_90", 1000).find("ResNet"), source("NVIDIA H200", "sm_90", 1000).find("ResNet"));
  EXPECT_NE(source("NVIDIA GeForce RTX 4090", "sm_89").find("vendor:nvidia"), std::string::npos);
  d.vendor = "Advanced Micro Devices, Inc.";
  EXPECT_NE(source("gfx90a:sramecc+:xnack-", "gfx90a").find("vendor:advanced"), std::string::npos);
  d.vendor = "Some Vendor";
  EXPECT_EQ(source("Accelerator X", "").rfind("database:*", 0), 0u);
}

// A tile is halved along M or N while the problem fills at most half of it; what stays valid stays valid.
TEST(GemmParams, TileFittedToTheProblem) {
  DeviceInfo d;
  d.max_work_group_size = 1024;
  d.local_mem = 49152;
  const auto p = opencl::GemmParams::parse("family=vtiled ts_m=128 ts_n=128 ts_k=16 wpt_m=8 wpt_n=8 vwm=4 vwn=4");
  const auto shape = [&](std::int64_t m, std::int64_t n) {
    const auto q = p.fitted(m, n);
    EXPECT_NO_THROW(q.validate(d, 4)) << m << "x" << n;
    return std::to_string(q.ts_m) + "x" + std::to_string(q.ts_n);
  };
  EXPECT_EQ(shape(4096, 4096), "128x128");
  EXPECT_EQ(shape(65, 100352), "128x128");
  EXPECT_EQ(shape(64, 100352), "64x128");
  EXPECT_EQ(shape(1, 100), "8x128");  // never below the work per item
  EXPECT_EQ(shape(3136, 9), "128x16");
  const auto packed = opencl::GemmParams::parse("family=packed rm=8 vw=16 nv=2");
  EXPECT_EQ(packed.fitted(1, 1).str(), packed.str());
}

TEST(GemmParams, VtiledParsesPrintsAndValidates) {
  DeviceInfo d;
  d.max_work_group_size = 1024;
  d.local_mem = 49152;
  const auto p = opencl::GemmParams::parse("family=vtiled ts_m=128 ts_n=64 ts_k=16 wpt_m=8 wpt_n=4 vwm=4 vwn=2");
  EXPECT_EQ(p.str(), "family=vtiled ts_m=128 ts_n=64 ts_k=16 wpt_m=8 wpt_n=4 vwm=4 vwn=2");
  EXPECT_NE(p.defines().find("-DVWN=2"), std::string::npos);
  EXPECT_NO_THROW(p.validate(d, 4));
  for (const char* bad : {"family=vtiled vwm=3", "family=vtiled wpt_m=2 vwm=4",
                          "family=vtiled ts_m=16 ts_n=16 ts_k=1 wpt_m=1 wpt_n=1 vwm=1 vwn=1",
                          "family=vtiled ts_m=256 ts_n=256 ts_k=32 wpt_m=8 wpt_n=8"})  // 2 x 32 KiB of local memory
    EXPECT_THROW(opencl::GemmParams::parse(bad).validate(d, 4), ValueError) << bad;
}

namespace {
// An NVIDIA sm_90 as its OpenCL driver reports it (48 KiB of local memory).
DeviceInfo nvidia_sm90() {
  DeviceInfo d;
  d.vendor = "NVIDIA Corporation";
  d.type = "gpu";
  d.arch = "sm_90";
  d.max_work_group_size = 1024;
  d.local_mem = 49152;
  return d;
}
}  // namespace

// The matrix-unit member: its own defaults, printed back as parsed, its bounds, 16-bit types only, and the
// database gives it only to a device whose probe passed.
TEST(GemmParams, MmaParsesValidatesAndIsGatedByTheProbe) {
  const DeviceInfo d = nvidia_sm90();
  const auto p = opencl::GemmParams::parse("family=mma");
  EXPECT_EQ(p.str(), "family=mma ts_m=128 ts_n=128 ts_k=32 wm=2 wn=4");
  EXPECT_EQ(opencl::GemmParams::parse(p.str()).str(), p.str());
  EXPECT_EQ(opencl::GemmParams::parse("ts_m=64 family=mma wm=1").str(), "family=mma ts_m=64 ts_n=128 ts_k=32 wm=1 wn=4");
  const auto l = opencl::GemmParams::parse("family=mma lm=1");
  EXPECT_EQ(l.str(), "family=mma ts_m=128 ts_n=128 ts_k=32 wm=2 wn=4 lm=1");
  EXPECT_NE(l.defines().find("-DLM=1"), std::string::npos);
  EXPECT_NO_THROW(l.validate(d, 4));
  EXPECT_NE(p.defines().find("-DWN=4"), std::string::npos);
  EXPECT_NO_THROW(p.validate(d, 4));
  EXPECT_EQ(p.fitted(16, 16).str(), p.str());
  EXPECT_NO_THROW(p.check_dtype(DType::f16));
  EXPECT_NO_THROW(p.check_dtype(DType::bf16));
  EXPECT_THROW(p.check_dtype(DType::f32), ValueError);
  // st: a ring of st slices; 128 x 128 x 32 tiles take 40 KiB twice (ST 0 or 2), 60 KiB three times
  const auto r = opencl::GemmParams::parse("family=mma st=2");
  EXPECT_EQ(r.str(), "family=mma ts_m=128 ts_n=128 ts_k=32 wm=2 wn=4 st=2");
  EXPECT_EQ(opencl::GemmParams::parse(r.str()).str(), r.str());
  EXPECT_NE(r.defines().find("-DST=2"), std::string::npos);
  EXPECT_NE(p.defines().find("-DST=0"), std::string::npos);
  EXPECT_NO_THROW(r.validate(d, 4));
  EXPECT_NO_THROW(opencl::GemmParams::parse("family=mma ts_m=64 ts_n=64 st=4").validate(d, 4));
  for (const char* bad : {"family=mma ts_k=8", "family=mma wm=3", "family=mma ts_m=32 wm=4", "family=mma wn=32",
                          "family=mma lm=2", "family=mma st=1", "family=mma st=5", "family=mma st=-2",
                          "family=mma st=3",  // 3 x 40 KiB of local memory
                          "family=vtiled st=2", "family=packed st=3",
                          "family=mma ts_m=256 ts_n=256 ts_k=64 wm=4 wn=8"})  // 2 x 72 KiB of local memory
    EXPECT_THROW(opencl::GemmParams::parse(bad).validate(d, 4), ValueError) << bad;
  EXPECT_EQ(opencl::gemm_database_lookup(d, DType::f16, -1, true).family, opencl::GemmParams::Family::mma);
  EXPECT_NE(opencl::gemm_database_lookup(d, DType::f16, -1, false).family, opencl::GemmParams::Family::mma);
  EXPECT_NE(opencl::gemm_database_lookup(d, DType::bf16, -1, false).family, opencl::GemmParams::Family::mma);
}

// The warpgroup member (wg=1): printed back as parsed, a work-group of 128 items per warpgroup, its own bounds
// (wn = 1, ts_n 64/128/256, a ring of 3..8 slices within local memory, 16-bit data), and sm_90's size classes.
TEST(GemmParams, WarpgroupMemberParsesAndValidates) {
  const DeviceInfo d = nvidia_sm90();
  const auto w = opencl::GemmParams::parse("family=mma ts_m=128 ts_n=128 ts_k=32 wm=1 wn=1 st=3 wg=1");
  EXPECT_EQ(w.str(), "family=mma ts_m=128 ts_n=128 ts_k=32 wm=1 wn=1 st=3 wg=1");
  EXPECT_EQ(opencl::GemmParams::parse(w.str()).str(), w.str());
  EXPECT_NE(w.defines().find("-DWG=1"), std::string::npos);
  EXPECT_EQ(w.mma_items(), 128);
  EXPECT_EQ(opencl::GemmParams::parse("family=mma ts_m=128 ts_n=64 ts_k=32 wm=2 wn=1 st=4 wg=1").mma_items(), 256);
  EXPECT_EQ(opencl::GemmParams::parse("family=mma wm=2 wn=2").mma_items(), 128);
  EXPECT_NO_THROW(w.validate(d, 4, 2));
  EXPECT_THROW(w.validate(d, 4, 4), ValueError);  // tf32
  for (const char* bad : {"family=mma ts_m=128 ts_n=128 ts_k=32 wm=1 wn=2 st=3 wg=1",
                          "family=mma ts_m=128 ts_n=32 ts_k=32 wm=1 wn=1 st=3 wg=1",
                          "family=mma ts_m=128 ts_n=128 ts_k=32 wm=1 wn=1 st=2 wg=1",
                          "family=mma ts_m=128 ts_n=128 ts_k=32 wm=1 wn=1 st=9 wg=1",
                          "family=mma ts_m=64 ts_n=128 ts_k=32 wm=2 wn=1 st=3 wg=1",   // 32 rows a warpgroup
                          "family=mma ts_m=256 ts_n=256 ts_k=16 wm=2 wn=1 st=3 wg=1",  // 256 accumulators an item
                          "family=mma ts_m=128 ts_n=128 ts_k=32 wm=1 wn=1 st=4 wg=1",  // 64 KiB of local memory
                          "family=mma ts_m=128 ts_n=128 ts_k=32 wm=1 wn=1 st=3 wg=1 lm=1",
                          "family=mma ts_m=128 ts_n=128 ts_k=32 wm=1 wn=1 st=3 wg=2", "family=vtiled wg=1"})
    EXPECT_THROW(opencl::GemmParams::parse(bad).validate(d, 4, 2), ValueError) << bad;
  // sm_90's 16-bit entries: the 64 x 64 member with four slices up to 2^31 multiply-adds, 128 x 128 above
  EXPECT_EQ(opencl::gemm_database_lookup(d, DType::f16, std::int64_t{1} << 30, true).str(),
            "family=mma ts_m=64 ts_n=64 ts_k=32 wm=2 wn=2 lm=1 st=4");
  EXPECT_EQ(opencl::gemm_database_lookup(d, DType::f16, std::int64_t{1} << 33, true).str(),
            "family=mma ts_m=128 ts_n=128 ts_k=32 wm=2 wn=2 lm=1 st=2");
  EXPECT_EQ(opencl::gemm_database_lookup(d, DType::bf16, -1, true, true).wg, 0);
}

// The program cache's opening of hidden wgmma instructions: comments opened and the target made sm_90a in PTX for
// sm_90; any other target refused (the instructions would stay comments); anything without them left as it is.
TEST(ProgramCache, HiddenPtxIsOpenedForSm90Only) {
  const std::string ptx =
      "//\n.version 9.0\n.target sm_90\n.address_size 64\n\t// begin inline asm\n//WG:wgmma.fence.sync.aligned;\n"
      "//WG:wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%f1}, %rd1, %rd2, p, 1, 1, 0, 1;\n";
  const std::string open = opencl::open_hidden_ptx(ptx);
  EXPECT_NE(open.find(".target sm_90a\n"), std::string::npos);
  EXPECT_EQ(open.find("//WG:"), std::string::npos);
  EXPECT_NE(open.find("\nwgmma.fence.sync.aligned;\n"), std::string::npos);
  EXPECT_NE(open.find("\nwgmma.mma_async.sync.aligned.m64n64k16"), std::string::npos);
  std::string sm80 = ptx;
  sm80.replace(sm80.find("sm_90"), 5, "sm_80");
  EXPECT_THROW(opencl::open_hidden_ptx(sm80), ValueError);
  std::string sm100 = ptx;
  sm100.replace(sm100.find("sm_90"), 5, "sm_100");
  EXPECT_THROW(opencl::open_hidden_ptx(sm100), ValueError);
  const std::string plain = "//\n.version 9.0\n.target sm_90\nmma.sync.aligned.m16n8k16;\n";
  EXPECT_EQ(opencl::open_hidden_ptx(plain), plain);
  const std::string pocl = std::string("\x7f" "ELF binary with the source inside: //WG:wgmma", 44);
  EXPECT_EQ(opencl::open_hidden_ptx(pocl), pocl);
}

// tf32 (float32 at precision "high"): a type of its own for the tables, named as Python names it; only the mma
// member computes it, at depth 8 and with 4-byte staged values; the database gives it only where the probe passed.
TEST(GemmParams, Tf32IsItsOwnTypeForTheMmaMemberOnly) {
  const GemmType t = GemmType::from_name("tf32");
  EXPECT_TRUE(t.tf32);
  EXPECT_EQ(t.dtype, DType::f32);
  EXPECT_EQ(t.name(), "tf32");
  EXPECT_FALSE(t == GemmType(DType::f32));
  EXPECT_TRUE(GemmType(DType::f32) < t);
  EXPECT_FALSE(GemmType(DType::f16, true).tf32);  // tf32 is float32's only
  EXPECT_EQ(GemmType::from_name("bfloat16").name(), "bfloat16");
  EXPECT_THROW(GemmType::from_name("tf16"), TypeError);
  const DeviceInfo d = nvidia_sm90();
  const auto p = opencl::GemmParams::parse("family=mma ts_m=64 ts_n=64 ts_k=8 wm=2 wn=2");
  EXPECT_NO_THROW(p.check_dtype(t));
  EXPECT_NO_THROW(p.validate(d, t));
  EXPECT_THROW(p.validate(d, GemmType(DType::f16)), ValueError);  // depth 8 is below float16's instruction
  EXPECT_THROW(opencl::GemmParams::parse("family=vtiled").check_dtype(t), ValueError);
  // 128 x 128 x 32 in 4-byte values: two slices of A and B, 2 x 2 x 128 x 36 x 4 bytes = 72 KiB, past 48 KiB
  EXPECT_NO_THROW(opencl::GemmParams::parse("family=mma").validate(d, GemmType(DType::f16)));
  EXPECT_THROW(opencl::GemmParams::parse("family=mma").validate(d, t), ValueError);
  EXPECT_EQ(opencl::gemm_database_lookup(d, t, -1, true).family, opencl::GemmParams::Family::mma);
  EXPECT_NO_THROW(opencl::gemm_database_lookup(d, t, -1, true).validate(d, t));
}

// An entry within the parameters' ranges but beyond a work item's private memory, a CPU work-group's stack or a
// sane unroll is refused before it is built (under PoCL the first crashed every process once cached, the last took
// 70-88 s to build); every member of the table and of the tuner's space passes.
TEST(GemmParams, PrivateMemoryAndUnrollAreBounded) {
  DeviceInfo cpu;
  cpu.type = "cpu";
  cpu.vendor = "GenuineIntel";
  cpu.name = "pthread-skylake-avx512";
  cpu.max_work_group_size = 4096;
  cpu.local_mem = 4 << 20;
  const auto why = [&](const char* text, std::size_t bytes = 4) -> std::string {
    try {
      opencl::GemmParams::parse(text).validate(cpu, bytes);
    } catch (const ValueError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(why("family=packed rm=32 vw=16 nv=8 ku=16 lx=64 ly=64"), "");  // the entry that crashed PoCL
  EXPECT_NE(why("family=packed rm=32 vw=16 nv=8 ku=1 lx=64 ly=64").find("private memory"), std::string::npos);
  EXPECT_NE(why("family=packed rm=16 vw=16 nv=4 ku=1 lx=64 ly=64").find("stack"), std::string::npos);
  EXPECT_NE(why("family=packed rm=32 vw=4 nv=8 ku=16 lx=0 ly=1").find("unrolled"), std::string::npos);
  EXPECT_NE(why("family=tiled ts_m=256 ts_n=256 ts_k=8 wpt_m=32 wpt_n=32", 8).find("private memory"),
            std::string::npos);
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16}) {  // the table's CPU entries
    const auto p = opencl::gemm_database_lookup(cpu, t, 1000);
    EXPECT_EQ(why(p.str().c_str(), t == DType::f64 ? 8 : 4), "") << p.str();
    EXPECT_EQ(why(opencl::gemm_database_lookup(cpu, t).str().c_str(), t == DType::f64 ? 8 : 4), "");
  }
  for (int rm : {4, 6, 8, 12, 16})  // the tuner's packed space (python/hetnn/tune.py)
    for (int vw : {8, 16})
      for (int nv : {1, 2, 3, 4})
        for (int lx : {0, 4, 16}) {
          if (rm * nv > 32 || vw * nv > 64) continue;
          const std::string p = "family=packed rm=" + std::to_string(rm) + " vw=" + std::to_string(vw) + " nv=" +
                                std::to_string(nv) + " lx=" + std::to_string(lx) + " ly=" + (lx == 4 ? "4" : "1");
          EXPECT_EQ(why(p.c_str(), 8), "") << p;
        }
}
#endif
