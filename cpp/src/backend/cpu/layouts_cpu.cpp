// The CPU device's ConvLayouts (backend/extensions.h): max pooling on channel-blocked activations and the reorders
// between blocks; the blocked convolutions are in conv2d_cpu.cpp. Pooling is hetnn's own, as on NCHW
// (max_pool_cpu.cpp): oneDNN's max ignores NaN, which PyTorch and hetnn propagate.
#include <omp.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>

#include "backend/cpu/activation_layout.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_loops.h"
#include "backend/cpu/cpu_threads.h"
#include "core/pool2d.h"

namespace hetnn {

void* CpuBackend::extension(const std::string& name) {
  return name == ConvLayouts::kName ? static_cast<ConvLayouts*>(this) : nullptr;
}

namespace {

std::atomic<int> pool_level_limit{2};  // force_blocked_pool_level

// Every input position (ih, iw) of output (oh, ow)'s window, in window order, as `pos` = ih * W + iw.
#define HETNN_FOR_TAPS(d, oh, ow, ...)                                                         \
  for (int i_ = 0; i_ < (d).kh; ++i_) {                                                        \
    const std::int64_t ih = (oh) * (d).sh - (d).ph + std::int64_t{i_} * (d).dh;                \
    if (ih < 0 || ih >= (d).H) continue;                                                       \
    for (int j_ = 0; j_ < (d).kw; ++j_) {                                                      \
      const std::int64_t iw = (ow) * (d).sw - (d).pw + std::int64_t{j_} * (d).dw;              \
      if (iw < 0 || iw >= (d).W) continue;                                                     \
      const std::int64_t pos = ih * (d).W + iw;                                                \
      __VA_ARGS__                                                                              \
    }                                                                                          \
  }

// The position a window that takes nothing keeps: its first in-bounds one, as the NCHW kernel.
inline std::int32_t first_pos(const Pool2dDesc& d, std::int64_t oh, std::int64_t ow) {
  return static_cast<std::int32_t>(pool_first_inside(oh * d.sh - d.ph, d.dh) * d.W +
                                   pool_first_inside(ow * d.sw - d.pw, d.dw));
}

// Lanes [l0, b) of output o of plane (x, y, idx), one at a time: the window's maximum (NaN wins, ties keep the
// first in window order) and its position.
inline void pool_lanes_scalar(const Pool2dDesc& d, std::int64_t b, std::int64_t l0, const float* x, float* y,
                              std::int32_t* idx, std::int64_t oh, std::int64_t ow) {
  const std::int64_t o = (oh * d.OW + ow) * b;
  for (std::int64_t l = l0; l < b; ++l) {
    float best = -std::numeric_limits<float>::infinity();
    std::int32_t arg = first_pos(d, oh, ow);
    HETNN_FOR_TAPS(d, oh, ow, {
      const float v = x[pos * b + l];
      if (v > best || v != v) best = v, arg = static_cast<std::int32_t>(pos);
    })
    y[o + l] = best, idx[o + l] = arg;
  }
}

// The body of pool_planes_<isa> (arguments d, b, x, y, idx, p0, p1): every output of planes [p0, p1), WIDTH lanes
// at a time by the statements given (input plane xp, output offset o, first lane l), the lanes left one at a time.
#define HETNN_POOL_PLANES(WIDTH, ...)                                                                  \
  const std::int64_t in = d.H * d.W * b, out = d.OH * d.OW * b;                                        \
  for (std::int64_t p = p0; p < p1; ++p)                                                               \
    for (std::int64_t oh = 0; oh < d.OH; ++oh)                                                         \
      for (std::int64_t ow = 0; ow < d.OW; ++ow) {                                                     \
        const float* xp = x + p * in;                                                                  \
        const std::int64_t o = p * out + (oh * d.OW + ow) * b;                                         \
        std::int64_t l = 0;                                                                            \
        for (; l + (WIDTH) <= b; l += (WIDTH)) {                                                       \
          __VA_ARGS__                                                                                  \
        }                                                                                              \
        if (l < b) pool_lanes_scalar(d, b, l, xp, y + p * out, idx + p * out, oh, ow);                 \
        (void)o;                                                                                       \
      }

#if defined(__x86_64__) && defined(__GNUC__)
// The same, 16 lanes to a register.
__attribute__((target("avx512f"))) void pool_planes_avx512(const Pool2dDesc& d, std::int64_t b, const float* x,
                                                            float* y, std::int32_t* idx, std::int64_t p0,
                                                            std::int64_t p1) {
  HETNN_POOL_PLANES(16, {
    __m512 best = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    __m512i arg = _mm512_set1_epi32(first_pos(d, oh, ow));
    HETNN_FOR_TAPS(d, oh, ow, {
      const __m512 v = _mm512_loadu_ps(xp + pos * b + l);
      const __mmask16 t = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      best = _mm512_mask_mov_ps(best, t, v);
      arg = _mm512_mask_mov_epi32(arg, t, _mm512_set1_epi32(static_cast<std::int32_t>(pos)));
    })
    _mm512_storeu_ps(y + o + l, best);
    _mm512_storeu_si512(idx + o + l, arg);
  })
}

// 8 lanes to a register.
__attribute__((target("avx2"))) void pool_planes_avx2(const Pool2dDesc& d, std::int64_t b, const float* x, float* y,
                                                      std::int32_t* idx, std::int64_t p0, std::int64_t p1) {
  HETNN_POOL_PLANES(8, {
    __m256 best = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    __m256 arg = _mm256_castsi256_ps(_mm256_set1_epi32(first_pos(d, oh, ow)));
    HETNN_FOR_TAPS(d, oh, ow, {
      const __m256 v = _mm256_loadu_ps(xp + pos * b + l);
      const __m256 t = _mm256_or_ps(_mm256_cmp_ps(v, best, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      best = _mm256_blendv_ps(best, v, t);
      arg = _mm256_blendv_ps(arg, _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<std::int32_t>(pos))), t);
    })
    _mm256_storeu_ps(y + o + l, best);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(idx + o + l), _mm256_castps_si256(arg));
  })
}
#endif

// Planes [p0, p1) of (n, channel block), b lanes each, with the widest registers the processor has.
void pool_planes(const Pool2dDesc& d, std::int64_t b, const float* x, float* y, std::int32_t* idx, std::int64_t p0,
                 std::int64_t p1) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const int have = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
  const int level = std::min(have, pool_level_limit.load(std::memory_order_relaxed));
  if (level == 2) return pool_planes_avx512(d, b, x, y, idx, p0, p1);
  if (level == 1) return pool_planes_avx2(d, b, x, y, idx, p0, p1);
#endif
  HETNN_POOL_PLANES(b + 1, {})  // every lane one at a time
}
#undef HETNN_POOL_PLANES
#undef HETNN_FOR_TAPS

// Each plane's gradient: zeros, then every output's lanes added at their argmax (one thread per plane: overlapping
// windows never race).
HETNN_CLONES void pool_planes_backward(const Pool2dDesc& d, std::int64_t b, const float* gy, const std::int32_t* idx,
                                       float* gx, std::int64_t p0, std::int64_t p1) {
  const std::int64_t in = d.H * d.W * b, out = d.OH * d.OW * b;
  for (std::int64_t p = p0; p < p1; ++p) {
    float* g = gx + p * in;
    std::fill(g, g + in, 0.f);
    const float* gp = gy + p * out;
    const std::int32_t* ip = idx + p * out;
    for (std::int64_t q = 0; q < d.OH * d.OW; ++q)
      for (std::int64_t l = 0; l < b; ++l) g[std::int64_t{ip[q * b + l]} * b + l] += gp[q * b + l];
  }
}

std::int64_t planes(const Pool2dDesc& d, int b) { return d.N * ((d.C + b - 1) / b); }

}  // namespace

void force_blocked_pool_level(int level) { pool_level_limit = level < 0 ? 2 : level; }

void CpuBackend::max_pool2d_blocked(const Pool2dDesc& d, int b, const Buffer& x, Buffer& y, Buffer& idx) {
  cpu_threads::apply();
  timed("max_pool2d", 0, [&] {
    const auto* xp = static_cast<const float*>(x.host_ptr());
    auto* yp = static_cast<float*>(y.host_ptr());
    auto* ip = static_cast<std::int32_t*>(idx.host_ptr());
    parallel_ranges(planes(d, b), [&](std::int64_t p0, std::int64_t p1) { pool_planes(d, b, xp, yp, ip, p0, p1); });
  });
}

void CpuBackend::max_pool2d_backward_blocked(const Pool2dDesc& d, int b, const Buffer& gy, const Buffer& idx,
                                             Buffer& gx) {
  cpu_threads::apply();
  timed("max_pool2d_backward", 0, [&] {
    const auto* gp = static_cast<const float*>(gy.host_ptr());
    const auto* ip = static_cast<const std::int32_t*>(idx.host_ptr());
    auto* xp = static_cast<float*>(gx.host_ptr());
    parallel_ranges(planes(d, b),
                    [&](std::int64_t p0, std::int64_t p1) { pool_planes_backward(d, b, gp, ip, xp, p0, p1); });
  });
}

void CpuBackend::reorder_blocked(const std::array<std::int64_t, 4>& shape, int from, const Buffer& x, int to,
                                 Buffer& y) {
  cpu_threads::apply();
  using Key = std::array<std::int64_t, 7>;
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<dnnl::reorder>> cache;
  const Key key{shape[0], shape[1], shape[2], shape[3], from, to, omp_get_max_threads()};
  const dnnl::memory::desc src = activation_desc(shape, from), dst = activation_desc(shape, to);
  std::shared_ptr<dnnl::reorder> r;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it == cache.end()) {
      if (cache.size() >= 64) cache.clear();  // a sweep of shapes must not grow without bound
      it = cache.emplace(key, std::make_shared<dnnl::reorder>(
                                  dnnl::reorder::primitive_desc(engine_, src, engine_, dst))).first;
    }
    r = it->second;
  }
  timed("reorder", 0, [&] {
    dnnl::stream stream(engine_);
    dnnl::memory ms(src, engine_, x.host_ptr()), md(dst, engine_, y.host_ptr());
    r->execute(stream, ms, md);
    stream.wait();
  });
}

}  // namespace hetnn
