// User element-wise kernels on OpenCL devices (core/user_kernel.h, UserEwDesc): the source generated here, built
// through the program cache (memory and disk, keyed by its text), one work-item per element. A build failure is a
// CompileError whose log ends with the generated source.
#include <sstream>
#include <string>

#include "backend/opencl/cl_args.h"
#include "backend/opencl/cl_backend.h"
#include "core/cache_dir.h"
#include "core/errors.h"

namespace hetnn::opencl {

namespace {

const char* cl_type(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i32: return "int";
    case DType::i64: return "long";
    case DType::u8:
    case DType::b8: return "uchar";
    case DType::i8: return "char";
    default: return "float";  // 16-bit types are refused by the front
  }
}

std::string generate(const UserEwDesc& d) {
  std::ostringstream s;
  bool f64 = false;
  for (DType t : d.types) f64 |= t == DType::f64;
  if (f64) s << "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  for (const auto& [name, t] : d.typedefs) s << "typedef " << cl_type(t) << ' ' << name << ";\n";
  s << d.preamble << "\n";
  s << "__kernel void " << d.name << "(const long n, const int contig, const int nd, const long8 shape8";
  for (std::size_t k = 0; k < d.names.size(); ++k) {
    const bool in = static_cast<int>(k) < d.n_in;
    if (d.scalar[k]) {
      s << ", const " << cl_type(d.types[k]) << " v_" << d.names[k];
    } else {
      s << ", const long8 st_" << d.names[k] << ", __global " << (in ? "const " : "") << cl_type(d.types[k])
        << "* p_" << d.names[k];
    }
  }
  s << ") {\n  const long i = get_global_id(0);\n  if (i >= n) return;\n";
  for (std::size_t k = 0; k < d.names.size(); ++k)
    if (!d.scalar[k]) s << "  long o_" << d.names[k] << " = i;\n";
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
  for (std::size_t k = 0; k < d.names.size(); ++k) {
    const bool in = static_cast<int>(k) < d.n_in;
    s << "  " << (in ? "const " : "") << cl_type(d.types[k]) << ' ' << d.names[k] << " = "
      << (d.scalar[k] ? "v_" + d.names[k] : "p_" + d.names[k] + "[o_" + d.names[k] + "]") << ";\n";
  }
  s << "  {\n" << d.operation << "\n;\n  }\n";
  for (std::size_t k = static_cast<std::size_t>(d.n_in); k < d.names.size(); ++k)
    s << "  p_" << d.names[k] << "[o_" << d.names[k] << "] = "
      << (d.types[k] == DType::b8 ? "(" + d.names[k] + " != 0)" : d.names[k]) << ";\n";
  s << "}\n";
  return s.str();
}

}  // namespace

void ClBackend::user_elementwise(const UserEwDesc& d, const std::vector<Buffer*>& args) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string source = generate(d);
  const std::string label = "user:" + d.name + ":" + hex64(fnv1a(source));
  const std::string options = "-cl-std=CL1.2 -w";  // -w: PoCL prints warnings to the process's stderr
  cl_kernel k = nullptr;
  const std::string key = label + '\n' + d.name + '\n' + options;
  auto it = kernels_.find(key);
  if (it != kernels_.end()) {
    k = it->second.get();
  } else {
    cl_program prog = nullptr;
    try {
      prog = programs_.get_text(label, source, options);
    } catch (const CompileError& e) {
      throw CompileError(d.name, options, e.device, e.log + "\n--- the generated source ---\n" + source,
                         "the ElementwiseKernel");
    }
    cl_int st = CL_SUCCESS;
    Kernel made(clCreateKernel(prog, d.name.c_str(), &st));
    if (st != CL_SUCCESS) throw_cl_error(st, "clCreateKernel(" + d.name + ")");
    k = kernels_.emplace(key, std::move(made)).first->second.get();
  }
  cl_long8 shape{};
  for (std::size_t i = 0; i < d.shape.size(); ++i) shape.s[i] = d.shape[i];
  ArgSetter s{k, d.name.c_str()};
  s(cl_long{d.n})(static_cast<cl_int>(d.contiguous))(static_cast<cl_int>(d.shape.size()))(shape);
  for (std::size_t a = 0; a < d.names.size(); ++a) {
    if (d.scalar[a]) {
      switch (d.types[a]) {
        case DType::f64: s(d.fvalue[a]); break;
        case DType::f32: s(static_cast<float>(d.fvalue[a])); break;
        case DType::i32: s(static_cast<cl_int>(d.ivalue[a])); break;
        case DType::i64: s(static_cast<cl_long>(d.ivalue[a])); break;
        case DType::i8: s(static_cast<cl_char>(d.ivalue[a])); break;
        default: s(static_cast<cl_uchar>(d.ivalue[a])); break;
      }
      continue;
    }
    cl_long8 st{};
    for (std::size_t i = 0; i < d.strides[a].size(); ++i) st.s[i] = d.strides[a][i];
    s(st)(mem(*args[a]));
  }
  constexpr std::size_t kLocal = 64;
  const std::size_t g[1] = {round_up(static_cast<std::size_t>(d.n), kLocal)}, l[1] = {kLocal};
  enqueue("user_elementwise", k, 1, g, l);
}

}  // namespace hetnn::opencl
