// float16 / bfloat16 GEMMs, and float32 ones as tf32 (precision "high"), on matrix units (kernels/gemm_mma.cl):
// the launch, and the probe that decides per device and type whether the instruction is used. A device gets the
// matrix-unit path only if the probe GEMM builds with the instruction and computes a known result exactly;
// otherwise the converted path (float32 arithmetic on 16-bit storage) or, for tf32, exact float32 runs and
// precision_mode() says why.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <sstream>
#include <thread>
#include <vector>

#include "backend/opencl/cl_args.h"
#include "backend/opencl/cl_backend.h"
#include "backend/opencl/cl_check.h"
#include "backend/opencl/program_cache.h"
#include "core/cache_dir.h"
#include "core/half.h"
#include "core/errors.h"

namespace hetnn::opencl {

void ClBackend::matmul_mma(const GemmParams& p, const MatmulDesc& d, cl_mem a, cl_mem b, cl_mem c, cl_mem bias,
                           bool ptx, const Conv2dDesc* conv, bool weight_grad) {
  if (weight_grad && (!conv || d.trans_a || !d.trans_b || d.batch != 1))
    throw Error("the matrix-unit weight gradient needs its own GEMM layout (a defect of hetnn)");
  if (p.wg && conv) throw Error("the warpgroup member has no convolution loaders (a defect of hetnn)");
  // 16-byte global loads along an operand's contiguous dimension when it is a multiple of a vector's values (8, or 4
  // for float32): every row then starts 16-byte aligned, and a vector lies wholly inside or outside the matrix.
  const bool tf32 = d.allow_tf32 && d.dtype == DType::f32;
  const std::int64_t per_vec = tf32 ? 4 : 8;
  // the weight gradient's A rows run over images: a vector stays inside one when OH*OW is a multiple of its values
  const bool va = (weight_grad ? conv->OH * conv->OW : d.trans_a ? d.M : d.K) % per_vec == 0;
  const bool vb = !conv && (d.trans_b ? d.K : d.N) % per_vec == 0;  // conv: B gathered element by element
  // The weight gradient's long K in slices, each summed in float32 into a slice of a work buffer, the slices added
  // by gemm_split_reduce and rounded once to the data type.
  const std::int64_t tiles = ((d.M + p.ts_m - 1) / p.ts_m) * ((d.N + p.ts_n - 1) / p.ts_n);
  const auto [chunk, splits] = gemm_k_chunk(
      d.K, weight_grad ? gemm_k_splits(tiles, d.K, p.ts_k, info_.compute_units, d.M * d.N, 4) : 1, p.ts_k);
  const bool parts = splits > 1;
  // out_f32 (and the slices): C and bias float32 (the float32 build), the 16-bit inputs named apart for the
  // emulation's conversion
  const std::string in16 = d.dtype == DType::bf16 ? " -DIN_BF16=1" : " -DIN_HALF=1";
  const std::string k8 = d.dtype == DType::f16 && mma_k8() ? " -DMMA_K8=1" : "";
  const bool f32_out = d.out_f32 || (parts && !tf32);
  const std::string opts = (f32_out ? common_options(DType::f32) + in16 : common_options(d.dtype)) +
                           (tf32 ? " -DMMA_TF32=1 " : " ") + p.defines() + k8 +
                           " -DTRANS_A=" + std::to_string(d.trans_a) +
                           " -DTRANS_B=" + std::to_string(d.trans_b) + " -DVA=" + (va ? "1" : "0") +
                           " -DVB=" + (vb ? "1" : "0") +
                           " -DMMA_PTX=" + (ptx && (!p.wg || warpgroup_units(gemm_type(d))) ? "1" : "0") +
                           (conv ? std::string(weight_grad ? " -DCONV_WG=1" : " -DCONV_B=1") + " -DKH=" +
                                       std::to_string(conv->kh) + " -DKW=" + std::to_string(conv->kw)
                                 : "");
  cl_kernel k = kernel("gemm_mma.cl", "gemm_mma", opts);
  const cl_int M = static_cast<cl_int>(d.M), N = static_cast<cl_int>(d.N), K = static_cast<cl_int>(d.K);
  const cl_long sa = d.batch_a == 1 ? 0 : d.M * d.K;
  const cl_long sb = d.batch_b == 1 ? 0 : conv ? conv->C * conv->H * conv->W : d.K * d.N;  // conv: an input image
  const cl_int has_bias = d.has_bias ? (conv ? 2 : 1) : 0;  // conv: a bias per output channel, a row of C
  cl_mem out = parts ? scratch(2, static_cast<std::size_t>(splits * d.M * d.N) * 4) : c;
  ArgSetter set{k, "gemm_mma"};
  set(M)(N)(K);
  if (parts)
    set.real(1.0, DType::f32).real(0.0, DType::f32);  // raw sums: the reduction applies alpha, beta, bias, act
  else
    set.real(d.alpha, d.dtype).real(d.beta, d.dtype);
  set(a)(sa)(b)(sb)(out)(bias)(parts ? cl_int{0} : has_bias)(parts ? cl_int{0} : static_cast<cl_int>(d.act));
  set(static_cast<cl_int>(chunk))(static_cast<cl_int>(splits));
  if (conv) {
    set(static_cast<cl_int>(conv->C))(static_cast<cl_int>(conv->H))(static_cast<cl_int>(conv->W));
    set(static_cast<cl_int>(conv->OW))(cl_int{conv->sh})(cl_int{conv->sw})(cl_int{conv->ph})(cl_int{conv->pw});
    set(cl_int{conv->dh})(cl_int{conv->dw});
    if (weight_grad) set(static_cast<cl_int>(conv->OH * conv->OW));
  }
  const std::size_t local[3] = {static_cast<std::size_t>(p.mma_items()), 1, 1};
  const std::size_t global[3] = {static_cast<std::size_t>((d.N + p.ts_n - 1) / p.ts_n) * local[0],
                                 static_cast<std::size_t>((d.M + p.ts_m - 1) / p.ts_m),
                                 static_cast<std::size_t>(weight_grad ? splits : d.batch)};
  enqueue("matmul", k, 3, global, local);
  if (parts) split_reduce(d, splits, out, c, bias, has_bias, true);
}

namespace {
int sm_version(const std::string& arch) {  // "sm_90" -> 90; 0 when not an NVIDIA compute capability
  if (arch.rfind("sm_", 0) != 0) return 0;
  return std::atoi(arch.c_str() + 3);
}
}  // namespace

bool ClBackend::mma_k8() const {
  // sm_75 has float16's m16n8k8 only; HETNN_MMA_K8=1 takes that form on newer GPUs too (the GPU sessions check it
  // on an sm_90)
  const char* env = std::getenv("HETNN_MMA_K8");
  const int sm = sm_version(info_.arch);
  return (sm >= 75 && sm < 80) || (env && std::string(env) == "1");
}

std::string ClBackend::probe_matrix_units(GemmType t, bool wg) {
  const char* env = std::getenv("HETNN_MATRIX_UNITS");
  const std::string setting = env ? env : "";
  if (setting == "0") return "turned off (HETNN_MATRIX_UNITS=0)";
  // wgmma is sm_90a's alone (not sm_100 and later, whose matrix instructions differ)
  if (wg && setting != "probe" && sm_version(info_.arch) != 90)
    return "the warpgroup instruction (wgmma) is compute capability 9.0's alone, the device reports '" + info_.arch +
           "'";
  if (setting != "probe") {  // "probe": on any device (tests: the build fails off NVIDIA, and says so)
    if (info_.vendor.find("NVIDIA") == std::string::npos)
      return "hetnn drives matrix units on NVIDIA GPUs only (mma.sync)";
    const int need = t.dtype == DType::f16 && !t.tf32 ? 75 : 80;  // bfloat16 and tf32 came with sm_80
    if (sm_version(info_.arch) < need)
      return "needs compute capability " + std::to_string(need / 10) + "." + std::to_string(need % 10) +
             " or newer for " + t.name() + ", the device reports '" + info_.arch + "'";
  }
  // The verdict is kept in the cache per device, driver, dtype and kernel source. "pending <host> <pid>" is written
  // before the probe runs: a probe that took its process down (a driver crash) is not retried by every later
  // process, and processes starting together wait for the one probing.
  const auto dir = cache_dir("matrix_units");
  const std::string path =
      dir ? *dir + "/" + hex64(fnv1a(kernel_source("gemm_mma.cl"), fnv1a(device_identity(info_) + '\n' +
                                                                           t.name() + (mma_k8() ? " k8" : "") +
                                                                           (wg ? " wgmma" : "")))) +
                 ".txt"
          : "";
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  const std::string mine = "pending " + std::string(host) + " " + std::to_string(getpid()) + "\n";
  for (int waited_ms = 0; dir; waited_ms += 50) {
    const auto seen = read_file(path, 4096);
    if (!seen) break;
    if (*seen == "ok\n") return "";
    if (seen->rfind("no\n", 0) == 0) return seen->substr(3);
    std::istringstream in(*seen);
    std::string word, who;
    long pid = 0;
    in >> word >> who >> pid;
    const bool running = word == "pending" && who == host && pid > 0 && pid != getpid() &&
                         (kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
    if (!running || waited_ms >= 120000)
      return "its probe did not finish in an earlier process (crashed or stopped); delete " + path +
             " to probe again";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // another process is probing
  }
  if (dir) write_file_atomic(path, mine);
  std::string why = run_matrix_unit_probe(t, wg);
  if (dir) write_file_atomic(path, why.empty() ? "ok\n" : "no\n" + why);
  return why;
}

std::string ClBackend::run_matrix_unit_probe(GemmType t, bool wg) {
  // 64 x 64 x 64 with integers in [-3, 3]: every product and sum is exact in float32 (and in tf32's inputs), and
  // every result (|c| <= 576) is exact in float16 and float32; bfloat16 keeps 8 significant bits, so the data are
  // scaled to keep |c| <= 256 exact there.
  const int n = 64, lim = t.dtype == DType::bf16 ? 2 : 3;
  const std::size_t width = t.dtype == DType::f32 ? 4 : 2;
  std::vector<int> ia(n * n), ib(n * n);
  std::uint32_t s = 12345u;
  auto next = [&] { s = s * 1664525u + 1013904223u; return static_cast<int>((s >> 16) % (2 * lim + 1)) - lim; };
  for (int i = 0; i < n * n; ++i) ia[i] = next(), ib[i] = next();
  // the values' bits in the storage type (small integers are exact in each: bfloat16 is a float's top half)
  auto bits = [&](int v) -> std::uint32_t {
    const float f = static_cast<float>(v);
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    return t.dtype == DType::f16 ? float_to_half_bits(f) : t.dtype == DType::bf16 ? u >> 16 : u;
  };
  auto value = [&](std::uint32_t h) -> float {
    if (t.dtype == DType::f16) return half_bits_to_float(static_cast<std::uint16_t>(h));
    const std::uint32_t u = t.dtype == DType::bf16 ? h << 16 : h;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  const std::size_t bytes = static_cast<std::size_t>(n) * n * width;
  std::vector<unsigned char> ha(bytes), hb(bytes), hc(bytes, 0xff);
  for (int i = 0; i < n * n; ++i) {
    const std::uint32_t x = bits(ia[i]), y = bits(ib[i]);
    std::memcpy(ha.data() + i * width, &x, width);  // little-endian: the low bytes are the 16-bit value
    std::memcpy(hb.data() + i * width, &y, width);
  }
  cl_int st = CL_SUCCESS;
  Mem ma(clCreateBuffer(context_.get(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, ha.data(), &st));
  if (st != CL_SUCCESS) throw_cl_error(st, "clCreateBuffer(matrix-unit probe)");
  Mem mb(clCreateBuffer(context_.get(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, hb.data(), &st));
  if (st != CL_SUCCESS) throw_cl_error(st, "clCreateBuffer(matrix-unit probe)");
  Mem mc(clCreateBuffer(context_.get(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, hc.data(), &st));
  if (st != CL_SUCCESS) throw_cl_error(st, "clCreateBuffer(matrix-unit probe)");
  MatmulDesc d;
  d.M = d.N = d.K = n;
  d.dtype = t.dtype;
  d.allow_tf32 = t.tf32;
  try {
    // wg: two slices through a ring of three, one m64n64k16 step of each operand layout's transpose immediates
    // as the database's members use them (A K-major, B M/N-major)
    matmul_mma(GemmParams::parse(wg ? "family=mma ts_m=64 ts_n=64 ts_k=32 wm=1 wn=1 st=3 wg=1"
                                    : "family=mma ts_m=32 ts_n=32 ts_k=32 wm=2 wn=2"),
               d, ma.get(), mb.get(), mc.get(), mc.get(), true);
    read_mem(mc.get(), 0, bytes, hc.data());
  } catch (const OutOfMemory&) {
    throw;
  } catch (const Error& e) {
    const std::string why = e.what();
    return "the probe GEMM failed: " + why.substr(0, why.find('\n'));
  }
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      int ref = 0;
      for (int k = 0; k < n; ++k) ref += ia[i * n + k] * ib[k * n + j];
      std::uint32_t h = 0;
      std::memcpy(&h, hc.data() + (static_cast<std::size_t>(i) * n + j) * width, width);
      const float v = value(h);  // exact in the data type for every value this probe makes
      if (v != static_cast<float>(ref))
        return "the probe GEMM computed C[" + std::to_string(i) + "][" + std::to_string(j) + "] = " +
               std::to_string(v) + ", expected " + std::to_string(ref);
    }
  return "";
}

bool ClBackend::warpgroup_units(GemmType t, std::string* why) {
  if (!matrix_units(t, why)) return false;
  if (t.tf32) {
    if (why) *why = "the warpgroup members compute float16 and bfloat16 only";
    return false;
  }
  auto it = warpgroup_units_.find(t);
  if (it == warpgroup_units_.end()) {
    // the probe's own GEMM runs the wg member, whose build asks this question: answered "yes" while it runs, so
    // that it builds the instruction itself (its result decides)
    warpgroup_units_.emplace(t, "");
    std::string verdict;
    try {
      verdict = probe_matrix_units(t, true);
    } catch (...) {
      warpgroup_units_.erase(t);
      throw;
    }
    it = warpgroup_units_.insert_or_assign(t, verdict).first;
  }
  if (why) *why = it->second;
  return it->second.empty();
}

bool ClBackend::matrix_units(GemmType t, std::string* why) {
  if (!t.matrix_units_possible()) {
    if (why) *why = "matrix units are used for float16, bfloat16 and tf32 only";
    return false;
  }
  auto it = matrix_units_.find(t);
  if (it == matrix_units_.end()) it = matrix_units_.emplace(t, probe_matrix_units(t)).first;
  if (why) *why = it->second;
  return it->second.empty();
}

std::string ClBackend::precision_mode(GemmType t) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string why;
  if (t.tf32) {
    if (matrix_units(t, &why)) return "tensor cores (mma.sync m16n8k8 tf32, float32 accumulation)";
    return "float32 (exact); tensor cores unused: " + why;
  }
  if (t.dtype != DType::f16 && t.dtype != DType::bf16) return "native";
  const char* converted = t.dtype == DType::bf16 ? "converted (bit shifts)" : "converted (vload_half)";
  if (matrix_units(t, &why)) {
    if (t.dtype == DType::f16 && mma_k8()) return "tensor cores (mma.sync m16n8k8, float32 accumulation)";
    // the members with wg=1 take the warpgroup instruction (its probe answers at once off sm_90)
    return warpgroup_units(t) ? "tensor cores (mma.sync m16n8k16 and wgmma m64nNk16, float32 accumulation)"
              : "tensor cores (mma.sync m16n8k16, float32 accumulation)";
  }
  return std::string(converted) + "; tensor cores unused: " + why;
}

}  // namespace hetnn::opencl
