// The interface every device backend implements. Backends only compute: arguments have been validated by the
// front (core/*.cpp) before any of these is called, so a backend may assume consistent shapes, dtypes and devices.
//
// The ops themselves (their descriptors and the HETNN_BACKEND_OPS list) are in core/ops.h; docs/adding-an-op.md
// is the recipe for a new one.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/memory_stats.h"
#include "core/dtype.h"
#include "core/ops.h"
#include "core/recorder.h"

namespace hetnn {

// Device memory. Backends subclass it; host_ptr() is non-null only for host-addressable memory (the CPU device).
class Buffer {
 public:
  explicit Buffer(std::size_t nbytes) : nbytes(nbytes) {}
  virtual ~Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  virtual void* host_ptr() const { return nullptr; }
  const std::size_t nbytes;
};

#define HETNN_OP_PURE(name, params) virtual void name params = 0;
#define HETNN_OP_OVERRIDE(name, params) void name params override;

class Backend {
 public:
  virtual ~Backend() = default;

  // Memory. alloc throws OutOfMemory; wrap_host returns null where device memory is not host memory.
  virtual std::shared_ptr<Buffer> alloc(std::size_t nbytes) = 0;
  virtual std::shared_ptr<Buffer> wrap_host(void* ptr, std::size_t nbytes, std::shared_ptr<void> owner) {
    return nullptr;
  }
  // Page-locked ("pinned") host memory of at least nbytes for staging transfers: *ptr set, the returned owner frees
  // it. OpenCL: a CL_MEM_ALLOC_HOST_PTR buffer kept mapped (the portable way to get memory a GPU driver copies by
  // DMA, at the link's speed). Null where the device has none of its own (the CPU device: its memory is host memory).
  virtual std::shared_ptr<void> alloc_pinned(std::size_t nbytes, void** ptr) {
    (void)nbytes;
    *ptr = nullptr;
    return nullptr;
  }
  // Transfers. write/read block until the host memory may be reused / holds the data.
  virtual void write(Buffer& dst, std::size_t offset, const void* src, std::size_t n) = 0;
  virtual void read(const Buffer& src, std::size_t offset, void* dst, std::size_t n) = 0;
  virtual void copy(const Buffer& src, std::size_t src_offset, Buffer& dst, std::size_t dst_offset,
                    std::size_t n) = 0;
  // Sets n bytes to `value` (0 for zeros; 0xFF, a NaN pattern, to poison new memory in debug runs).
  virtual void fill(Buffer& dst, std::size_t offset, std::size_t n, unsigned char value) = 0;
  // Waits until every command issued so far, on every queue of the device, has finished.
  virtual void synchronize() = 0;
  // Markers (hetnn.Event): a point after every command issued so far on this thread's queue (swap_stream).
  // marker_done says whether they have finished, marker_wait blocks until they have, marker_seconds is when (the
  // device's clock, seconds: only differences mean anything; it waits first). The defaults serve devices whose commands finish before they return (the CPU
  // device): a marker is complete when made and holds the host's steady clock.
  virtual std::shared_ptr<void> record_marker() {
    return std::make_shared<double>(
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count());
  }
  virtual bool marker_done(const std::shared_ptr<void>& m) {
    (void)m;
    return true;
  }
  virtual void marker_wait(const std::shared_ptr<void>& m) { (void)m; }
  virtual double marker_seconds(const std::shared_ptr<void>& m) { return *static_cast<const double*>(m.get()); }
  // Streams (hetnn.Stream): more queues of commands on the device. create_stream makes one (null where commands
  // finish before they return: the CPU device, whose streams are synchronous); swap_stream makes `s` (null: the
  // device's own queue) the one this thread's commands go to and returns the previous one. A buffer used on two
  // queues is ordered by its last use: a command waits for the last command on another queue that used one of its
  // buffers, so no stream reads what another has not finished writing (nor overwrites what it still reads).
  // stream_wait makes `s` (null: this thread's current queue) wait for a marker of this device before its later
  // commands.
  virtual std::shared_ptr<void> create_stream() { return nullptr; }
  virtual std::shared_ptr<void> swap_stream(std::shared_ptr<void> s) {
    (void)s;
    return nullptr;
  }
  virtual void stream_wait(const std::shared_ptr<void>& s, const std::shared_ptr<void>& marker) {
    (void)s;
    (void)marker;
  }
  // Whether the commands issued so far on stream `s` have finished (no wait).
  virtual bool stream_done(const std::shared_ptr<void>& s) {
    (void)s;
    return true;
  }
  // How many cross-queue waits the ordering above has inserted so far (tests read it).
  virtual std::uint64_t stream_waits() const { return 0; }
  // Transfers that do not wait for the copy when the host memory is page-locked memory of this device (alloc_pinned):
  // the host memory is kept alive until the copy has finished; with ordinary memory they block as write/read do.
  // They return whether the copy was left running.
  virtual bool write_async(Buffer& dst, std::size_t offset, const void* src, std::size_t n) {
    write(dst, offset, src, n);
    return false;
  }
  virtual bool read_async(const Buffer& src, std::size_t offset, void* dst, std::size_t n) {
    read(src, offset, dst, n);
    return false;
  }
  // Per direction ("h2d", "d2h"): how large transfers from and into ordinary host memory go on this device (directly,
  // or staged through page-locked memory) and what decided it; empty where there is no choice (the CPU device).
  virtual std::map<std::string, std::string> transfer_paths() { return {}; }
  // Test and comparison hook: 1 stages, 0 copies directly, -1 measures again at the next large copy (both directions).
  virtual void set_transfer_staging(int staged) { (void)staged; }
  // Frees the blocks kept for reuse after their arrays went away (host_allocator.h, cl_allocator.h); returns the bytes freed.
  virtual std::size_t release_cached_memory() { return 0; }
  // The buffers this device's allocator holds (backend/memory_stats.h); reset_peak_memory_stats restarts the peak
  // from what is in use now.
  virtual MemoryStats memory_stats() const { return {}; }
  virtual void reset_peak_memory_stats() {}

  // First-use work so far: programs or primitives built (JIT/compiled), taken from the disk cache, found in memory,
  // and seconds spent building or loading. The benchmarks report it apart from steady-state figures.
  struct FirstUseStats {
    std::uint64_t built = 0, disk_hits = 0, memory_hits = 0;
    double seconds = 0;
  };
  virtual FirstUseStats first_use_stats() const { return {}; }
  // Test hook: treat the device as having `bytes` of memory (0: what it reports). Only devices that account their
  // allocations against their memory (OpenCL) use it.
  virtual void set_memory_limit(std::size_t bytes) { (void)bytes; }
  // How many commands may be queued before an enqueue waits (0: no bound; tests and overhead measurements).
  virtual void set_queue_limit(std::size_t commands) { (void)commands; }
  // How long a host wait for this device's work (synchronize, a blocking copy) polls for its completion before it
  // blocks in the driver, in seconds (0, the default: blocks at once; latency measurements and tests).
  virtual void set_wait_spin(double seconds) { (void)seconds; }
  // An extra this backend offers under `name` (backend/extensions.h: find_extension<T>), else nullptr.
  virtual void* extension(const std::string& name) {
    (void)name;
    return nullptr;
  }

  // Ops: one pure virtual per entry of HETNN_BACKEND_OPS (above the class).
  HETNN_BACKEND_OPS(HETNN_OP_PURE)

  // Device-time capture (see core/recorder.h).
  std::size_t capture_begin(bool details = true) { return recorder_.begin(details); }
  // Whether an open capture keeps the ops' operands (OpDetail describes an op only then).
  bool capturing() const { return recorder_.detailed(); }
  std::vector<OpRecord> capture_end(std::size_t token, bool details = true) {
    synchronize();
    return recorder_.end(token, details, [this](PendingRecord& p) { resolve(p); });
  }

 protected:
  // Fills in device times of a record whose handle is set (called after synchronize()).
  virtual void resolve(PendingRecord& p) {}
  Recorder recorder_;
};

}  // namespace hetnn
