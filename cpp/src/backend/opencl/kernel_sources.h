// The .cl files under kernels/, embedded at build time by cmake/embed_kernels.cmake.
#pragma once

namespace hetnn::opencl {

struct KernelSource {
  const char* file;
  const char* text;
};
extern const KernelSource kKernelSources[];
extern const int kKernelSourceCount;

}  // namespace hetnn::opencl
