#include "backend/cpu/cpu_gemm_paths.h"

#include <atomic>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/cpu/cpu_backend.h"
#include "core/errors.h"

namespace hetnn {

namespace {

// A shape class: M, N, K each within [lo, hi].
struct Box {
  std::int64_t m_lo, m_hi, n_lo, n_hi, k_lo, k_hi;
  bool holds(std::int64_t M, std::int64_t N, std::int64_t K) const {
    return M >= m_lo && M <= m_hi && N >= n_lo && N <= n_hi && K >= k_lo && K <= k_hi;
  }
};

constexpr std::int64_t kAny = INT64_MAX;

struct Family {
  const char* name;
  bool (*matches)(const std::string& vendor, dnnl_cpu_isa_t isa);
  Box sgemm[4];  // the classes dnnl_sgemm takes: the first `boxes` entries
  int boxes;
};

bool has_isa(dnnl_cpu_isa_t isa, dnnl_cpu_isa_t want) {
  return (static_cast<unsigned>(isa) & static_cast<unsigned>(want)) == static_cast<unsigned>(want);
}

// Intel cores with AVX512-FP16 (Sapphire Rapids, Emerald Rapids: oneDNN's avx512_core_fp16 and the AMX ISAs above
// it). Measured on an Emerald Rapids VM (family 6 model 207, 2 threads, oneDNN 3.2.0), matmul time / sgemm time,
// two runs: 512^3 1.05x, 1.05x; 1024^3 1.06x, 1.06x; 2048^3 1.11x, 1.09x; 49 x 512 x 4608 1.27x, 1.23x and
// 49 x 512 x 2048 1.23x, 1.24x. Left on the matmul primitive: 49 x 2048 x 1024 (0.99x, 1.10x, 0.92x in a third run),
// 64 x 128 x 784 (0.92x, 0.92x) and the other ResNet-50 shapes (0.86-1.09x either way).
bool intel_fp16_cores(const std::string& vendor, dnnl_cpu_isa_t isa) {
  return vendor == "GenuineIntel" && has_isa(isa, dnnl_cpu_isa_avx512_core_fp16);
}

const Family kFamilies[] = {
    {"Intel with AVX512-FP16 (Sapphire/Emerald Rapids)", intel_fp16_cores,
     {{512, kAny, 512, kAny, 512, kAny}, {1, 64, 512, 1024, 512, kAny}}, 2},
};

const Family* this_family() {
  static const Family* family = [] {
    const std::string vendor = cpuinfo_field("vendor_id");
    const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    for (const Family& f : kFamilies)
      if (f.matches(vendor, isa)) return &f;
    return static_cast<const Family*>(nullptr);
  }();
  return family;
}

// 0: the table; 1: always the matmul primitive; 2: always dnnl_sgemm
std::atomic<int> g_forced{0};

std::string box_text(const Box& b) {
  auto range = [](const char* dim, std::int64_t lo, std::int64_t hi) {
    if (lo <= 1 && hi == kAny) return std::string();
    if (hi == kAny) return std::string(dim) + " >= " + std::to_string(lo);
    if (lo <= 1) return std::string(dim) + " <= " + std::to_string(hi);
    return std::to_string(lo) + " <= " + dim + " <= " + std::to_string(hi);
  };
  std::string s;
  for (const std::string& part : {range("M", b.m_lo, b.m_hi), range("N", b.n_lo, b.n_hi), range("K", b.k_lo, b.k_hi)})
    if (!part.empty()) s += (s.empty() ? "" : ", ") + part;
  return s;
}

}  // namespace

CpuGemm cpu_gemm_path(std::int64_t M, std::int64_t N, std::int64_t K) {
  const int forced = g_forced.load(std::memory_order_relaxed);
  if (forced) return forced == 2 ? CpuGemm::sgemm : CpuGemm::matmul;
  const Family* f = this_family();
  if (f)
    for (int i = 0; i < f->boxes; ++i)
      if (f->sgemm[i].holds(M, N, K)) return CpuGemm::sgemm;
  return CpuGemm::matmul;
}

std::string cpu_gemm_rule() {
  const int forced = g_forced.load(std::memory_order_relaxed);
  if (forced) return forced == 2 ? "dnnl_sgemm for every float32 product (forced)" : "matmul primitive (forced)";
  const Family* f = this_family();
  if (!f) return "matmul primitive (no measured exception for this processor)";
  std::string s = std::string("matmul primitive; dnnl_sgemm (") + f->name + ") where ";
  for (int i = 0; i < f->boxes; ++i) s += (i ? " or " : "") + box_text(f->sgemm[i]);
  return s;
}

void force_cpu_gemm_path(const std::string& path) {
  if (path == "auto") g_forced.store(0);
  else if (path == "matmul") g_forced.store(1);
  else if (path == "sgemm") g_forced.store(2);
  else throw ValueError("force_cpu_gemm_path: path must be 'auto', 'matmul' or 'sgemm', got '" + path + "'");
}

}  // namespace hetnn
