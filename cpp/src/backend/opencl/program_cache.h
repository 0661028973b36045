// Compiled OpenCL programs for one device's context, cached at two levels: in memory per (kernel file, build
// options), and on disk as program binaries keyed by a hash of source, options, device and driver (written
// atomically, signed with the cache directory's secret key; a corrupt, stale or foreign entry is ignored with a
// warning and rebuilt).
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "backend/opencl/cl_handles.h"
#include "core/device.h"
#include "core/siphash.h"

namespace hetnn::opencl {

class ProgramCache {
 public:
  ProgramCache(cl_context context, cl_device_id device, const DeviceInfo& info);
  // Builds on first use; throws CompileError with the build log, or OpenCLError.
  cl_program get(const std::string& file, const std::string& options);
  // A program from source text (user kernels), cached alike under `label` (which must name that one source).
  cl_program get_text(const std::string& label, const std::string& source, const std::string& options);
  // Builds, disk-cache loads, in-memory hits and seconds spent building or loading, so far.
  struct Stats {
    std::uint64_t built = 0, disk_hits = 0, memory_hits = 0;
    double seconds = 0;
  };
  Stats stats() const;
  // Forgets a program, in memory and on disk: a cached binary that builds but lacks a kernel it should hold (another
  // program's binary under this key) would otherwise fail in every later process.
  void discard(const std::string& file, const std::string& options);

 private:
  cl_program fetch(const std::string& file, const std::string& options, const std::string* text);
  std::uint64_t disk_key(const std::string& source, const std::string& options) const;
  Program load_binary(const std::string& path, std::uint64_t key, const SipKey& secret, const std::string& options);
  void save_binary(cl_program prog, const std::string& path, std::uint64_t key, const SipKey& secret);
  // A program whose inline PTX hides instructions as "//WG:" comments (gemm_wgmma_ops.cl: wgmma, which ptxas takes
  // only for sm_90a while NVIDIA's OpenCL compiler writes sm_90): rebuilt from its PTX with the comments opened and
  // the target made sm_90a. Unchanged where the binary holds no such comments; CompileError where the target is not
  // sm_90 (the instructions would otherwise stay comments and the kernel compute nothing).
  Program open_hidden(Program prog, const std::string& file, const std::string& options);

  cl_context context_;
  cl_device_id device_;
  std::string device_name_;
  std::string identity_;  // device + driver, part of the disk key
  mutable std::mutex mu_;
  Stats stats_;
  std::map<std::pair<std::string, std::string>, Program> programs_;
};

// Builds `source` for one device; throws CompileError (with the build log) or OpenCLError.
Program build_program(cl_context context, cl_device_id device, const char* source, const std::string& name,
                      const std::string& options, const std::string& device_name);

// PTX whose instructions were hidden as "//WG:" comments with them opened and the target made sm_90a (ProgramCache::
// open_hidden); the text unchanged where it is not PTX or holds no such comments; ValueError where the target is not
// sm_90 (the instructions would stay comments and compute nothing).
std::string open_hidden_ptx(const std::string& ptx);

// The embedded text of kernels/<file> with its #include "x.cl" lines expanded; throws hetnn::Error if missing.
std::string kernel_source(const std::string& file, int depth = 0);

}  // namespace hetnn::opencl
