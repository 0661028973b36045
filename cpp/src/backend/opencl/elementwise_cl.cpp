// Element-wise ops on OpenCL devices (core/elementwise.h): kernels/elementwise.cl, one program per (input type,
// output type) with the op a run-time argument; the op numbers are passed as build options generated from
// HETNN_EW_OPS.
#include <algorithm>
#include <string>
#include <utility>

#include "backend/opencl/cl_args.h"
#include "backend/opencl/cl_backend.h"
#include "core/errors.h"

namespace hetnn::opencl {

namespace {

const std::string& op_numbers() {
  static const std::string s = [] {
    std::string o;
    int i = 0;
#define HETNN_EW_DEFINE(name, arity, kind) o += " -DEW_" #name "=" + std::to_string(i++);
    HETNN_EW_OPS(HETNN_EW_DEFINE)
#undef HETNN_EW_DEFINE
    return o;
  }();
  return s;
}

// The scalar operand in the kernel's compute type
void set_scalar(ArgSetter& s, const ElementwiseDesc& d) {
  switch (d.in) {
    case DType::f64: s(d.fscalar); break;
    case DType::f32:
    case DType::f16:
    case DType::bf16: s(static_cast<float>(d.fscalar)); break;
    case DType::i32: s(static_cast<cl_int>(d.iscalar)); break;
    case DType::i64: s(static_cast<cl_long>(d.iscalar)); break;
    case DType::u8:
    case DType::b8: s(static_cast<cl_uchar>(d.iscalar)); break;
    case DType::i8: s(static_cast<cl_char>(d.iscalar)); break;
  }
}

// rows x cols of a one- or two-dimensional call (after merging)
std::pair<std::int64_t, std::int64_t> rows_cols(const ElementwiseDesc& d) {
  return d.shape.size() == 2 ? std::make_pair(d.shape[0], d.shape[1]) : std::make_pair(std::int64_t{1}, d.shape[0]);
}

}  // namespace

bool ClBackend::op_built_in_hot(std::int64_t elements, const std::string& opts, EwOp op, cl_int mode, bool two_d) {
  if (op_built_in(elements)) return true;
  if (gpu_kernels() || elements < (std::int64_t{1} << 14)) return false;  // no key made for small calls
  if (hot_ops_.size() > 4096) hot_ops_.clear();  // bounded: a program's worth of distinct calls
  const std::string key = opts + ' ' + std::to_string(static_cast<int>(op)) + ' ' + std::to_string(mode) +
                          (two_d ? " 2d" : "");
  return ++hot_ops_[key] > 3;
}

// CPU-type devices: a strided call of one dimension, or of two with rows of 16 or more (after merging), over a
// two-dimensional range (ew2, ew_where2: no divisions for the offsets; with ew's, PoCL ran a transposed add of 64 MiB
// at 0.02x the memory ceiling)
bool ClBackend::two_dimensional(const ElementwiseDesc& d) const {
  return !gpu_kernels() && !d.contiguous && d.shape.size() <= 2 && (d.shape.size() == 1 || d.shape[1] >= 16);
}

void ClBackend::elementwise(const ElementwiseDesc& d, const Buffer& a, const Buffer* b, Buffer& out) {
  std::lock_guard<std::mutex> lock(mu_);
  // -w: the source builds clean under clang -Wall; some OpenCL compilers (PoCL) print notes for the casts
  const cl_int mode = ew_arity(d.op) == 1 ? 3 : d.scalar;
  std::string opts = std::string("-cl-std=CL1.2 -w -DTIN_") + type_code(d.in) + " -DTOUT_" + type_code(d.out) +
                     op_numbers();
  const bool two_d = two_dimensional(d);
  if ((d.contiguous || two_d) && op_built_in_hot(d.n, opts, d.op, mode, two_d))  // the op and arrangement fixed
    opts += " -DEW_FIXED_OP=" + std::to_string(static_cast<int>(d.op)) + " -DEW_FIXED_MODE=" + std::to_string(mode);
  if (!gpu_kernels()) {  // CPU-type devices: float exp (and with double, its family) as the CPU device computes them
    opts += " -DEW_OWN_EXP";
    if (info_.fp64) opts += " -DEW_OWN_MATH";
  }
  if (two_d) {
    elementwise_2d(d, opts, mode, a, b, out);
    return;
  }
  if (!gpu_kernels() && d.op == EwOp::exp && d.in == DType::f32 && d.out == DType::f32 && d.contiguous &&
      op_built_in(d.n)) {  // CPU-type devices: float32 exp sixteen to an item (ew_exp16; 1.8x at 4 Mi on PoCL)
    cl_kernel k = kernel("elementwise.cl", "ew_exp16", opts);
    ArgSetter s{k, "ew_exp16"};
    s(cl_long{d.n})(cl_long{d.oa})(mem(a))(mem(out));
    const std::size_t items = static_cast<std::size_t>(d.n / 16 + 1), l[1] = {64}, g[1] = {round_up(items, l[0])};
    enqueue(ew_name(d.op), k, 1, g, l);
    return;
  }
  cl_kernel k = kernel("elementwise.cl", "ew", opts);
  cl_long8 shape{}, sa{}, sb{};
  for (std::size_t i = 0; i < d.shape.size(); ++i) {
    shape.s[i] = d.shape[i];
    sa.s[i] = d.sa[i];
    sb.s[i] = d.sb[i];
  }
  ArgSetter s{k, "ew"};
  s(cl_long{d.n})(static_cast<cl_int>(d.op))(mode)(static_cast<cl_int>(d.contiguous))(
      static_cast<cl_int>(d.shape.size()))(shape)(sa)(sb)(cl_long{d.oa})(cl_long{d.ob});
  set_scalar(s, d);
  s(mem(a))(b ? mem(*b) : mem(a))(mem(out));
  const std::size_t l[1] = {flat_local(d.n)}, g[1] = {round_up(static_cast<std::size_t>(d.n), l[0])};
  enqueue(ew_name(d.op), k, 1, g, l);
}

void ClBackend::elementwise_2d(const ElementwiseDesc& d, const std::string& opts, cl_int mode, const Buffer& a,
                               const Buffer* b, Buffer& out) {
  cl_kernel k = kernel("elementwise.cl", "ew2", opts);
  const bool two = d.shape.size() == 2;
  const auto [rows, cols] = rows_cols(d);
  const Range2d r = range_2d(rows, cols, flat_local(d.n), max_group());
  ArgSetter s{k, "ew2"};
  s(cl_long{rows})(cl_long{cols})(static_cast<cl_int>(d.op))(mode)(cl_long{two ? d.sa[0] : 0})(
      cl_long{two ? d.sa[1] : d.sa[0]})(cl_long{two ? d.sb[0] : 0})(cl_long{two ? d.sb[1] : d.sb[0]})(cl_long{d.oa})(
      cl_long{d.ob});
  set_scalar(s, d);
  s(mem(a))(b ? mem(*b) : mem(a))(mem(out));
  enqueue(ew_name(d.op), k, 2, r.global, r.local);
}

void ClBackend::where(const ElementwiseDesc& d, const Buffer& cond, const Buffer& a, const Buffer& b, Buffer& out) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string opts = std::string("-cl-std=CL1.2 -w -DTIN_") + type_code(d.in) + " -DTOUT_" + type_code(d.out) +
                           op_numbers();
  if (two_dimensional(d)) {
    cl_kernel k = kernel("elementwise.cl", "ew_where2", opts);
    const auto [rows, cols] = rows_cols(d);
    const Range2d r = range_2d(rows, cols, flat_local(d.n), max_group());
    const bool two = d.shape.size() == 2;
    ArgSetter s{k, "ew_where2"};
    s(cl_long{rows})(cl_long{cols})(cl_long{two ? d.sa[0] : 0})(cl_long{two ? d.sa[1] : d.sa[0]})(
        cl_long{two ? d.sb[0] : 0})(cl_long{two ? d.sb[1] : d.sb[0]})(cl_long{two ? d.sc[0] : 0})(
        cl_long{two ? d.sc[1] : d.sc[0]})(cl_long{d.oa})(cl_long{d.ob})(cl_long{d.oc})(mem(cond))(mem(a))(mem(b))(
        mem(out));
    enqueue("where", k, 2, r.global, r.local);
    return;
  }
  cl_kernel k = kernel("elementwise.cl", "ew_where", opts);
  cl_long8 shape{}, sa{}, sb{}, sc{};
  for (std::size_t i = 0; i < d.shape.size(); ++i) {
    shape.s[i] = d.shape[i];
    sa.s[i] = d.sa[i];
    sb.s[i] = d.sb[i];
    sc.s[i] = d.sc[i];
  }
  ArgSetter s{k, "ew_where"};
  s(cl_long{d.n})(static_cast<cl_int>(d.contiguous))(static_cast<cl_int>(d.shape.size()))(shape)(sa)(sb)(sc)(
      cl_long{d.oa})(cl_long{d.ob})(cl_long{d.oc})(mem(cond))(mem(a))(mem(b))(mem(out));
  const std::size_t l[1] = {flat_local(d.n)}, g[1] = {round_up(static_cast<std::size_t>(d.n), l[0])};
  enqueue("where", k, 1, g, l);
}

}  // namespace hetnn::opencl
