// Contiguous copies and fills of host memory by the CPU device: uploads and downloads (the CPU device's transfers),
// copies between arrays, dense copies of views, zero-filled arrays. One thread's memcpy reaches less than half of
// what two threads do on a 2-vCPU VM (64 MiB on an Emerald Rapids: 4.7 ms against 2.0-2.7), so large ones run in
// pieces the threads take as each finishes one, with streaming stores where stream_output() says (the same rule as
// the element-wise outputs and the STREAM-style ceilings).
#pragma once

#include <cstddef>

namespace hetnn {

// Copies `bytes` from src to dst; the two ranges must not overlap.
void host_copy(void* dst, const void* src, std::size_t bytes);

// Sets `bytes` bytes at dst to `value`.
void host_fill(void* dst, unsigned char value, std::size_t bytes);

// Whether a copy or fill of `bytes` runs on the OpenMP team (the caller marks the team warm after it).
bool host_copy_parallel(std::size_t bytes);

}  // namespace hetnn
