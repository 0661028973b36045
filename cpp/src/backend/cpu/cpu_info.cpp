// The CPU device's description: processor name from /proc/cpuinfo, oneDNN's ISA and thread count.
#include <omp.h>
#include <unistd.h>

#include <atomic>
#include <vector>
#include <string>
#include <cstdlib>
#include <algorithm>
#include <fstream>
#include <thread>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_threads.h"
#include "backend/cpu/half_convert.h"
#include "core/device.h"

namespace hetnn {

std::string cpuinfo_field(const std::string& key) {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key, 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto v = line.substr(colon + 1);
        auto b = v.find_first_not_of(' ');
        return b == std::string::npos ? "" : v.substr(b);
      }
    }
  }
  return "";
}

namespace {

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

// Bytes of cache at `level` (2 or 3) from sysfs: summed over the distinct caches of that level in cpu0's package
// (the per-socket L3 where a socket has several, one per CCD on AMD). 0 where sysfs does not say. glibc's
// sysconf(_SC_LEVEL3_CACHE_SIZE) is not used: it read 320 MiB on an EPYC VM whose L3 is 32 MiB.
std::uint64_t sysfs_cache_bytes(int level, bool per_core) {
  const std::string root = "/sys/devices/system/cpu/";
  const std::string package = read_line(root + "cpu0/topology/physical_package_id");
  std::vector<std::string> seen;  // shared_cpu_list of each counted cache
  std::uint64_t total = 0;
  for (unsigned cpu = 0; cpu < 4096; ++cpu) {
    const std::string dir = root + "cpu" + std::to_string(cpu) + "/";
    if (read_line(dir + "topology/physical_package_id").empty()) {
      if (cpu > 0) break;
      continue;
    }
    if (read_line(dir + "topology/physical_package_id") != package) continue;
    for (int idx = 0; idx < 16; ++idx) {
      const std::string c = dir + "cache/index" + std::to_string(idx) + "/";
      const std::string lv = read_line(c + "level");
      if (lv.empty()) break;
      const std::string type = read_line(c + "type");
      if (std::atoi(lv.c_str()) != level || type == "Instruction") continue;
      const std::string shared = read_line(c + "shared_cpu_list");
      if (std::find(seen.begin(), seen.end(), shared) != seen.end()) continue;
      seen.push_back(shared);
      const std::string size = read_line(c + "size");  // "32768K"
      std::uint64_t bytes = std::strtoull(size.c_str(), nullptr, 10);
      if (size.find('K') != std::string::npos) bytes <<= 10;
      if (size.find('M') != std::string::npos) bytes <<= 20;
      if (per_core) return bytes;
      total += bytes;
    }
  }
  return total;
}

std::string isa_name(dnnl_cpu_isa_t isa) {
  struct Entry {
    dnnl_cpu_isa_t isa;
    const char* name;
  };
  static const Entry kIsas[] = {
      {dnnl_cpu_isa_avx512_core_amx_fp16, "avx512_core_amx_fp16"}, {dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"},
      {dnnl_cpu_isa_avx512_core_fp16, "avx512_core_fp16"},         {dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"},
      {dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"},         {dnnl_cpu_isa_avx512_core, "avx512_core"},
      {dnnl_cpu_isa_avx2_vnni_2, "avx2_vnni_2"},                   {dnnl_cpu_isa_avx2_vnni, "avx2_vnni"},
      {dnnl_cpu_isa_avx2, "avx2"},                                 {dnnl_cpu_isa_avx, "avx"},
      {dnnl_cpu_isa_sse41, "sse41"},
  };
  for (const auto& e : kIsas)
    if ((static_cast<unsigned>(isa) & static_cast<unsigned>(e.isa)) == static_cast<unsigned>(e.isa)) return e.name;
  return "baseline";
}

// The implementation oneDNN picks for a 512^3 matmul in this data type here (as ONEDNN_VERBOSE names it, e.g.
// "brg:avx512_core_amx"), or "" where it has none (bf16/f16 need ISA support). That, not the processor's best ISA,
// says what computes: a Xeon whose AMX multiplies bfloat16 but not float16 runs float16 on its AVX-512 units.
std::string onednn_matmul_impl(dnnl::memory::data_type dt) {
  try {
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::memory::desc md({512, 512}, dt, dnnl::memory::format_tag::ab);
    dnnl::matmul::primitive_desc pd(eng, md, md, md);
    const char* impl = pd.impl_info_str();
    return impl && *impl ? impl : "unnamed";
  } catch (const dnnl::error&) {
    return "";
  }
}

// Asked once per process: the device list and every 16-bit matmul read it.
const std::string& matmul_impl(DType t) {
  static const std::string f16 = onednn_matmul_impl(dnnl::memory::data_type::f16);
  static const std::string bf16 = onednn_matmul_impl(dnnl::memory::data_type::bf16);
  return t == DType::f16 ? f16 : bf16;
}

std::string native_mode(const std::string& impl) {
  const bool amx = impl.find("amx") != std::string::npos;
  return "native (oneDNN " + impl + (amx ? ": AMX matrix units" : "") + ")";
}

std::atomic<bool> g_force_conversion{false};

// Where oneDNN has a native kernel that measured slower than the converted path (operands widened to float32,
// float32's GEMM, one rounding): bfloat16 on Intel cores with AVX512-FP16 whose AMX is absent or hidden, where oneDNN
// 3.2 picks brg:avx512_core_bf16. Emerald Rapids VM (family 6 model 207, AMX not exposed, 2 threads, 2026-11-30,
// interleaved; docs/precision.md): native 0.51-0.56x float32's speed at 512^3-2048^3 and on five
// ResNet-50 shapes (0.67x at 64 x 512 x 128), converted 0.64-0.95x; float16 native (brg:avx512_core_fp16) 0.87-1.04x
// stays. Zen 4's brg:avx512_core_bf16 runs at twice float32 and keeps it.
bool slower_than_converted(DType t, const std::string& impl) {
  static const bool intel_fp16 = cpuinfo_field("vendor_id") == "GenuineIntel" &&
                                 (static_cast<unsigned>(dnnl_get_effective_cpu_isa()) &
                                  static_cast<unsigned>(dnnl_cpu_isa_avx512_core_fp16)) ==
                                     static_cast<unsigned>(dnnl_cpu_isa_avx512_core_fp16);
  return t == DType::bf16 && intel_fp16 && impl == "brg:avx512_core_bf16";
}

}  // namespace

bool native_matmul(DType t) {
  if (t != DType::f16 && t != DType::bf16) return true;
  const std::string& impl = matmul_impl(t);
  return !g_force_conversion.load(std::memory_order_relaxed) && !impl.empty() && !slower_than_converted(t, impl);
}

void force_cpu_half_conversion(bool on) { g_force_conversion.store(on); }

std::uint64_t core_cache_bytes() {
  static const std::uint64_t bytes = [] {
    const std::uint64_t b = sysfs_cache_bytes(2, true);  // closest CPU analogue of local memory: per-core L2
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return b ? b : l2 > 0 ? static_cast<std::uint64_t>(l2) : 0;
  }();
  return bytes;
}

std::uint64_t last_level_cache_bytes() {
  static const std::uint64_t bytes = [] {
    const std::uint64_t b = sysfs_cache_bytes(3, false);
    if (b) return b;
    const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);  // no sysfs (containers that hide it): glibc's figure
    return l3 > 0 ? static_cast<std::uint64_t>(l3) : core_cache_bytes();
  }();
  return bytes;
}

std::vector<std::pair<DeviceInfo, BackendFactory>> enumerate_cpu() {
  DeviceInfo i;
  i.id = "cpu";
  i.kind = "cpu";
  i.type = "cpu";
  i.name = cpuinfo_field("model name");
  if (i.name.empty()) i.name = "CPU";
  i.vendor = cpuinfo_field("vendor_id");
  const dnnl_version_t* v = dnnl_version();
  i.driver_version = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                     std::to_string(v->patch) + " (" + (v->hash ? v->hash : "") + ")";
  i.version = i.driver_version;
  i.platform = "oneDNN";
  i.compute_units = static_cast<int>(std::thread::hardware_concurrency());
  i.threads = cpu_threads::get();
  const double mhz = std::atof(cpuinfo_field("cpu MHz").c_str());
  i.clock_mhz = static_cast<int>(mhz);
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  i.global_mem = pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
  i.max_alloc = i.global_mem;
  i.local_mem = core_cache_bytes();
  i.cache_size = last_level_cache_bytes();
  i.isa = isa_name(dnnl_get_effective_cpu_isa());
  i.fp64 = true;  // own f64 kernels
  // fp16/bf16: oneDNN has native kernels here. Either way the device takes both: without them it stores 16 bits
  // and computes in float32 (converted by F16C, or core/half.h's bit arithmetic).
  const std::string& f16_impl = matmul_impl(DType::f16);
  const std::string& bf16_impl = matmul_impl(DType::bf16);
  i.fp16 = !f16_impl.empty();
  i.bf16 = !bf16_impl.empty();
  i.f16_mode = i.fp16 ? native_mode(f16_impl) : std::string("converted (") + f16_conversion_isa() + ")";
  i.bf16_mode = !i.bf16 ? "converted (bit shifts)"
               : slower_than_converted(DType::bf16, bf16_impl)
                   ? "converted (bit shifts); oneDNN's " + bf16_impl + " measured slower here"
                   : native_mode(bf16_impl);
  // x86 has no TF32 arithmetic (AMX computes bfloat16 and int8; oneDNN's tf32 fpmath mode changed nothing on a Zen 4)
  i.tf32_mode = "float32 (exact); the CPU device has no TF32 arithmetic";
  return {{i, [] { return std::unique_ptr<Backend>(new CpuBackend()); }}};
}

}  // namespace hetnn
