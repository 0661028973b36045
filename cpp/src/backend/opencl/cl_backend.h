// An OpenCL device: one context, its in-order, profiling-enabled queue and those of its streams; kernels from
// kernels/*.cl.
#pragma once
#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <unordered_map>
#include <utility>
#include <mutex>
#include <shared_mutex>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/extensions.h"
#include "backend/opencl/cl_handles.h"
#include "backend/opencl/gemm_params.h"
#include "backend/opencl/cl_allocator.h"
#include "backend/opencl/program_cache.h"
#include "core/device.h"

namespace hetnn::opencl {

// The raw handles of an OpenCL device, for native libraries run on the same queue (bench/peers.cpp: CLBlast) and
// for Python's OpenCL libraries (Device.cl_handles, Array.cl_buffer: PyOpenCL's from_int_ptr takes them).
struct RawHandles {
  static constexpr const char* kName = "opencl_handles";
  virtual ~RawHandles() = default;
  virtual cl_command_queue queue() const = 0;
  virtual cl_device_id device_id() const = 0;
  virtual cl_context context() const = 0;
  virtual cl_mem buffer(const Buffer& b) const = 0;  // the cl_mem of one of this device's buffers
};

// Whether `bytes` (and a margin for the driver's own allocations) can be mapped now. A CPU OpenCL driver allocates
// a buffer's host memory later, when it is first used, and PoCL aborts the process when that fails (an address-space
// limit: "pocl_create_migration_commands: Assertion `p->mem_ptr != NULL' failed").
bool address_space_for(std::size_t bytes);

// How many slices of K a GEMM of `tiles` output tiles is split into (1: none) on a device of `compute_units`, with
// `slice_elems` partial sums of `part_bytes` each per slice.
std::int64_t gemm_k_splits(std::int64_t tiles, std::int64_t K, int ts_k, int compute_units, std::int64_t slice_elems,
                           std::size_t part_bytes);

// Split-K's slice length for `splits` slices of K (a multiple of ts_k, so that vector loads along K stay aligned)
// and the slice count that leaves none empty: {chunk, splits}; {max(K, 1), 1} unsplit.
std::pair<std::int64_t, std::int64_t> gemm_k_chunk(std::int64_t K, std::int64_t splits, int ts_k);
// The build options of pack.cl's convolution kernels for c: its kernel size and horizontal stride compiled in.
std::string conv_pack_options(const Conv2dDesc& c);

class ClBackend final : public Backend, private GemmTuning, private KernelTools, private RawHandles {
 public:
  ClBackend(cl_platform_id platform, cl_device_id device, DeviceInfo info);
  ~ClBackend() override;
  std::shared_ptr<Buffer> alloc(std::size_t nbytes) override;
  void check_room(std::size_t nbytes, std::size_t capacity);
  void set_memory_limit(std::size_t bytes) override { memory_limit_ = bytes; }
  void set_queue_limit(std::size_t commands) override;
  void set_wait_spin(double seconds) override { wait_spin_.store(seconds > 0 ? seconds : 0.0); }
  std::shared_ptr<void> alloc_pinned(std::size_t nbytes, void** ptr) override;
  std::shared_ptr<void> record_marker() override;
  bool marker_done(const std::shared_ptr<void>& m) override;
  void marker_wait(const std::shared_ptr<void>& m) override;
  double marker_seconds(const std::shared_ptr<void>& m) override;
  std::shared_ptr<void> create_stream() override;
  std::shared_ptr<void> swap_stream(std::shared_ptr<void> s) override;
  void stream_wait(const std::shared_ptr<void>& s, const std::shared_ptr<void>& marker) override;
  bool stream_done(const std::shared_ptr<void>& s) override;
  std::map<std::string, std::string> transfer_paths() override;  // staging_cl.cpp
  void set_transfer_staging(int staged) override;                // staging_cl.cpp
  std::uint64_t stream_waits() const override { return stream_waits_.load(); }
  bool write_async(Buffer& dst, std::size_t offset, const void* src, std::size_t n) override;
  bool read_async(const Buffer& src, std::size_t offset, void* dst, std::size_t n) override;
  void write(Buffer& dst, std::size_t offset, const void* src, std::size_t n) override;
  void read(const Buffer& src, std::size_t offset, void* dst, std::size_t n) override;
  void copy(const Buffer& src, std::size_t src_offset, Buffer& dst, std::size_t dst_offset, std::size_t n) override;
  void fill(Buffer& dst, std::size_t offset, std::size_t n, unsigned char value) override;
  void synchronize() override;
  std::size_t release_cached_memory() override { return pool_->clear(); }
  MemoryStats memory_stats() const override { return pool_->stats(); }
  void reset_peak_memory_stats() override { pool_->reset_peak(); }
  FirstUseStats first_use_stats() const override {
    const auto s = programs_.stats();
    return {s.built, s.disk_hits, s.memory_hits, s.seconds};
  }
  HETNN_BACKEND_OPS(HETNN_OP_OVERRIDE)  // core/ops.h; implemented in <op>_cl.cpp

  void* extension(const std::string& name) override;

  static cl_mem mem(const Buffer& b);  // the cl_mem of a buffer of an OpenCL device


 protected:
  void resolve(PendingRecord& p) override;

 private:
  // GemmTuning, KernelTools (backend/extensions.h) and RawHandles, offered through extension().
  cl_command_queue queue() const override { return queue_.get(); }
  cl_device_id device_id() const override { return device_; }
  cl_context context() const override { return context_.get(); }
  cl_mem buffer(const Buffer& b) const override { return mem(b); }
  std::pair<std::string, std::string> params(GemmType t, std::int64_t macs) override;
  void set(GemmType t, const std::string& params, const std::string& source) override;
  void inject_faults(int n) override {
    std::lock_guard<std::mutex> lock(mu_);
    gemm_faults_ = n;
  }
  void build_source(const std::string& source, const std::string& options) override;
  std::pair<double, double> measure_peak(std::size_t triad_bytes, int repeats) override;  // peak_cl.cpp
  void set_kernel_variant(const std::string& v) override;  // max_pool_cl.cpp
  void set_conv_algorithm(const std::string& a) override;  // conv2d_cl.cpp
  std::string conv_algorithm() override;
  std::vector<ConvChoice> conv_choices() override;
  // GEMM parameters in force for a type (an override: set here, or tuned and stored in the cache; else the
  // database), and the override itself. tf32 without an override of its own, on a device whose TF32 matrix units
  // are unusable, is float32's: those products compute in float32.
  GemmParams gemm_params(GemmType t, std::int64_t macs = -1);
  GemmParams gemm_params_locked(GemmType t, std::int64_t macs);  // under mu_
  void set_gemm_params(GemmType t, const GemmParams& p);
  void clear_gemm_params(GemmType t);  // back to the stored tuned entry, else the database
  std::string precision_mode(GemmType t) override;
  // Under mu_: whether float16 / bfloat16 / tf32 products run on the device's matrix units, decided once per type
  // by a probe GEMM with known integer data (built with the instruction and compared exactly); `why` says why not.
  bool matrix_units(GemmType t, std::string* why = nullptr);
  // Whether the warpgroup instruction (wgmma, the mma members with wg=1) computes correctly on this device for t:
  // the matrix units' probe passed, the device is sm_90, and a wg=1 probe GEMM computed its known result.
  bool warpgroup_units(GemmType t, std::string* why = nullptr);
  // The type a product of d computes as: tf32 where d allows it, else its dtype.
  static GemmType gemm_type(const MatmulDesc& d) { return GemmType(d.dtype, d.allow_tf32); }
  // The queue this thread's commands go to (its current stream's, else the device's) and its number (0: the device's).
  struct Target {
    cl_command_queue queue;
    std::uint64_t id;
    void* stream;  // its ClStream (null: the device's queue)
  };
  Target target() const;
  // One command on this thread's queue: enq(queue, n_wait, wait_list, event_out, blocking) enqueues it (and throws on
  // failure). Once a stream exists it first waits for the last use on another queue of each buffer in `mems` and
  // becomes their last use; the host then waits after the enqueue (outside the lock) where `host_waits`. Returns the
  // command's event (the caller owns it) where `want_event` or a capture is open, else null.
  template <class F>
  cl_event submit(const cl_mem* mems, std::size_t n, bool host_waits, bool want_event, F&& enq);
  // The page-locked allocation (alloc_pinned) holding [p, p + n), kept alive by the result; null for other memory.
  std::shared_ptr<void> pinned_owner(const void* p, std::size_t n);
  // Keeps `keep` alive until `ev` (an asynchronous copy) has finished.
  void keep_until(const Event& ev, std::shared_ptr<void> keep);
  // Transfers between a buffer and ordinary (pageable) host memory: directly, or staged through two page-locked
  // chunks, double-buffered (the host copies one chunk while the device copies the other), whichever the first
  // large transfer of each direction measured faster on this device (staging_cl.cpp; HETNN_STAGING=0/1 forces it).
  void transfer(int direction, cl_mem m, std::size_t offset, void* host, std::size_t n);  // blocking; as staged()
  void direct_write(cl_mem m, std::size_t offset, const void* src, std::size_t n);
  // A copy between m and host memory left running on this thread's queue (flushed), recorded; its event (owned).
  // direction as for staged(): 0 host -> device (from `host`), 1 device -> host (into `host`).
  Event copy_started(int direction, cl_mem m, std::size_t offset, void* host, std::size_t n);
  // write_async / read_async: non-blocking when `host` is page-locked memory (kept alive until the copy's end).
  bool copy_async(int direction, cl_mem m, std::size_t offset, void* host, std::size_t n);
  bool staged(int direction, std::size_t n, const void* host);  // direction: 0 host -> device, 1 device -> host
  void staged_write(cl_mem m, std::size_t offset, const void* src, std::size_t n);
  void staged_read(cl_mem m, std::size_t offset, void* dst, std::size_t n);
  void staged_write_unlocked(cl_mem m, std::size_t offset, const void* src, std::size_t n);  // under stage_mu_
  void staged_read_unlocked(cl_mem m, std::size_t offset, void* dst, std::size_t n);
  void calibrate_staging(int direction);  // under stage_mu_
  void stage_chunks();                     // under stage_mu_: the two page-locked chunks, made once
  // Tracked transfers on this thread's queue for the ops' own small reads and fills (max_pool_cl, gemm_mma_cl).
  void fill_mem(cl_mem m, const void* pattern, std::size_t pattern_size, std::size_t offset, std::size_t n);
  void read_mem(cl_mem m, std::size_t offset, std::size_t n, void* dst);
  void record(const char* name, cl_event ev, double host_enqueue, std::uint64_t bytes);
  cl_kernel kernel(const std::string& file, const std::string& name, const std::string& options);
  // Kernel `kname` of a user kernel's generated `source` (user_kernel_cl.cpp), built through the program cache; a
  // build failure is a CompileError naming `what` whose log ends with the source.
  cl_kernel user_kernel(const std::string& source, const std::string& name, const std::string& kname,
                        const char* what);
  // A device scratch buffer (slot 0, 1, ...) of at least `bytes`, kept between calls (in-order queue: reuse is safe).
  cl_mem scratch(int slot, std::size_t bytes);
  void enqueue(const char* name, cl_kernel k, int dims, const std::size_t* global, const std::size_t* local);
  // Enqueues k over (cols, rows, planes) work-items, one per element of `planes` row-major planes: GPUs a warp of
  // consecutive columns per row (32 x 4 work-groups), CPU devices (PoCL) 16 columns, one AVX-512 float vector.
  void enqueue_planes(const char* name, cl_kernel k, std::int64_t cols, std::int64_t rows, std::int64_t planes);
  void throttle();
  // conv: B is the im2col matrix of the convolution's input images b, packed from them by pack_b_conv with no
  // column buffer (not transposed); d.batch entries are the images.
  // row_bias: d's bias is per row of C (a convolution's output channels), as it is with conv.
  void matmul_packed(const GemmParams& p, const MatmulDesc& d, cl_mem a, cl_mem b, cl_mem c, cl_mem bias,
                     const Conv2dDesc* conv = nullptr, bool row_bias = false);
  cl_mem conv_taps(const Conv2dDesc& c, std::int64_t n);  // pack_b_conv_t's tap table (pack.cl), under mu_
  // matmul under mu_; false (nothing done) for a float32 result of 16-bit operands on a family other than mma,
  // which matmul_widened computes
  bool matmul_locked(const MatmulDesc& d, const Buffer& a, const Buffer& b, Buffer& c, const Buffer* bias);
  void matmul_widened(const MatmulDesc& d, const Buffer& a, const Buffer& b, Buffer& c, const Buffer* bias);
  // gemm_mma.cl on float16 / bfloat16 data, or float32 data as tf32 (d.allow_tf32); ptx: the instruction itself
  // (after the probe), else its emulation
  // conv: B is the im2col matrix of the convolution's input images, gathered by the kernel (implicit GEMM); with
  // weight_grad, d is the weight gradient's GEMM over the whole batch as for matmul_tiled, split along K with
  // float32 partial sums added and rounded once.
  void matmul_mma(const GemmParams& p, const MatmulDesc& d, cl_mem a, cl_mem b, cl_mem c, cl_mem bias, bool ptx,
                  const Conv2dDesc* conv = nullptr, bool weight_grad = false);
  bool mma_k8() const;  // float16 as m16n8k8 steps (sm_75, or HETNN_MMA_K8=1)
  // "" when usable (the cached verdict, else the probe's), else why not; wg: the warpgroup instruction's probe
  std::string probe_matrix_units(GemmType t, bool wg = false);
  std::string run_matrix_unit_probe(GemmType t, bool wg);  // "" when the probe GEMM computed its known result
  // conv: B is the im2col matrix of the convolution's input images, gathered by the kernel (vtiled only); with
  // weight_grad, d is the weight gradient's GEMM over the whole batch (M = O, N = C*kh*kw, K = N*OH*OW, trans_b,
  // batch 1): a is gy, b the input x, whose columns the kernel gathers.
  void matmul_tiled(const GemmParams& p, const MatmulDesc& d, cl_mem a, cl_mem b, cl_mem c, cl_mem bias,
                    const Conv2dDesc* conv = nullptr, bool weight_grad = false);
  // c = act(alpha * the sum of split-K's `splits` slices in `parts` + beta * c + bias) (gemm_split_reduce), the
  // slices in the data type or, parts_real, in the arithmetic type
  void split_reduce(const MatmulDesc& d, std::int64_t splits, cl_mem parts, cl_mem c, cl_mem bias, cl_int has_bias,
                    bool parts_real);
  // Whether d's products compute in TF32: allowed, ungrouped, and the tf32 GEMM in force is the matrix-unit member.
  bool conv_tf32(const Conv2dDesc& d);
  // The forward of an ungrouped convolution as one implicit GEMM when the GEMM parameters in force for it are
  // vtiled or mma (the matrix-unit member: 16-bit data, or tf32 where allowed), or packed (CPU-type devices: the
  // B panels packed from the images, no column buffer), bias and activation in its epilogue; false (nothing done)
  // otherwise.
  // by_rule: the algorithm "auto" (not forced by "implicit").
  bool conv2d_implicit(const Conv2dDesc& d, const Buffer& x, const Buffer& w, const Buffer* bias, Buffer& y,
                       bool by_rule);
  // 3x3 stride-1 ungrouped forward as Winograd F(tile x tile, 3x3), tile 2 or 4 (kernels/winograd.cl); false
  // (nothing done) where it does not apply or its work buffers pass conv2d_work_limit().
  bool conv2d_winograd(const Conv2dDesc& d, const Buffer& x, const Buffer& w, const Buffer* bias, Buffer& y,
                       int tile);
  // An ungrouped convolution's weight gradient as one implicit GEMM over the batch (K = images x positions, split
  // along K) when the GEMM parameters in force for its type are vtiled (float32/float64) or the matrix-unit member
  // (16-bit data, or tf32 in force), the bias gradient beside it; false (nothing done) otherwise.
  bool conv2d_backward_weights_implicit(const Conv2dDesc& d, const Buffer& gy, const Buffer& x, Buffer& gw,
                                        Buffer* gb);
  // The same on the packed family (CPU-type devices): one packed GEMM over K = images x positions, its panels
  // packed from gy and x (pack_a_images, pack_b_conv_t), cut into slices of K where the output's tiles are too few
  // for the device's threads or the panels too large, the slices' products summed.
  // by_rule ("auto"): only where it moves less than the per-image products of the columns.
  bool conv2d_backward_weights_packed(const Conv2dDesc& d, const Buffer& gy, const Buffer& x, Buffer& gw, Buffer* gb,
                                      bool by_rule);
  bool packed_weight_grad_applies(const Conv2dDesc& d);  // the packed family in force for d's weight gradient
  // An ungrouped undilated convolution's data gradient as forward convolutions of gy with the flipped kernel (one
  // per class of input positions at stride > 1), with algorithm "forward", an explicit forward algorithm, or "" on
  // a GPU at stride 1; false (nothing done) otherwise.
  bool conv2d_backward_data_as_forward(const Conv2dDesc& d, const Buffer& gy, const Buffer& w, Buffer& gx,
                                       const std::string& algorithm);
  bool data_grad_as_forward_applies(const Conv2dDesc& d);
  // The data gradient with `algorithm` (as conv2d_backward_data_as_forward; anything else: GEMM + col2im).
  void conv2d_backward_data_as(const Conv2dDesc& d, const Buffer& gy, const Buffer& w, Buffer& gx,
                               const std::string& algorithm);
  std::string common_options(DType t) const;
  std::string pool_options(const Pool2dDesc& d) const;
  std::size_t conv2d_work_limit() const;
  // Images per chunk when the GEMM paths' work buffers for the whole batch (per_image bytes an image) pass
  // conv2d_work_limit(): d.N when they fit, 0 when one image alone passes it (the direct kernels run).
  std::int64_t conv2d_images_per_chunk(const Conv2dDesc& d, std::size_t per_image) const;
  std::shared_ptr<Buffer> im2col(const Conv2dDesc& d, const Buffer& x, const std::string& options);
  void conv2d_bias_act(const Conv2dDesc& d, const Buffer& bias, Buffer& y, const std::string& options);
  // gb[o] = sum of gy[n, o, :, :] over n (conv2d's bias gradient), spread over the compute units.
  void bias_grad(const Conv2dDesc& d, const Buffer& gy, Buffer& gb, const std::string& options);

  cl_device_id device_;
  DeviceInfo info_;
  bool on_host_cpus_ = info_.type == "cpu";  // PoCL and the like: its work shares the host's CPUs
  Context context_;
  Queue queue_;
  std::mutex mu_;  // kernels' arguments are set and enqueued under it
  ProgramCache programs_;
  std::map<std::string, Kernel> kernels_;
  std::unordered_map<std::string, cl_kernel> user_kernels_;  // by user_signature (owned in kernels_)
  std::map<GemmType, std::vector<GemmParams>> gemm_overrides_;  // size classes by increasing max_macs, then any size
  bool tuned_loaded_ = false;  // the stored tuned entries (gemm_tuning.h) join gemm_overrides_ on first use
  void load_tuned_once();      // under mu_
  void apply_stored_tuning(std::optional<GemmType> only);  // under mu_: the stored entries (one type, or all)
  const GemmParams* override_for(GemmType t, std::int64_t macs) const;  // under mu_; nullptr: the database decides
  std::map<GemmType, std::string> matrix_units_;  // the probe's verdict per type ("" usable, else why not)
  std::map<GemmType, std::string> warpgroup_units_;  // the same for the warpgroup instruction
  int gemm_faults_ = 0;  // inject_gemm_faults
  std::string kernel_variant_;  // set_kernel_variant
  // set_conv_algorithm; at first the process's HETNN_CONV_ALGORITHM ("" when unset; an invalid value is kept in
  // conv_algorithm_error_, raised by conv_algorithm() until set_conv_algorithm replaces it)
  std::string conv_algorithm_error_;
  std::string conv_algorithm_ = initial_conv_algorithm(conv_algorithm_error_);
  static std::string initial_conv_algorithm(std::string& error);
  // one measurement at a time; guards conv_choices_ (recursive: the data gradient's "forward" candidate measures
  // its forward convolution as a layer of its own inside its own measurement)
  std::recursive_mutex conv_choice_mu_;
  std::map<std::string, Mem> conv_taps_;  // pack_b_conv_t's tap tables by layout (conv_taps)
  std::map<std::string, ConvChoice> conv_choices_;  // "benchmark"'s choices by conv_shape_key
  // The forward with `algorithm` ("" the device's choice; as set_conv_algorithm, "benchmark" aside).
  void conv2d_as(const Conv2dDesc& d, const Buffer& x, const Buffer& w, const Buffer* bias, Buffer& y,
                 std::string algorithm);
  // "benchmark": the algorithm chosen for d's shape, timing each that applies (into y) the first time.
  std::string measured_conv_algorithm(const Conv2dDesc& d, const Buffer& x, const Buffer& w, const Buffer* bias,
                                      Buffer& y);
  // The candidate stored under key, else each of candidates() (asked on a miss only) run once, then 3 interleaved
  // timed rounds; the fastest is stored.
  // The caller runs the returned candidate after (its result, not the last timed one's, is the call's). "" when
  // none ran.
  std::string measured_choice(const std::string& key, const std::function<std::vector<std::string>()>& candidates,
                              const std::function<void(const std::string&)>& run);
  // The weight gradient with "im2col" (per-image GEMMs) or anything else (the implicit GEMM where it applies).
  void conv2d_backward_weights_as(const Conv2dDesc& d, const Buffer& gy, const Buffer& x, Buffer& gw, Buffer* gb,
                                  const std::string& algorithm);
  // The fitted vtiled parameters of the weight gradient's implicit GEMM where it applies, else nullopt.
  std::optional<GemmParams> weight_grad_params(const Conv2dDesc& d);
  void forget_conv_choices();  // when the GEMM parameters change
  bool gpu_kernels() const;
  // elementwise on CPU-type devices for a strided call of one or two dimensions: kernel ew2 over rows x cols
  bool two_dimensional(const ElementwiseDesc& d) const;
  void elementwise_2d(const ElementwiseDesc& d, const std::string& opts, cl_int mode, const Buffer& a,
                      const Buffer* b, Buffer& out);
  // Whether a call over `elements` gets a program with its op built in (elementwise.cl EW_FIXED_OP, reduce.cl
  // RED_FIXED_OP): CPU-type devices, from 2^20 elements. PoCL ran the shared programs' run-time choice of the op
  // element by element (an add of 64 MiB at 0.12x the memory ceiling, 4.9x faster with the op built in); each op and
  // type pair then costs one build (~0.3 s on PoCL, cached on disk).
  bool op_built_in(std::int64_t elements) const { return !gpu_kernels() && elements >= (std::int64_t{1} << 20); }
  // The same for an element-wise program (under mu_): also from 2^14 elements once the same op, types (opts), mode
  // and arrangement have been called three times. PoCL ran the shared program 2.1-5.1x slower than the op's own at
  // 64 KiB-1 MiB (add, exp, tanh): a repeated mid-size op pays its one build (~0.3 s, disk-cached) back within a
  // few calls.
  bool op_built_in_hot(std::int64_t elements, const std::string& opts, EwOp op, cl_int mode, bool two_d);
  std::map<std::string, int> hot_ops_;  // calls per key from 2^14 elements (under mu_)
  // The work-group size of a flat kernel (a work-item per element) over n items: 64, but 1024 (within the device's
  // limit) on CPU-type devices from 2^20 items (PoCL runs a group as one call around its items' loop: against 64,
  // ew_sizes_vs_build measured 1.06-1.16x at 4 and 64 MiB; at 1 MiB mixed, a negative 0.92x).
  std::size_t max_group() const {  // the device's work-group limit (64 where it reports none)
    return info_.max_work_group_size ? static_cast<std::size_t>(info_.max_work_group_size) : 64;
  }
  std::size_t flat_local(std::int64_t n) const {
    constexpr std::size_t kSmall = 64, kCpu = 1024;
    if (gpu_kernels() || n < (std::int64_t{1} << 20)) return kSmall;
    return info_.max_work_group_size ? std::min<std::size_t>(kCpu, info_.max_work_group_size) : kSmall;
  }
  std::vector<std::pair<Mem, std::size_t>> scratch_;
  std::shared_ptr<ClAllocator> pool_;  // freed buffers kept for reuse (cl_allocator.h)
  std::size_t memory_limit_ = 0;  // set_memory_limit (tests); 0: info_.global_mem
  // Back-pressure: a marker every fence_every_ kernels; at most kMaxFences markers outstanding, so no more than
  // about kMaxFences * fence_every_ kernels are queued (a Python loop once queued minutes of work, and Ctrl-C then
  // waited for all of it).
  static constexpr std::size_t kMaxFences = 4;
  std::size_t fence_every_ = 64;
  std::size_t since_fence_ = 0;
  std::deque<Event> fences_;
  std::mutex fence_mu_;
  // Streams. Until the first one, commands are not tracked (one in-order queue orders them); then each buffer's last
  // use (queue number, event) orders it across queues. last_use_ is keyed by the cl_mem, which outlives an array in
  // the allocator's pool, so a buffer freed on one queue and taken on another waits as well.
  struct LastUse {
    std::uint64_t queue;
    Event ev;
  };
  mutable std::shared_mutex use_mu_;
  bool streams_ = false;  // under use_mu_
  std::unordered_map<cl_mem, LastUse> last_use_;
  std::size_t prune_at_ = 4096;
  // Every stream's ClStream, for synchronize(): a stream dropped while its commands run stays here until they have
  // finished (a copy into page-locked memory on it must not outlive synchronize(), nor the process's exit).
  std::vector<std::shared_ptr<void>> stream_list_;
  void forget_idle_streams();  // under use_mu_: drops those no one else holds whose last command has finished
  std::atomic<std::uint64_t> stream_waits_{0};
  // Host waits (set_wait_spin): how long they poll first; whether queue_ may have work since synchronize() last
  // looked (set by submit(); a marker to poll is enqueued only then: on PoCL an idle queue's marker took 46 us).
  std::atomic<double> wait_spin_{0.0};
  std::atomic<bool> queue_pending_{false};
  // Waits for ev, a command of q: polls its status for up to wait_spin_ seconds, then blocks in the driver. Its final
  // status: CL_COMPLETE, or the negative error of a command that failed.
  cl_int await(cl_command_queue q, cl_event ev) const;
  std::atomic<std::uint64_t> next_stream_{1};
  // Page-locked allocations by address (their owners, not kept alive here) and the host memory of copies in flight.
  std::mutex pinned_mu_;
  std::map<std::uintptr_t, std::pair<std::size_t, std::weak_ptr<void>>> pinned_;
  std::vector<std::pair<Event, std::shared_ptr<void>>> in_flight_;
  // Staging (staging_cl.cpp): the verdict per direction (-1 not measured yet, 0 direct, 1 staged), what was
  // measured, and the two page-locked chunks.
  std::mutex stage_mu_;
  int stage_verdict_[2] = {-1, -1};
  std::string stage_why_[2];
  void* stage_ptr_[2] = {nullptr, nullptr};
  std::shared_ptr<void> stage_owner_[2];
};

}  // namespace hetnn::opencl
