// The CPU device: host memory, oneDNN primitives (cached by shape), own kernels where oneDNN has none.
#pragma once
#include <array>
#include <mutex>
#include <string>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/cpu/blas_pool.h"
#include "backend/backend.h"
#include "backend/extensions.h"
#include "backend/cpu/host_allocator.h"

namespace hetnn {

class CpuBackend final : public Backend, public ConvLayouts {
 public:
  CpuBackend();
  std::shared_ptr<Buffer> alloc(std::size_t nbytes) override;
  std::shared_ptr<Buffer> wrap_host(void* ptr, std::size_t nbytes, std::shared_ptr<void> owner) override;
  void write(Buffer& dst, std::size_t offset, const void* src, std::size_t n) override;
  void read(const Buffer& src, std::size_t offset, void* dst, std::size_t n) override;
  void copy(const Buffer& src, std::size_t src_offset, Buffer& dst, std::size_t dst_offset, std::size_t n) override;
  void fill(Buffer& dst, std::size_t offset, std::size_t n, unsigned char value) override;
  void synchronize() override;
  std::size_t release_cached_memory() override;
  MemoryStats memory_stats() const override { return pool_->stats(); }
  void reset_peak_memory_stats() override { pool_->reset_peak(); }
  FirstUseStats first_use_stats() const override;
  HETNN_BACKEND_OPS(HETNN_OP_OVERRIDE)  // core/ops.h; implemented in <op>_cpu.cpp
  void* extension(const std::string& name) override;

  // ConvLayouts (backend/extensions.h): conv2d_cpu.cpp and layouts_cpu.cpp.
  int conv2d_input_block(const Conv2dDesc& d) override;
  int conv2d_output_block(const Conv2dDesc& d) override;
  void conv2d_blocked(const Conv2dDesc& d, int xb, const Buffer& x, const Buffer& w, const Buffer* bias, int yb,
                      Buffer& y) override;
  void conv2d_backward_data_blocked(const Conv2dDesc& d, int yb, const Buffer& gy, const Buffer& w, int xb,
                                    Buffer& gx) override;
  void conv2d_backward_weights_blocked(const Conv2dDesc& d, int yb, const Buffer& gy, int xb, const Buffer& x,
                                       Buffer& gw, Buffer* gb) override;
  void max_pool2d_blocked(const Pool2dDesc& d, int b, const Buffer& x, Buffer& y, Buffer& idx) override;
  void max_pool2d_backward_blocked(const Pool2dDesc& d, int b, const Buffer& gy, const Buffer& idx,
                                   Buffer& gx) override;
  void reorder_blocked(const std::array<std::int64_t, 4>& shape, int from, const Buffer& x, int to,
                       Buffer& y) override;

 private:
  // Runs `fn` (synchronous host work) and records it as one command when a capture is open. team: whether fn may
  // run an OpenMP region (false for work done on the calling thread alone).
  template <class Fn>
  void timed(const char* name, std::uint64_t bytes, Fn&& fn, bool team = true) {
    struct Warm {  // the op's OpenMP team spins a while after it: a NumPy product next may run on it
      bool team;
      ~Warm() {
        if (team) blas_pool::openmp_used();
      }
    } warm{team};
    if (!recorder_.active()) {
      fn();
      return;
    }
    OpRecord r;
    r.name = name;
    r.bytes = bytes;
    r.host_enqueue = r.start = host_seconds();
    fn();
    r.end = host_seconds();
    recorder_.add({std::move(r), nullptr});
  }

  // A cached matmul: the primitive and the memory descriptors its arguments are wrapped in. `id` is unique over
  // the process (per-thread argument caches are keyed by it); `last_use` orders evictions.
  struct MatmulEntry {
    dnnl::matmul prim;
    dnnl::memory::desc a, b, c, bias, scratch;
    std::uint64_t id = 0, last_use = 0;
    // oneDNN fell back to its reference implementation (ref:any): no optimised kernel for this combination
    bool reference = false;
  };
  struct KeyHash {
    std::size_t operator()(const std::array<std::int64_t, 14>& k) const noexcept;
  };
  // The cached primitive for d, created on first use. At most kMatmulCacheEntries are kept (least recently used
  // evicted): each holds JIT code, and a notebook sweeping shapes would otherwise grow without bound.
  std::shared_ptr<const MatmulEntry> matmul_entry(const MatmulDesc& d);
  // The oneDNN product on host pointers; matmul_converted runs 16-bit data without a native kernel through it.
  void run_matmul(const MatmulDesc& d, const void* a, const void* b, void* c, const void* bias);
  void matmul_converted(const MatmulDesc& d, const void* a, const void* b, void* c, const void* bias);
  static constexpr std::size_t kMatmulCacheEntries = 256;

  dnnl::engine engine_;
  std::shared_ptr<HostAllocator> pool_;  // large host blocks kept for reuse (host_allocator.h)
  mutable std::mutex mu_;  // guards the primitive cache and first_use_
  FirstUseStats first_use_;
  std::unordered_map<std::array<std::int64_t, 14>, std::shared_ptr<MatmulEntry>, KeyHash> matmul_cache_;
  std::uint64_t matmul_clock_ = 0;
};

// Whether oneDNN multiplies t (float16, bfloat16) natively on this processor: float16 needs avx512_core_fp16,
// bfloat16 avx512_core_bf16, and the kernel must not be one measured slower than converting (bfloat16 on Intel
// AVX512-FP16 cores without AMX: cpu_info.cpp). Elsewhere the CPU device stores 16-bit data and computes in float32
// (half_convert.h).
// force_cpu_half_conversion(true) takes the converted path everywhere, so tests run it on processors of either kind.
bool native_matmul(DType t);
void force_cpu_half_conversion(bool on);
// Test hook: the widest registers blocked max pooling (layouts_cpu.cpp) may use: 2 AVX-512, 1 AVX2, 0 none (one lane
// at a time); -1: what the processor has.
void force_blocked_pool_level(int level);

// The first "key : value" line of /proc/cpuinfo starting with key: its value ("" where none).
std::string cpuinfo_field(const std::string& key);
// The host's per-core (L2) and last-level cache in bytes (sysfs, else glibc's figures; 0: unknown), read once.
std::uint64_t core_cache_bytes();
std::uint64_t last_level_cache_bytes();

// Own float64 GEMM (oneDNN's CPU matmul has no f64): C = alpha*op(A)@op(B) + beta*C for one batch entry.
void gemm_f64(std::int64_t M, std::int64_t N, std::int64_t K, double alpha, const double* A, std::int64_t a_rs,
              std::int64_t a_cs, const double* B, std::int64_t b_rs, std::int64_t b_cs, double beta, double* C,
              std::int64_t ldc);

}  // namespace hetnn
