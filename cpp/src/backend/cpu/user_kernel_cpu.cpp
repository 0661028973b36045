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

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_threads.h"
#include "core/cache_dir.h"
#include "core/errors.h"

extern char** environ;

namespace hetnn {

namespace {

using Fn = void (*)(std::int64_t, std::int64_t, std::int64_t, int, int, const std::int64_t*, const std::int64_t*,
                    void* const*, const double*, const std::int64_t*);

const char* c_type(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i32: return "int32_t";
    case DType::i64: return "int64_t";
    case DType::u8:
    case DType::b8: return "uint8_t";
    case DType::i8: return "int8_t";
    default: return "float";  // 16-bit types are refused by the front
  }
}

std::string generate(const UserEwDesc& d) {
  std::ostringstream s;
  s << "#include <stdint.h>\n#include <tgmath.h>\n";
  for (const auto& [name, t] : d.typedefs) s << "typedef " << c_type(t) << ' ' << name << ";\n";
  s << d.preamble << "\n";
  s << "void hetnn_user_kernel(int64_t begin, int64_t end, int64_t n, int contig, int nd, const int64_t* sh,\n"
       "                       const int64_t* st, void* const* ptr, const double* fv, const int64_t* iv) {\n"
       "  (void)n; (void)fv; (void)iv; (void)sh; (void)st; (void)nd;\n"
       "  for (int64_t i = begin; i < end; ++i) {\n";
  for (std::size_t k = 0; k < d.names.size(); ++k)
    if (!d.scalar[k]) s << "    int64_t o_" << d.names[k] << " = i;\n";
  s << "    if (!contig) {\n";
  for (std::size_t k = 0; k < d.names.size(); ++k)
    if (!d.scalar[k]) s << "      o_" << d.names[k] << " = 0;\n";
  s << "      int64_t r = i;\n      for (int k = nd - 1; k >= 0; --k) {\n        const int64_t q = r % sh[k];\n"
       "        r /= sh[k];\n";
  for (std::size_t k = 0; k < d.names.size(); ++k)
    if (!d.scalar[k]) s << "        o_" << d.names[k] << " += q * st[" << 8 * k << " + k];\n";
  s << "      }\n    }\n";
  for (std::size_t k = 0; k < d.names.size(); ++k) {
    const bool in = static_cast<int>(k) < d.n_in;
    const char* t = c_type(d.types[k]);
    s << "    " << (in ? "const " : "") << t << ' ' << d.names[k] << " = ";
    if (d.scalar[k]) s << '(' << t << ')' << (is_floating(d.types[k]) ? "fv[" : "iv[") << k << "];\n";
    else s << "((" << (in ? "const " : "") << t << "*)ptr[" << k << "])[o_" << d.names[k] << "];\n";
  }
  s << "    {\n" << d.operation << "\n;\n    }\n";
  for (std::size_t k = static_cast<std::size_t>(d.n_in); k < d.names.size(); ++k) {
    s << "    ((" << c_type(d.types[k]) << "*)ptr[" << k << "])[o_" << d.names[k] << "] = ";
    s << (d.types[k] == DType::b8 ? "(" + d.names[k] + " != 0)" : d.names[k]) << ";\n";
  }
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

struct Loaded {
  void* handle = nullptr;
  Fn fn = nullptr;
};

Loaded load(const std::string& path) {
  Loaded l;
  l.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (l.handle) l.fn = reinterpret_cast<Fn>(dlsym(l.handle, "hetnn_user_kernel"));
  return l;
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

std::mutex g_mu;
std::map<std::string, Loaded> g_loaded;  // by source key, for the process's life (code may be running)

Fn compiled(const UserEwDesc& d) {
  const std::string source = generate(d);
  const std::string cc = compiler();
  std::string flags;
  for (const char* f : kFlags) flags += std::string(f) + ' ';
  const std::uint64_t key =
      fnv1a(source, fnv1a(cc + '|' + flags + '|' + cpu_flags(), fnv1a("hetnn-user-kernel-v1")));
  const std::string name = hex64(key);
  std::lock_guard<std::mutex> lock(g_mu);
  if (auto it = g_loaded.find(name); it != g_loaded.end()) return it->second.fn;

  const auto dir = cache_dir("user_kernels");
  const auto secret = dir ? cache_secret(*dir) : std::nullopt;
  const std::string lib = dir ? *dir + "/" + name + ".so" : "";
  auto mac_of = [&](const std::string& bytes) { return hex64(siphash24(*secret, bytes.data(), bytes.size())); };
  if (dir && secret) {  // a cached library, loaded only when its MAC matches
    const auto bytes = read_file(lib);
    const auto mac = read_file(lib + ".mac", 64);
    if (bytes && mac && *mac == mac_of(*bytes)) {
      Loaded l = load(lib);
      if (l.fn) return g_loaded.emplace(name, l).first->second.fn;
      if (l.handle) dlclose(l.handle);
    }
  }
  // build in a private temporary folder, then move into the cache
  char tmpl[] = "/tmp/hetnn-user-kernel-XXXXXX";
  const char* tmp = mkdtemp(tmpl);
  if (!tmp) throw Error(std::string("ElementwiseKernel: no temporary folder to compile in: ") + std::strerror(errno));
  const std::string base = std::string(tmp) + "/" + d.name;
  const std::string src = base + ".c", out = base + ".so", log = base + ".log";
  auto cleanup = [&] {
    for (const std::string& f : {src, out, log}) std::remove(f.c_str());
    rmdir(tmp);
  };
  std::string why;
  if (!write_file_atomic(src, source, &why)) {
    cleanup();
    throw Error("ElementwiseKernel '" + d.name + "': cannot write its C source: " + why);
  }
  const int rc = run_compiler(cc, src, out, log, &why);
  if (rc != 0) {
    const std::string text = read_file(log, 1 << 20).value_or("");
    cleanup();
    if (rc < 0)
      throw CompileError(d.name, cc + " " + flags, "cpu",
                         "the CPU device compiles user kernels with the system's C compiler, and '" + cc +
                             "' could not be run (" + why + "): install one (Debian: apt-get install gcc) or set "
                             "HETNN_CC\n--- the generated source ---\n" + source,
                         "the ElementwiseKernel");
    throw CompileError(d.name, cc + " " + flags, "cpu", text + "\n--- the generated source ---\n" + source,
                       "the ElementwiseKernel");
  }
  std::string path = out;
  if (dir && secret) {
    if (const auto bytes = read_file(out)) {
      std::string ignored;
      if (write_file_atomic(lib, *bytes, &ignored) && write_file_atomic(lib + ".mac", mac_of(*bytes), &ignored))
        path = lib;
    }
  }
  Loaded l = load(path);
  const char* dl = l.fn ? nullptr : dlerror();
  const std::string err = l.fn ? "" : (dl ? dl : "hetnn_user_kernel not found");
  cleanup();  // a loaded library stays mapped after its file is removed
  if (!l.fn) throw Error("ElementwiseKernel '" + d.name + "': loading its compiled library failed: " + err);
  return g_loaded.emplace(name, l).first->second.fn;
}

}  // namespace

void CpuBackend::user_elementwise(const UserEwDesc& d, const std::vector<Buffer*>& args) {
  if (d.n == 0) return;
  const Fn fn = compiled(d);
  cpu_threads::apply();
  std::vector<std::int64_t> st(8 * args.size(), 0);
  std::vector<void*> ptrs(args.size(), nullptr);
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (args[k]) ptrs[k] = args[k]->host_ptr();
    for (std::size_t i = 0; i < d.strides[k].size(); ++i) st[8 * k + i] = d.strides[k][i];
  }
  const int nd = static_cast<int>(d.shape.size());
  timed("user_elementwise", 0, [&] {
#pragma omp parallel if (d.n >= (1 << 15))
    {
      const std::int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      const std::int64_t b = d.n * t / nt, e = d.n * (t + 1) / nt;
      if (b < e)
        fn(b, e, d.n, d.contiguous ? 1 : 0, nd, d.shape.data(), st.data(), ptrs.data(), d.fvalue.data(),
           d.ivalue.data());
    }
  });
}

}  // namespace hetnn
