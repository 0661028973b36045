// Max pooling on OpenCL devices: kernels/max_pool.cl, one program per window shape (compiled in, cached).
#include <algorithm>
#include <vector>

#include "backend/opencl/cl_args.h"
#include "backend/opencl/cl_backend.h"
#include "core/errors.h"
#include "core/pool2d.h"

namespace hetnn::opencl {

namespace {

// The window arguments every max_pool.cl kernel starts with.
void set_pool_args(ArgSetter& a, const Pool2dDesc& d) {
  a(static_cast<cl_int>(d.H))(static_cast<cl_int>(d.W))(static_cast<cl_int>(d.OH))(static_cast<cl_int>(d.OW));
  a(cl_int{d.sh})(cl_int{d.sw})(cl_int{d.ph})(cl_int{d.pw})(cl_int{d.dh})(cl_int{d.dw});
}

// Work-group shape: CPU devices (PoCL) vectorise across x, 16 lanes = one AVX-512 float vector; GPUs want a warp
// (or wavefront half) of consecutive outputs in x.
struct PoolLocal {
  std::size_t x, y;
};
PoolLocal pool_local(bool gpu) { return gpu ? PoolLocal{32, 4} : PoolLocal{16, 1}; }

constexpr std::size_t kOne[2] = {1, 1};  // work-groups of one (row kernels)

}  // namespace

std::string ClBackend::pool_options(const Pool2dDesc& d) const {
  std::string o;
  switch (d.dtype) {  // integer images (max pooling): the element type and its lowest value
    case DType::i8: o = "-cl-std=CL1.2 -DINT_T=char -DINT_LOWEST=(-128)"; break;
    case DType::u8: o = "-cl-std=CL1.2 -DINT_T=uchar -DINT_LOWEST=0"; break;
    case DType::i32: o = "-cl-std=CL1.2 -DINT_T=int -DINT_LOWEST=(-2147483647-1)"; break;
    case DType::i64: o = "-cl-std=CL1.2 -DINT_T=long -DINT_LOWEST=(-9223372036854775807L-1)"; break;
    default: o = common_options(d.dtype);
  }
  auto def = [&o](const char* k, int v) { o += std::string(" -D") + k + "=" + std::to_string(v); };
  def("KH", d.kh), def("KW", d.kw);
  if (d.zero_pad) o += " -DZERO_PAD=1";
  return o;
}

// CPU devices take the row kernels (a work-item per row, vectorised inner loop); GPUs a work-item per element.
bool ClBackend::gpu_kernels() const {
  return kernel_variant_.empty() ? info_.type == "gpu" : kernel_variant_ == "gpu";
}

void ClBackend::set_kernel_variant(const std::string& v) {
  if (v != "" && v != "cpu" && v != "gpu")
    throw ValueError("kernel variant must be 'cpu', 'gpu' or '' (the device's own), got '" + v + "'");
  std::lock_guard<std::mutex> lock(mu_);
  kernel_variant_ = v;
}

void ClBackend::max_pool2d(const Pool2dDesc& d, const Buffer& x, Buffer& y, Buffer* indices) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool rows = !gpu_kernels();
  const std::size_t OH = static_cast<std::size_t>(d.OH), OW = static_cast<std::size_t>(d.OW);
  const std::size_t planes = static_cast<std::size_t>(d.N * d.C);
  // Values only, windows of 3+ rows: the column-wise maximum first (max_pool2d_fwd_rows_sep), with a row and an
  // output row of local memory per work-item (PoCL, 32x64x112x112 k3s2: 11-13 -> 6.6-7.5 ms; two rows: no faster).
  const std::size_t acc = d.dtype == DType::f64 || d.dtype == DType::i64 ? 8 : 4;  // the compare type
  const std::size_t local_bytes = (static_cast<std::size_t>(d.W) + OW) * acc;
  cl_mem ix = indices ? mem(*indices) : mem(y);  // not written without indices, but must be a valid buffer
  const cl_int with_indices = indices != nullptr;
  if (rows && !indices && d.kh >= 3 && local_bytes <= info_.local_mem / 2) {
    cl_kernel k = kernel("max_pool.cl", "max_pool2d_fwd_rows_sep", pool_options(d));
    ArgSetter a{k, "max_pool2d_fwd_rows_sep"};
    set_pool_args(a, d);
    a(mem(x))(mem(y)).raw(static_cast<std::size_t>(d.W) * acc, nullptr).raw(OW * acc, nullptr);
    const std::size_t global[2] = {OH, planes};
    enqueue("max_pool2d", k, 2, global, kOne);
  } else {
    cl_kernel k = kernel("max_pool.cl", rows ? "max_pool2d_fwd_rows" : "max_pool2d_fwd", pool_options(d));
    ArgSetter a{k, "max_pool2d_fwd"};
    set_pool_args(a, d);
    a(with_indices)(mem(x))(mem(y))(ix);
    if (rows) {
      const std::size_t global[2] = {OH, planes};
      enqueue("max_pool2d", k, 2, global, kOne);
    } else {
      const PoolLocal l = pool_local(gpu_kernels());
      const std::size_t local[3] = {l.x, l.y, 1};
      const std::size_t global[3] = {round_up(OW, l.x), round_up(OH, l.y), planes};
      enqueue("max_pool2d", k, 3, global, local);
    }
  }
  if (!d.zero_pad) return;
  // Zero padding: the windows that reach it recomputed, the whole top and bottom rows, then the left and right
  // columns of the rows between (queued behind the forward).
  const PoolPadBands b = pool_pad_bands(d);
  cl_kernel kz = kernel("max_pool.cl", "max_pool2d_zero_pad", pool_options(d));
  const std::size_t band_rows = static_cast<std::size_t>(b.top + d.OH - b.bottom);
  const std::size_t band_cols = static_cast<std::size_t>(b.left + d.OW - b.right);
  const std::size_t mid_rows = static_cast<std::size_t>(b.bottom - b.top);
  for (cl_int rows_band = 1; rows_band >= 0; --rows_band) {
    const std::size_t gx = rows_band ? OW : band_cols, gyn = rows_band ? band_rows : mid_rows;
    if (gx == 0 || gyn == 0) continue;
    ArgSetter a{kz, "max_pool2d_zero_pad"};
    set_pool_args(a, d);
    a(static_cast<cl_int>(b.top))(static_cast<cl_int>(b.bottom))(static_cast<cl_int>(b.left));
    a(static_cast<cl_int>(b.right))(rows_band)(with_indices)(mem(x))(mem(y))(ix);
    const std::size_t global[3] = {gx, gyn, planes};
    enqueue("max_pool2d:zero_pad", kz, 3, global, nullptr);
  }
}

void ClBackend::max_pool2d_backward(const Pool2dDesc& d, const Buffer& gy, const Buffer& indices, Buffer& gx) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string opts = pool_options(d);
  const std::size_t H = static_cast<std::size_t>(d.H), W = static_cast<std::size_t>(d.W);
  const std::size_t OH = static_cast<std::size_t>(d.OH), OW = static_cast<std::size_t>(d.OW);
  const PoolLocal l = pool_local(gpu_kernels());
  const std::size_t local[3] = {l.x, l.y, 1};
  const std::size_t planes = static_cast<std::size_t>(d.N * d.C);

  // 1. Every index must point inside its own window (else its gradient would be dropped silently): a check kernel
  // before the gather, or the scatter's own check.
  cl_mem flag = scratch(2, sizeof(cl_int));
  const cl_int zero = 0;
  fill_mem(flag, &zero, sizeof(zero), 0, sizeof(zero));
  const bool scatter = !gpu_kernels();  // CPU devices: the scatter checks as it goes
  if (!scatter) {
    cl_kernel kc = kernel("max_pool.cl", "max_pool2d_check", opts);
    ArgSetter ac{kc, "max_pool2d_check"};
    set_pool_args(ac, d);
    ac(mem(indices))(flag);
    const std::size_t gout[3] = {round_up(OW, l.x), round_up(OH, l.y), planes};
    enqueue("max_pool2d_backward:check", kc, 3, gout, local);
  }

  // 2. The scatter (CPU devices) or the gather, queued behind the check (in-order queue) before the flag is read
  // back. 16-bit data is scattered into a float buffer and rounded once (max_pool2d_narrow): summing in 16 bits
  // would round at every add (and the per-element gather ran PoCL's float16 backward at 190-270 ms, 10-30x its
  // forward).
  const bool half = d.dtype == DType::f16 || d.dtype == DType::bf16;
  if (scatter) {
    cl_kernel ks = kernel("max_pool.cl", "max_pool2d_bwd_scatter", opts);
    const std::int64_t in_size = d.N * d.C * d.H * d.W;
    cl_mem acc = half ? scratch(3, static_cast<std::size_t>(in_size) * sizeof(float)) : mem(gx);
    const PoolScatterBlocks pb = pool_scatter_blocks(d);  // the same blocks as the CPU device's scatter
    const cl_int R = static_cast<cl_int>(pb.rows);
    const std::int64_t blocks = pb.count;
    const bool disjoint = pb.disjoint;
    for (int phase = 0; phase < (disjoint ? 1 : 2); ++phase) {
      const std::int64_t count = disjoint ? blocks : (blocks - phase + 1) / 2;
      if (count == 0) continue;
      const cl_int step = disjoint ? 1 : 2, first = disjoint ? 0 : phase;
      ArgSetter as{ks, "max_pool2d_bwd_scatter"};
      set_pool_args(as, d);
      const cl_int nblocks = static_cast<cl_int>(blocks), zero_mode = disjoint ? 1 : (phase == 0 ? 2 : 0);
      as(R)(step)(first)(nblocks)(zero_mode)(mem(gy))(mem(indices))(acc)(flag);
      const std::size_t g[2] = {static_cast<std::size_t>(count), planes};
      enqueue("max_pool2d_backward", ks, 2, g, kOne);
    }
    if (half) {
      cl_kernel kn = kernel("max_pool.cl", "max_pool2d_narrow", opts);
      const cl_int CH = 16384;
      ArgSetter an{kn, "max_pool2d_narrow"};
      an(static_cast<cl_long>(in_size))(CH)(acc)(mem(gx));
      const std::size_t g[1] = {static_cast<std::size_t>((in_size + CH - 1) / CH)}, one[1] = {1};
      enqueue("max_pool2d_backward:round", kn, 1, g, one);
    }
  } else {
    cl_kernel kb = kernel("max_pool.cl", "max_pool2d_bwd", opts);
    ArgSetter ab{kb, "max_pool2d_bwd"};
    set_pool_args(ab, d);
    ab(mem(gy))(mem(indices))(mem(gx));
    const std::size_t gin[3] = {round_up(W, l.x), round_up(H, l.y), planes};
    enqueue("max_pool2d_backward", kb, 3, gin, local);
  }

  cl_int bad = 0;
  read_mem(flag, 0, sizeof(bad), &bad);
  if (bad) {  // slow path: find and name the first bad index on the host
    std::vector<std::int64_t> host(static_cast<std::size_t>(d.N * d.C * d.OH * d.OW));
    read_mem(mem(indices), 0, host.size() * 8, host.data());
    const std::int64_t o = pool_find_bad_index(d, host.data());
    if (o >= 0) throw ValueError(pool_bad_index_message(d, o / (d.OH * d.OW), (o / d.OW) % d.OH, o % d.OW, host[o]));
    throw ValueError("max_pool2d_backward: indices do not point inside their pooling windows");
  }
}

}  // namespace hetnn::opencl
