// Large host allocations of the CPU device, kept for reuse after they are freed.
//
// glibc serves big blocks with mmap and returns them with munmap, so every new output array of a few MB would
// start as unmapped pages: the op that first writes it pays a page fault and a kernel zero-fill per 4 KiB page
// (measured: a max-pool forward with int64 indices on a 32x64x112x112 input took 65 ms with fresh outputs, most of
// it in faults). Blocks of 1 MiB and more are rounded to 2 MiB, aligned for transparent huge pages, and cached
// by size up to a byte cap; smaller ones go straight to malloc.
#pragma once
#include "backend/memory_stats.h"
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace hetnn {

class HostAllocator : public std::enable_shared_from_this<HostAllocator> {
 public:
  explicit HostAllocator(std::size_t cap_bytes) : cap_(cap_bytes) {}
  ~HostAllocator();
  HostAllocator(const HostAllocator&) = delete;
  HostAllocator& operator=(const HostAllocator&) = delete;

  // Memory for n bytes (64-byte aligned), or nullptr when the system has none. `capacity` receives the block size
  // to pass back to release(). A fresh block of kCheckAvailable bytes or more is first held to what the system can
  // still give (available_memory(), after letting the cached blocks go): Linux overcommits, so an allocation it
  // cannot back succeeds and the process is killed later, when the pages are first written.
  void* acquire(std::size_t n, std::size_t* capacity);
  void release(void* p, std::size_t capacity) noexcept;
  void trim() noexcept;  // frees every cached block
  std::size_t cached_bytes() const;
  MemoryStats stats() const { return counter_.read(cached_bytes()); }
  void reset_peak() noexcept { counter_.reset_peak(); }

  static constexpr std::size_t kMinPooled = 1 << 20;
  static constexpr std::size_t kCheckAvailable = std::size_t{64} << 20;

 private:
  mutable std::mutex mu_;
  MemoryCounter counter_;
  std::multimap<std::size_t, void*> free_;  // capacity -> block
  std::size_t cached_ = 0;
  const std::size_t cap_;
};

// Bytes the system can still hand out before it must kill a process: MemAvailable plus free swap (Linux's
// /proc/meminfo); 0 when unknown (no check is made then).
std::uint64_t available_memory();

}  // namespace hetnn
