// Lists every OpenCL platform/device through the ICD loader. No platform is not an error: hetnn then simply
// has no OpenCL device, and opencl_status() says why (and names a platform that lists no device beside others).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/opencl/cl_backend.h"
#include "backend/opencl/cl_check.h"
#include "backend/opencl/cl_loader.h"
#include "core/device.h"
#include "core/warn.h"

namespace hetnn {

namespace {

std::string g_status;

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ' || s.back() == '\n')) s.pop_back();
  auto b = s.find_first_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b);
}

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  std::size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  if (clGetPlatformInfo(p, what, n, s.data(), nullptr) != CL_SUCCESS) return "";
  return trim(s);
}

std::string device_string(cl_device_id d, cl_device_info what) {
  std::size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  if (clGetDeviceInfo(d, what, n, s.data(), nullptr) != CL_SUCCESS) return "";
  return trim(s);
}

template <class T>
T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  if (clGetDeviceInfo(d, what, sizeof(T), &v, nullptr) != CL_SUCCESS) return T{};
  return v;
}

bool has_extension(const std::string& exts, const std::string& name) {
  std::size_t pos = 0;
  while ((pos = exts.find(name, pos)) != std::string::npos) {
    const bool start = pos == 0 || exts[pos - 1] == ' ';
    const bool end = pos + name.size() == exts.size() || exts[pos + name.size()] == ' ';
    if (start && end) return true;
    pos += name.size();
  }
  return false;
}

// The architecture the driver reports: NVIDIA's compute capability (cl_nv_device_attribute_query), AMD's gfx name
// (its device name, or cl_amd_device_attribute_query's gfx IP version); "" when the driver says nothing.
std::string device_arch(cl_device_id d, const std::string& name, const std::string& exts) {
  constexpr cl_device_info kCcMajorNv = 0x4000, kCcMinorNv = 0x4001;     // cl_nv_device_attribute_query
  constexpr cl_device_info kGfxMajorAmd = 0x404A, kGfxMinorAmd = 0x404B;  // cl_amd_device_attribute_query
  if (has_extension(exts, "cl_nv_device_attribute_query")) {
    const auto major = device_value<cl_uint>(d, kCcMajorNv), minor = device_value<cl_uint>(d, kCcMinorNv);
    if (major) return "sm_" + std::to_string(major) + std::to_string(minor);
  }
  if (name.rfind("gfx", 0) == 0) return name.substr(0, name.find_first_of(": "));
  if (has_extension(exts, "cl_amd_device_attribute_query")) {
    const auto major = device_value<cl_uint>(d, kGfxMajorAmd), minor = device_value<cl_uint>(d, kGfxMinorAmd);
    if (major) return "gfx" + std::to_string(major) + std::to_string(minor);
  }
  return "";
}

}  // namespace

std::string opencl_status() { return g_status; }

namespace {

// PoCL's kernel cache directory: $POCL_CACHE_DIR, else $XDG_CACHE_HOME/pocl, else $HOME/.cache/pocl.
std::string pocl_cache_dir() {
  if (const char* d = std::getenv("POCL_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/pocl";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/pocl";
  return "";
}

// Whether files can be written in `dir`, tried for real (access() says yes to root on read-only filesystems): the
// missing directories are created, as PoCL would, and a probe file is written and removed. Only on the path where
// no device was listed.
bool creatable(const std::string& dir) {
  for (std::size_t i = 1; i <= dir.size(); ++i)
    if (i == dir.size() || dir[i] == '/') ::mkdir(dir.substr(0, i).c_str(), 0755);  // errors show below
  const std::string probe = dir + "/.hetnn-probe-" + std::to_string(::getpid());
  FILE* f = std::fopen(probe.c_str(), "w");
  if (!f) return false;
  std::fclose(f);
  std::remove(probe.c_str());
  return true;
}

// The first .icd file, among those the ICD loader (ocl-icd 2.3) will read, that would take the process down: a FIFO
// blocks its read for ever, and a file starting with a NUL byte makes it dlopen("") and recurse into itself until
// it segfaults. Empty: none. Only what the loader reads is looked at: $OCL_ICD_VENDORS (a directory, or one .icd
// file), else $OPENCL_VENDOR_PATH, else /etc/OpenCL/vendors.
std::string icd_file_fault() {
  std::vector<std::string> files;
  auto add_dir = [&](const std::string& dir) {
    if (DIR* d = opendir(dir.c_str())) {
      while (const dirent* e = readdir(d)) {
        const std::string n = e->d_name;
        if (n.size() > 4 && n.compare(n.size() - 4, 4, ".icd") == 0) files.push_back(dir + "/" + n);
      }
      closedir(d);
    }
  };
  struct stat st {};
  const char* vendors = std::getenv("OCL_ICD_VENDORS");
  const char* legacy = std::getenv("OPENCL_VENDOR_PATH");
  if (vendors && *vendors && stat(vendors, &st) == 0 && !S_ISDIR(st.st_mode)) files.push_back(vendors);
  else add_dir(vendors && *vendors ? vendors : legacy && *legacy ? legacy : "/etc/OpenCL/vendors");
  for (const auto& f : files) {
    if (stat(f.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) continue;  // the loader skips these
    if (!S_ISREG(st.st_mode)) return f + " is not a regular file (the ICD loader would block reading it)";
    const int fd = open(f.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    char first = 1;
    if (fd >= 0) {
      if (read(fd, &first, 1) != 1) first = 1;
      close(fd);
    }
    if (first == '\0') return f + " starts with a NUL byte (the ICD loader would crash on it)";
  }
  return "";
}

// Whether an executable `tool` is in one of $PATH's directories (unset: /bin:/usr/bin, as execvp searches).
bool on_path(const std::string& tool) {
  const char* env = std::getenv("PATH");
  const std::string path = env ? env : "/bin:/usr/bin";
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    const std::string dir = end == start ? "." : path.substr(start, end - start);
    const std::string file = dir + "/" + tool;
    struct stat st {};
    if (stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(file.c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

// NVIDIA's OpenCL driver library where it is installed (the CUDA driver's packages, Colab's /usr/local/nvidia),
// "" elsewhere; looked for as a file, not loaded (loading a driver library has effects of its own).
std::string nvidia_opencl_driver() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("LD_LIBRARY_PATH")) {
    const std::string path = env;
    for (std::size_t start = 0; start <= path.size();) {
      std::size_t end = path.find(':', start);
      if (end == std::string::npos) end = path.size();
      if (end > start) dirs.push_back(path.substr(start, end - start));
      start = end + 1;
    }
  }
  for (const char* d : {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                        "/usr/local/nvidia/lib64", "/usr/local/nvidia/lib"})
    dirs.emplace_back(d);
  for (const std::string& d : dirs) {
    const std::string file = d + "/libnvidia-opencl.so.1";
    struct stat st {};
    if (stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return file;
  }
  return "";
}

// Where the machine has NVIDIA's OpenCL driver but the loader lists no NVIDIA platform (no ICD file names the
// library, as on GPU machines whose driver came without /etc/OpenCL/vendors/nvidia.icd): what to do; else "".
std::string nvidia_unlisted_note() {
  const std::string lib = nvidia_opencl_driver();
  if (lib.empty()) return "";
  return "NVIDIA's OpenCL driver " + lib + " is installed but no ICD file names it, so its GPUs are not listed: "
         "write its name to /etc/OpenCL/vendors/nvidia.icd (echo libnvidia-opencl.so.1 > "
         "/etc/OpenCL/vendors/nvidia.icd, as root), or to a .icd file in a directory named by OCL_ICD_VENDORS";
}

}  // namespace

std::vector<std::pair<DeviceInfo, BackendFactory>> enumerate_opencl() {
  std::vector<std::pair<DeviceInfo, BackendFactory>> out;
  if (const std::string fault = icd_file_fault(); !fault.empty()) {
    g_status = "OpenCL not loaded: " + fault + "; remove or repair that file";
    warn(g_status);
    return out;
  }
  if (const std::string why = opencl::loader_error(); !why.empty()) {
    const bool asked = why.rfind("HETNN_OPENCL_LIBRARY is 'none'", 0) == 0;
    g_status = "OpenCL not loaded: " + why +
               (asked ? " (unset it to look for an ICD loader)"
                      : "; install an ICD loader (Debian/Ubuntu: ocl-icd-libopencl1) and a driver (pocl-opencl-icd "
                        "for the CPU, a GPU vendor's), or name the loader in HETNN_OPENCL_LIBRARY");
    return out;
  }
  cl_uint np = 0;
  cl_int st = clGetPlatformIDs(0, nullptr, &np);
  if (st != CL_SUCCESS || np == 0) {
    const std::string nvidia = nvidia_unlisted_note();
    g_status = st == CL_SUCCESS || st == -1001
                   ? (nvidia.empty() ? "no OpenCL platform found (install an ICD, e.g. Debian's pocl-opencl-icd)"
                                     : "no OpenCL platform found: " + nvidia)
                   : std::string("clGetPlatformIDs failed: ") + opencl::status_name(st);
    return out;
  }
  std::vector<cl_platform_id> platforms(np);
  clGetPlatformIDs(np, platforms.data(), nullptr);
  int ordinal = 0;
  std::vector<cl_platform_id> empty;  // platforms that list no device (said even when others do)
  std::string unlinkable;  // PoCL links each kernel with the system's ld (through clang's driver) and aborts the
                           // process building one when ld is not on PATH: its devices are not offered then
  bool nvidia_listed = false;
  for (cl_uint p = 0; p < np; ++p) {
    nvidia_listed |= platform_string(platforms[p], CL_PLATFORM_NAME).find("NVIDIA") != std::string::npos ||
                     platform_string(platforms[p], CL_PLATFORM_VENDOR).find("NVIDIA") != std::string::npos;
    if (platform_string(platforms[p], CL_PLATFORM_NAME).find("Portable Computing Language") != std::string::npos &&
        !on_path("ld")) {
      unlinkable = "PoCL's devices are left out: PoCL links every kernel with 'ld' (binutils), which is not on "
                   "PATH, and would abort the process building one; put ld's directory (e.g. /usr/bin) on PATH";
      continue;
    }
    cl_uint nd = 0;
    if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) {
      empty.push_back(platforms[p]);
      continue;
    }
    std::vector<cl_device_id> devs(nd);
    clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, nd, devs.data(), nullptr);
    for (cl_uint d = 0; d < nd; ++d) {
      cl_device_id dev = devs[d];
      DeviceInfo i;
      i.id = "opencl:" + std::to_string(p) + ":" + std::to_string(d);
      i.kind = "opencl";
      const auto type = device_value<cl_device_type>(dev, CL_DEVICE_TYPE);
      i.type = type & CL_DEVICE_TYPE_GPU ? "gpu"
               : type & CL_DEVICE_TYPE_CPU ? "cpu"
               : type & CL_DEVICE_TYPE_ACCELERATOR ? "accelerator"
                                                   : "other";
      i.name = device_string(dev, CL_DEVICE_NAME);
      i.vendor = device_string(dev, CL_DEVICE_VENDOR);
      i.driver_version = device_string(dev, CL_DRIVER_VERSION);
      i.version = device_string(dev, CL_DEVICE_VERSION);
      i.platform = platform_string(platforms[p], CL_PLATFORM_NAME);
      i.platform_version = platform_string(platforms[p], CL_PLATFORM_VERSION);
      i.platform_index = static_cast<int>(p);
      i.device_index = static_cast<int>(d);
      i.ordinal = ordinal++;
      i.compute_units = static_cast<int>(device_value<cl_uint>(dev, CL_DEVICE_MAX_COMPUTE_UNITS));
      i.clock_mhz = static_cast<int>(device_value<cl_uint>(dev, CL_DEVICE_MAX_CLOCK_FREQUENCY));
      i.global_mem = device_value<cl_ulong>(dev, CL_DEVICE_GLOBAL_MEM_SIZE);
      i.local_mem = device_value<cl_ulong>(dev, CL_DEVICE_LOCAL_MEM_SIZE);
      i.max_alloc = device_value<cl_ulong>(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
      i.cache_size = device_value<cl_ulong>(dev, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE);
      i.max_work_group_size = device_value<std::size_t>(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE);
      i.extensions = device_string(dev, CL_DEVICE_EXTENSIONS);
      i.arch = device_arch(dev, i.name, i.extensions);
      i.fp64 = has_extension(i.extensions, "cl_khr_fp64") || device_value<cl_ulong>(dev, CL_DEVICE_DOUBLE_FP_CONFIG) != 0;
      i.fp16 = has_extension(i.extensions, "cl_khr_fp16");
      // hetnn's kernels load 16-bit storage into float (vload_half, bit shifts) and compute in float32, except the
      // matrix products of NVIDIA GPUs of compute capability 7.5+ (float16; 8.0+ for bfloat16 and tf32), decided by a
      // probe on first use (gemm_mma_cl.cpp; Device.float16_mode gives the verdict).
      const int sm = i.vendor.find("NVIDIA") != std::string::npos && i.arch.rfind("sm_", 0) == 0
                         ? std::atoi(i.arch.c_str() + 3) : 0;  // float16 from sm_75, bfloat16 and tf32 from sm_80
      const auto maybe = [&](int need) {
        return sm >= need ? std::string("tensor cores if a probe product passes on first use, else ") : std::string();
      };
      i.f16_mode = maybe(75) + "converted (vload_half)";
      i.bf16_mode = maybe(80) + "converted (bit shifts)";
      i.tf32_mode = maybe(80) + "float32 (exact)";
      const cl_platform_id plat = platforms[p];
      out.emplace_back(i, [plat, dev, i] { return std::unique_ptr<Backend>(new opencl::ClBackend(plat, dev, i)); });
    }
  }
  if (!empty.empty()) {
    bool pocl = false;
    std::string names;
    for (cl_platform_id p : empty) {
      const std::string name = platform_string(p, CL_PLATFORM_NAME);
      pocl |= name.find("Portable") != std::string::npos;
      names += (names.empty() ? "'" : ", '") + name + "'";
    }
    g_status = out.empty() ? "OpenCL platforms exist but list no device"
                           : "platform " + names + " lists no device";
    const std::string dir = pocl_cache_dir();
    if (pocl && !dir.empty() && !creatable(dir))
      g_status += "; PoCL lists no device when it cannot write its kernel cache, and " + dir +
                  " cannot be written: set POCL_CACHE_DIR (or XDG_CACHE_HOME, HOME) to a writable directory";
  }
  if (!unlinkable.empty()) g_status = g_status.empty() ? unlinkable : g_status + "; " + unlinkable;
  if (!nvidia_listed) {
    const std::string nvidia = nvidia_unlisted_note();
    if (!nvidia.empty()) g_status = g_status.empty() ? nvidia : g_status + "; " + nvidia;
  }
  return out;
}

}  // namespace hetnn
