// copy_strided on the CPU device (core/ops.h, CopyDesc): the last dimension is the inner loop (a memcpy where both
// sides are contiguous along it), the outer dimensions are walked by their strides; rows are shared out over the
// threads for large copies, and a row long enough is itself shared (host_copy; a dense copy is one such row).
#include <omp.h>

#include <cstdint>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_convert.h"
#include "backend/cpu/cpu_threads.h"
#include "backend/cpu/host_copy.h"

namespace hetnn {

namespace {

constexpr std::int64_t kParallelBytes = 1 << 16;

template <class T>
void copy_as(const CopyDesc& d, const void* src, void* out) {
  const auto* s = static_cast<const T*>(src) + d.os;
  auto* o = static_cast<T*>(out) + d.oo;
  const int nd = static_cast<int>(d.shape.size());
  const std::int64_t inner = d.shape[nd - 1], ssi = d.ss[nd - 1], soi = d.so[nd - 1];
  const std::int64_t rows = d.n / inner;
  const Shape outer(d.shape.begin(), d.shape.end() - 1);
  const std::vector<std::int64_t> ss(d.ss.begin(), d.ss.end() - 1), so(d.so.begin(), d.so.end() - 1);
  const auto row_bytes = static_cast<std::size_t>(inner) * sizeof(T);
  if (ssi == 1 && soi == 1 && host_copy_parallel(row_bytes)) {  // long contiguous rows: each one by all threads
    Walker ws(outer, ss, 0), wo(outer, so, 0);
    for (std::int64_t r = 0; r < rows; ++r, ws.next(), wo.next()) host_copy(o + wo.off, s + ws.off, row_bytes);
    return;
  }
  const bool parallel = d.n * static_cast<std::int64_t>(sizeof(T)) >= kParallelBytes && rows > 1;
#pragma omp parallel if (parallel)
  {
    std::int64_t r0 = 0, r1 = rows;
    if (parallel) {
      const std::int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      r0 = rows * t / nt;
      r1 = rows * (t + 1) / nt;
    }
    if (r0 < r1) {
      // the walkers over the outer dimensions (none for a 1-d copy: offset 0)
      Walker ws(outer, ss, r0), wo(outer, so, r0);
      for (std::int64_t r = r0; r < r1; ++r, ws.next(), wo.next()) {
        const T* a = s + ws.off;
        T* b = o + wo.off;
        if (ssi == 1 && soi == 1) {
          std::memcpy(b, a, static_cast<std::size_t>(inner) * sizeof(T));
        } else {
          for (std::int64_t j = 0; j < inner; ++j) b[j * soi] = a[j * ssi];
        }
      }
    }
  }
}

}  // namespace

void CpuBackend::copy_strided(const CopyDesc& d, const Buffer& src, Buffer& out) {
  if (d.n == 0) return;
  cpu_threads::apply();
  timed("copy_strided", 2 * static_cast<std::uint64_t>(d.n) * d.elem, [&] {
    switch (d.elem) {
      case 1: copy_as<std::uint8_t>(d, src.host_ptr(), out.host_ptr()); break;
      case 2: copy_as<std::uint16_t>(d, src.host_ptr(), out.host_ptr()); break;
      case 4: copy_as<std::uint32_t>(d, src.host_ptr(), out.host_ptr()); break;
      default: copy_as<std::uint64_t>(d, src.host_ptr(), out.host_ptr()); break;
    }
  });
}

}  // namespace hetnn
