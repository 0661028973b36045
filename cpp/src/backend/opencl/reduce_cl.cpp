// Reductions and the running sum on OpenCL devices (core/reduction.h): kernels/reduce.cl, one program per (input
// type, output type), the op a run-time argument (its numbers generated from HETNN_RED_OPS). Which kernel runs:
// reduce_groups where the reduced elements are contiguous (or the outputs too few to fill the device one item
// each), split into parts with a second pass (reduce_parts) when the outputs are too few to fill the device with
// groups; reduce_items (an item per output) otherwise.
#include <algorithm>
#include <string>

#include "backend/opencl/cl_args.h"
#include "backend/opencl/cl_backend.h"
#include "core/errors.h"

namespace hetnn::opencl {

namespace {

constexpr std::size_t kLocal = 256;  // reduce.cl's LOCAL: at or below every device's work-group limit seen
constexpr std::size_t kItems = 64;
constexpr std::int64_t kCols = 64;  // reduce.cl's COLS

std::string options(DType in, DType out, std::size_t local) {
  static const std::string ops = [] {
    std::string o;
    int i = 0;
#define HETNN_RED_DEFINE(name) o += " -DRED_" #name "=" + std::to_string(i++);
    HETNN_RED_OPS(HETNN_RED_DEFINE)
#undef HETNN_RED_DEFINE
    return o;
  }();
  return std::string("-cl-std=CL1.2 -w -DTIN_") + type_code(in) + " -DTOUT_" + type_code(out) +
         " -DLOCAL=" + std::to_string(local) + ops;
}

cl_long8 pack(const std::vector<std::int64_t>& v) {
  cl_long8 p{};
  for (std::size_t i = 0; i < v.size(); ++i) p.s[i] = v[i];
  return p;
}

// The accumulator's size in reduce.cl (ACC).
std::size_t acc_size(DType in, DType out) {
  if (!is_floating(in)) return 8;
  return in == DType::f64 || out == DType::f64 ? 8 : 4;
}

}  // namespace

void ClBackend::reduce(const ReduceDesc& d, const Buffer& x, Buffer& out) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::size_t local = std::min<std::size_t>(kLocal, std::max<std::uint64_t>(info_.max_work_group_size, 1));
  const std::size_t lp2 = local >= kLocal ? kLocal : std::size_t{1} << (63 - __builtin_clzll(local));
  std::string opts = options(d.in, d.out, lp2);
  if (op_built_in(d.n_out * d.n_red)) opts += " -DRED_FIXED_OP=" + std::to_string(static_cast<int>(d.op));
  const bool scaled = (d.op == RedOp::sum || d.op == RedOp::sumsq) && d.scale != 1.0;
  const bool f64_scale = d.out == DType::f64;
  auto scale_arg = [&](ArgSetter& s) {
    if (f64_scale) s(d.scale);
    else s(static_cast<float>(d.scale));
  };
  // the second pass over the parts' partials
  auto finish_parts = [&](std::int64_t parts, cl_mem pv, cl_mem pi) {
    cl_kernel f = kernel("reduce.cl", "reduce_parts", opts);
    ArgSetter t{f, "reduce_parts"};
    t(static_cast<cl_int>(d.op))(cl_long{d.n_out})(cl_long{parts})(static_cast<cl_int>(scaled));
    scale_arg(t);
    t(pv)(pi)(mem(out));
    const std::size_t g2[1] = {round_up(static_cast<std::size_t>(d.n_out), kItems)}, l2[1] = {kItems};
    enqueue(red_name(d.op), f, 1, g2, l2);
  };
  const std::int64_t units = std::max(1, info_.compute_units);
  const bool contiguous = d.rs.back() == 1 && d.n_red >= 32;
  // A CPU device, a sum over the leading axis of whole rows (x[r][o] one row after another) short enough for a
  // partial row per item to stay in cache: blocks of rows streamed front to back.
  const std::int64_t row_parts = std::min<std::int64_t>(units * 4, d.n_red / 8);
  if (!gpu_kernels() && d.op == RedOp::sum && d.kshape.size() == 1 && d.ks[0] == 1 && d.rshape.size() == 1 &&
      d.rs[0] == d.n_out && d.n_out >= units * kCols && d.n_out <= 8192 && row_parts >= 2) {
    cl_mem pv = scratch(6, static_cast<std::size_t>(row_parts * d.n_out) * acc_size(d.in, d.out));
    cl_kernel k = kernel("reduce.cl", "reduce_rows", opts);
    ArgSetter s{k, "reduce_rows"};
    s(cl_long{d.n_out})(cl_long{d.n_red})(cl_long{row_parts})(cl_long{d.off})(mem(x))(pv);
    const std::size_t g[1] = {static_cast<std::size_t>(row_parts)}, l[1] = {1};
    enqueue(red_name(d.op), k, 1, g, l);
    cl_kernel f = kernel("reduce.cl", "reduce_rows_finish", opts);
    ArgSetter t{f, "reduce_rows_finish"};
    t(cl_long{d.n_out})(cl_long{row_parts})(static_cast<cl_int>(scaled));
    scale_arg(t);
    t(pv)(mem(out));
    const std::size_t g2[1] = {round_up(static_cast<std::size_t>(d.n_out), kItems)}, l2[1] = {kItems};
    enqueue(red_name(d.op), f, 1, g2, l2);
    return;
  }
  if (!gpu_kernels() && !contiguous && d.kshape.size() == 1 && d.ks[0] == 1 && d.rshape.size() == 1 &&
      d.n_out >= units * kCols) {  // a CPU device, outputs next to each other: an item per kCols of them
    cl_kernel k = kernel("reduce.cl", "reduce_columns", opts);
    ArgSetter s{k, "reduce_columns"};
    s(static_cast<cl_int>(d.op))(cl_long{d.n_out})(cl_long{d.n_red})(cl_long{d.rs[0]})(cl_long{d.off})(
        static_cast<cl_int>(scaled));
    scale_arg(s);
    s(mem(x))(mem(out));
    const std::size_t g[1] = {static_cast<std::size_t>((d.n_out + kCols - 1) / kCols)}, l[1] = {1};
    enqueue(red_name(d.op), k, 1, g, l);
    return;
  }
  if (!contiguous && d.n_out >= units * static_cast<std::int64_t>(kItems)) {
    cl_kernel k = kernel("reduce.cl", "reduce_items", opts);
    ArgSetter s{k, "reduce_items"};
    s(static_cast<cl_int>(d.op))(cl_long{d.n_out})(cl_long{d.n_red})(static_cast<cl_int>(d.kshape.size()))(
        pack(d.kshape))(pack(d.ks))(static_cast<cl_int>(d.rshape.size()))(pack(d.rshape))(pack(d.rs))(cl_long{d.off})(
        static_cast<cl_int>(scaled));
    scale_arg(s);
    s(mem(x))(mem(out));
    const std::size_t g[1] = {round_up(static_cast<std::size_t>(d.n_out), kItems)}, l[1] = {kItems};
    enqueue(red_name(d.op), k, 1, g, l);
    return;
  }
  if (!gpu_kernels() && contiguous) {  // a CPU device: an item per (output, part), each part a contiguous stream
    std::int64_t parts = d.n_out >= units * 4 ? 1 : (units * 4 + d.n_out - 1) / d.n_out;
    parts = std::max<std::int64_t>(1, std::min<std::int64_t>(parts, d.n_red / 4096));
    const std::size_t items = static_cast<std::size_t>(d.n_out * parts);
    cl_mem pv = mem(x), pi = mem(x);
    if (parts > 1) {
      pv = scratch(6, items * acc_size(d.in, d.out));
      pi = scratch(7, items * sizeof(cl_long));
    }
    cl_kernel k = kernel("reduce.cl", "reduce_chunks", opts);
    ArgSetter s{k, "reduce_chunks"};
    s(static_cast<cl_int>(d.op))(cl_long{d.n_out})(cl_long{d.n_red})(cl_long{parts})(
        static_cast<cl_int>(d.kshape.size()))(pack(d.kshape))(pack(d.ks))(static_cast<cl_int>(d.rshape.size()))(
        pack(d.rshape))(pack(d.rs))(cl_long{d.off})(static_cast<cl_int>(scaled));
    scale_arg(s);
    s(mem(x))(mem(out))(pv)(pi);
    const std::size_t g[1] = {round_up(items, std::size_t{1})}, l[1] = {1};
    enqueue(red_name(d.op), k, 1, g, l);
    if (parts > 1) finish_parts(parts, pv, pi);
    return;
  }
  // groups: enough of them to give every compute unit a few, each part at least 4 elements per item
  const std::int64_t want = units * 4;
  std::int64_t parts = d.n_out >= want ? 1 : (want + d.n_out - 1) / d.n_out;
  parts = std::max<std::int64_t>(1, std::min<std::int64_t>({parts, 1024, d.n_red / static_cast<std::int64_t>(lp2 * 4)}));
  const std::size_t groups = static_cast<std::size_t>(d.n_out * parts);
  cl_mem pv = mem(x), pi = mem(x);  // unused with one part
  if (parts > 1) {
    pv = scratch(6, groups * acc_size(d.in, d.out));
    pi = scratch(7, groups * sizeof(cl_long));
  }
  cl_kernel k = kernel("reduce.cl", "reduce_groups", opts);
  ArgSetter s{k, "reduce_groups"};
  s(static_cast<cl_int>(d.op))(cl_long{d.n_red})(cl_long{parts})(static_cast<cl_int>(d.kshape.size()))(
      pack(d.kshape))(pack(d.ks))(static_cast<cl_int>(d.rshape.size()))(pack(d.rshape))(pack(d.rs))(cl_long{d.off})(
      static_cast<cl_int>(scaled));
  scale_arg(s);
  s(mem(x))(mem(out))(pv)(pi);
  const std::size_t g[1] = {groups * lp2}, l[1] = {lp2};
  enqueue(red_name(d.op), k, 1, g, l);
  if (parts > 1) finish_parts(parts, pv, pi);
}

void ClBackend::cumulative_sum(const ScanDesc& d, const Buffer& x, Buffer& out) {
  std::lock_guard<std::mutex> lock(mu_);
  cl_kernel k = kernel("reduce.cl", "scan_lines", options(d.in, d.out, kLocal));
  ArgSetter s{k, "scan_lines"};
  s(cl_long{d.outer})(cl_long{d.len})(cl_long{d.inner})(static_cast<cl_int>(d.include_initial));
  s(static_cast<cl_int>(d.prod))(mem(x))(mem(out));
  const std::size_t g[1] = {round_up(static_cast<std::size_t>(d.outer * d.inner), kItems)}, l[1] = {kItems};
  enqueue(d.prod ? "cumulative_prod" : "cumulative_sum", k, 1, g, l);
}

}  // namespace hetnn::opencl
