// The host-memory pass of hetnn.distributed's node-local gradient reduction (python/hetnn/_shared_reduce.py).
#pragma once
#include <cstdint>
#include <vector>

namespace hetnn {

// dst[t][lo:hi] = sum_q w[q] * src[q][lo:hi] for every target t, q in order. A target may be one of the sources:
// each block is summed into scratch before it is written anywhere.
void weighted_slice_sum(const std::vector<const float*>& src, const std::vector<float>& w,
                        const std::vector<float*>& dst, std::int64_t lo, std::int64_t hi);
void weighted_slice_sum(const std::vector<const double*>& src, const std::vector<double>& w,
                        const std::vector<double*>& dst, std::int64_t lo, std::int64_t hi);

}  // namespace hetnn
