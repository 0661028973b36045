#include "backend/cpu/host_allocator.h"

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <iterator>

namespace hetnn {

namespace {
constexpr std::size_t kHuge = 2 << 20;
}

std::uint64_t available_memory() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kb = 0, avail = 0, swap = 0;
  bool found = false;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
      avail = kb;
      found = true;
    } else if (std::sscanf(line, "SwapFree: %llu kB", &kb) == 1) {
      swap = kb;
    }
  }
  std::fclose(f);
  return found ? (static_cast<std::uint64_t>(avail) + swap) * 1024 : 0;
}

HostAllocator::~HostAllocator() { trim(); }

void* HostAllocator::acquire(std::size_t n, std::size_t* capacity) {
  if (n < kMinPooled) {
    *capacity = (n + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, *capacity ? *capacity : 64);
    if (p) counter_.acquired(*capacity, false);
    return p;
  }
  const std::size_t cap = (n + kHuge - 1) / kHuge * kHuge;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // exact size class (a sweep of growing sizes does not pin memory it cannot reuse); of equal ones the block freed
    // last, whose lines are the likeliest still in the caches (equal keys keep their order of insertion)
    const auto [first, end] = free_.equal_range(cap);
    if (first != end) {
      const auto it = std::prev(end);
      void* p = it->second;
      free_.erase(it);
      cached_ -= cap;
      *capacity = cap;
      counter_.acquired(cap, true);
      return p;
    }
  }
  if (cap >= kCheckAvailable) {
    std::uint64_t avail = available_memory();
    if (avail && cap > avail) {  // the cached blocks are memory the system counts as used
      trim();
      avail = available_memory();
    }
    if (avail && cap > avail) return nullptr;
  }
  void* p = std::aligned_alloc(kHuge, cap);
  if (!p) {  // let cached blocks go and try once more
    trim();
    p = std::aligned_alloc(kHuge, cap);
    if (!p) return nullptr;
  }
#ifdef MADV_HUGEPAGE
  madvise(p, cap, MADV_HUGEPAGE);  // fewer faults and TLB misses where THP is in "madvise" mode; a hint only
#endif
  *capacity = cap;
  counter_.acquired(cap, false);
  return p;
}

void HostAllocator::release(void* p, std::size_t capacity) noexcept {
  if (!p) return;
  counter_.released(capacity);
  if (capacity < kMinPooled) {
    std::free(p);
    return;
  }
  std::vector<void*> drop;
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_.emplace(capacity, p);
    cached_ += capacity;
    while (cached_ > cap_ && !free_.empty()) {  // evict the largest blocks first
      auto last = std::prev(free_.end());
      cached_ -= last->first;
      drop.push_back(last->second);
      free_.erase(last);
    }
  }
  for (void* q : drop) std::free(q);
}

void HostAllocator::trim() noexcept {
  std::multimap<std::size_t, void*> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(free_);
    cached_ = 0;
  }
  for (auto& kv : all) std::free(kv.second);
}

std::size_t HostAllocator::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

}  // namespace hetnn
