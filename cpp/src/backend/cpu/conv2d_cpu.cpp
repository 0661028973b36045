// 2-D convolution on the CPU device: oneDNN's convolution primitive for float32 (cached by shape, bias and
// activation fused), a direct OpenMP loop for float64 (oneDNN's CPU convolutions have none), and float16/bfloat16
// widened to float32 work areas, convolved, and rounded back once.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/cpu/activation_layout.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_loops.h"
#include "backend/cpu/cpu_threads.h"
#include "backend/cpu/half_convert.h"
#include "core/errors.h"

namespace hetnn {

namespace {

// The primitive works in the layouts oneDNN picks for it (blocked, e.g. nChw16c): the caller's arrays (NCHW / OIHW,
// or activations in a channel-blocked layout, backend/extensions.h ConvLayouts) are reordered into them and back
// around each call where they differ (reorders cached beside the primitive).
struct ConvEntry {
  dnnl::convolution_forward prim;
  dnnl::memory::desc src, wei, bias, dst, scratch;  // the caller's layouts
  dnnl::memory::desc psrc, pwei, pdst;               // the primitive's
  std::optional<dnnl::reorder> to_src, to_wei, from_dst;
};

using ConvKey = std::array<std::int64_t, 24>;

// xb, yb: the channel blocks of the caller's input and output (1: NCHW).
ConvKey conv_key(const Conv2dDesc& d, int xb, int yb) {
  return {d.N, d.C, d.H, d.W, d.O, d.OH, d.OW, d.kh, d.kw, d.sh, d.sw, d.ph, d.pw, d.pr, d.pw_r, d.dh, d.dw, d.groups,
          d.has_bias, static_cast<std::int64_t>(d.act),
          // oneDNN fixes a primitive's thread count when it is created
          static_cast<std::int64_t>(omp_get_max_threads()), xb, yb, 0};
}

// Whether the primitives run on the plain NCHW / OIHW arrays rather than layouts oneDNN chooses: only for pointwise
// convolutions, fastest on the plain layouts themselves (measured on 4x256x56x56 -> 64: 218 GFLOP/s plain, 93 with
// blocked layouts and reorders). Plain layouts everywhere (oneDNN's GEMM convolution) measured 2.1x slower on
// LeNet's training step, also for its 1- and 6-channel layers.
bool plain_layouts(const Conv2dDesc& d) { return conv_is_pointwise(d); }

// The primitive for d (float32), created on first use; at most kEntries kept (each holds JIT code).
std::shared_ptr<const ConvEntry> conv_entry(const dnnl::engine& engine, const Conv2dDesc& d, int xb, int yb) {
  static std::mutex mu;
  static std::map<ConvKey, std::shared_ptr<ConvEntry>> cache;
  constexpr std::size_t kEntries = 64;
  const ConvKey key = conv_key(d, xb, yb);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  using tag = dnnl::memory::format_tag;
  using dims = dnnl::memory::dims;
  const auto f32 = dnnl::memory::data_type::f32;
  auto e = std::make_shared<ConvEntry>();
  e->src = activation_desc({d.N, d.C, d.H, d.W}, xb);
  const dims wdims = d.groups > 1 ? dims{d.groups, d.O / d.groups, d.C / d.groups, d.kh, d.kw}
                                  : dims{d.O, d.C, d.kh, d.kw};
  e->wei = dnnl::memory::desc(wdims, f32, d.groups > 1 ? tag::goihw : tag::oihw);
  e->dst = activation_desc({d.N, d.O, d.OH, d.OW}, yb);
  const bool pointwise = plain_layouts(d);
  const tag t_src = pointwise ? tag::nchw : tag::any, t_dst = t_src;
  const dnnl::memory::desc asrc({d.N, d.C, d.H, d.W}, f32, t_src),
      awei(wdims, f32, pointwise ? (d.groups > 1 ? tag::goihw : tag::oihw) : tag::any),
      adst({d.N, d.O, d.OH, d.OW}, f32, t_dst);
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
                                                            dnnl::algorithm::convolution_direct, asrc, awei,
                                                            e->bias, adst, strides, dilates, pad_l, pad_r, attr)
                : dnnl::convolution_forward::primitive_desc(engine, dnnl::prop_kind::forward_inference,
                                                            dnnl::algorithm::convolution_direct, asrc, awei,
                                                            adst, strides, dilates, pad_l, pad_r, attr);
  e->prim = dnnl::convolution_forward(pd);
  e->scratch = pd.scratchpad_desc();
  e->psrc = pd.src_desc(), e->pwei = pd.weights_desc(), e->pdst = pd.dst_desc();
  if (e->psrc != e->src) e->to_src = dnnl::reorder(dnnl::reorder::primitive_desc(engine, e->src, engine, e->psrc));
  if (e->pwei != e->wei) e->to_wei = dnnl::reorder(dnnl::reorder::primitive_desc(engine, e->wei, engine, e->pwei));
  if (e->pdst != e->dst) e->from_dst = dnnl::reorder(dnnl::reorder::primitive_desc(engine, e->pdst, engine, e->dst));
  if (cache.size() >= kEntries) cache.clear();  // a sweep of shapes must not grow without bound
  cache.emplace(key, e);
  return e;
}

// A 64-byte aligned host work area from the backend's host pool, returned on scope exit (reused across calls: a
// fresh 100 MB allocation per call paid its page faults every time, 1.8x the time of the convolution it served).
struct Work {
  explicit Work(HostAllocator& pool) : pool_(pool) {}
  ~Work() {
    if (p_) pool_.release(p_, cap_);
  }
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;
  void* get(std::size_t bytes, const char* what) {
    if (p_) pool_.release(p_, cap_), p_ = nullptr;
    p_ = pool_.acquire(bytes, &cap_);
    if (!p_) throw OutOfMemory(std::string("conv2d: cannot allocate ") + std::to_string(bytes) + " bytes for " + what);
    return p_;
  }

 private:
  HostAllocator& pool_;
  void* p_ = nullptr;
  std::size_t cap_ = 0;
};

void conv_f32(HostAllocator& pool, const dnnl::engine& engine, const Conv2dDesc& d, const float* x, const float* w,
              const float* bias, float* y, int xb = 1, int yb = 1) {
  const std::shared_ptr<const ConvEntry> e = conv_entry(engine, d, xb, yb);
  dnnl::stream stream(engine);
  dnnl::memory ux(e->src, engine, const_cast<float*>(x)), uw(e->wei, engine, const_cast<float*>(w)),
      uy(e->dst, engine, y);
  Work wx(pool), ww(pool), wy(pool), ws(pool);
  dnnl::memory px = ux, pw = uw, py = uy;
  if (e->to_src) {
    px = dnnl::memory(e->psrc, engine, wx.get(e->psrc.get_size(), "the input's layout"));
    e->to_src->execute(stream, ux, px);
  }
  if (e->to_wei) {
    pw = dnnl::memory(e->pwei, engine, ww.get(e->pwei.get_size(), "the weights' layout"));
    e->to_wei->execute(stream, uw, pw);
  }
  if (e->from_dst) py = dnnl::memory(e->pdst, engine, wy.get(e->pdst.get_size(), "the output's layout"));
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, px}, {DNNL_ARG_WEIGHTS, pw}, {DNNL_ARG_DST, py}};
  if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(e->bias, engine, const_cast<float*>(bias)));
  if (const std::size_t n = e->scratch.get_size())
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(e->scratch, engine, ws.get(n, "oneDNN's scratchpad")));
  e->prim.execute(stream, args);
  if (e->from_dst) e->from_dst->execute(stream, py, uy);
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

// The backward primitives, like the forward, work in the layouts oneDNN picks (plain for pointwise convolutions):
// with plain layouts it falls back to an im2col GEMM whose weight gradient took 40 % of a LeNet epoch.
struct ConvGeometry {
  dnnl::memory::desc src, wei, dst, bias;     // the caller's layouts
  dnnl::memory::desc asrc, awei, adst;        // what the primitive may choose from
  dnnl::memory::dims strides, dilates, pad_l, pad_r;
  ConvGeometry(const Conv2dDesc& d, int xb, int yb) {
    using tag = dnnl::memory::format_tag;
    const auto f32 = dnnl::memory::data_type::f32;
    const dnnl::memory::dims sd{d.N, d.C, d.H, d.W}, dd{d.N, d.O, d.OH, d.OW};
    const dnnl::memory::dims wd = d.groups > 1 ? dnnl::memory::dims{d.groups, d.O / d.groups, d.C / d.groups, d.kh, d.kw}
                                               : dnnl::memory::dims{d.O, d.C, d.kh, d.kw};
    const tag wt = d.groups > 1 ? tag::goihw : tag::oihw;
    src = activation_desc({d.N, d.C, d.H, d.W}, xb);
    wei = dnnl::memory::desc(wd, f32, wt);
    dst = activation_desc({d.N, d.O, d.OH, d.OW}, yb);
    bias = dnnl::memory::desc({d.O}, f32, tag::x);
    const bool pointwise = plain_layouts(d);
    asrc = dnnl::memory::desc(sd, f32, pointwise ? tag::nchw : tag::any);
    awei = pointwise ? wei : dnnl::memory::desc(wd, f32, tag::any);
    adst = dnnl::memory::desc(dd, f32, pointwise ? tag::nchw : tag::any);
    strides = {d.sh, d.sw}, dilates = {d.dh - 1, d.dw - 1}, pad_l = {d.ph, d.pw}, pad_r = {d.pr, d.pw_r};
  }
  dnnl::convolution_forward::primitive_desc hint(const dnnl::engine& e) const {
    return dnnl::convolution_forward::primitive_desc(e, dnnl::prop_kind::forward_training,
                                                     dnnl::algorithm::convolution_direct, asrc, awei, bias, adst,
                                                     strides, dilates, pad_l, pad_r);
  }
};

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // threads must not share oneDNN's
  return attr;
}

// One operand of a backward primitive: the user's plain layout, the primitive's, and the reorder between them.
struct Operand {
  int arg = 0;
  bool output = false;
  dnnl::memory::desc user, prim;
  std::optional<dnnl::reorder> reorder;
};

// A backward primitive (data: kind 1; weights: kind 2, + 1 with the bias gradient), cached like the forward's.
struct BwdEntry {
  BwdEntry(const Conv2dDesc& d, int xb, int yb) : g(d, xb, yb) {}
  ConvGeometry g;
  dnnl::primitive prim;
  dnnl::memory::desc scratch;
  std::vector<Operand> ops;  // diff_dst and weights or src in, diff_src or diff_weights out

  void add(const dnnl::engine& engine, int arg, bool output, const dnnl::memory::desc& user,
           const dnnl::memory::desc& prim_md) {
    Operand o{arg, output, user, prim_md, std::nullopt};
    if (user != prim_md)
      o.reorder = output ? dnnl::reorder(dnnl::reorder::primitive_desc(engine, prim_md, engine, user))
                         : dnnl::reorder(dnnl::reorder::primitive_desc(engine, user, engine, prim_md));
    ops.push_back(std::move(o));
  }
};

std::shared_ptr<const BwdEntry> bwd_entry(const dnnl::engine& engine, const Conv2dDesc& d, int kind, int xb,
                                          int yb) {
  static std::mutex mu;
  static std::map<ConvKey, std::shared_ptr<BwdEntry>> cache;
  constexpr std::size_t kEntries = 128;
  ConvKey key = conv_key(d, xb, yb);
  key.back() = kind;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  auto e = std::make_shared<BwdEntry>(d, xb, yb);
  const ConvGeometry& g = e->g;
  if (kind == 1) {
    const auto pd = dnnl::convolution_backward_data::primitive_desc(
        engine, dnnl::algorithm::convolution_direct, g.asrc, g.awei, g.adst, g.strides, g.dilates, g.pad_l, g.pad_r,
        g.hint(engine), user_scratchpad());
    e->prim = dnnl::convolution_backward_data(pd);
    e->scratch = pd.scratchpad_desc();
    e->add(engine, DNNL_ARG_DIFF_DST, false, g.dst, pd.diff_dst_desc());
    e->add(engine, DNNL_ARG_WEIGHTS, false, g.wei, pd.weights_desc());
    e->add(engine, DNNL_ARG_DIFF_SRC, true, g.src, pd.diff_src_desc());
  } else {
    const auto pd = kind == 3 ? dnnl::convolution_backward_weights::primitive_desc(
                                    engine, dnnl::algorithm::convolution_direct, g.asrc, g.awei, g.bias, g.adst,
                                    g.strides, g.dilates, g.pad_l, g.pad_r, g.hint(engine), user_scratchpad())
                              : dnnl::convolution_backward_weights::primitive_desc(
                                    engine, dnnl::algorithm::convolution_direct, g.asrc, g.awei, g.adst, g.strides,
                                    g.dilates, g.pad_l, g.pad_r, g.hint(engine), user_scratchpad());
    e->prim = dnnl::convolution_backward_weights(pd);
    e->scratch = pd.scratchpad_desc();
    e->add(engine, DNNL_ARG_DIFF_DST, false, g.dst, pd.diff_dst_desc());
    e->add(engine, DNNL_ARG_SRC, false, g.src, pd.src_desc());
    e->add(engine, DNNL_ARG_DIFF_WEIGHTS, true, g.wei, pd.diff_weights_desc());
  }
  if (cache.size() >= kEntries) cache.clear();
  cache.emplace(key, e);
  return e;
}

// Runs e on the user's plain arrays (in the order of e.ops), reordering into and out of the primitive's layouts.
void run_bwd(HostAllocator& pool, const dnnl::engine& engine, const BwdEntry& e, const std::vector<void*>& user_ptrs,
             std::unordered_map<int, dnnl::memory> args) {
  dnnl::stream stream(engine);
  Work ws(pool), work[3] = {Work(pool), Work(pool), Work(pool)};
  std::vector<std::pair<const Operand*, dnnl::memory>> outs;
  for (std::size_t i = 0; i < e.ops.size(); ++i) {
    const Operand& o = e.ops[i];
    dnnl::memory user(o.user, engine, user_ptrs[i]);
    if (!o.reorder) {
      args.emplace(o.arg, user);
      continue;
    }
    dnnl::memory prim(o.prim, engine, work[i].get(o.prim.get_size(), "a convolution operand's layout"));
    if (o.output) outs.emplace_back(&o, user);
    else o.reorder->execute(stream, user, prim);
    args.emplace(o.arg, prim);
  }
  if (const std::size_t n = e.scratch.get_size())
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(e.scratch, engine, ws.get(n, "oneDNN's scratchpad")));
  e.prim.execute(stream, args);
  for (auto& [o, user] : outs) o->reorder->execute(stream, args.at(o->arg), user);
  stream.wait();
}

void conv_bwd_data_f32(HostAllocator& pool, const dnnl::engine& engine, const Conv2dDesc& d, const float* gy,
                       const float* w, float* gx, int xb = 1, int yb = 1) {
  const std::shared_ptr<const BwdEntry> e = bwd_entry(engine, d, 1, xb, yb);
  run_bwd(pool, engine, *e, {const_cast<float*>(gy), const_cast<float*>(w), gx}, {});
}

void conv_bwd_weights_f32(HostAllocator& pool, const dnnl::engine& engine, const Conv2dDesc& d, const float* gy,
                          const float* x, float* gw, float* gb, int xb = 1, int yb = 1) {
  const std::shared_ptr<const BwdEntry> e = bwd_entry(engine, d, gb ? 3 : 2, xb, yb);
  std::unordered_map<int, dnnl::memory> args;
  if (gb) args.emplace(DNNL_ARG_DIFF_BIAS, dnnl::memory(e->g.bias, engine, gb));
  run_bwd(pool, engine, *e, {const_cast<float*>(gy), const_cast<float*>(x), gw}, std::move(args));
}

// float64 by direct summation: gx planes in parallel (each (n, c) owned by one thread), then the weights (each
// (o, c') owned by one thread) and the bias.
void conv_bwd_data_f64(const Conv2dDesc& d, const double* gy, const double* w, double* gx) {
  const std::int64_t cg = d.C / d.groups, og = d.O / d.groups;
  parallel_ranges(d.N * d.C, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t p = p0; p < p1; ++p) {
      const std::int64_t n = p / d.C, c = p % d.C, g = c / cg, cl = c % cg;
      double* gp = gx + p * d.H * d.W;
      std::fill(gp, gp + d.H * d.W, 0.0);
      for (std::int64_t o = g * og; o < (g + 1) * og; ++o) {
        const double* yp = gy + (n * d.O + o) * d.OH * d.OW;
        const double* wp = w + (o * cg + cl) * d.kh * d.kw;
        for (std::int64_t oh = 0; oh < d.OH; ++oh)
          for (std::int64_t ow = 0; ow < d.OW; ++ow) {
            const double v = yp[oh * d.OW + ow];
            for (int i = 0; i < d.kh; ++i) {
              const std::int64_t ih = oh * d.sh - d.ph + std::int64_t{i} * d.dh;
              if (ih < 0 || ih >= d.H) continue;
              for (int j = 0; j < d.kw; ++j) {
                const std::int64_t iw = ow * d.sw - d.pw + std::int64_t{j} * d.dw;
                if (iw >= 0 && iw < d.W) gp[ih * d.W + iw] += v * wp[i * d.kw + j];
              }
            }
          }
      }
    }
  });
}

void conv_bwd_weights_f64(const Conv2dDesc& d, const double* gy, const double* x, double* gw, double* gb) {
  const std::int64_t cg = d.C / d.groups, og = d.O / d.groups;
  parallel_ranges(d.O * cg, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t p = p0; p < p1; ++p) {
      const std::int64_t o = p / cg, cl = p % cg, c = (o / og) * cg + cl;
      double* wp = gw + p * d.kh * d.kw;
      for (int i = 0; i < d.kh; ++i)
        for (int j = 0; j < d.kw; ++j) {
          double s = 0;
          for (std::int64_t n = 0; n < d.N; ++n) {
            const double* yp = gy + (n * d.O + o) * d.OH * d.OW;
            const double* xp = x + (n * d.C + c) * d.H * d.W;
            for (std::int64_t oh = 0; oh < d.OH; ++oh) {
              const std::int64_t ih = oh * d.sh - d.ph + std::int64_t{i} * d.dh;
              if (ih < 0 || ih >= d.H) continue;
              for (std::int64_t ow = 0; ow < d.OW; ++ow) {
                const std::int64_t iw = ow * d.sw - d.pw + std::int64_t{j} * d.dw;
                if (iw >= 0 && iw < d.W) s += yp[oh * d.OW + ow] * xp[ih * d.W + iw];
              }
            }
          }
          wp[i * d.kw + j] = s;
        }
    }
  });
  if (gb)
    for (std::int64_t o = 0; o < d.O; ++o) {
      double s = 0;
      for (std::int64_t n = 0; n < d.N; ++n)
        for (std::int64_t q = 0; q < d.OH * d.OW; ++q) s += gy[(n * d.O + o) * d.OH * d.OW + q];
      gb[o] = s;
    }
}

}  // namespace

void CpuBackend::conv2d_backward_data(const Conv2dDesc& d, const Buffer& gy, const Buffer& w, Buffer& gx) {
  cpu_threads::apply();
  const std::int64_t nx = d.N * d.C * d.H * d.W, nw = d.O * (d.C / d.groups) * d.kh * d.kw, ny = d.N * d.O * d.OH * d.OW;
  timed("conv2d_backward_data", 0, [&] {
    switch (d.dtype) {
      case DType::f32:
        conv_bwd_data_f32(*pool_, engine_, d, static_cast<const float*>(gy.host_ptr()), static_cast<const float*>(w.host_ptr()),
                          static_cast<float*>(gx.host_ptr()));
        break;
      case DType::f64:
        conv_bwd_data_f64(d, static_cast<const double*>(gy.host_ptr()), static_cast<const double*>(w.host_ptr()),
                          static_cast<double*>(gx.host_ptr()));
        break;
      case DType::f16:
      case DType::bf16: {
        F32Scratch gy32(*pool_, ny, d.dtype, gy.host_ptr()), w32(*pool_, nw, d.dtype, w.host_ptr()), gx32(*pool_, nx);
        conv_bwd_data_f32(*pool_, engine_, d, gy32.data(), w32.data(), gx32.data());
        narrow_from_f32_parallel(d.dtype, gx32.data(), gx.host_ptr(), nx);
        break;
      }
      default: throw TypeError(std::string("conv2d_backward: unsupported dtype ") + dtype_name(d.dtype));
    }
  });
}

void CpuBackend::conv2d_backward_weights(const Conv2dDesc& d, const Buffer& gy, const Buffer& x, Buffer& gw,
                                         Buffer* gb) {
  cpu_threads::apply();
  const std::int64_t nx = d.N * d.C * d.H * d.W, nw = d.O * (d.C / d.groups) * d.kh * d.kw, ny = d.N * d.O * d.OH * d.OW;
  timed("conv2d_backward_weights", 0, [&] {
    switch (d.dtype) {
      case DType::f32:
        conv_bwd_weights_f32(*pool_, engine_, d, static_cast<const float*>(gy.host_ptr()),
                             static_cast<const float*>(x.host_ptr()), static_cast<float*>(gw.host_ptr()),
                             gb ? static_cast<float*>(gb->host_ptr()) : nullptr);
        break;
      case DType::f64:
        conv_bwd_weights_f64(d, static_cast<const double*>(gy.host_ptr()), static_cast<const double*>(x.host_ptr()),
                             static_cast<double*>(gw.host_ptr()), gb ? static_cast<double*>(gb->host_ptr()) : nullptr);
        break;
      case DType::f16:
      case DType::bf16: {
        F32Scratch gy32(*pool_, ny, d.dtype, gy.host_ptr()), x32(*pool_, nx, d.dtype, x.host_ptr()),
            gw32(*pool_, nw), gb32(*pool_, gb ? d.O : 1);
        conv_bwd_weights_f32(*pool_, engine_, d, gy32.data(), x32.data(), gw32.data(), gb ? gb32.data() : nullptr);
        narrow_from_f32_parallel(d.dtype, gw32.data(), gw.host_ptr(), nw);
        if (gb) narrow_from_f32_parallel(d.dtype, gb32.data(), gb->host_ptr(), d.O);
        break;
      }
      default: throw TypeError(std::string("conv2d_backward: unsupported dtype ") + dtype_name(d.dtype));
    }
  });
}

void CpuBackend::conv2d(const Conv2dDesc& d, const Buffer& x, const Buffer& w, const Buffer* bias, Buffer& y) {
  cpu_threads::apply();
  const std::int64_t nx = d.N * d.C * d.H * d.W, nw = d.O * (d.C / d.groups) * d.kh * d.kw, ny = d.N * d.O * d.OH * d.OW;
  timed("conv2d", 0, [&] {
    switch (d.dtype) {
      case DType::f32:
        conv_f32(*pool_, engine_, d, static_cast<const float*>(x.host_ptr()), static_cast<const float*>(w.host_ptr()),
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
        conv_f32(*pool_, engine_, d32, x32.data(), w32.data(), bias ? b32.data() : nullptr, y32.data());
        narrow_from_f32_parallel(d.dtype, y32.data(), y.host_ptr(), ny);
        break;
      }
      default: throw TypeError(std::string("conv2d: unsupported dtype ") + dtype_name(d.dtype));
    }
  });
}

// The primitive's own output layout (NCHW where it is outside the family), padded blocks included: LeNet's 6-channel
// maps in nChw16c measured 0.91x (0.86-0.98) the step time of NCHW for them (pooling 16 lanes to a register over
// 2.7x the data still beats pooling NCHW planes, and two reorders go).
int CpuBackend::conv2d_output_block(const Conv2dDesc& d) {
  const std::shared_ptr<const ConvEntry> e = conv_entry(engine_, d, 1, 1);
  return std::max(activation_block(e->pdst), 1);
}

int CpuBackend::conv2d_input_block(const Conv2dDesc& d) {
  return std::max(activation_block(conv_entry(engine_, d, 1, 1)->psrc), 1);
}

void CpuBackend::conv2d_blocked(const Conv2dDesc& d, int xb, const Buffer& x, const Buffer& w, const Buffer* bias,
                                int yb, Buffer& y) {
  cpu_threads::apply();
  timed("conv2d", 0, [&] {
    conv_f32(*pool_, engine_, d, static_cast<const float*>(x.host_ptr()), static_cast<const float*>(w.host_ptr()),
             bias ? static_cast<const float*>(bias->host_ptr()) : nullptr, static_cast<float*>(y.host_ptr()), xb, yb);
  });
}

void CpuBackend::conv2d_backward_data_blocked(const Conv2dDesc& d, int yb, const Buffer& gy, const Buffer& w, int xb,
                                              Buffer& gx) {
  cpu_threads::apply();
  timed("conv2d_backward_data", 0, [&] {
    conv_bwd_data_f32(*pool_, engine_, d, static_cast<const float*>(gy.host_ptr()),
                      static_cast<const float*>(w.host_ptr()), static_cast<float*>(gx.host_ptr()), xb, yb);
  });
}

void CpuBackend::conv2d_backward_weights_blocked(const Conv2dDesc& d, int yb, const Buffer& gy, int xb,
                                                 const Buffer& x, Buffer& gw, Buffer* gb) {
  cpu_threads::apply();
  timed("conv2d_backward_weights", 0, [&] {
    conv_bwd_weights_f32(*pool_, engine_, d, static_cast<const float*>(gy.host_ptr()),
                         static_cast<const float*>(x.host_ptr()), static_cast<float*>(gw.host_ptr()),
                         gb ? static_cast<float*>(gb->host_ptr()) : nullptr, xb, yb);
  });
}

}  // namespace hetnn
