// Device buffers of an OpenCL device, kept for reuse after they are freed.
//
// An op that returns a new array creates a buffer each call. On CPU devices (PoCL) a new buffer is fresh host
// memory, so the kernel that first writes it pays a page fault per 4 KiB (measured: a 32x64x112x112 max-pool
// forward ran 5-16 ms instead of 5 with fresh outputs); on GPUs clCreateBuffer itself can cost a millisecond.
// Buffers of 1 MiB and more are rounded to 2 MiB and cached by size up to a byte cap; smaller ones are released.
// The pool also counts the bytes of live buffers: allocations are checked against the device's memory before the
// driver is asked (PoCL handed out more than the device reported, then aborted when the host ran out).
#pragma once
#include <algorithm>
#include <cstddef>
#include <iterator>
#include <map>
#include <mutex>

#include "backend/memory_stats.h"
#include "backend/opencl/cl_handles.h"

namespace hetnn::opencl {

class ClAllocator {
 public:
  explicit ClAllocator(std::size_t cap_bytes) : cap_(cap_bytes) {}
  static constexpr std::size_t kMinPooled = 1 << 20;
  static std::size_t capacity_for(std::size_t n) {
    return n < kMinPooled ? n : (n + (2u << 20) - 1) / (2u << 20) * (2u << 20);
  }
  // A cached buffer of exactly `capacity` bytes, the one freed last (its pages and cache lines the likeliest to be
  // warm; multimap::find may return any of equal keys, in practice the oldest), or a null Mem.
  Mem take(std::size_t capacity) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto [first, end] = free_.equal_range(capacity);
    if (first == end) return Mem();
    const auto it = std::prev(end);  // equal keys keep their order of insertion
    Mem m = std::move(it->second);
    free_.erase(it);
    cached_ -= capacity;
    live_ += capacity;
    counter_.acquired(capacity, true);
    return m;
  }
  // A buffer of `capacity` bytes was created for an array.
  void track_new(std::size_t capacity) noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    live_ += capacity;
    counter_.acquired(capacity, false);
  }
  // Bytes held by live arrays, and by them plus the cache.
  std::size_t live() {
    std::lock_guard<std::mutex> lock(mu_);
    return live_;
  }
  void give(Mem m, std::size_t capacity) noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    live_ -= std::min(live_, capacity);
    counter_.released(capacity);
    if (capacity < kMinPooled || !m) return;  // released by Mem's destructor
    free_.emplace(capacity, std::move(m));
    cached_ += capacity;
    while (cached_ > cap_ && !free_.empty()) {  // evict the largest first
      auto last = std::prev(free_.end());
      cached_ -= last->first;
      free_.erase(last);
    }
  }
  MemoryStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return counter_.read(cached_);
  }
  void reset_peak() noexcept { counter_.reset_peak(); }
  std::size_t clear() noexcept {  // returns the bytes released
    std::lock_guard<std::mutex> lock(mu_);
    const std::size_t n = cached_;
    free_.clear();
    cached_ = 0;
    return n;
  }

 private:
  std::mutex mu_;
  MemoryCounter counter_;
  std::multimap<std::size_t, Mem> free_;
  std::size_t cached_ = 0;
  std::size_t live_ = 0;
  const std::size_t cap_;
};

}  // namespace hetnn::opencl
