#include "backend/cpu/stream_store.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "backend/cpu/cpu_backend.h"
#include "core/errors.h"

namespace hetnn {

namespace {

struct Family {
  const char* name;
  const char* vendor;
  int family;
  int models[4];  // the models measured; 0 ends the list
  std::int64_t from_bytes;
};

// Measured with scripts/stream_store_sizes.py: hetnn.add of float32 arrays with each kind of store, 21 interleaved
// pairs, and the add followed by a sum of its output (the next op reading it). Emerald Rapids (family 6 model 207, a
// 2-vCPU VM), regular time / streaming time, median (the middle 15 of 21): add alone 2 MiB 0.77, 4 MiB 1.12-1.15
// (1.02-1.21), 8 MiB 1.23-1.32 (1.17-1.40), 16 MiB 1.46, 32 MiB 1.69, 64 MiB 1.24-1.33, 256 MiB 1.17; the add and the sum
// 2 MiB 0.74, 4 MiB 0.85-0.96 (0.76-1.07), 8 MiB 1.01-1.08 (0.96-1.15), 16 MiB 1.17, 32 MiB 1.32, 64 MiB 1.16-1.20,
// 256 MiB 1.11 (two runs). From 8 MiB the op gains and the one after it loses nothing.
const Family kFamilies[] = {
    {"Intel Emerald Rapids", "GenuineIntel", 6, {207, 0}, std::int64_t{8} << 20},
};

int cpuinfo_int(const char* key) {
  const std::string v = cpuinfo_field(key);
  try {
    return v.empty() ? -1 : std::stoi(v);
  } catch (...) {
    return -1;
  }
}

const Family* this_family() {
  static const Family* family = [] {
#if defined(__x86_64__)
    const std::string vendor = cpuinfo_field("vendor_id");
    const int fam = cpuinfo_int("cpu family"), model = cpuinfo_int("model");
    for (const Family& f : kFamilies) {
      if (vendor != f.vendor || fam != f.family) continue;
      for (int m : f.models)
        if (m == model) return &f;
    }
#endif
    return static_cast<const Family*>(nullptr);
  }();
  return family;
}

constexpr std::int64_t kNever = INT64_MAX;

std::atomic<std::int64_t> g_forced{-1};

std::int64_t threshold() {
  const std::int64_t forced = g_forced.load(std::memory_order_relaxed);
  if (forced >= 0) return forced;
  const Family* f = this_family();
  return f ? f->from_bytes : kNever;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) void lines_512(char* d, const char* s, std::size_t lines) {
  for (std::size_t i = 0; i < lines; ++i)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + 64 * i),
                        _mm512_loadu_si512(reinterpret_cast<const void*>(s + 64 * i)));
}
__attribute__((target("avx"))) void lines_256(char* d, const char* s, std::size_t lines) {
  for (std::size_t i = 0; i < 2 * lines; ++i)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 32 * i),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 32 * i)));
}
void lines_128(char* d, const char* s, std::size_t lines) {  // SSE2: any x86-64
  for (std::size_t i = 0; i < 4 * lines; ++i)
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16 * i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16 * i)));
}
__attribute__((target("avx512f"))) void fill_512(char* d, unsigned char v, std::size_t lines) {
  const __m512i x = _mm512_set1_epi8(static_cast<char>(v));
  for (std::size_t i = 0; i < lines; ++i) _mm512_stream_si512(reinterpret_cast<__m512i*>(d + 64 * i), x);
}
__attribute__((target("avx"))) void fill_256(char* d, unsigned char v, std::size_t lines) {
  const __m256i x = _mm256_set1_epi8(static_cast<char>(v));
  for (std::size_t i = 0; i < 2 * lines; ++i) _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 32 * i), x);
}
void fill_128(char* d, unsigned char v, std::size_t lines) {
  const __m128i x = _mm_set1_epi8(static_cast<char>(v));
  for (std::size_t i = 0; i < 4 * lines; ++i) _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16 * i), x);
}
using Fill = void (*)(char*, unsigned char, std::size_t);
const Fill kFill = [] {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return static_cast<Fill>(fill_512);
  if (__builtin_cpu_supports("avx")) return static_cast<Fill>(fill_256);
  return static_cast<Fill>(fill_128);
}();
using Lines = void (*)(char*, const char*, std::size_t);
const Lines kLines = [] {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return static_cast<Lines>(lines_512);
  if (__builtin_cpu_supports("avx")) return static_cast<Lines>(lines_256);
  return static_cast<Lines>(lines_128);
}();
#endif

}  // namespace

bool stream_output(std::size_t bytes) {
  return static_cast<std::uint64_t>(bytes) >= static_cast<std::uint64_t>(threshold());
}

void stream_copy(void* dst, const void* src, std::size_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
#if defined(__x86_64__) && defined(__GNUC__)
  const std::size_t head = std::min(bytes, (64 - reinterpret_cast<std::uintptr_t>(d) % 64) % 64);
  std::memcpy(d, s, head);
  const std::size_t lines = (bytes - head) / 64;
  kLines(d + head, s + head, lines);
  const std::size_t done = head + 64 * lines;
  std::memcpy(d + done, s + done, bytes - done);
#else
  std::memcpy(d, s, bytes);  // elsewhere regular stores (no processor is in the table)
#endif
}

void stream_fill(void* dst, unsigned char value, std::size_t bytes) {
  char* d = static_cast<char*>(dst);
#if defined(__x86_64__) && defined(__GNUC__)
  const std::size_t head = std::min(bytes, (64 - reinterpret_cast<std::uintptr_t>(d) % 64) % 64);
  std::memset(d, value, head);
  const std::size_t lines = (bytes - head) / 64;
  kFill(d + head, value, lines);
  const std::size_t done = head + 64 * lines;
  std::memset(d + done, value, bytes - done);
#else
  std::memset(d, value, bytes);
#endif
}

void stream_fence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

std::string stream_store_rule() {
  const std::int64_t forced = g_forced.load(std::memory_order_relaxed);
  if (forced >= 0) return "forced: streaming stores for outputs of " + std::to_string(forced) + " bytes and more";
  const Family* f = this_family();
  if (!f) return "regular stores for every output (no measurement for this processor in the table)";
  return std::string(f->name) + ": streaming stores for outputs of " + std::to_string(f->from_bytes >> 20) +
         " MiB and more";
}

void set_stream_store_threshold(std::int64_t bytes) {
  if (bytes < -1)
    throw ValueError("_set_stream_store_threshold: bytes must be -1 (the table), 0 or more, got " +
                     std::to_string(bytes));
  g_forced.store(bytes, std::memory_order_relaxed);
}

}  // namespace hetnn
