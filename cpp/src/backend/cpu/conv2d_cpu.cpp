// 2-D convolution on the CPU device: oneDNN's convolution primitive for float32 (cached by shape, bias and
// activation fused), a direct OpenMP loop for float64 (oneDNN's CPU convolutions have none), and float16/bfloat16
// widened to float32 work areas, convolved, and rounded back once.
#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_loops.h"
#include "backend/cpu/cpu_threads.h"
#include "backend/cpu/half_convert.h"
#include "core/errors.h"

namespace hetnn {

namespace {

struct ConvEntry {
  dnnl::convolution_forward prim;
  dnnl::memory::desc src, wei, bias, dst, scratch;
};

using ConvKey = std::array<std::int64_t, 22>;

ConvKey conv_key(const Conv2dDesc& d) {
  return {d.N, d.C, d.H, d.W, d.O, d.OH, d.OW, d.kh, d.kw, d.sh, d.sw, d.ph, d.pw, d.pr, d.pw_r, d.dh, d.dw, d.groups,
          d.has_bias, static_cast<std::int64_t>(d.act),
          // oneDNN fixes a primitive's thread count when it is created
          static_cast<std::int64_t>(omp_get_max_threads()), 0};
}

// The primitive for d (float32), created on first use; at most kEntries kept (each holds JIT code).
std::shared_ptr<const ConvEntry> conv_entry(const dnnl::engine& engine, const Conv2dDesc& d) {
  static std::mutex mu;
  static std::map<ConvKey, std::shared_ptr<ConvEntry>> cache;
  constexpr std::size_t kEntries = 64;
  const ConvKey key = conv_key(d);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  using tag = dnnl::memory::format_tag;
  using dims = dnnl::memory::dims;
  const auto f32 = dnnl::memory::data_type::f32;
  auto e = std::make_shared<ConvEntry>();
  e->src = dnnl::memory::desc({d.N, d.C, d.H, d.W}, f32, tag::nchw);
  e->wei = d.groups > 1 ? dnnl::memory::desc({d.groups, d.O / d.groups, d.C / d.groups, d.kh, d.kw}, f32, tag::goihw)
                        : dnnl::memory::desc({d.O, d.C, d.kh, d.kw}, f32, tag::oihw);
  e->dst = dnnl::memory::desc({d.N, d.O, d.OH, d.OW}, f32, tag::nchw);
  if (d.has_bias) e->bias = dnnl::memory::desc({d.O}, f32, tag::x);
  dnnl::primitive_attr attr;
  dnnl::post_ops po;
  if (d.act == Activation::relu) po.append_eltwise(dnnl::algorithm::eltwise_relu, 0.f, 0.f);
  if (d.act == Activation::sigmoid) po.append_eltwise(dnnl::algorithm::eltwise_logistic, 0.f, 0.f);
  if (d.act == Activation::tanh) po.append_eltwise(dnnl::algorithm::eltwise_tanh, 0.f, 0.f);
  attr.set_post_ops(po);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // one per call: threads must not share oneDNN's
  const dims strides{d.sh, d.sw}, dilates{d.dh - 1, d.dw - 1}, pad_l{d.ph, d.pw}, pad_r{d.pr, d.pw_r};
  auto pd = d.has_bias
                ? dnnl::convolution_forward::primitive_desc(engine, dnnl::prop_kind::forward_inference,
                                                            dnnl::algorithm::convolution_direct, e->src, e->wei,
                                                            e->bias, e->dst, strides, dilates, pad_l, pad_r, attr)
                : dnnl::convolution_forward::primitive_desc(engine, dnnl::prop_kind::forward_inference,
                                                            dnnl::algorithm::convolution_direct, e->src, e->wei,
                                                            e->dst, strides, dilates, pad_l, pad_r, attr);
  e->prim = dnnl::convolution_forward(pd);
  e->scratch = pd.scratchpad_desc();
  if (cache.size() >= kEntries) cache.clear();  // a sweep of shapes must not grow without bound
  cache.emplace(key, e);
  return e;
}

void conv_f32(const dnnl::engine& engine, const Conv2dDesc& d, const float* x, const float* w, const float* bias,
              float* y) {
  const std::shared_ptr<const ConvEntry> e = conv_entry(engine, d);
  std::unordered_map<int, dnnl::memory> args;
  args.emplace(DNNL_ARG_SRC, dnnl::memory(e->src, engine, const_cast<float*>(x)));
  args.emplace(DNNL_ARG_WEIGHTS, dnnl::memory(e->wei, engine, const_cast<float*>(w)));
  args.emplace(DNNL_ARG_DST, dnnl::memory(e->dst, engine, y));
  if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(e->bias, engine, const_cast<float*>(bias)));
  const std::size_t scratch_bytes = e->scratch.get_size();
  std::unique_ptr<void, void (*)(void*)> scratch(nullptr, std::free);
  if (scratch_bytes) {
    scratch.reset(std::aligned_alloc(64, (scratch_bytes + 63) / 64 * 64));
    if (!scratch) throw OutOfMemory("conv2d: cannot allocate a " + std::to_string(scratch_bytes) +
                                    "-byte oneDNN scratchpad");
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(e->scratch, engine, scratch.get()));
  }
  dnnl::stream stream(engine);
  e->prim.execute(stream, args);
  stream.wait();
}

// float64: each (n, o) plane of y by direct summation, planes in parallel.
void conv_f64(const Conv2dDesc& d, const double* x, const double* w, const double* bias, double* y) {
  const std::int64_t cg = d.C / d.groups, og = d.O / d.groups;
  parallel_ranges(d.N * d.O, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t p = p0; p < p1; ++p) {
      const std::int64_t n = p / d.O, o = p % d.O, c0 = (o / og) * cg;
      double* yp = y + p * d.OH * d.OW;
      for (std::int64_t oh = 0; oh < d.OH; ++oh)
        for (std::int64_t ow = 0; ow < d.OW; ++ow) {
          double s = bias ? bias[o] : 0.0;
          for (std::int64_t c = 0; c < cg; ++c) {
            const double* xp = x + (n * d.C + c0 + c) * d.H * d.W;
            const double* wp = w + (o * cg + c) * d.kh * d.kw;
            for (int i = 0; i < d.kh; ++i) {
              const std::int64_t ih = oh * d.sh - d.ph + std::int64_t{i} * d.dh;
              if (ih < 0 || ih >= d.H) continue;
              for (int j = 0; j < d.kw; ++j) {
                const std::int64_t iw = ow * d.sw - d.pw + std::int64_t{j} * d.dw;
                if (iw >= 0 && iw < d.W) s += xp[ih * d.W + iw] * wp[i * d.kw + j];
              }
            }
          }
          yp[oh * d.OW + ow] = activate(s, d.act);
        }
    }
  });
}

}  // namespace

void CpuBackend::conv2d(const Conv2dDesc& d, const Buffer& x, const Buffer& w, const Buffer* bias, Buffer& y) {
  cpu_threads::apply();
  const std::int64_t nx = d.N * d.C * d.H * d.W, nw = d.O * (d.C / d.groups) * d.kh * d.kw, ny = d.N * d.O * d.OH * d.OW;
  timed("conv2d", 0, [&] {
    switch (d.dtype) {
      case DType::f32:
        conv_f32(engine_, d, static_cast<const float*>(x.host_ptr()), static_cast<const float*>(w.host_ptr()),
                 bias ? static_cast<const float*>(bias->host_ptr()) : nullptr, static_cast<float*>(y.host_ptr()));
        break;
      case DType::f64:
        conv_f64(d, static_cast<const double*>(x.host_ptr()), static_cast<const double*>(w.host_ptr()),
                 bias ? static_cast<const double*>(bias->host_ptr()) : nullptr, static_cast<double*>(y.host_ptr()));
        break;
      case DType::f16:
      case DType::bf16: {
        F32Scratch x32(*pool_, nx, d.dtype, x.host_ptr()), w32(*pool_, nw, d.dtype, w.host_ptr()),
            b32(*pool_, bias ? d.O : 1), y32(*pool_, ny);
        if (bias) widen_to_f32(d.dtype, bias->host_ptr(), b32.data(), d.O);
        Conv2dDesc d32 = d;
        d32.dtype = DType::f32;
        conv_f32(engine_, d32, x32.data(), w32.data(), bias ? b32.data() : nullptr, y32.data());
        narrow_from_f32_parallel(d.dtype, y32.data(), y.host_ptr(), ny);
        break;
      }
      default: throw TypeError(std::string("conv2d: unsupported dtype ") + dtype_name(d.dtype));
    }
  });
}

}  // namespace hetnn
