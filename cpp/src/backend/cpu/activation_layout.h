// The channel-blocked activation layouts of backend/extensions.h (ConvLayouts) as oneDNN memory descriptors.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "core/errors.h"

namespace hetnn {

// (N, C, H, W) float32 in channel block b: 1 NCHW, C NHWC, 8 / 16 oneDNN's nChw8c / nChw16c.
inline dnnl::memory::desc activation_desc(const std::array<std::int64_t, 4>& s, int b) {
  using tag = dnnl::memory::format_tag;
  const dnnl::memory::dims dims{s[0], s[1], s[2], s[3]};
  const auto f32 = dnnl::memory::data_type::f32;
  if (b == 1) return dnnl::memory::desc(dims, f32, tag::nchw);
  if (b == s[1]) return dnnl::memory::desc(dims, f32, tag::nhwc);
  if (b == 8) return dnnl::memory::desc(dims, f32, tag::nChw8c);
  if (b == 16) return dnnl::memory::desc(dims, f32, tag::nChw16c);
  throw ValueError("activation layout: no channel block " + std::to_string(b) + " for " +
                      std::to_string(s[1]) + " channels");
}

// The block of md when it is one of those layouts, else 0.
inline int activation_block(const dnnl::memory::desc& md) {
  const dnnl::memory::dims d = md.get_dims();
  if (d.size() != 4 || md.get_data_type() != dnnl::memory::data_type::f32) return 0;
  const std::array<std::int64_t, 4> s{d[0], d[1], d[2], d[3]};
  for (const std::int64_t b : {std::int64_t{1}, s[1], std::int64_t{16}, std::int64_t{8}})
    if (md == activation_desc(s, static_cast<int>(b))) return static_cast<int>(b);
  return 0;
}

}  // namespace hetnn
