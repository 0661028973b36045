// User element-wise kernels on OpenCL devices (core/user_kernel.h, UserEwDesc): the source generated here, built
// through the program cache (memory and disk, keyed by its text), one work-item per element. A build failure is a
// CompileError whose log ends with the generated source.
#include <algorithm>
#include <sstream>
#include <string>

#include "backend/opencl/cl_args.h"
#include "backend/opencl/cl_backend.h"
#include "core/cache_dir.h"
#include "core/errors.h"

namespace hetnn::opencl {

namespace {

// The OpenCL C type a variable of dtype t has (16-bit floats compute as float).
const char* cl_type(DType t) {
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16: return "float";
    case DType::f64: return "double";
    case DType::i32: return "int";
    case DType::i64: return "long";
    case DType::u8:
    case DType::b8: return "uchar";
    case DType::i8: return "char";
  }
  return "float";
}

// The type an element of dtype t is stored as: float16 as half (read and written with vload_half / vstore_half_rte,
// core OpenCL, no cl_khr_fp16 needed), bfloat16 as its bits.
const char* cl_storage(DType t) { return t == DType::f16 ? "half" : t == DType::bf16 ? "ushort" : cl_type(t); }

std::string cl_load(DType t, const std::string& p, const std::string& o) {
  if (t == DType::f16) return "vload_half(" + o + ", " + p + ")";
  if (t == DType::bf16) return "as_float((uint)" + p + "[" + o + "] << 16)";
  return p + "[" + o + "]";
}

// bfloat16 from float: round to nearest even, NaN kept (quiet).
constexpr const char* kBf16Helper =
    "static inline ushort hetnn_f2bf(float f) {\n  const uint b = as_uint(f);\n"
    "  if ((b & 0x7fffffffu) > 0x7f800000u) return (ushort)((b >> 16) | 0x40u);\n"
    "  return (ushort)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);\n}\n";

// How a generated kernel finds its elements: strided, the offsets of a non-contiguous call computed in the kernel
// (a loop over the dimensions when contig is 0); contiguous, element i at i (CPU-type devices: PoCL does not
// vectorize the work-items' loop around that inner loop where the operation is too large for it to unswitch: a tanh
// 11.5 ms -> 2.3); two_d, items (col, row) over shape8's first two extents with the operands' first two strides
// (CPU-type devices' broadcasts: no divisions).
enum class Walk { strided, contiguous, two_d };
std::string generate(const UserEwDesc& d, Walk walk) {
  std::ostringstream s;
  bool f64 = false;
  for (DType t : d.types) f64 |= t == DType::f64;
  if (f64) s << "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  if (std::find(d.types.begin(), d.types.end(), DType::bf16) != d.types.end()) s << kBf16Helper;
  for (const auto& [name, t] : d.typedefs) s << "typedef " << cl_type(t) << ' ' << name << ";\n";
  s << d.preamble << "\n";
  s << "__kernel void " << d.name << "(const long n, const int contig, const int nd, const long8 shape8";
  for (std::size_t k = 0; k < d.names.size(); ++k) {
    const bool in = static_cast<int>(k) < d.n_in;
    if (d.scalar[k]) {
      s << ", const " << cl_type(d.types[k]) << " v_" << d.names[k];
    } else {
      s << ", const long8 st_" << d.names[k] << ", __global " << (in ? "const " : "") << cl_storage(d.types[k])
        << "* p_" << d.names[k];
    }
  }
  if (walk == Walk::two_d) {
    s << ") {\n  const long hetnn_col = get_global_id(0), hetnn_row = get_global_id(1);\n"
         "  if (hetnn_col >= shape8.s1 || hetnn_row >= shape8.s0) return;\n"
         "  const long i = hetnn_row * shape8.s1 + hetnn_col;\n";
    for (std::size_t k = 0; k < d.names.size(); ++k)
      if (!d.scalar[k])
        s << "  long o_" << d.names[k] << " = hetnn_row * st_" << d.names[k] << ".s0 + hetnn_col * st_"
          << d.names[k] << ".s1;\n";
  } else {
    s << ") {\n  const long i = get_global_id(0);\n  if (i >= n) return;\n";
    for (std::size_t k = 0; k < d.names.size(); ++k)
      if (!d.scalar[k]) s << "  long o_" << d.names[k] << " = i;\n";
  }
  if (walk == Walk::strided) {
    s << "  if (!contig) {\n    long sh[8];\n    vstore8(shape8, 0, sh);\n";
    for (std::size_t k = 0; k < d.names.size(); ++k)
      if (!d.scalar[k])
        s << "    long s_" << d.names[k] << "[8];\n    vstore8(st_" << d.names[k] << ", 0, s_" << d.names[k]
          << ");\n    o_" << d.names[k] << " = 0;\n";
    s << "    long r = i;\n    for (int k = nd - 1; k >= 0; --k) {\n      const long q = r % sh[k];\n"
         "      r /= sh[k];\n";
    for (std::size_t k = 0; k < d.names.size(); ++k)
      if (!d.scalar[k]) s << "      o_" << d.names[k] << " += q * s_" << d.names[k] << "[k];\n";
    s << "    }\n  }\n";
  }
  for (std::size_t k = 0; k < d.names.size(); ++k) {
    const bool in = static_cast<int>(k) < d.n_in;
    const bool load = in || d.reads_output[k - static_cast<std::size_t>(d.n_in)];
    s << "  " << (in ? "const " : "") << cl_type(d.types[k]) << ' ' << d.names[k] << " = "
      << (d.scalar[k] ? "v_" + d.names[k] : load ? cl_load(d.types[k], "p_" + d.names[k], "o_" + d.names[k]) : "0")
      << ";\n";
  }
  s << "  {\n" << d.operation << "\n;\n  }\n";
  for (std::size_t k = static_cast<std::size_t>(d.n_in); k < d.names.size(); ++k) {
    const std::string& v = d.names[k];
    const std::string at = "p_" + v + "[o_" + v + "]";
    if (d.types[k] == DType::f16) s << "  vstore_half_rte(" << v << ", o_" << v << ", p_" << v << ");\n";
    else if (d.types[k] == DType::bf16) s << "  " << at << " = hetnn_f2bf(" << v << ");\n";
    else s << "  " << at << " = " << (d.types[k] == DType::b8 ? "(" + v + " != 0)" : v) << ";\n";
  }
  s << "}\n";
  return s.str();
}


constexpr int kRedLocal = 64;  // work-items of a partial reduction's group (a power of two)

// <name>_part: one work-group per (output, part) item, a tree in local memory; <name>_finish: one work-item per
// output combining its parts and running post_map_expr.
std::string generate(const UserRedDesc& d) {
  std::ostringstream s;
  bool f64 = d.reduce_type == DType::f64;
  for (DType t : d.types) f64 |= t == DType::f64;
  if (f64) s << "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  if (std::find(d.types.begin(), d.types.end(), DType::bf16) != d.types.end()) s << kBf16Helper;
  for (const auto& [name, t] : d.typedefs) s << "typedef " << cl_type(t) << ' ' << name << ";\n";
  s << "typedef " << cl_type(d.reduce_type) << " hetnn_rt;\n" << d.preamble << "\n";
  s << "static inline hetnn_rt hetnn_reduce(hetnn_rt a, hetnn_rt b) { return (hetnn_rt)(" << d.reduce_expr << "); }\n";
  s << "__kernel void " << d.name << "_part(const long n_red, const long parts, const int knd, const long8 ksh8, "
       "const int rnd, const long8 rsh8";
  const int nin = d.n_in;
  for (int k = 0; k < nin; ++k) {
    if (d.scalar[k]) s << ", const " << cl_type(d.types[k]) << " v_" << d.names[k];
    else s << ", const long8 ks_" << d.names[k] << ", const long8 rs_" << d.names[k] << ", __global const "
           << cl_storage(d.types[k]) << "* p_" << d.names[k];
  }
  s << ", __global hetnn_rt* partials) {\n  __local hetnn_rt scratch[" << kRedLocal << "];\n"
       "  const long item = get_group_id(0);\n  const int lid = get_local_id(0);\n"
       "  const long o = item / parts, p = item % parts;\n"
       "  const long j0 = n_red * p / parts, j1 = n_red * (p + 1) / parts;\n"
       "  long ksh[8], rsh[8];\n  vstore8(ksh8, 0, ksh);\n  vstore8(rsh8, 0, rsh);\n";
  for (int k = 0; k < nin; ++k)
    if (!d.scalar[k])
      s << "  long ks_a_" << d.names[k] << "[8], rs_a_" << d.names[k] << "[8];\n  vstore8(ks_" << d.names[k]
        << ", 0, ks_a_" << d.names[k] << ");\n  vstore8(rs_" << d.names[k] << ", 0, rs_a_" << d.names[k]
        << ");\n  long k_" << d.names[k] << " = 0;\n";
  s << "  { long r = o; for (int q = knd - 1; q >= 0; --q) { const long c = r % ksh[q]; r /= ksh[q];\n";
  for (int k = 0; k < nin; ++k)
    if (!d.scalar[k]) s << "    k_" << d.names[k] << " += c * ks_a_" << d.names[k] << "[q];\n";
  s << "  } }\n  hetnn_rt a = (hetnn_rt)(" << d.identity << ");\n"
    << "  for (long j = j0 + lid; j < j1; j += " << kRedLocal << ") {\n";
  for (int k = 0; k < nin; ++k)
    if (!d.scalar[k]) s << "    long o_" << d.names[k] << " = k_" << d.names[k] << ";\n";
  s << "    if (rnd == 1) {\n";
  for (int k = 0; k < nin; ++k)
    if (!d.scalar[k]) s << "      o_" << d.names[k] << " += j * rs_a_" << d.names[k] << "[0];\n";
  s << "    } else { long r = j; for (int q = rnd - 1; q >= 0; --q) { const long c = r % rsh[q]; r /= rsh[q];\n";
  for (int k = 0; k < nin; ++k)
    if (!d.scalar[k]) s << "      o_" << d.names[k] << " += c * rs_a_" << d.names[k] << "[q];\n";
  s << "    } }\n";
  for (int k = 0; k < nin; ++k)
    s << "    const " << cl_type(d.types[k]) << ' ' << d.names[k] << " = "
      << (d.scalar[k] ? "v_" + d.names[k] : cl_load(d.types[k], "p_" + d.names[k], "o_" + d.names[k])) << ";\n";
  s << "    const hetnn_rt b = (hetnn_rt)(" << d.map_expr << ");\n    a = hetnn_reduce(a, b);\n  }\n"
       "  scratch[lid] = a;\n  barrier(CLK_LOCAL_MEM_FENCE);\n"
    << "  for (int h = " << kRedLocal / 2 << "; h > 0; h >>= 1) {\n"
       "    if (lid < h) scratch[lid] = hetnn_reduce(scratch[lid], scratch[lid + h]);\n"
       "    barrier(CLK_LOCAL_MEM_FENCE);\n  }\n  if (lid == 0) partials[item] = scratch[0];\n}\n";
  s << "__kernel void " << d.name << "_finish(const long n_out, const long parts, __global const hetnn_rt* partials";
  for (std::size_t k = static_cast<std::size_t>(nin); k < d.names.size(); ++k)
    s << ", __global " << cl_storage(d.types[k]) << "* p_" << d.names[k];
  s << ") {\n  const long o = get_global_id(0);\n  if (o >= n_out) return;\n"
       "  hetnn_rt a = (hetnn_rt)(" << d.identity << ");\n"
       "  for (long p = 0; p < parts; ++p) a = hetnn_reduce(a, partials[o * parts + p]);\n";
  for (std::size_t k = static_cast<std::size_t>(nin); k < d.names.size(); ++k)
    s << "  " << cl_type(d.types[k]) << ' ' << d.names[k] << " = 0;\n";
  s << "  {\n" << d.post_map_expr << "\n;\n  }\n";
  for (std::size_t k = static_cast<std::size_t>(nin); k < d.names.size(); ++k) {
    const std::string& v = d.names[k];
    if (d.types[k] == DType::f16) s << "  vstore_half_rte(" << v << ", o, p_" << v << ");\n";
    else if (d.types[k] == DType::bf16) s << "  p_" << v << "[o] = hetnn_f2bf(" << v << ");\n";
    else s << "  p_" << v << "[o] = " << (d.types[k] == DType::b8 ? "(" + v + " != 0)" : v) << ";\n";
  }
  s << "}\n";
  return s.str();
}
}  // namespace

cl_kernel ClBackend::user_kernel(const std::string& source, const std::string& name, const std::string& kname,
                                 const char* what) {
  const std::string label = "user:" + name + ":" + hex64(fnv1a(source));
  const std::string options = "-cl-std=CL1.2 -w";  // -w: PoCL prints warnings to the process's stderr
  const std::string key = label + '\n' + kname + '\n' + options;
  if (auto it = kernels_.find(key); it != kernels_.end()) return it->second.get();
  cl_program prog = nullptr;
  try {
    prog = programs_.get_text(label, source, options);
  } catch (const CompileError& e) {
    throw CompileError(name, options, e.device, e.log + "\n--- the generated source ---\n" + source, what);
  }
  cl_int st = CL_SUCCESS;
  Kernel made(clCreateKernel(prog, kname.c_str(), &st));
  if (st != CL_SUCCESS) throw_cl_error(st, "clCreateKernel(" + kname + ")");
  return kernels_.emplace(key, std::move(made)).first->second.get();
}

void ClBackend::user_elementwise(const UserEwDesc& d, const std::vector<Buffer*>& args) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string computed =  // the front sets d.key; computed here for a descriptor made without it
      d.key.empty() ? user_signature(d.name, d.operation + '\x1e' + d.preamble, d.typedefs, d.types, d.scalar,
                                     d.reads_output)
                    : std::string();
  const std::string& sig = d.key.empty() ? computed : d.key;
  // CPU-type devices: contiguous calls, and broadcasts of one or two dimensions with rows of 16 or more, get kernels
  // of their own (generate)
  const bool cpu = !gpu_kernels(), two = d.shape.size() == 2;
  const Walk walk = cpu && d.contiguous ? Walk::contiguous
                    : cpu && d.shape.size() <= 2 && (!two || d.shape[1] >= 16) ? Walk::two_d
                                                                                  : Walk::strided;
  const char* suffix = walk == Walk::contiguous ? "\x1d" "contiguous" : walk == Walk::two_d ? "\x1d" "2d" : "";
  cl_kernel& k = user_kernels_[sig + suffix];  // found: no source generated
  if (!k) k = user_kernel(generate(d, walk), d.name, d.name, "the ElementwiseKernel");
  // two_d: shape8 and every operand's strides as rows x cols (one dimension: one row)
  cl_long8 shape{};
  for (std::size_t i = 0; i < d.shape.size(); ++i) shape.s[i] = d.shape[i];
  if (walk == Walk::two_d && !two) shape.s[0] = 1, shape.s[1] = d.shape[0];
  ArgSetter s{k, d.name.c_str()};
  s(cl_long{d.n})(static_cast<cl_int>(d.contiguous))(static_cast<cl_int>(d.shape.size()))(shape);
  for (std::size_t a = 0; a < d.names.size(); ++a) {
    if (d.scalar[a]) {
      switch (d.types[a]) {
        case DType::f64: s(d.fvalue[a]); break;
        case DType::f32:
        case DType::f16:
        case DType::bf16: s(static_cast<float>(d.fvalue[a])); break;
        case DType::i32: s(static_cast<cl_int>(d.ivalue[a])); break;
        case DType::i64: s(static_cast<cl_long>(d.ivalue[a])); break;
        case DType::i8: s(static_cast<cl_char>(d.ivalue[a])); break;
        default: s(static_cast<cl_uchar>(d.ivalue[a])); break;
      }
      continue;
    }
    cl_long8 st{};
    for (std::size_t i = 0; i < d.strides[a].size(); ++i) st.s[i] = d.strides[a][i];
    if (walk == Walk::two_d && !two) st.s[0] = 0, st.s[1] = d.strides[a][0];
    s(st)(mem(*args[a]));
  }
  if (walk == Walk::two_d) {
    const Range2d r = range_2d(shape.s[0], shape.s[1], flat_local(d.n), max_group());
    enqueue("user_elementwise", k, 2, r.global, r.local);
    return;
  }
  const std::size_t l[1] = {flat_local(d.n)}, g[1] = {round_up(static_cast<std::size_t>(d.n), l[0])};
  enqueue("user_elementwise", k, 1, g, l);
}

void ClBackend::user_reduction(const UserRedDesc& d, const std::vector<Buffer*>& args) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string sig = user_signature(
      d.name, d.map_expr + '\x1e' + d.reduce_expr + '\x1e' + d.post_map_expr + '\x1e' + d.identity + '\x1e' +
                  d.preamble + '\x1e' + static_cast<char>('a' + static_cast<int>(d.reduce_type)),
      d.typedefs, d.types, d.scalar, {});
  cl_kernel& part = user_kernels_[sig + "\x1d" "part"];
  cl_kernel& finish = user_kernels_[sig + "\x1d" "finish"];
  if (!part || !finish) {
    const std::string source = generate(d);
    part = user_kernel(source, d.name, d.name + "_part", "the ReductionKernel");
    finish = user_kernel(source, d.name, d.name + "_finish", "the ReductionKernel");
  }
  // few outputs: each reduction split into parts that fill the device
  const std::int64_t groups_wanted = 8 * static_cast<std::int64_t>(std::max(info_.compute_units, 1));
  const std::int64_t parts =
      d.n_out >= groups_wanted
          ? 1
          : std::max<std::int64_t>(1, std::min<std::int64_t>((groups_wanted + d.n_out - 1) / d.n_out,
                                                              d.n_red / (4 * kRedLocal)));
  const std::int64_t items = d.n_out * parts;
  cl_mem partials = scratch(0, static_cast<std::size_t>(items) * 8);
  cl_long8 ksh{}, rsh{};
  for (std::size_t i = 0; i < d.kshape.size(); ++i) ksh.s[i] = d.kshape[i];
  for (std::size_t i = 0; i < d.rshape.size(); ++i) rsh.s[i] = d.rshape[i];
  const std::string pname = d.name + "_part";
  ArgSetter a{part, pname.c_str()};
  a(cl_long{d.n_red})(cl_long{parts})(static_cast<cl_int>(d.kshape.size()))(ksh)(
      static_cast<cl_int>(d.rshape.size()))(rsh);
  for (int k = 0; k < d.n_in; ++k) {
    if (d.scalar[k]) {
      switch (d.types[k]) {
        case DType::f64: a(d.fvalue[k]); break;
        case DType::f32: a(static_cast<float>(d.fvalue[k])); break;
        case DType::i32: a(static_cast<cl_int>(d.ivalue[k])); break;
        case DType::i64: a(static_cast<cl_long>(d.ivalue[k])); break;
        case DType::i8: a(static_cast<cl_char>(d.ivalue[k])); break;
        default: a(static_cast<cl_uchar>(d.ivalue[k])); break;
      }
      continue;
    }
    cl_long8 ks{}, rs{};
    for (std::size_t i = 0; i < d.ks[k].size(); ++i) ks.s[i] = d.ks[k][i];
    for (std::size_t i = 0; i < d.rs[k].size(); ++i) rs.s[i] = d.rs[k][i];
    a(ks)(rs)(mem(*args[static_cast<std::size_t>(k)]));
  }
  a(partials);
  const std::size_t lp[1] = {kRedLocal}, gp[1] = {static_cast<std::size_t>(items) * kRedLocal};
  enqueue("user_reduction", part, 1, gp, lp);
  const std::string fname = d.name + "_finish";
  ArgSetter f{finish, fname.c_str()};
  f(cl_long{d.n_out})(cl_long{parts})(partials);
  for (std::size_t k = static_cast<std::size_t>(d.n_in); k < d.names.size(); ++k) f(mem(*args[k]));
  constexpr std::size_t kLocal = 64;
  const std::size_t lf[1] = {kLocal}, gf[1] = {round_up(static_cast<std::size_t>(d.n_out), kLocal)};
  enqueue("user_reduction", finish, 1, gf, lf);
}

}  // namespace hetnn::opencl
