// What the standalone oneDNN measurement programs in scripts/ share: the clock, the median, oneDNN's names.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <vector>

namespace {
using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace
