// A device's buffer accounting for hetnn.memory_stats: bytes and buffers held by live arrays and work buffers (as
// allocated: a pooled block counts its rounded size), the peak since the last reset, buffers created and those
// served from the device's cache of freed blocks. Both allocators (host_allocator.h, cl_allocator.h) keep one.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace hetnn {

struct MemoryStats {
  std::uint64_t bytes_in_use = 0, peak_bytes_in_use = 0, bytes_cached = 0;
  std::uint64_t buffers_in_use = 0, buffers_created = 0, buffers_reused = 0;
};

class MemoryCounter {
 public:
  void acquired(std::size_t bytes, bool reused) noexcept {
    const std::uint64_t now = in_use_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    std::uint64_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    buffers_.fetch_add(1, std::memory_order_relaxed);
    (reused ? reused_ : created_).fetch_add(1, std::memory_order_relaxed);
  }
  void released(std::size_t bytes) noexcept {
    in_use_.fetch_sub(bytes, std::memory_order_relaxed);
    buffers_.fetch_sub(1, std::memory_order_relaxed);
  }
  // The peak starts again from what is in use now.
  void reset_peak() noexcept { peak_.store(in_use_.load(std::memory_order_relaxed), std::memory_order_relaxed); }
  MemoryStats read(std::uint64_t cached) const noexcept {
    MemoryStats s;
    s.bytes_in_use = in_use_.load(std::memory_order_relaxed);
    s.peak_bytes_in_use = peak_.load(std::memory_order_relaxed);
    s.bytes_cached = cached;
    s.buffers_in_use = buffers_.load(std::memory_order_relaxed);
    s.buffers_created = created_.load(std::memory_order_relaxed);
    s.buffers_reused = reused_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  std::atomic<std::uint64_t> in_use_{0}, peak_{0}, buffers_{0}, created_{0}, reused_{0};
};

}  // namespace hetnn
