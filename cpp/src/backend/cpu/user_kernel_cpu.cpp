// User element-wise kernels on the CPU device (core/user_kernel.h, UserEwDesc): C99 generated here, compiled with
// the system's C compiler ($HETNN_CC, else $CC, else cc) into a shared library, loaded with dlopen and run over
// the threads. Libraries are cached in the cache directory's user_kernels/ (written atomically, with a MAC made with
// the cache's secret key that is checked before a library is loaded, as the OpenCL binaries are), keyed by the
// source, the compiler and its flags; without a cache directory they are built in a temporary one each process.
#include <dlfcn.h>
#include <fcntl.h>
#include <omp.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_loops.h"
#include "backend/cpu/cpu_threads.h"
#include "backend/cpu/stream_store.h"
#include "core/cache_dir.h"
#include "core/errors.h"

extern char** environ;

namespace hetnn {

namespace {

using Fn = void (*)(std::int64_t, std::int64_t, std::int64_t, int, int, const std::int64_t*, const std::int64_t*,
                    void* const*, const double*, const std::int64_t*);

// The C type a variable of dtype t has (16-bit floats compute as float).
const char* c_type(DType t) {
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16: return "float";
    case DType::f64: return "double";
    case DType::i32: return "int32_t";
    case DType::i64: return "int64_t";
    case DType::u8:
    case DType::b8: return "uint8_t";
    case DType::i8: return "int8_t";
  }
  return "float";
}

bool is16(DType t) { return t == DType::f16 || t == DType::bf16; }

// The C type an element of dtype t is stored as.
const char* c_storage(DType t) { return is16(t) ? "uint16_t" : c_type(t); }

// An element read from storage (p[o]) as its variable's value, and a value written back.
std::string c_load(DType t, const std::string& at) {
  return t == DType::f16 ? "hetnn_h2f(" + at + ")" : t == DType::bf16 ? "hetnn_bf2f(" + at + ")" : at;
}
std::string c_store(DType t, const std::string& v) {
  return t == DType::f16 ? "hetnn_f2h(" + v + ")" : t == DType::bf16 ? "hetnn_f2bf(" + v + ")"
                         : t == DType::b8 ? "(" + v + " != 0)" : v;
}

// float16 / bfloat16 <-> float32 in portable C: round to nearest even, NaN kept (quiet), overflow to inf, float16
// subnormals exact (the conversions hetnn's 16-bit storage uses everywhere).
constexpr const char* kHalfHelpers = R"(#include <string.h>
static inline float hetnn_h2f(uint16_t h) {
  uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, b;
  float f;
  if (e == 0x1fu) b = s | 0x7f800000u | (m << 13);
  else if (e) b = s | ((e + 112u) << 23) | (m << 13);
  else {
    f = (float)m * 5.9604644775390625e-8f;
    memcpy(&b, &f, 4);
    b |= s;
  }
  memcpy(&f, &b, 4);
  return f;
}
static inline uint16_t hetnn_f2h(float f) {
  uint32_t b, a, s;
  memcpy(&b, &f, 4);
  s = (b >> 16) & 0x8000u;
  a = b & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u);
  if (a >= 0x38800000u) {
    uint32_t r = a - 0x38000000u;
    r += 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(s | (r >> 13));
  }
  {
    float v;
    memcpy(&v, &a, 4);
    return (uint16_t)(s | (uint32_t)rintf(v * 16777216.0f));
  }
}
static inline float hetnn_bf2f(uint16_t h) {
  uint32_t b = (uint32_t)h << 16;
  float f;
  memcpy(&f, &b, 4);
  return f;
}
static inline uint16_t hetnn_f2bf(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  if ((b & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((b >> 16) | 0x40u);
  return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}
)";

std::string generate(const UserEwDesc& d) {
  std::ostringstream s;
  s << "#include <stdint.h>\n#include <tgmath.h>\n";
  bool halves = false;
  for (DType t : d.types) halves |= is16(t);
  if (halves) s << kHalfHelpers;
  for (const auto& [name, t] : d.typedefs) s << "typedef " << c_type(t) << ' ' << name << ";\n";
  s << d.preamble << "\n";
  s << "void hetnn_user_kernel(int64_t begin, int64_t end, int64_t n, int contig, int nd, const int64_t* sh,\n"
       "                       const int64_t* st, void* const* ptr, const double* fv, const int64_t* iv) {\n"
       "  (void)n; (void)fv; (void)iv; (void)sh; (void)st; (void)nd;\n";
  // typed pointers and the numbers, once (in locals the compiler can keep in registers and vectorise over)
  for (std::size_t k = 0; k < d.names.size(); ++k) {
    const bool in = static_cast<int>(k) < d.n_in;
    const char* t = c_type(d.types[k]);
    if (d.scalar[k])
      s << "  const " << t << " v_" << d.names[k] << " = (" << t << ')' << (is_floating(d.types[k]) ? "fv[" : "iv[")
        << k << "];\n";
    else
      s << "  " << (in ? "const " : "") << c_storage(d.types[k]) << "* const p_" << d.names[k] << " = ("
        << (in ? "const " : "") << c_storage(d.types[k]) << "*)ptr[" << k << "];\n";
  }
  // one element: the parameters as locals at offsets o_<name>
  auto body = [&](const std::string& indent) {
    for (std::size_t k = 0; k < d.names.size(); ++k) {
      const bool in = static_cast<int>(k) < d.n_in;
      s << indent << (in ? "const " : "") << c_type(d.types[k]) << ' ' << d.names[k] << " = ";
      if (d.scalar[k]) s << "v_" << d.names[k] << ";\n";
      else if (in || d.reads_output[k - static_cast<std::size_t>(d.n_in)])
        s << c_load(d.types[k], "p_" + d.names[k] + "[o_" + d.names[k] + "]") << ";\n";
      else s << "0;\n";
    }
    s << indent << "{\n" << d.operation << "\n;\n" << indent << "}\n";
    for (std::size_t k = static_cast<std::size_t>(d.n_in); k < d.names.size(); ++k)
      s << indent << "p_" << d.names[k] << "[o_" << d.names[k] << "] = " << c_store(d.types[k], d.names[k])
        << ";\n";
  };
  s << "  if (contig) {\n    for (int64_t i = begin; i < end; ++i) {\n";
  for (std::size_t k = 0; k < d.names.size(); ++k)
    if (!d.scalar[k]) s << "      const int64_t o_" << d.names[k] << " = i;\n";
  body("      ");
  s << "    }\n    return;\n  }\n  for (int64_t i = begin; i < end; ++i) {\n";
  for (std::size_t k = 0; k < d.names.size(); ++k)
    if (!d.scalar[k]) s << "    int64_t o_" << d.names[k] << " = 0;\n";
  s << "    int64_t r = i;\n    for (int k = nd - 1; k >= 0; --k) {\n      const int64_t q = r % sh[k];\n"
       "      r /= sh[k];\n";
  for (std::size_t k = 0; k < d.names.size(); ++k)
    if (!d.scalar[k]) s << "      o_" << d.names[k] << " += q * st[" << 8 * k << " + k];\n";
  s << "    }\n";
  body("    ");
  s << "  }\n}\n";
  return s.str();
}


using PartFn = void (*)(std::int64_t, std::int64_t, std::int64_t, std::int64_t, int, const std::int64_t*, int,
                        const std::int64_t*, const std::int64_t*, const std::int64_t*, void* const*, const double*,
                        const std::int64_t*, void*);
using FinishFn = void (*)(std::int64_t, std::int64_t, std::int64_t, const void*, void* const*);

// hetnn_user_partial: partial reductions items [i0, i1) (item = output * parts + part) into partials;
// hetnn_user_finish: outputs [o0, o1) from their parts' partials through post_map_expr.
std::string generate(const UserRedDesc& d) {
  std::ostringstream s;
  s << "#include <stdint.h>\n#include <tgmath.h>\n";
  bool halves = is16(d.reduce_type);
  for (DType t : d.types) halves |= is16(t);
  if (halves) s << kHalfHelpers;
  for (const auto& [name, t] : d.typedefs) s << "typedef " << c_type(t) << ' ' << name << ";\n";
  s << "typedef " << c_type(d.reduce_type) << " hetnn_rt;\n" << d.preamble << "\n";
  s << "static inline hetnn_rt hetnn_reduce(hetnn_rt a, hetnn_rt b) { return (hetnn_rt)(" << d.reduce_expr
    << "); }\n";
  s << "void hetnn_user_partial(int64_t i0, int64_t i1, int64_t parts, int64_t n_red, int knd, const int64_t* ksh,\n"
       "                        int rnd, const int64_t* rsh, const int64_t* ks, const int64_t* rs, void* const* ptr,\n"
       "                        const double* fv, const int64_t* iv, void* partials) {\n"
       "  (void)fv; (void)iv; (void)ks; (void)rs; (void)ptr;\n"
       "  for (int64_t item = i0; item < i1; ++item) {\n"
       "    const int64_t o = item / parts, p = item % parts;\n"
       "    const int64_t j0 = n_red * p / parts, j1 = n_red * (p + 1) / parts;\n";
  const int nin = d.n_in;
  for (int k = 0; k < nin; ++k)
    if (!d.scalar[k]) s << "    int64_t k_" << d.names[k] << " = 0;\n";
  s << "    { int64_t r = o; for (int q = knd - 1; q >= 0; --q) { const int64_t c = r % ksh[q]; r /= ksh[q];\n";
  for (int k = 0; k < nin; ++k)
    if (!d.scalar[k]) s << "      k_" << d.names[k] << " += c * ks[" << 8 * k << " + q];\n";
  s << "    } }\n    hetnn_rt a = (hetnn_rt)(" << d.identity << ");\n    for (int64_t j = j0; j < j1; ++j) {\n";
  for (int k = 0; k < nin; ++k)
    if (!d.scalar[k]) s << "      int64_t o_" << d.names[k] << " = k_" << d.names[k] << ";\n";
  s << "      if (rnd == 1) {\n";
  for (int k = 0; k < nin; ++k)
    if (!d.scalar[k]) s << "        o_" << d.names[k] << " += j * rs[" << 8 * k << "];\n";
  s << "      } else { int64_t r = j; for (int q = rnd - 1; q >= 0; --q) { const int64_t c = r % rsh[q]; r /= rsh[q];\n";
  for (int k = 0; k < nin; ++k)
    if (!d.scalar[k]) s << "        o_" << d.names[k] << " += c * rs[" << 8 * k << " + q];\n";
  s << "      } }\n";
  for (int k = 0; k < nin; ++k) {
    const char* t = c_type(d.types[k]);
    s << "      const " << t << ' ' << d.names[k] << " = ";
    if (d.scalar[k]) s << '(' << t << ')' << (is_floating(d.types[k]) ? "fv[" : "iv[") << k << "];\n";
    else s << c_load(d.types[k], "((const " + std::string(c_storage(d.types[k])) + "*)ptr[" + std::to_string(k) +
                     "])[o_" + d.names[k] + "]") << ";\n";
  }
  s << "      const hetnn_rt b = (hetnn_rt)(" << d.map_expr << ");\n      a = hetnn_reduce(a, b);\n    }\n"
       "    ((hetnn_rt*)partials)[item] = a;\n  }\n}\n";
  s << "void hetnn_user_finish(int64_t o0, int64_t o1, int64_t parts, const void* partials, void* const* ptr) {\n"
       "  for (int64_t o = o0; o < o1; ++o) {\n    hetnn_rt a = (hetnn_rt)(" << d.identity << ");\n"
       "    for (int64_t p = 0; p < parts; ++p) a = hetnn_reduce(a, ((const hetnn_rt*)partials)[o * parts + p]);\n";
  for (std::size_t k = static_cast<std::size_t>(nin); k < d.names.size(); ++k)
    s << "    " << c_type(d.types[k]) << ' ' << d.names[k] << " = 0;\n";
  s << "    {\n" << d.post_map_expr << "\n;\n    }\n";
  for (std::size_t k = static_cast<std::size_t>(nin); k < d.names.size(); ++k)
    s << "    ((" << c_storage(d.types[k]) << "*)ptr[" << k << "])[o] = " << c_store(d.types[k], d.names[k]) << ";\n";
  s << "  }\n}\n";
  return s.str();
}

std::string compiler() {
  for (const char* v : {"HETNN_CC", "CC"})
    if (const char* c = std::getenv(v); c && *c) return c;
  return "cc";
}

const char* const kFlags[] = {"-O3", "-march=native", "-std=gnu99", "-fPIC", "-shared", "-fno-math-errno", "-w"};

// Runs `cc flags -o out src -lm`, its output into log; the exit status (or -1 with `why` when it did not start).
int run_compiler(const std::string& cc, const std::string& src, const std::string& out, const std::string& log,
                 std::string* why) {
  std::vector<std::string> argv_s{cc};
  for (const char* f : kFlags) argv_s.emplace_back(f);
  argv_s.insert(argv_s.end(), {"-o", out, src, "-lm"});
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, cc.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    *why = std::strerror(rc);
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      *why = std::strerror(errno);
      return -1;
    }
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The processor's feature flags (the libraries are built with -march=native: one built elsewhere, on a shared home
// folder, must not be loaded here).
const std::string& cpu_flags() {
  static const std::string flags = [] {
    const std::string info = read_file("/proc/cpuinfo", 1 << 22).value_or("");
    const auto at = info.find("\nflags");
    return at == std::string::npos ? std::string() : info.substr(at, info.find('\n', at + 1) - at);
  }();
  return flags;
}

// A private temporary folder ($TMPDIR, else /tmp), created; throws naming the kernel when it cannot be.
std::string temp_folder(const std::string& kname) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/hetnn-user-kernel-XXXXXX";
  if (!mkdtemp(tmpl.data()))
    throw Error("user kernel '" + kname + "': no temporary folder to compile in (" + tmpl + "): " +
                std::strerror(errno));
  return tmpl;
}

// Loads a library from its verified bytes, through a copy in a private temporary folder: what was checked is what is
// loaded, whatever happens to the cache file meanwhile, and the path is new each time (the dynamic loader returns
// an already loaded library for a path it has seen). nullptr with `why` on failure.
void* load_bytes(const std::string& bytes, const std::string& kname, std::string* why) {
  const std::string dir = temp_folder(kname), path = dir + "/lib.so";
  void* h = nullptr;
  if (write_file_atomic(path, bytes, why)) {
    h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      *why = e ? e : "dlopen failed";
    }
  }
  std::remove(path.c_str());  // the mapping stays
  rmdir(dir.c_str());
  return h;
}

std::mutex g_mu;
std::map<std::string, void*> g_loaded;  // by source key, for the process's life (code may be running)

// The library compiled from `source` (kernel `kname`), loaded; cached in memory for the process and on disk.
void* library(const std::string& kname, const std::string& source) {
  const std::string cc = compiler();
  std::string flags;
  for (const char* f : kFlags) flags += std::string(f) + ' ';
  const std::uint64_t key =
      fnv1a(source, fnv1a(cc + '|' + flags + '|' + cpu_flags(), fnv1a("hetnn-user-kernel-v1")));
  const std::string name = hex64(key);
  std::lock_guard<std::mutex> lock(g_mu);
  if (auto it = g_loaded.find(name); it != g_loaded.end()) return it->second;

  const auto dir = cache_dir("user_kernels");
  const auto secret = dir ? cache_secret(*dir) : std::nullopt;
  const std::string lib = dir ? *dir + "/" + name + ".so" : "";
  auto mac_of = [&](const std::string& bytes) { return hex64(siphash24(*secret, bytes.data(), bytes.size())); };
  if (dir && secret) {  // a cached library, loaded only when its MAC matches
    const auto bytes = read_file(lib);
    const auto mac = read_file(lib + ".mac", 64);
    std::string ignored;
    if (bytes && mac && *mac == mac_of(*bytes))
      if (void* h = load_bytes(*bytes, kname, &ignored)) return g_loaded.emplace(name, h).first->second;
  }
  // build in a private temporary folder, then move into the cache
  const std::string tmp = temp_folder(kname);
  const std::string base = tmp + "/" + kname;
  const std::string src = base + ".c", out = base + ".so", log = base + ".log";
  auto cleanup = [&] {
    for (const std::string& f : {src, out, log}) std::remove(f.c_str());
    rmdir(tmp.c_str());
  };
  std::string why;
  if (!write_file_atomic(src, source, &why)) {
    cleanup();
    throw Error("user kernel '" + kname + "': cannot write its C source: " + why);
  }
  const int rc = run_compiler(cc, src, out, log, &why);
  if (rc != 0) {
    const std::string text = read_file(log, 1 << 20).value_or("");
    cleanup();
    if (rc < 0)
      throw CompileError(kname, cc + " " + flags, "cpu",
                         "the CPU device compiles user kernels with the system's C compiler, and '" + cc +
                             "' could not be run (" + why + "): install one (Debian: apt-get install gcc) or set "
                             "HETNN_CC\n--- the generated source ---\n" + source,
                         "the user kernel");
    throw CompileError(kname, cc + " " + flags, "cpu", text + "\n--- the generated source ---\n" + source,
                       "the user kernel");
  }
  const auto bytes = read_file(out);
  cleanup();
  if (!bytes) throw Error("user kernel '" + kname + "': the compiler wrote no library");
  if (dir && secret) {  // the MAC first: a library without one is never loaded
    std::string ignored;
    if (write_file_atomic(lib + ".mac", mac_of(*bytes), &ignored)) write_file_atomic(lib, *bytes, &ignored);
  }
  void* h = load_bytes(*bytes, kname, &why);
  if (!h) throw Error("user kernel '" + kname + "': loading its compiled library failed: " + why);
  return g_loaded.emplace(name, h).first->second;
}

template <class F>
F symbol(void* lib, const char* name) {
  void* f = dlsym(lib, name);
  if (!f) throw Error(std::string("user kernel: the compiled library lacks ") + name);
  return reinterpret_cast<F>(f);
}

// Compiled functions by user_signature: a call that finds its kernel here generates no source.
std::mutex g_fn_mu;
std::map<std::string, void*> g_fns;

template <class F, class D>
F cached(const D& d, const std::string& key, const char* sym) {
  {
    std::lock_guard<std::mutex> lock(g_fn_mu);
    if (auto it = g_fns.find(key + sym); it != g_fns.end()) return reinterpret_cast<F>(it->second);
  }
  const F f = symbol<F>(library(d.name, generate(d)), sym);
  std::lock_guard<std::mutex> lock(g_fn_mu);
  g_fns.emplace(key + sym, reinterpret_cast<void*>(f));
  return f;
}

}  // namespace

void CpuBackend::user_elementwise(const UserEwDesc& d, const std::vector<Buffer*>& args) {
  if (d.n == 0) return;
  const std::string computed =  // the front sets d.key; computed here for a descriptor made without it
      d.key.empty() ? user_signature(d.name, d.operation + '\x1e' + d.preamble, d.typedefs, d.types, d.scalar,
                                     d.reads_output)
                    : std::string();
  const std::string& key = d.key.empty() ? computed : d.key;
  const Fn fn = cached<Fn>(d, key, "hetnn_user_kernel");
  // small work runs on the calling thread without a parallel region: even `parallel if (false)` builds a team of
  // one (an allocation and a release per call, a third of a 1 KiB call)
  const bool team = d.n >= kElementwiseParallelMin;
  if (team) cpu_threads::apply();
  std::vector<std::int64_t> st(8 * args.size(), 0);
  std::vector<void*> ptrs(args.size(), nullptr);
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (args[k]) ptrs[k] = args[k]->host_ptr();
    for (std::size_t i = 0; i < d.strides[k].size(); ++i) st[8 * k + i] = d.strides[k][i];
  }
  const int nd = static_cast<int>(d.shape.size());
  // Contiguous outputs beyond the caches that the code does not read: written with streaming stores as the
  // built-in ops' (stream_store.h), each chunk computed into buffers in the first-level cache (the generated code
  // indexes its outputs by i, so their pointers are moved to make element i of the chunk its buffer's first).
  bool streamed = d.contiguous && d.n_in < static_cast<int>(args.size());
  for (std::size_t k = static_cast<std::size_t>(d.n_in); streamed && k < args.size(); ++k)
    streamed = args[k] && !d.reads_output[k - static_cast<std::size_t>(d.n_in)] &&
               stream_output(static_cast<std::size_t>(d.n) * dtype_size(d.types[k]));
  const auto call = [&](std::int64_t b, std::int64_t e, void* const* p) {
    fn(b, e, d.n, d.contiguous ? 1 : 0, nd, d.shape.data(), st.data(), p, d.fvalue.data(), d.ivalue.data());
  };
  const auto range = [&](std::int64_t b, std::int64_t e) {
    if (b >= e) return;
    if (!streamed) return call(b, e, ptrs.data());
    constexpr std::int64_t kChunk = 1024;
    const std::size_t outs = args.size() - static_cast<std::size_t>(d.n_in);
    std::vector<std::uint64_t> chunks(outs * kChunk);  // 8 bytes an element: any type
    std::vector<void*> p(ptrs);
    for (std::int64_t i = b; i < e; i += kChunk) {
      const std::int64_t m = std::min(kChunk, e - i);
      for (std::size_t o = 0; o < outs; ++o) {
        const std::size_t size = dtype_size(d.types[static_cast<std::size_t>(d.n_in) + o]);
        p[static_cast<std::size_t>(d.n_in) + o] = reinterpret_cast<void*>(
            reinterpret_cast<std::uintptr_t>(chunks.data() + o * kChunk) - static_cast<std::uintptr_t>(i) * size);
      }
      call(i, i + m, p.data());
      for (std::size_t o = 0; o < outs; ++o) {
        const std::size_t size = dtype_size(d.types[static_cast<std::size_t>(d.n_in) + o]);
        stream_copy(static_cast<unsigned char*>(ptrs[static_cast<std::size_t>(d.n_in) + o]) + i * size,
                    chunks.data() + o * kChunk, static_cast<std::size_t>(m) * size);
      }
    }
    stream_fence();
  };
  // pieces the threads take as each finishes one, as the built-in ops' (an even split waits for a thread the VM
  // preempted: beside one busy core a saxpy of 256 MiB took 44 ms split evenly, 37 in pieces; quiet the same)
  constexpr std::int64_t kPiece = std::int64_t{1} << 16;
  timed("user_elementwise", 0, [&] {
    if (!team) return range(0, d.n);
    parallel_pieces(d.n, kPiece, range);
  }, team);
}

void CpuBackend::user_reduction(const UserRedDesc& d, const std::vector<Buffer*>& args) {
  if (d.n_out == 0) return;
  const std::string key = user_signature(
      d.name, d.map_expr + '\x1e' + d.reduce_expr + '\x1e' + d.post_map_expr + '\x1e' + d.identity + '\x1e' +
                  d.preamble + '\x1e' + static_cast<char>('a' + static_cast<int>(d.reduce_type)),
      d.typedefs, d.types, d.scalar, {});
  const auto part = cached<PartFn>(d, key, "hetnn_user_partial");
  const auto finish = cached<FinishFn>(d, key, "hetnn_user_finish");
  cpu_threads::apply();
  const std::int64_t threads = omp_get_max_threads();
  // few outputs: each reduction split into parts the threads share (reduce_expr combines them)
  const std::int64_t parts =
      d.n_out >= 4 * threads ? 1 : std::max<std::int64_t>(1, std::min<std::int64_t>(d.n_red / 4096, 64 * threads));
  std::vector<std::int64_t> ks(8 * args.size(), 0), rs(8 * args.size(), 0);
  std::vector<void*> ptrs(args.size(), nullptr);
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (args[k]) ptrs[k] = args[k]->host_ptr();
    if (static_cast<int>(k) >= d.n_in) continue;
    for (std::size_t i = 0; i < d.ks[k].size(); ++i) ks[8 * k + i] = d.ks[k][i];
    for (std::size_t i = 0; i < d.rs[k].size(); ++i) rs[8 * k + i] = d.rs[k][i];
  }
  std::vector<std::uint64_t> partials(static_cast<std::size_t>(d.n_out * parts));
  const std::int64_t items = d.n_out * parts;
  const auto partial = [&](std::int64_t b, std::int64_t e) {
    if (b < e)
      part(b, e, parts, d.n_red, static_cast<int>(d.kshape.size()), d.kshape.data(), static_cast<int>(d.rshape.size()),
           d.rshape.data(), ks.data(), rs.data(), ptrs.data(), d.fvalue.data(), d.ivalue.data(), partials.data());
  };
  const bool team = d.n_out * d.n_red >= kElementwiseParallelMin;  // else on the calling thread
  timed("user_reduction", 0, [&] {
    if (!team) {
      partial(0, items);
      return finish(0, d.n_out, parts, partials.data(), ptrs.data());
    }
#pragma omp parallel
    {
      const std::int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      partial(items * t / nt, items * (t + 1) / nt);
#pragma omp barrier
      const std::int64_t ob = d.n_out * t / nt, oe = d.n_out * (t + 1) / nt;
      if (ob < oe) finish(ob, oe, parts, partials.data(), ptrs.data());
    }
  }, team);
}

}  // namespace hetnn
