// The shared-memory gradient reduction's pass: one slice of every rank's segment summed with weights and written into
// the segments named. It runs once per training step between two barriers, so its time is the ranks' idle time:
// the loops are compiled per x86-64 level (HETNN_CLONES), and the first two sources are summed in one sweep (the
// two-rank case reads each element once and writes the scratch once; a sweep per source was 3-6x slower).
#include "backend/cpu/slice_reduce_cpu.h"

#include <algorithm>
#include <cstring>

#include "backend/cpu/cpu_loops.h"

namespace hetnn {
namespace {

#define HETNN_SLICE_LOOPS(T, SUFFIX)                                                                              \
  HETNN_CLONES void scaled_##SUFFIX(T* __restrict d, const T* __restrict s, T w, std::int64_t n) {              \
    for (std::int64_t i = 0; i < n; ++i) d[i] = w * s[i];                                                        \
  }                                                                                                              \
  HETNN_CLONES void sum2_##SUFFIX(T* __restrict d, const T* __restrict a, const T* __restrict b, T wa, T wb,    \
                                  std::int64_t n) {                                                              \
    for (std::int64_t i = 0; i < n; ++i) d[i] = wa * a[i] + wb * b[i];                                           \
  }                                                                                                              \
  HETNN_CLONES void axpy_##SUFFIX(T* __restrict d, const T* __restrict s, T w, std::int64_t n) {                \
    for (std::int64_t i = 0; i < n; ++i) d[i] += w * s[i];                                                       \
  }
HETNN_SLICE_LOOPS(float, f32)
HETNN_SLICE_LOOPS(double, f64)
#undef HETNN_SLICE_LOOPS

inline void scaled(float* d, const float* s, float w, std::int64_t n) { scaled_f32(d, s, w, n); }
inline void scaled(double* d, const double* s, double w, std::int64_t n) { scaled_f64(d, s, w, n); }
inline void sum2(float* d, const float* a, const float* b, float wa, float wb, std::int64_t n) {
  sum2_f32(d, a, b, wa, wb, n);
}
inline void sum2(double* d, const double* a, const double* b, double wa, double wb, std::int64_t n) {
  sum2_f64(d, a, b, wa, wb, n);
}
inline void axpy(float* d, const float* s, float w, std::int64_t n) { axpy_f32(d, s, w, n); }
inline void axpy(double* d, const double* s, double w, std::int64_t n) { axpy_f64(d, s, w, n); }

template <typename T>
void slice_sum(const std::vector<const T*>& src, const std::vector<T>& w, const std::vector<T*>& dst,
               std::int64_t lo, std::int64_t hi) {
  constexpr std::int64_t kBlock = 512;  // 2-4 KiB of scratch: stays in L1 while it is copied to every target
  alignas(64) T acc[kBlock];
  for (std::int64_t c = lo; c < hi; c += kBlock) {
    const std::int64_t m = std::min(kBlock, hi - c);
    if (src.size() >= 2)
      sum2(acc, src[0] + c, src[1] + c, w[0], w[1], m);
    else
      scaled(acc, src[0] + c, w[0], m);
    for (std::size_t q = 2; q < src.size(); ++q) axpy(acc, src[q] + c, w[q], m);
    for (T* d : dst) std::memcpy(d + c, acc, static_cast<std::size_t>(m) * sizeof(T));
  }
}

}  // namespace

void weighted_slice_sum(const std::vector<const float*>& src, const std::vector<float>& w,
                        const std::vector<float*>& dst, std::int64_t lo, std::int64_t hi) {
  slice_sum(src, w, dst, lo, hi);
}
void weighted_slice_sum(const std::vector<const double*>& src, const std::vector<double>& w,
                        const std::vector<double*>& dst, std::int64_t lo, std::int64_t hi) {
  slice_sum(src, w, dst, lo, hi);
}

}  // namespace hetnn
