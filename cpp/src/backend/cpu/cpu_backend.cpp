#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_gemm_paths.h"
#include "backend/cpu/cpu_loops.h"
#include "backend/cpu/cpu_threads.h"
#include "backend/cpu/half_convert.h"
#include "backend/cpu/host_copy.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <omp.h>
#include <unistd.h>

#include "core/errors.h"

namespace hetnn {

namespace {

class HostBuffer final : public Buffer {
 public:
  // Wrapped memory (owner set): hetnn never frees it.
  HostBuffer(void* p, std::size_t n, std::shared_ptr<void> owner) : Buffer(n), p_(p), owner_(std::move(owner)) {}
  // Pool memory: returned to the pool (which the buffer keeps alive) when the buffer goes.
  HostBuffer(void* p, std::size_t n, std::shared_ptr<HostAllocator> pool, std::size_t capacity)
      : Buffer(n), p_(p), pool_(std::move(pool)), capacity_(capacity) {}
  ~HostBuffer() override {
    if (pool_) pool_->release(p_, capacity_);
  }
  void* host_ptr() const override { return p_; }

 private:
  void* p_;
  std::shared_ptr<void> owner_;
  std::shared_ptr<HostAllocator> pool_;
  std::size_t capacity_ = 0;
};

char* ptr(const Buffer& b) { return static_cast<char*>(b.host_ptr()); }

// Read once: sysconf(_SC_PHYS_PAGES) is a sysinfo() system call, and every allocation asks (it was a third of a
// small element-wise op's time).
std::uint64_t physical_memory() {
  static const std::uint64_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
  }();
  return bytes;
}

dnnl::memory::data_type dnnl_type(DType t) {
  switch (t) {
    case DType::f32: return dnnl::memory::data_type::f32;
    case DType::f16: return dnnl::memory::data_type::f16;
    case DType::bf16: return dnnl::memory::data_type::bf16;
    default: throw TypeError(std::string("oneDNN: unsupported dtype ") + dtype_name(t));
  }
}

}  // namespace

CpuBackend::CpuBackend()
    : engine_(dnnl::engine::kind::cpu, 0),
      // Cache freed blocks up to 1/8 of the machine's memory (at most 4 GiB).
      pool_(std::make_shared<HostAllocator>(
          static_cast<std::size_t>(std::min<std::uint64_t>(physical_memory() / 8, std::uint64_t{4} << 30)))) {}

std::size_t CpuBackend::release_cached_memory() {
  const std::size_t n = pool_->cached_bytes();
  pool_->trim();
  return n;
}

std::shared_ptr<Buffer> CpuBackend::alloc(std::size_t nbytes) {
  const std::uint64_t phys = physical_memory();
  if (phys && nbytes > phys)
    throw OutOfMemory("cannot allocate " + std::to_string(nbytes) + " bytes on cpu: the machine has " +
                      std::to_string(phys) + " bytes of memory");
  std::size_t capacity = 0;
  void* p = pool_->acquire(nbytes, &capacity);
  if (!p) {
    const std::uint64_t avail = available_memory();
    throw OutOfMemory("cannot allocate " + std::to_string(nbytes) + " bytes on cpu" +
                      (avail ? ": the machine has " + std::to_string(avail) + " bytes available now (of " +
                                   std::to_string(phys) + "); free arrays you no longer need"
                             : std::string()));
  }
  return std::make_shared<HostBuffer>(p, nbytes, pool_, capacity);
}

std::shared_ptr<Buffer> CpuBackend::wrap_host(void* p, std::size_t nbytes, std::shared_ptr<void> owner) {
  if (!owner) owner = std::shared_ptr<void>(p, [](void*) {});
  return std::make_shared<HostBuffer>(p, nbytes, std::move(owner));
}

void CpuBackend::write(Buffer& dst, std::size_t off, const void* src, std::size_t n) {
  timed("h2d", n, [&] { host_copy(ptr(dst) + off, src, n); }, host_copy_parallel(n));
}
void CpuBackend::read(const Buffer& src, std::size_t off, void* dst, std::size_t n) {
  timed("d2h", n, [&] { host_copy(dst, ptr(src) + off, n); }, host_copy_parallel(n));
}
void CpuBackend::copy(const Buffer& src, std::size_t so, Buffer& dst, std::size_t d_off, std::size_t n) {
  char* d = ptr(dst) + d_off;
  const char* s = ptr(src) + so;
  const auto di = reinterpret_cast<std::uintptr_t>(d), si = reinterpret_cast<std::uintptr_t>(s);
  if (di < si + n && si < di + n) {  // overlapping ranges of one buffer
    timed("d2d", n, [&] { std::memmove(d, s, n); }, false);
    return;
  }
  timed("d2d", n, [&] { host_copy(d, s, n); }, host_copy_parallel(n));
}
void CpuBackend::fill(Buffer& dst, std::size_t off, std::size_t n, unsigned char value) {
  timed("fill", n, [&] { host_fill(ptr(dst) + off, value, n); }, host_copy_parallel(n));
}
void CpuBackend::synchronize() {}  // every CPU command completes before it returns

namespace {

// ReLU runs as ELU with alpha = 0 (x > 0 ? x : 0 * (exp(x) - 1)): oneDNN's eltwise_relu maps NaN to 0, while hetnn
// follows PyTorch/NumPy and propagates NaN; the ELU form does, at the cost of an exp in the epilogue.
dnnl::algorithm eltwise_algorithm(Activation a) {
  switch (a) {
    case Activation::relu: return dnnl::algorithm::eltwise_elu;
    case Activation::sigmoid: return dnnl::algorithm::eltwise_logistic;
    default: return dnnl::algorithm::eltwise_tanh;
  }
}

// Element i of a float32 / float16 / bfloat16 array as float, and back (rounded to nearest even).
float load_elem(const void* p, std::int64_t i, DType t) {
  float v;
  widen_to_f32(t, static_cast<const char*>(p) + i * dtype_size(t), &v, 1);
  return v;
}

void store_elem(void* p, std::int64_t i, DType t, float v) {
  narrow_from_f32(t, &v, static_cast<char*>(p) + i * dtype_size(t), 1);
}

// C[i, :] = act(C[i, :] + bias) on the host, for the paths oneDNN does not run.
template <class T>
void host_epilogue(const MatmulDesc& d, T* C, const T* bias) {
  if (!bias && d.act == Activation::none) return;
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < d.M; ++i)
    for (std::int64_t j = 0; j < d.N; ++j) {
      T v = C[i * d.N + j];
      if (bias) v += bias[j];
      C[i * d.N + j] = activate(v, d.act);
    }
}

}  // namespace

Backend::FirstUseStats CpuBackend::first_use_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return first_use_;
}

std::size_t CpuBackend::KeyHash::operator()(const std::array<std::int64_t, 14>& k) const noexcept {
  std::size_t h = 1469598103934665603ULL;
  for (std::int64_t v : k) h = (h ^ static_cast<std::size_t>(v)) * 1099511628211ULL;
  return h;
}

std::shared_ptr<const CpuBackend::MatmulEntry> CpuBackend::matmul_entry(const MatmulDesc& d) {
  std::int64_t beta_bits = 0;
  static_assert(sizeof(double) == sizeof(std::int64_t));
  std::memcpy(&beta_bits, &d.beta, sizeof beta_bits);
  const std::array<std::int64_t, 14> key{d.batch, d.batch_a, d.batch_b, d.M, d.N, d.K, d.trans_a * 2 + d.trans_b,
                                         static_cast<std::int64_t>(d.dtype), d.out_f32, d.alpha != 1.0, beta_bits,
                                         d.has_bias, static_cast<std::int64_t>(d.act),
                                         // oneDNN fixes a primitive's thread count when it is created
                                         static_cast<std::int64_t>(omp_get_max_threads())};
  std::lock_guard<std::mutex> lock(mu_);
  auto it = matmul_cache_.find(key);
  if (it != matmul_cache_.end()) {
    it->second->last_use = ++matmul_clock_;
    ++first_use_.memory_hits;
    return it->second;
  }
  const auto t0 = std::chrono::steady_clock::now();

  // Plain 2-D descriptors when nothing is batched (oneDNN picks its best kernels for them), 3-D otherwise.
  using dims = dnnl::memory::dims;
  const bool flat = d.batch == 1 && d.batch_a == 1 && d.batch_b == 1;
  const auto in_type = dnnl_type(d.dtype);
  auto md = [&](std::int64_t batch, std::int64_t rows, std::int64_t cols, bool trans,
                dnnl::memory::data_type dt) {
    const dims strides2 = trans ? dims{1, rows} : dims{cols, 1};
    if (flat) return dnnl::memory::desc({rows, cols}, dt, strides2);
    return dnnl::memory::desc({batch, rows, cols}, dt, dims{rows * cols, strides2[0], strides2[1]});
  };
  auto entry = std::make_shared<MatmulEntry>();
  MatmulEntry& e = *entry;
  e.a = md(d.batch_a, d.M, d.K, d.trans_a, in_type);
  e.b = md(d.batch_b, d.K, d.N, d.trans_b, in_type);
  const auto ct = dnnl_type(matmul_out_dtype(d));  // the result's and the bias's type
  e.c = md(d.batch, d.M, d.N, false, ct);
  if (d.has_bias) e.bias = flat ? dnnl::memory::desc({1, d.N}, ct, dims{d.N, 1})
                                : dnnl::memory::desc({1, 1, d.N}, ct, dims{d.N, d.N, 1});
  dnnl::primitive_attr attr;
  if (d.alpha != 1.0) attr.set_scales_mask(DNNL_ARG_WEIGHTS, 0);
  dnnl::post_ops po;  // dst = act(alpha * A@B + bias + beta * dst)
  if (d.beta != 0.0) po.append_sum(static_cast<float>(d.beta));
  if (d.act != Activation::none) po.append_eltwise(eltwise_algorithm(d.act), 0.f, 0.f);
  attr.set_post_ops(po);
  // oneDNN's library scratchpad is shared by all primitives (this build has no DNNL_ENABLE_CONCURRENT_EXEC): two
  // threads running matmuls at once raced on it and trained to different weights. Each call brings its own.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  auto pd = d.has_bias ? dnnl::matmul::primitive_desc(engine_, e.a, e.b, e.bias, e.c, attr)
                       : dnnl::matmul::primitive_desc(engine_, e.a, e.b, e.c, attr);
  e.prim = dnnl::matmul(pd);
  e.scratch = pd.scratchpad_desc();
  const char* impl = pd.impl_info_str();
  e.reference = impl && std::strncmp(impl, "ref", 3) == 0;
  e.id = e.last_use = ++matmul_clock_;
  if (matmul_cache_.size() >= kMatmulCacheEntries) {  // evict the least recently used (callers hold their own ref)
    auto oldest = matmul_cache_.begin();
    for (auto j = matmul_cache_.begin(); j != matmul_cache_.end(); ++j)
      if (j->second->last_use < oldest->second->last_use) oldest = j;
    matmul_cache_.erase(oldest);
  }
  matmul_cache_.emplace(key, entry);
  ++first_use_.built;  // oneDNN JIT-generates the kernel when the primitive is created
  first_use_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return entry;
}

void CpuBackend::matmul(const MatmulDesc& d, const Buffer& a, const Buffer& b, Buffer& c, const Buffer* bias) {
  cpu_threads::apply();
  timed("matmul", 0, [&] {
    if (d.K == 0 || d.dtype == DType::f64) {  // own path: f64, and C = beta*C when there is nothing to sum
      for (std::int64_t i = 0; i < d.batch; ++i) {
        const std::int64_t ia = d.batch_a == 1 ? 0 : i, ib = d.batch_b == 1 ? 0 : i;
        if (d.dtype == DType::f64) {
          const auto* A = reinterpret_cast<const double*>(ptr(a)) + ia * d.M * d.K;
          const auto* B = reinterpret_cast<const double*>(ptr(b)) + ib * d.K * d.N;
          auto* C = reinterpret_cast<double*>(ptr(c)) + i * d.M * d.N;
          gemm_f64(d.M, d.N, d.K, d.alpha, A, d.trans_a ? 1 : d.K, d.trans_a ? d.M : 1, B, d.trans_b ? 1 : d.N,
                   d.trans_b ? d.K : 1, d.beta, C, d.N);
          host_epilogue(d, C, bias ? reinterpret_cast<const double*>(ptr(*bias)) : nullptr);
        } else {  // K == 0 in float32/16, bfloat16: C = act(beta * C + bias)
          const DType ct = matmul_out_dtype(d);
          char* C = ptr(c) + i * d.M * d.N * dtype_size(ct);
          const float beta = static_cast<float>(d.beta);
          for (std::int64_t m = 0; m < d.M; ++m)
            for (std::int64_t n = 0; n < d.N; ++n) {
              const std::int64_t j = m * d.N + n;
              float v = beta == 0.0f ? 0.0f : beta * load_elem(C, j, ct);
              if (bias) v += load_elem(ptr(*bias), n, ct);
              store_elem(C, j, ct, activate(v, d.act));
            }
        }
      }
      return;
    }
    // 16-bit products convert where oneDNN has no kernel for the type, or only its reference loop for this
    // combination: float16 with transposed weights and a bias (a Dense layer's forward) ran 'ref:any' on an
    // Emerald Rapids Xeon, 10.6 ms for 64 x 120 x 84 (converted: microseconds), and a LeNet float16 epoch took 61 s
    // against float32's 1.8.
    if ((d.dtype == DType::f16 || d.dtype == DType::bf16) && (!native_matmul(d.dtype) || matmul_entry(d)->reference)) {
      matmul_converted(d, a.host_ptr(), b.host_ptr(), c.host_ptr(), bias ? bias->host_ptr() : nullptr);
      return;
    }
    run_matmul(d, a.host_ptr(), b.host_ptr(), c.host_ptr(), bias ? bias->host_ptr() : nullptr);
  });
}

// float16 / bfloat16 where oneDNN has no kernel for this processor: the operands widened to float32 work areas, a
// float32 product (float32 accumulation, as oneDNN's native 16-bit kernels do), the result rounded back once (a
// float32 result, out_f32, is the product's own).
void CpuBackend::matmul_converted(const MatmulDesc& d, const void* a, const void* b, void* c, const void* bias) {
  const std::int64_t na = d.batch_a * d.M * d.K, nb = d.batch_b * d.K * d.N, nc = d.batch * d.M * d.N;
  F32Scratch a32(*pool_, na, d.dtype, a), b32(*pool_, nb, d.dtype, b);
  MatmulDesc d32 = d;
  d32.dtype = DType::f32;
  d32.out_f32 = false;
  if (d.out_f32) {
    run_matmul(d32, a32.data(), b32.data(), c, bias);
    return;
  }
  F32Scratch c32(*pool_, nc), bias32(*pool_, bias ? d.N : 1);
  if (d.beta != 0.0) widen_to_f32_parallel(d.dtype, c, c32.data(), nc);
  if (bias) widen_to_f32(d.dtype, bias, bias32.data(), d.N);
  run_matmul(d32, a32.data(), b32.data(), c32.data(), bias ? bias32.data() : nullptr);
  narrow_from_f32_parallel(d.dtype, c32.data(), c, nc);
}

void CpuBackend::run_matmul(const MatmulDesc& d, const void* a, const void* b, void* c, const void* bias) {
  if (d.dtype == DType::f32 && d.batch == 1 && d.batch_a == 1 && d.batch_b == 1 &&
      cpu_gemm_path(d.M, d.N, d.K) == CpuGemm::sgemm) {
    // Row-major; beta == 0 does not read C (outputs may hold anything). Bias and activation: one pass after.
    const dnnl_status_t st = dnnl_sgemm(d.trans_a ? 'T' : 'N', d.trans_b ? 'T' : 'N', d.M, d.N, d.K,
                                        static_cast<float>(d.alpha), static_cast<const float*>(a),
                                        d.trans_a ? d.M : d.K, static_cast<const float*>(b), d.trans_b ? d.K : d.N,
                                        static_cast<float>(d.beta), static_cast<float*>(c), d.N);
    if (st != dnnl_success)
      throw Error("matmul: dnnl_sgemm failed with status " + std::to_string(static_cast<int>(st)) + " for " +
                  std::to_string(d.M) + "x" + std::to_string(d.N) + "x" + std::to_string(d.K));
    host_epilogue(d, static_cast<float*>(c), static_cast<const float*>(bias));
    return;
  }
  const std::shared_ptr<const MatmulEntry> entry = matmul_entry(d);  // alive through execute, even if evicted
  const MatmulEntry& e = *entry;
  // The argument memories of each cached primitive, per thread, re-pointed at this call's buffers: creating
  // them per call cost about a third of a small product's 6 us (64x128x10, the backward of a dense layer).
  // Keyed by the entry's unique id (never reused, unlike an address); bounded like the primitive cache.
  struct Args {
    std::unordered_map<int, dnnl::memory> map;
    float alpha = 1.0f;
  };
  thread_local std::unordered_map<std::uint64_t, Args> args_cache;
  if (args_cache.size() >= 2 * kMatmulCacheEntries && !args_cache.count(e.id)) args_cache.clear();
  auto [it, fresh] = args_cache.try_emplace(e.id);
  Args& args = it->second;
  if (fresh) {
    args.map.emplace(DNNL_ARG_SRC, dnnl::memory(e.a, engine_, const_cast<void*>(a)));
    args.map.emplace(DNNL_ARG_WEIGHTS, dnnl::memory(e.b, engine_, const_cast<void*>(b)));
    args.map.emplace(DNNL_ARG_DST, dnnl::memory(e.c, engine_, c));
    if (bias) args.map.emplace(DNNL_ARG_BIAS, dnnl::memory(e.bias, engine_, const_cast<void*>(bias)));
    if (d.alpha != 1.0)
      args.map.emplace(DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS,
                       dnnl::memory({{1}, dnnl::memory::data_type::f32, {1}}, engine_, &args.alpha));
  } else {
    args.map.at(DNNL_ARG_SRC).set_data_handle(const_cast<void*>(a));
    args.map.at(DNNL_ARG_WEIGHTS).set_data_handle(const_cast<void*>(b));
    args.map.at(DNNL_ARG_DST).set_data_handle(c);
    if (bias) args.map.at(DNNL_ARG_BIAS).set_data_handle(const_cast<void*>(bias));
  }
  args.alpha = static_cast<float>(d.alpha);
  // The scratchpad: per thread, grown to the largest a primitive asked for, 64-byte aligned.
  const std::size_t scratch_bytes = e.scratch.get_size();
  if (scratch_bytes) {
    struct Scratch {
      void* p = nullptr;
      std::size_t n = 0;
      ~Scratch() { std::free(p); }
    };
    thread_local Scratch scratch;
    if (scratch.n < scratch_bytes) {
      const std::size_t n = (scratch_bytes + 63) / 64 * 64;
      void* p = std::aligned_alloc(64, n);
      if (!p) throw OutOfMemory("matmul: cannot allocate a " + std::to_string(n) + "-byte oneDNN scratchpad");
      std::free(scratch.p);
      scratch.p = p;
      scratch.n = n;
    }
    auto sp = args.map.find(DNNL_ARG_SCRATCHPAD);
    if (sp == args.map.end())
      args.map.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(e.scratch, engine_, scratch.p));
    else
      sp->second.set_data_handle(scratch.p);
  }
  // One stream per thread: CPU streams are cheap but not free to create, and are not shared across threads.
  thread_local dnnl::stream stream(engine_);
  e.prim.execute(stream, args.map);
  stream.wait();
}

}  // namespace hetnn
