// 2-D convolution on OpenCL devices (kernels/conv2d.cl, one program per kernel size and dtype, cached): ungrouped
// convolutions as one batched GEMM on hetnn's tuned GEMM kernels, y[n] = W (O, C*kh*kw) @ cols[n]. Where the GEMM
// parameters in force are vtiled (GPUs), the forward is an implicit GEMM: the kernel gathers cols[n] from x[n] as it
// loads B, with no column buffer; where they are packed (CPU-type devices), the GEMM's B panels are packed from x[n]
// (forward and weight gradient). Elsewhere im2col writes the columns first (1x1 stride-1 unpadded convolutions need
// none: x[n] is already (C, H*W)); batches whose work buffers would pass conv2d_work_limit() run in chunks of
// images; grouped ones, and those of which one image alone passes it, a direct kernel.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "backend/opencl/cl_args.h"
#include "backend/opencl/cl_backend.h"
#include "core/errors.h"
#include "core/os_load.h"
#include "core/warn.h"

namespace hetnn::opencl {

// The largest work buffer (im2col columns, per-image weight gradients) the GEMM paths may allocate: an eighth of the
// device's memory (at least 512 MiB) within its largest allocation; beyond it the direct kernels run.
std::size_t ClBackend::conv2d_work_limit() const {
  if (memory_limit_) return std::min<std::size_t>(info_.max_alloc, memory_limit_ / 8);  // the tests' small device
  return std::min<std::size_t>(info_.max_alloc, std::max<std::size_t>(std::size_t{512} << 20, info_.global_mem / 8));
}

std::int64_t ClBackend::conv2d_images_per_chunk(const Conv2dDesc& d, std::size_t per_image) const {
  if (d.groups != 1) return 0;
  if (per_image == 0) return d.N;
  return std::min<std::int64_t>(d.N, static_cast<std::int64_t>(conv2d_work_limit() / per_image));
}

namespace {
std::string conv_options(const std::string& common, const Conv2dDesc& d) {
  return common + " -DKH=" + std::to_string(d.kh) + " -DKW=" + std::to_string(d.kw);
}

// A batch whose GEMM work buffers pass the limit runs the GEMM path on chunks of `per_chunk` images (their operands
// copied into and out of contiguous chunk buffers) instead of falling to the direct kernels, which are 10-25x slower
// (measured on PoCL: a Keras-style CNN's weight gradient at batch 655 took 16 s that way). fn(chunk desc, first image).
template <class Fn>
void for_image_chunks(const Conv2dDesc& d, std::int64_t per_chunk, Fn&& fn) {
  Conv2dDesc c = d;
  for (std::int64_t n0 = 0; n0 < d.N; n0 += per_chunk) {
    c.N = std::min(per_chunk, d.N - n0);
    fn(c, n0);
  }
}

// Images [n0, n0 + n) of src (image_bytes each) copied into a new buffer.
std::shared_ptr<Buffer> image_chunk(Backend& be, const Buffer& src, std::int64_t n0, std::int64_t n,
                                    std::size_t image_bytes) {
  std::shared_ptr<Buffer> b = be.alloc(static_cast<std::size_t>(n) * image_bytes);
  be.copy(src, static_cast<std::size_t>(n0) * image_bytes, *b, 0, static_cast<std::size_t>(n) * image_bytes);
  return b;
}

// op(chunk desc, input chunk, output chunk) on the chunks of `in` (in_img bytes an image), each output chunk
// (out_img bytes an image) copied into its place in `out`.
template <class Op>
void map_image_chunks(Backend& be, const Conv2dDesc& d, std::int64_t per_chunk, const Buffer& in, std::size_t in_img,
                      Buffer& out, std::size_t out_img, Op&& op) {
  for_image_chunks(d, per_chunk, [&](const Conv2dDesc& c, std::int64_t n0) {
    if (n0 == 0) return op(c, in, out);  // the first images: the arrays themselves (the op reads and writes c.N)
    const std::shared_ptr<Buffer> ic = image_chunk(be, in, n0, c.N, in_img);
    const std::shared_ptr<Buffer> oc = be.alloc(static_cast<std::size_t>(c.N) * out_img);
    op(c, *ic, *oc);
    be.copy(*oc, 0, out, static_cast<std::size_t>(n0) * out_img, static_cast<std::size_t>(c.N) * out_img);
  });
}
}  // namespace

// y[n, o] = act(y[n, o] + bias[o]) after a GEMM path's product.
void ClBackend::conv2d_bias_act(const Conv2dDesc& d, const Buffer& bias, Buffer& y, const std::string& opts) {
  const std::int64_t ohw = d.OH * d.OW;
  std::lock_guard<std::mutex> lock(mu_);
  cl_kernel k = kernel("conv2d.cl", "conv2d_bias_act", opts);
  ArgSetter a{k, "conv2d_bias_act"};
  a(static_cast<cl_int>(d.O))(static_cast<cl_int>(ohw))(static_cast<cl_int>(d.act))(mem(bias))(mem(y));
  const std::size_t lx = gpu_kernels() ? 64 : 16;
  const std::size_t local[3] = {lx, 1, 1};
  const std::size_t global[3] = {round_up(static_cast<std::size_t>(ohw), lx), static_cast<std::size_t>(d.O),
                                 static_cast<std::size_t>(d.N)};
  enqueue("conv2d_bias_act", k, 3, global, local);
}

// The columns (N, C*kh*kw, OH*OW) of x for the GEMM paths, in a new work buffer.
std::shared_ptr<Buffer> ClBackend::im2col(const Conv2dDesc& d, const Buffer& x, const std::string& opts) {
  const std::int64_t ck = d.C * d.kh * d.kw, ohw = d.OH * d.OW;
  std::shared_ptr<Buffer> cols = alloc(static_cast<std::size_t>(d.N * ck * ohw) * dtype_size(d.dtype));
  std::lock_guard<std::mutex> lock(mu_);
  // GPUs: a work-item per element (neighbours write neighbouring columns); CPU-like devices: one per output row.
  const bool gpu = gpu_kernels();
  const char* name = gpu ? "conv2d_im2col" : "conv2d_im2col_rows";
  cl_kernel k = kernel("conv2d.cl", name, opts);
  ArgSetter a{k, name};
  a(static_cast<cl_int>(d.C))(static_cast<cl_int>(d.H))(static_cast<cl_int>(d.W));
  a(static_cast<cl_int>(d.OH))(static_cast<cl_int>(d.OW))(cl_int{d.sh})(cl_int{d.sw})(cl_int{d.ph})(cl_int{d.pw});
  a(cl_int{d.dh})(cl_int{d.dw})(mem(x))(mem(*cols));
  const std::size_t lx = gpu ? 64 : 8;
  const std::size_t local[3] = {lx, 1, 1};
  const std::size_t global[3] = {round_up(static_cast<std::size_t>(gpu ? ohw : d.OH), lx),
                                 static_cast<std::size_t>(ck), static_cast<std::size_t>(d.N)};
  enqueue("conv2d_im2col", k, 3, global, local);
  return cols;
}

bool ClBackend::conv2d_implicit(const Conv2dDesc& d, const Buffer& x, const Buffer& w, const Buffer* bias,
                                Buffer& y, bool by_rule) {
  const std::int64_t ck = d.C * d.kh * d.kw, ohw = d.OH * d.OW;
  if (d.groups != 1 || conv_is_pointwise(d)) return false;
  const GemmType type(d.dtype, d.allow_tf32);  // tf32 without matrix units for it: float32's parameters
  const GemmParams p = gemm_params(type, d.O * ohw * ck).fitted(d.O, ohw);
  const bool mma = p.family == GemmParams::Family::mma, packed = p.family == GemmParams::Family::packed;
  if (p.family != GemmParams::Family::vtiled && !mma && !packed) return false;
  if (packed && d.C * d.H * d.W > std::numeric_limits<cl_int>::max()) return false;  // pack_b_conv's int offsets
  // By the device's rule, where the packed GEMM reads B in place (its parameters say so, and OH*OW is a multiple of
  // its panel width), the columns from im2col_rows rather than packed from the images: the same bytes move, and
  // im2col's long rows copy faster than the packing's panels of 32 (ResNet-50's 7x7 stride-2 stem at batch 1: 486
  // against 1313 us on PoCL).
  std::shared_ptr<Buffer> cols;
  if (packed && by_rule && p.pack_b == 0 && (d.dtype == DType::f32 || d.dtype == DType::f64) &&
      ohw % (static_cast<std::int64_t>(p.vw) * p.nv) == 0 &&
      conv2d_images_per_chunk(d, static_cast<std::size_t>(ck * ohw) * dtype_size(d.dtype)) >= d.N)
    cols = im2col(d, x, conv_options(common_options(d.dtype), d));
  MatmulDesc g;
  g.batch = d.N, g.batch_a = 1, g.batch_b = d.N, g.M = d.O, g.N = ohw, g.K = ck, g.dtype = d.dtype;
  g.allow_tf32 = mma && type.tf32;
  g.act = d.act;
  g.has_bias = bias != nullptr;  // a bias per output channel: a row of the product (has_bias 2 in the kernels)
  std::lock_guard<std::mutex> lock(mu_);
  try {
    if (mma)
      matmul_mma(p, g, mem(w), mem(x), mem(y), bias ? mem(*bias) : mem(y), matrix_units(type), &d);
    else if (packed && cols)
      matmul_packed(p, g, mem(w), mem(*cols), mem(y), bias ? mem(*bias) : mem(y), nullptr, true);
    else if (packed)
      matmul_packed(p, g, mem(w), mem(x), mem(y), bias ? mem(*bias) : mem(y), &d);
    else
      matmul_tiled(p, g, mem(w), mem(x), mem(y), bias ? mem(*bias) : mem(y), &d);
  } catch (const OutOfMemory&) {
    throw;
  } catch (const Error& e) {  // before any kernel ran (build, launch): the im2col path, whose GEMM handles it
    std::string why = e.what();
    warn("implicit-GEMM convolution on " + info_.id + " failed (" + why.substr(0, why.find('\n')) +
         "); using im2col and a GEMM");
    return false;
  }
  return true;
}

namespace {
bool known_conv_algorithm(const std::string& a) {
  return a == "" || a == "benchmark" || a == "winograd" || a == "winograd4" || a == "implicit" || a == "im2col";
}
constexpr const char* kConvAlgorithms = "'auto', 'benchmark', 'winograd', 'winograd4', 'implicit' or 'im2col'";
}  // namespace

std::string ClBackend::initial_conv_algorithm(std::string& error) {
  const char* env = std::getenv("HETNN_CONV_ALGORITHM");
  const std::string a = env == nullptr || std::string(env) == "auto" ? "" : env;
  if (known_conv_algorithm(a)) return a;
  error = std::string("HETNN_CONV_ALGORITHM must be ") + kConvAlgorithms + ", got '" + a + "'";
  return "";
}

void ClBackend::set_conv_algorithm(const std::string& a) {
  if (!known_conv_algorithm(a))
    throw ValueError(std::string("conv algorithm must be ") + kConvAlgorithms + " ('' for 'auto'), got '" + a + "'");
  std::lock_guard<std::mutex> lock(mu_);
  conv_algorithm_ = a;
  conv_algorithm_error_.clear();
}

bool ClBackend::conv2d_winograd(const Conv2dDesc& d, const Buffer& x, const Buffer& w, const Buffer* bias,
                                Buffer& y, int tile) {
  if (d.groups != 1 || d.kh != 3 || d.kw != 3 || d.sh != 1 || d.sw != 1 || d.dh != 1 || d.dw != 1) return false;
  const std::int64_t th = (d.OH + tile - 1) / tile, tw = (d.OW + tile - 1) / tile, P = d.N * th * tw;
  const std::int64_t e = static_cast<std::int64_t>(tile + 2) * (tile + 2);  // transformed elements per tile
  const DType real = d.dtype == DType::f64 ? DType::f64 : DType::f32;  // the transforms' and GEMM's type
  const std::size_t rb = dtype_size(real);
  const std::size_t u_bytes = static_cast<std::size_t>(e * d.O * d.C) * rb;
  const std::size_t v_bytes = static_cast<std::size_t>(e * d.C * P) * rb, m_bytes = static_cast<std::size_t>(e * d.O * P) * rb;
  if (std::max({u_bytes, v_bytes, m_bytes}) > conv2d_work_limit()) return false;
  const std::shared_ptr<Buffer> u = alloc(u_bytes), v = alloc(v_bytes), m = alloc(m_bytes);
  const std::string opts = common_options(d.dtype) + " -DWINO_M=" + std::to_string(tile);
  {
    std::lock_guard<std::mutex> lock(mu_);
    cl_kernel k = kernel("winograd.cl", "winograd_filter", opts);
    ArgSetter{k, "winograd_filter"}(static_cast<cl_int>(d.O))(static_cast<cl_int>(d.C))(mem(w))(mem(*u));
    const std::size_t local[2] = {16, 1};
    const std::size_t global[2] = {round_up(static_cast<std::size_t>(d.C), 16), static_cast<std::size_t>(d.O)};
    enqueue("conv2d:winograd_filter", k, 2, global, local);
    cl_kernel ki = kernel("winograd.cl", "winograd_input", opts);
    ArgSetter a{ki, "winograd_input"};
    a(static_cast<cl_int>(d.C))(static_cast<cl_int>(d.H))(static_cast<cl_int>(d.W))(static_cast<cl_int>(th));
    a(static_cast<cl_int>(tw))(cl_int{d.ph})(cl_int{d.pw})(static_cast<cl_long>(P))(mem(x))(mem(*v));
    const std::size_t il[3] = {64, 1, 1};
    const std::size_t ig[3] = {round_up(static_cast<std::size_t>(th * tw), 64), static_cast<std::size_t>(d.C),
                               static_cast<std::size_t>(d.N)};
    enqueue("conv2d:winograd_input", ki, 3, ig, il);
  }
  MatmulDesc g;
  g.batch = e, g.batch_a = e, g.batch_b = e, g.M = d.O, g.N = P, g.K = d.C, g.dtype = real;
  matmul(g, *u, *v, *m, nullptr);
  std::lock_guard<std::mutex> lock(mu_);
  cl_kernel ko = kernel("winograd.cl", "winograd_output", opts);
  ArgSetter a{ko, "winograd_output"};
  a(static_cast<cl_int>(d.O))(static_cast<cl_int>(d.OH))(static_cast<cl_int>(d.OW))(static_cast<cl_int>(th));
  a(static_cast<cl_int>(tw))(static_cast<cl_long>(P))(mem(*m))(bias ? mem(*bias) : mem(*m))(cl_int{bias != nullptr});
  a(static_cast<cl_int>(d.act))(mem(y));
  const std::size_t ol[3] = {64, 1, 1};
  const std::size_t og[3] = {round_up(static_cast<std::size_t>(th * tw), 64), static_cast<std::size_t>(d.O),
                             static_cast<std::size_t>(d.N)};
  enqueue("conv2d:winograd_output", ko, 3, og, ol);
  return true;
}

bool ClBackend::conv_tf32(const Conv2dDesc& d) {
  return d.allow_tf32 && d.dtype == DType::f32 && d.groups == 1 &&
         gemm_params(GemmType(DType::f32, true), d.O * d.OH * d.OW * d.C * d.kh * d.kw).family ==
             GemmParams::Family::mma;
}

std::string ClBackend::conv_algorithm() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!conv_algorithm_error_.empty()) throw ValueError(conv_algorithm_error_);
  return conv_algorithm_;
}

std::vector<KernelTools::ConvChoice> ClBackend::conv_choices() {
  std::lock_guard<std::recursive_mutex> lock(conv_choice_mu_);
  std::vector<ConvChoice> out;
  for (const auto& [key, choice] : conv_choices_) out.push_back(choice);
  return out;
}

namespace {

std::string conv_shape_key(const Conv2dDesc& d) {
  const auto tuple = [](std::initializer_list<std::int64_t> v) {
    std::string t = "(";
    for (const std::int64_t e : v) t += (t.size() > 1 ? ", " : "") + std::to_string(e);
    return t + ")";
  };
  std::string k = "x " + tuple({d.N, d.C, d.H, d.W}) + ", w " + tuple({d.O, d.C / d.groups, d.kh, d.kw}) +
                  ", stride " + tuple({d.sh, d.sw}) + ", padding " + tuple({d.ph, d.pr, d.pw, d.pw_r}) +
                  ", dilation " + tuple({d.dh, d.dw}) + ", " + dtype_name(d.dtype);
  if (d.has_bias) k += ", bias";
  if (d.allow_tf32) k += ", tf32";
  return k;
}

}  // namespace

std::string ClBackend::measured_choice(const std::string& key,
                                       const std::function<std::vector<std::string>()>& list_candidates,
                                       const std::function<void(const std::string&)>& run) {
  std::lock_guard<std::recursive_mutex> lock(conv_choice_mu_);
  if (const auto it = conv_choices_.find(key); it != conv_choices_.end()) return it->second.algorithm;
  const std::vector<std::string> candidates = list_candidates();
  ConvChoice choice;
  choice.shape = key;
  if (candidates.size() == 1) {
    choice.algorithm = candidates[0];
    conv_choices_[key] = choice;
    return choice.algorithm;
  }
  // Each candidate once (kernel builds, first allocations), then rounds in rotating order, each call timed from
  // an idle queue to its end. The fastest call of each candidate decides: load on the machine only adds time. The
  // rounds go on until every candidate has 3 calls and they span long enough for /proc/stat to tell whether other
  // processes or the hypervisor took the CPUs (0.1 s; at most 64 rounds, then the span is waited out); where they
  // did, as many rounds again, and the choice says so (flags), as a bench row measured beside a busy core does.
  using clock = std::chrono::steady_clock;
  synchronize();
  std::vector<std::string> usable;
  for (const std::string& a : candidates) {
    try {
      run(a);
      synchronize();
      usable.push_back(a);
    } catch (const OutOfMemory&) {
      synchronize();
    } catch (const Error& e) {
      synchronize();
      warn("conv algorithm '" + a + "' failed on " + info_.id + " for " + key + " (" +
           std::string(e.what()).substr(0, std::string(e.what()).find('\n')) + "); not a candidate");
    }
  }
  if (usable.empty()) return "";
  if (usable.size() == 1) {
    choice.algorithm = usable[0];
    conv_choices_[key] = choice;
    return choice.algorithm;
  }
  constexpr int kMinRounds = 3, kMaxRounds = 64;
  std::vector<double> fastest(usable.size(), std::numeric_limits<double>::infinity());
  int rounds = 0;
  const auto round = [&] {
    for (std::size_t i = 0; i < usable.size(); ++i) {
      const std::size_t c = (i + static_cast<std::size_t>(rounds)) % usable.size();
      const auto t0 = clock::now();
      run(usable[c]);
      synchronize();
      fastest[c] = std::min(fastest[c], std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    }
    ++rounds;
  };
  const LoadSample start = load_sample();
  while (rounds < kMinRounds || (rounds < kMaxRounds && load_since(start).wall < kQuietSpanS)) round();
  // Short calls: the span waited out on the clock (the thread kept busy, as the Python timing core does, reading
  // /proc/stat once at the end), so that a neighbour's use shows in the ticks.
  const auto until = clock::time_point(std::chrono::duration_cast<clock::duration>(
      std::chrono::duration<double>(start.wall + kQuietSpanS)));
  while (start.available && clock::now() < until) {
  }
  LoadSpan span = load_since(start);
  if (start.available && !span.quiet()) {
    for (const int target = 2 * rounds; rounds < target;) round();
    span = load_since(start);
    char text[160];
    if (span.judged())
      std::snprintf(text, sizeof text, "chosen on a busy machine (other processes %.0f %% of the CPUs, steal %.0f %%)",
                    span.others_pct, span.steal_pct);
    else
      std::snprintf(text, sizeof text, "chosen while other processes used the CPUs (%.2f s of calls)", span.wall);
    choice.flags = text;
  }
  choice.calls = rounds;
  std::size_t best = 0;
  for (std::size_t c = 0; c < usable.size(); ++c) {
    choice.ms.emplace_back(usable[c], fastest[c]);
    if (fastest[c] < fastest[best]) best = c;
  }
  choice.algorithm = usable[best];
  conv_choices_[key] = choice;
  return choice.algorithm;  // the caller then runs it: the result is the chosen algorithm's, as every later call's
}

std::string ClBackend::measured_conv_algorithm(const Conv2dDesc& d, const Buffer& x, const Buffer& w,
                                               const Buffer* bias, Buffer& y) {
  if (d.groups != 1 || d.N == 0) return "";  // grouped: the direct kernel alone
  const auto candidates = [&] {  // on the shape's first call only
    std::vector<std::string> c{"im2col"};
    if (d.kh == 3 && d.kw == 3 && d.sh == 1 && d.sw == 1 && d.dh == 1 && d.dw == 1)
      c.insert(c.end(), {"winograd", "winograd4"});
    const GemmParams p = gemm_params(GemmType(d.dtype, d.allow_tf32), d.O * d.OH * d.OW * d.C * d.kh * d.kw);
    if (!conv_is_pointwise(d) && p.family != GemmParams::Family::tiled) c.push_back("implicit");
    return c;
  };
  return measured_choice(conv_shape_key(d), candidates,
                         [&](const std::string& a) { conv2d_as(d, x, w, bias, y, a); });
}

void ClBackend::conv2d(const Conv2dDesc& d, const Buffer& x, const Buffer& w, const Buffer* bias, Buffer& y) {
  std::string algorithm = conv_algorithm();
  if (algorithm == "benchmark") algorithm = measured_conv_algorithm(d, x, w, bias, y);
  conv2d_as(d, x, w, bias, y, algorithm);
}

void ClBackend::conv2d_as(const Conv2dDesc& d, const Buffer& x, const Buffer& w, const Buffer* bias, Buffer& y,
                          std::string algorithm) {
  const std::string opts = conv_options(common_options(d.dtype), d);
  const std::int64_t ck = d.C * d.kh * d.kw, ohw = d.OH * d.OW;
  const bool pointwise = conv_is_pointwise(d);
  // TF32 in force (precision "high" on a device whose tf32 GEMM is the matrix-unit member): the implicit GEMM on
  // it, or (algorithm "im2col") the column buffer and the GEMM; Winograd computes float32 exactly.
  if (conv_tf32(d) && algorithm.empty()) algorithm = "implicit";
  // The device's choice on a GPU: Winograd F(2x2, 3x3) for float32 batches (H200, ResNet-50's 3x3 layers at batch
  // 32: 0.67-1.37x cuDNN against 0.33-0.66x for the implicit GEMM; at batch 1 0.41x against 0.62x, docs/gpu.md).
  const bool gpu_winograd = algorithm.empty() && info_.type == "gpu" && d.dtype == DType::f32 && d.N >= 2;
  if ((algorithm == "winograd" || gpu_winograd) && d.N > 0 && conv2d_winograd(d, x, w, bias, y, 2)) return;
  if (algorithm == "winograd4" && d.N > 0 && conv2d_winograd(d, x, w, bias, y, 4)) return;
  // Implicit GEMM (the vtiled kernel gathers the columns): no work buffer, so no chunks either.
  if (algorithm != "im2col" && conv2d_implicit(d, x, w, bias, y, algorithm.empty())) return;
  const std::size_t elt = dtype_size(d.dtype);
  const std::int64_t per_chunk =
      conv2d_images_per_chunk(d, pointwise ? 0 : static_cast<std::size_t>(ck * ohw) * elt);
  if (per_chunk >= 1 && per_chunk < d.N) {
    const std::size_t x_img = static_cast<std::size_t>(d.C * d.H * d.W) * elt;
    const std::size_t y_img = static_cast<std::size_t>(d.O * ohw) * elt;
    map_image_chunks(*this, d, per_chunk, x, x_img, y, y_img,
                     [&](const Conv2dDesc& c, const Buffer& xc, Buffer& yc) {
                       conv2d_as(c, xc, w, bias, yc, algorithm);
                     });
    return;
  }
  if (d.groups == 1 && per_chunk >= d.N) {
    std::shared_ptr<Buffer> cols;
    if (!pointwise) cols = im2col(d, x, opts);
    MatmulDesc g;
    g.batch = d.N, g.batch_a = 1, g.batch_b = d.N, g.M = d.O, g.N = ohw, g.K = ck, g.dtype = d.dtype;
    g.allow_tf32 = d.allow_tf32;
    g.act = bias ? Activation::none : d.act;  // without a bias the activation is the GEMM's epilogue
    matmul(g, w, pointwise ? x : *cols, y, nullptr);
    if (bias) conv2d_bias_act(d, *bias, y, opts);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  cl_kernel k = kernel("conv2d.cl", "conv2d_fwd", opts);
  ArgSetter a{k, "conv2d_fwd"};
  a(static_cast<cl_int>(d.C))(static_cast<cl_int>(d.H))(static_cast<cl_int>(d.W))(static_cast<cl_int>(d.O));
  a(static_cast<cl_int>(d.OH))(static_cast<cl_int>(d.OW));
  a(static_cast<cl_int>(d.C / d.groups))(static_cast<cl_int>(d.O / d.groups));
  a(cl_int{d.sh})(cl_int{d.sw})(cl_int{d.ph})(cl_int{d.pw})(cl_int{d.dh})(cl_int{d.dw});
  a(cl_int{d.has_bias})(static_cast<cl_int>(d.act))(mem(x))(mem(w))(bias ? mem(*bias) : mem(w))(mem(y));
  enqueue_planes("conv2d", k, d.OW, d.OH, d.N * d.O);
}

// The backward passes of ungrouped convolutions run on the GEMM kernels like the forward (the gathering kernels
// below them took 25x the CPU device's time on a Keras-style CNN): data = col2im(W^T @ gy[n]), weights = the sum
// over n of gy[n] @ cols[n]^T (in chunks of images where the work buffers would pass the limit; where the GEMM in
// force is vtiled or the matrix-unit member, one implicit GEMM over the batch). Grouped convolutions, and those of
// which one image's buffers pass the limit, use the gathering kernels.

// A stride-1 convolution's data gradient is itself a stride-1 convolution: of gy with the kernel flipped and its
// channels swapped, W'[c][o][i][j] = W[o][c][kh-1-i][kw-1-j], padded by k-1-p on each side. With stride s, the
// input rows fall into s classes by (h + ph) mod s: the rows of class r (every s-th from its first) are reached by
// the taps i = r, r + s, ... only, so each class's rows are a stride-1 convolution of gy with those taps flipped,
// and the s_h x s_w classes together give gx (the sub-pixel decomposition of a transposed convolution; rows no tap
// reaches are zero). With an explicit forward algorithm, "benchmark"'s choice, or on a GPU at stride 1, these run on
// the forward's kernels (Winograd, implicit GEMM) instead of a GEMM into a column buffer and col2im.
namespace {

// One class of input rows (or columns) of a strided data gradient: the taps that reach it, its first row and row
// count in the input, and the padding of its stride-1 convolution over gy's `out` rows.
struct GradClass {
  int taps = 0, first = 0, count = 0, pad_lo = 0, pad_hi = 0;
};

GradClass grad_class(int r, int k, int s, int p, std::int64_t in, std::int64_t out) {
  GradClass c;
  c.taps = r < k ? (k - r + s - 1) / s : 0;
  c.first = ((r - p) % s + s) % s;
  c.count = c.first < in ? static_cast<int>((in - c.first + s - 1) / s) : 0;
  if (c.taps == 0 || c.count == 0) return c;
  const int q0 = (c.first + p - r) / s;  // gy's row that tap r reaches from the class's first row
  c.pad_lo = c.taps - 1 - q0;
  c.pad_hi = static_cast<int>(c.count + c.taps - 1 - out) - c.pad_lo;
  return c;
}

// The classes along one axis, or nothing where one would need a negative padding (a class whose first rows of gy
// no tap of it reaches: a padding as large as the kernel; GEMM + col2im). A padding past the taps is zeros read
// (input rows a "valid" convolution never read); every forward kernel bounds its reads.
std::optional<std::vector<GradClass>> grad_classes(int k, int s, int p, std::int64_t in, std::int64_t out) {
  std::vector<GradClass> all;
  for (int r = 0; r < s; ++r) {
    const GradClass c = grad_class(r, k, s, p, in, out);
    if (c.taps && c.count && (c.pad_lo < 0 || c.pad_hi < 0)) return std::nullopt;
    all.push_back(c);
  }
  return all;
}

}  // namespace

bool ClBackend::data_grad_as_forward_applies(const Conv2dDesc& d) {
  if (d.groups != 1 || d.dh != 1 || d.dw != 1 || conv_is_pointwise(d) || d.N == 0) return false;
  if (!grad_classes(d.kh, d.sh, d.ph, d.H, d.OH) || !grad_classes(d.kw, d.sw, d.pw, d.W, d.OW)) return false;
  return !conv_tf32(d);  // TF32 in force: the GEMM, on the matrix units
}

bool ClBackend::conv2d_backward_data_as_forward(const Conv2dDesc& d, const Buffer& gy, const Buffer& w, Buffer& gx,
                                                const std::string& algorithm) {
  // "auto" on a GPU: stride 1 only. Strided layers keep GEMM + col2im: the classes' smaller GEMMs ran at 0.38-0.56x
  // its speed on ResNet-50's four stride-2 layers (H200, batch 32, scripts/conv_algorithms.py --strided, docs/gpu.md;
  // on PoCL they are slower too); "benchmark" measures both.
  const bool gpu_default = algorithm.empty() && info_.type == "gpu" && d.sh == 1 && d.sw == 1;
  if (!(algorithm == "forward" || algorithm == "winograd" || algorithm == "winograd4" || algorithm == "implicit" ||
        gpu_default) ||
      !data_grad_as_forward_applies(d))
    return false;
  const std::vector<GradClass> rows = *grad_classes(d.kh, d.sh, d.ph, d.H, d.OH);
  const std::vector<GradClass> cols = *grad_classes(d.kw, d.sw, d.pw, d.W, d.OW);
  const std::size_t elt = dtype_size(d.dtype);
  const bool strided = d.sh != 1 || d.sw != 1;
  bool gaps = false;  // input positions no tap reaches
  for (const GradClass& r : rows)
    for (const GradClass& c : cols) gaps |= r.count && c.count && (!r.taps || !c.taps);
  if (gaps) fill(gx, 0, static_cast<std::size_t>(d.N * d.C * d.H * d.W) * elt, 0);
  for (int rh = 0; rh < d.sh; ++rh)
    for (int rw = 0; rw < d.sw; ++rw) {
      const GradClass& r = rows[rh];
      const GradClass& c = cols[rw];
      if (!r.taps || !c.taps || !r.count || !c.count) continue;
      const std::int64_t taps = static_cast<std::int64_t>(r.taps) * c.taps;
      CopyDesc k;  // W'[c][o][a][b] = W[o][c][rh + sh (taps_h - 1 - a)][rw + sw (taps_w - 1 - b)]
      k.elem = elt;
      k.shape = {d.C, d.O, r.taps, c.taps};
      k.so = {d.O * taps, taps, c.taps, 1};
      k.ss = {d.kh * d.kw, d.C * d.kh * d.kw, -d.sh * d.kw, -d.sw};
      k.os = (rh + d.sh * (r.taps - 1)) * d.kw + rw + d.sw * (c.taps - 1);
      k.n = d.C * d.O * taps;
      const std::shared_ptr<Buffer> flipped = alloc(static_cast<std::size_t>(k.n) * elt);
      copy_strided(k, w, *flipped);
      Conv2dDesc e = d;
      e.C = d.O, e.H = d.OH, e.W = d.OW, e.O = d.C, e.OH = r.count, e.OW = c.count, e.kh = r.taps, e.kw = c.taps;
      e.sh = e.sw = 1;
      e.ph = r.pad_lo, e.pr = r.pad_hi, e.pw = c.pad_lo, e.pw_r = c.pad_hi;
      e.has_bias = false, e.act = Activation::none;
      if (!strided) {  // one class: gx itself
        conv2d(e, gy, *flipped, nullptr, gx);
        return true;
      }
      const std::int64_t part = d.N * d.C * r.count * c.count;
      const std::shared_ptr<Buffer> sub = alloc(static_cast<std::size_t>(part) * elt);
      conv2d(e, gy, *flipped, nullptr, *sub);
      CopyDesc put;  // into gx's rows first + sh t, columns first + sw u
      put.elem = elt;
      put.shape = {d.N, d.C, r.count, c.count};
      put.ss = {d.C * r.count * c.count, r.count * c.count, c.count, 1};
      put.so = {d.C * d.H * d.W, d.H * d.W, d.sh * d.W, d.sw};
      put.oo = r.first * d.W + c.first;
      put.n = part;
      copy_strided(put, *sub, gx);
    }
  return true;
}

void ClBackend::conv2d_backward_data(const Conv2dDesc& d, const Buffer& gy, const Buffer& w, Buffer& gx) {
  std::string algorithm = conv_algorithm();
  if (algorithm == "benchmark")  // as a forward convolution (itself measured as a layer) against GEMM + col2im
    algorithm = !data_grad_as_forward_applies(d)
                    ? ""
                    : measured_choice("data gradient: " + conv_shape_key(d),
                                      [] { return std::vector<std::string>{"forward", "im2col"}; },
                                      [&](const std::string& a) { conv2d_backward_data_as(d, gy, w, gx, a); });
  conv2d_backward_data_as(d, gy, w, gx, algorithm);
}

void ClBackend::conv2d_backward_data_as(const Conv2dDesc& d, const Buffer& gy, const Buffer& w, Buffer& gx,
                                        const std::string& algorithm) {
  if (conv2d_backward_data_as_forward(d, gy, w, gx, algorithm)) return;
  const std::string opts = conv_options(common_options(d.dtype), d);
  const std::int64_t ck = d.C * d.kh * d.kw, ohw = d.OH * d.OW;
  const std::size_t elt = dtype_size(d.dtype);
  const std::int64_t per_chunk =
      conv2d_images_per_chunk(d, conv_is_pointwise(d) ? 0 : static_cast<std::size_t>(ck * ohw) * elt);
  if (per_chunk >= 1 && per_chunk < d.N) {
    const std::size_t x_img = static_cast<std::size_t>(d.C * d.H * d.W) * elt;
    const std::size_t y_img = static_cast<std::size_t>(d.O * ohw) * elt;
    map_image_chunks(*this, d, per_chunk, gy, y_img, gx, x_img,
                     [&](const Conv2dDesc& c, const Buffer& g, Buffer& out) {
                       conv2d_backward_data_as(c, g, w, out, algorithm);
                     });
    return;
  }
  if (d.groups == 1 && per_chunk >= d.N) {
    MatmulDesc g;  // dcols[n] (CK, OHW) = W^T (CK, O) @ gy[n] (O, OHW)
    g.batch = d.N, g.batch_a = 1, g.batch_b = d.N, g.M = ck, g.N = ohw, g.K = d.O, g.trans_a = true;
    g.dtype = d.dtype;
    g.allow_tf32 = d.allow_tf32;
    if (conv_is_pointwise(d)) {  // the columns are gx itself
      matmul(g, w, gy, gx, nullptr);
      return;
    }
    std::shared_ptr<Buffer> dcols = alloc(static_cast<std::size_t>(d.N * ck * ohw) * dtype_size(d.dtype));
    matmul(g, w, gy, *dcols, nullptr);
    std::lock_guard<std::mutex> lock(mu_);
    // CPU-like devices: a work-item per input row (float32/64: the row accumulates in the data type); GPUs and
    // 16-bit data: one per element, summing in the compute type.
    const bool rows = !gpu_kernels() && (d.dtype == DType::f32 || d.dtype == DType::f64);
    const char* name = rows ? "conv2d_col2im_rows" : "conv2d_col2im";
    cl_kernel k = kernel("conv2d.cl", name, opts);
    ArgSetter a{k, name};
    a(static_cast<cl_int>(d.C))(static_cast<cl_int>(d.H))(static_cast<cl_int>(d.W));
    a(static_cast<cl_int>(d.OH))(static_cast<cl_int>(d.OW))(cl_int{d.sh})(cl_int{d.sw})(cl_int{d.ph})(cl_int{d.pw});
    a(cl_int{d.dh})(cl_int{d.dw})(mem(*dcols))(mem(gx));
    if (!rows) {
      enqueue_planes("conv2d_col2im", k, d.W, d.H, d.N * d.C);
      return;
    }
    const std::size_t local[3] = {8, 1, 1};
    const std::size_t global[3] = {round_up(static_cast<std::size_t>(d.H), 8), static_cast<std::size_t>(d.C),
                                   static_cast<std::size_t>(d.N)};
    enqueue("conv2d_col2im", k, 3, global, local);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  cl_kernel k = kernel("conv2d.cl", "conv2d_bwd_data", opts);
  ArgSetter a{k, "conv2d_bwd_data"};
  a(static_cast<cl_int>(d.C))(static_cast<cl_int>(d.H))(static_cast<cl_int>(d.W))(static_cast<cl_int>(d.O));
  a(static_cast<cl_int>(d.OH))(static_cast<cl_int>(d.OW));
  a(static_cast<cl_int>(d.C / d.groups))(static_cast<cl_int>(d.O / d.groups));
  a(cl_int{d.sh})(cl_int{d.sw})(cl_int{d.ph})(cl_int{d.pw})(cl_int{d.dh})(cl_int{d.dw})(mem(gy))(mem(w))(mem(gx));
  enqueue_planes("conv2d_backward_data", k, d.W, d.H, d.N * d.C);
}

void ClBackend::bias_grad(const Conv2dDesc& d, const Buffer& gy, Buffer& gb, const std::string& opts) {
  // Images split into G groups so that O x G work-groups give each compute unit about four; G partial rows summed.
  // CPU-type devices: a group per image, its rows summed by a work item each (conv2d_bias_grad_rows: the work-group
  // reduction in local memory ran at 6.5 GB/s on PoCL, 2.8 of 6.6 ms of a Keras-style CNN layer's weight gradient).
  const bool rows = !gpu_kernels() && d.N > 0;
  const std::int64_t want = 4 * std::max(1, info_.compute_units);
  const std::int64_t groups =
      rows ? std::max<std::int64_t>(d.N, 1)
           : std::clamp<std::int64_t>((want + d.O - 1) / d.O, 1, std::max<std::int64_t>(d.N, 1));
  const std::int64_t per_group = (d.N + groups - 1) / groups;
  const std::int64_t g = (d.N + per_group - 1) / std::max<std::int64_t>(per_group, 1);
  // partials in the kernel's arithmetic type (REAL: double for float64, float otherwise), summed once and rounded
  // to the gradient's type by the reduction
  const DType real = d.dtype == DType::f64 ? DType::f64 : DType::f32;
  std::shared_ptr<Buffer> part = g > 1 ? alloc(static_cast<std::size_t>(g * d.O) * dtype_size(real)) : nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (rows) {
      cl_kernel k = kernel("conv2d.cl", "conv2d_bias_grad_rows", opts);
      ArgSetter a{k, "conv2d_bias_grad_rows"};
      a(static_cast<cl_int>(d.O))(static_cast<cl_long>(d.OH * d.OW))(static_cast<cl_int>(part != nullptr));
      a(mem(gy))(mem(part ? *part : gb));
      const std::size_t global[2] = {static_cast<std::size_t>(d.O), static_cast<std::size_t>(g)};
      enqueue("conv2d_bias_grad", k, 2, global, nullptr);
    } else {
      cl_kernel k = kernel("conv2d.cl", "conv2d_bias_grad", opts);
      ArgSetter a{k, "conv2d_bias_grad"};
      a(static_cast<cl_int>(d.N))(static_cast<cl_int>(d.O))(static_cast<cl_int>(d.OH * d.OW));
      a(static_cast<cl_int>(per_group))(static_cast<cl_int>(part != nullptr))(mem(gy))(mem(part ? *part : gb));
      const std::size_t local[2] = {64, 1};
      const std::size_t global[2] = {64 * static_cast<std::size_t>(std::max<std::int64_t>(g, 1)),
                                     static_cast<std::size_t>(d.O)};
      enqueue("conv2d_bias_grad", k, 2, global, local);
    }
  }
  if (part) {
    ReduceDesc r;  // gb (O) = the sum over the g rows of part (g, O)
    r.op = RedOp::sum;
    r.in = real;
    r.out = d.dtype;
    r.kshape = {d.O};
    r.ks = {1};
    r.rshape = {g};
    r.rs = {d.O};
    r.n_out = d.O;
    r.n_red = g;
    reduce(r, *part, gb);
  }
}

std::optional<GemmParams> ClBackend::weight_grad_params(const Conv2dDesc& d) {
  // The vtiled kernel (split-K partial sums in the data type, or in float32 for 16-bit data) or the matrix-unit
  // member (16-bit data and tf32: float32 partial sums). Other families (the CPU-like ones) keep the per-image GEMMs.
  if (d.groups != 1) return std::nullopt;
  const std::int64_t ck = d.C * d.kh * d.kw, k = d.N * d.OH * d.OW;
  if (k > std::numeric_limits<cl_int>::max()) return std::nullopt;  // the kernels index K in int
  const GemmParams p = gemm_params(GemmType(d.dtype, d.allow_tf32), d.O * ck * k);
  if (p.family == GemmParams::Family::mma) return p;
  if (p.family != GemmParams::Family::vtiled) return std::nullopt;
  return p.fitted(d.O, ck);
}

bool ClBackend::conv2d_backward_weights_implicit(const Conv2dDesc& d, const Buffer& gy, const Buffer& x, Buffer& gw,
                                                 Buffer* gb) {
  const std::optional<GemmParams> params = weight_grad_params(d);
  if (!params) return false;
  const GemmParams& p = *params;
  const bool mma = p.family == GemmParams::Family::mma;
  const GemmType type(d.dtype, d.allow_tf32);
  const std::int64_t ck = d.C * d.kh * d.kw, k = d.N * d.OH * d.OW;
  MatmulDesc g;  // gw (O, CK) = gy (O, N*OHW) @ cols (N*OHW, CK), cols read as its transpose
  g.M = d.O, g.N = ck, g.K = k, g.trans_b = true, g.dtype = d.dtype;
  g.allow_tf32 = mma && type.tf32;
  {
    std::lock_guard<std::mutex> lock(mu_);
    try {
      if (mma)
        matmul_mma(p, g, mem(gy), mem(x), mem(gw), mem(gw), matrix_units(type), &d, true);
      else
        matmul_tiled(p, g, mem(gy), mem(x), mem(gw), mem(gw), &d, true);
    } catch (const OutOfMemory&) {
      throw;
    } catch (const Error& e) {  // before any kernel ran (build, launch): the per-image GEMMs
      std::string why = e.what();
      warn("implicit-GEMM weight gradient on " + info_.id + " failed (" + why.substr(0, why.find('\n')) +
           "); using im2col and per-image GEMMs");
      return false;
    }
  }
  if (gb) bias_grad(d, gy, *gb, conv_options(common_options(d.dtype), d));
  return true;
}

// Whether the packed family is in force for d's weight gradient and its offsets fit the packing kernels' ints.
bool ClBackend::packed_weight_grad_applies(const Conv2dDesc& d) {
  if (d.groups != 1 || conv_is_pointwise(d) || d.N == 0) return false;
  const std::int64_t ck = d.C * d.kh * d.kw, ohw = d.OH * d.OW;
  if (d.C * d.H * d.W > std::numeric_limits<cl_int>::max() || ohw > std::numeric_limits<cl_int>::max()) return false;
  return gemm_params(GemmType(d.dtype, d.allow_tf32), d.O * ck * d.N * ohw).family == GemmParams::Family::packed;
}

// CPU-type devices (the packed GEMM): gw (O, CK) = gy (O, K) @ cols^T (K, CK) over K = images x positions, both
// operands packed from the arrays (no column buffer). Slices of K run as the GEMM's batch entries: as many as give
// the device's threads four tiles each where the output has fewer (LeNet's first layer: one 8 x 32 tile), keep a
// slice's B panel in cache and a launch's panels within 64 MiB; their products are summed. Per-image products and
// their sum took up to half a layer's weight gradient on PoCL (AlexNet-32's second layer at batch 64: 10.5 of 23 ms).
// False where the packed family is not in force, the slices' products would pass the work limit, or (by_rule: the
// algorithm "auto") the per-image form is expected to move less.
bool ClBackend::conv2d_backward_weights_packed(const Conv2dDesc& d, const Buffer& gy, const Buffer& x, Buffer& gw,
                                               Buffer* gb, bool by_rule) {
  if (!packed_weight_grad_applies(d)) return false;
  const std::int64_t ck = d.C * d.kh * d.kw, ohw = d.OH * d.OW, kt = d.N * ohw;
  const GemmParams p = gemm_params(GemmType(d.dtype, d.allow_tf32), d.O * ck * kt);
  const std::int64_t rm = p.rm, rn = static_cast<std::int64_t>(p.vw) * p.nv;
  const std::int64_t panels_m = (d.O + rm - 1) / rm, panels_n = (ck + rn - 1) / rn;
  // What this form moves beyond the per-image products of the columns (im2col, then pack_b of their transpose, the
  // GEMM reading gy in place): gy packed (panels_m * rm values a row of K) against the column buffer written and read
  // (ck a row) and the per-image products (O x CK each). Few output channels over many taps favour this form (LeNet,
  // AlexNet-32's second layer), many over few taps the other (the Keras-style CNN's first: 32 over 9). Strided
  // layers keep the column buffer: their gathers of every other input column packed slower than im2col's rows
  // (ResNet-50's 7x7 stride-2 stem at batch 1: 0.79x as fast this way).
  if (by_rule && (d.sh != 1 || d.sw != 1 || panels_m * rm * kt > ck * kt + d.N * d.O * ck)) return false;
  const std::size_t real = d.dtype == DType::f64 ? 8 : 4;  // panels hold the compute type
  const std::size_t row_bytes = static_cast<std::size_t>(panels_m * rm + panels_n * rn) * real;  // a row of K
  constexpr std::size_t kLaunchBytes = std::size_t{64} << 20;
  const std::int64_t want = 4 * std::max(1, info_.compute_units), tiles = panels_m * panels_n;
  std::int64_t slices = tiles >= want ? 1 : std::min((want + tiles - 1) / tiles, std::max<std::int64_t>(1, kt / 256));
  const std::int64_t bytes = kt * static_cast<std::int64_t>(row_bytes);
  slices = std::max<std::int64_t>(slices, (bytes + static_cast<std::int64_t>(kLaunchBytes) - 1) /
                                              static_cast<std::int64_t>(kLaunchBytes));
  // A slice's B panel (KC x RN) within 512 KiB, so that it stays in a core's cache while the tiles of the output
  // channels read it in turn (the Keras-style CNN's second layer at batch 32, K = 73,728 in two slices: the GEMM
  // took 21 ms against 15 ms for per-image products)
  const std::int64_t deepest =
      std::max<std::int64_t>(256, (std::int64_t{512} << 10) / (rn * static_cast<std::int64_t>(real)));
  slices = std::max<std::int64_t>(slices, (kt + deepest - 1) / deepest);
  std::int64_t kc = (kt + slices - 1) / slices;
  if (kt + kc > std::numeric_limits<cl_int>::max()) return false;  // the kernels index K in int
  slices = (kt + kc - 1) / kc;
  const std::size_t elt = dtype_size(d.dtype), out_bytes = static_cast<std::size_t>(d.O * ck) * elt;
  if (slices > 1 && static_cast<std::size_t>(slices) * out_bytes > conv2d_work_limit()) return false;
  const std::int64_t per_launch =
      std::clamp<std::int64_t>(static_cast<std::int64_t>(kLaunchBytes / (static_cast<std::size_t>(kc) * row_bytes)),
                               1, slices);
  std::shared_ptr<Buffer> part = slices > 1 ? alloc(static_cast<std::size_t>(slices) * out_bytes) : nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string base = common_options(d.dtype) + " " + p.defines();
    cl_kernel ka = kernel("pack.cl", "pack_a_images", base);
    cl_kernel kb = kernel("pack.cl", "pack_b_conv_t", base + conv_pack_options(d));
    cl_kernel kg = kernel("gemm_packed.cl", "gemm_packed", base + " -DDIRECT_A=0 -DDIRECT_B=0");
    const std::size_t pa = static_cast<std::size_t>(panels_m * kc * rm);
    const std::size_t pb = static_cast<std::size_t>(panels_n * kc * rn);
    cl_mem ap = scratch(0, pa * real * static_cast<std::size_t>(per_launch));
    cl_mem bp = scratch(1, pb * real * static_cast<std::size_t>(per_launch));
    cl_mem taps = conv_taps(d, panels_n * rn);
    cl_mem c = mem(part ? *part : gw);
    const cl_int M = static_cast<cl_int>(d.O), N = static_cast<cl_int>(ck), KC = static_cast<cl_int>(kc);
    const cl_int Q = static_cast<cl_int>(ohw);
    for (std::int64_t s0 = 0; s0 < slices; s0 += per_launch) {
      const std::size_t nz = static_cast<std::size_t>(std::min(per_launch, slices - s0));
      const cl_int first = static_cast<cl_int>(s0);
      ArgSetter a{ka, "pack_a_images"};
      a(M)(Q)(static_cast<cl_int>(kt))(KC)(first)(mem(gy))(ap)(static_cast<cl_long>(pa));
      const std::size_t ga[3] = {static_cast<std::size_t>(kc), static_cast<std::size_t>(panels_m), nz};
      enqueue("matmul:pack_a_images", ka, 3, ga, nullptr);
      ArgSetter b{kb, "pack_b_conv_t"};
      b(Q)(static_cast<cl_int>(kt))(KC)(first)(mem(x))(static_cast<cl_long>(d.C * d.H * d.W));
      b(bp)(static_cast<cl_long>(pb));
      b(static_cast<cl_int>(d.H))(static_cast<cl_int>(d.W))(static_cast<cl_int>(d.OW));
      b(cl_int{d.sh})(cl_int{d.sw})(cl_int{d.ph})(cl_int{d.pw})(taps);
      const std::size_t gb3[3] = {static_cast<std::size_t>(kc), static_cast<std::size_t>(panels_n), nz};
      enqueue("matmul:pack_b_conv_t", kb, 3, gb3, nullptr);
      ArgSetter g{kg, "gemm_packed"};
      g(M)(N)(KC).real(1.0, d.dtype).real(0.0, d.dtype);
      g(ap)(cl_long{0})(static_cast<cl_long>(kc * rm))(cl_long{1})(static_cast<cl_long>(rm));
      g(bp)(cl_long{0})(static_cast<cl_long>(kc * rn))(static_cast<cl_long>(rn));
      g(c)(static_cast<cl_long>(s0 * d.O * ck));
      g(c)(cl_int{0})(cl_int{0})(static_cast<cl_long>(pa))(static_cast<cl_long>(pb))(static_cast<cl_long>(d.O * ck));
      const std::size_t lx = static_cast<std::size_t>(p.lx), ly = static_cast<std::size_t>(p.ly);
      const std::size_t gg[3] = {round_up(static_cast<std::size_t>(panels_m), lx),
                                 round_up(static_cast<std::size_t>(panels_n), lx ? ly : 1), nz};
      const std::size_t l[3] = {lx, ly, 1};
      enqueue("matmul", kg, 3, gg, lx ? l : nullptr);
    }
  }
  if (part) sum_rows(d.dtype, slices, d.O * ck, *part, gw, 0.0);
  if (gb) bias_grad(d, gy, *gb, conv_options(common_options(d.dtype), d));
  return true;
}

void ClBackend::conv2d_backward_weights(const Conv2dDesc& d, const Buffer& gy, const Buffer& x, Buffer& gw,
                                        Buffer* gb) {
  std::string algorithm = conv_algorithm();
  if (algorithm == "benchmark")  // the implicit GEMM against im2col and per-image GEMMs, where both apply
    algorithm = (!weight_grad_params(d) && !packed_weight_grad_applies(d)) || d.N == 0
                    ? ""
                    : measured_choice("weight gradient: " + conv_shape_key(d),
                                      [] { return std::vector<std::string>{"implicit", "im2col"}; },
                                      [&](const std::string& a) { conv2d_backward_weights_as(d, gy, x, gw, gb, a); });
  conv2d_backward_weights_as(d, gy, x, gw, gb, algorithm);
}

void ClBackend::conv2d_backward_weights_as(const Conv2dDesc& d, const Buffer& gy, const Buffer& x, Buffer& gw,
                                           Buffer* gb, const std::string& algorithm) {
  if (algorithm != "im2col" && conv2d_backward_weights_implicit(d, gy, x, gw, gb)) return;
  if (algorithm != "im2col" && conv2d_backward_weights_packed(d, gy, x, gw, gb, algorithm.empty())) return;
  const std::string opts = conv_options(common_options(d.dtype), d);
  const std::int64_t ck = d.C * d.kh * d.kw, ohw = d.OH * d.OW;
  const std::size_t elt = dtype_size(d.dtype);
  const std::int64_t per_chunk = conv2d_images_per_chunk(
      d, (static_cast<std::size_t>(conv_is_pointwise(d) ? 0 : ck * ohw) + static_cast<std::size_t>(d.O * ck)) * elt);
  if (per_chunk >= 1 && per_chunk < d.N) {  // the chunks' gradients summed into gw (gb)
    const std::size_t x_img = static_cast<std::size_t>(d.C * d.H * d.W) * elt;
    const std::size_t y_img = static_cast<std::size_t>(d.O * ohw) * elt;
    std::shared_ptr<Buffer> gwc, gbc;
    for_image_chunks(d, per_chunk, [&](const Conv2dDesc& c, std::int64_t n0) {
      if (n0 == 0) return conv2d_backward_weights_as(c, gy, x, gw, gb, algorithm);  // the first: the arrays
      const std::shared_ptr<Buffer> gyc = image_chunk(*this, gy, n0, c.N, y_img);
      const std::shared_ptr<Buffer> xc = image_chunk(*this, x, n0, c.N, x_img);
      if (!gwc) {
        gwc = alloc(static_cast<std::size_t>(d.O * ck) * elt);
        if (gb) gbc = alloc(static_cast<std::size_t>(d.O) * elt);
      }
      conv2d_backward_weights_as(c, *gyc, *xc, *gwc, gbc.get(), algorithm);
      sum_rows(d.dtype, 1, d.O * ck, *gwc, gw, 1.0);
      if (gb) sum_rows(d.dtype, 1, d.O, *gbc, *gb, 1.0);
    });
    return;
  }
  if (d.groups == 1 && per_chunk >= d.N) {
    std::shared_ptr<Buffer> cols;
    if (!conv_is_pointwise(d)) cols = im2col(d, x, opts);
    MatmulDesc g;  // per image (O, CK) = gy[n] (O, OHW) @ cols[n]^T, then summed over n
    g.batch = d.N, g.batch_a = d.N, g.batch_b = d.N, g.M = d.O, g.N = ck, g.K = ohw, g.trans_b = true;
    g.dtype = d.dtype;
    g.allow_tf32 = d.allow_tf32;
    const Buffer& c = conv_is_pointwise(d) ? x : *cols;
    if (d.N == 1) {
      matmul(g, gy, c, gw, nullptr);
    } else {
      std::shared_ptr<Buffer> part = alloc(static_cast<std::size_t>(d.N * d.O * ck) * dtype_size(d.dtype));
      matmul(g, gy, c, *part, nullptr);
      sum_rows(d.dtype, d.N, d.O * ck, *part, gw, 0.0);
    }
    if (gb) bias_grad(d, gy, *gb, opts);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  cl_kernel k = kernel("conv2d.cl", "conv2d_bwd_weights", opts);
  ArgSetter a{k, "conv2d_bwd_weights"};
  a(static_cast<cl_int>(d.N))(static_cast<cl_int>(d.C))(static_cast<cl_int>(d.H))(static_cast<cl_int>(d.W));
  a(static_cast<cl_int>(d.O))(static_cast<cl_int>(d.OH))(static_cast<cl_int>(d.OW));
  a(static_cast<cl_int>(d.C / d.groups))(static_cast<cl_int>(d.O / d.groups));
  a(cl_int{d.sh})(cl_int{d.sw})(cl_int{d.ph})(cl_int{d.pw})(cl_int{d.dh})(cl_int{d.dw})(cl_int{gb != nullptr});
  a(mem(gy))(mem(x))(mem(gw))(gb ? mem(*gb) : mem(gw));
  const std::size_t global[3] = {static_cast<std::size_t>(d.kh * d.kw), static_cast<std::size_t>(d.C / d.groups),
                                 static_cast<std::size_t>(d.O)};
  enqueue("conv2d_backward_weights", k, 3, global, nullptr);
}

}  // namespace hetnn::opencl
