// Compiled OpenCL programs, kept per (kernel file, build options) for one device's context.
#pragma once
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "backend/opencl/cl_handles.h"

namespace hetnn::opencl {

class ProgramCache {
 public:
  ProgramCache(cl_context context, cl_device_id device, std::string device_name)
      : context_(context), device_(device), device_name_(std::move(device_name)) {}
  // Builds on first use; throws CompileError with the build log, or OpenCLError.
  cl_program get(const std::string& file, const std::string& options);

 private:
  cl_context context_;
  cl_device_id device_;
  std::string device_name_;
  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, Program> programs_;
};

// Builds `source` for one device; throws CompileError (with the build log) or OpenCLError.
Program build_program(cl_context context, cl_device_id device, const char* source, const std::string& name,
                      const std::string& options, const std::string& device_name);

// The embedded text of kernels/<file> with its #include "x.cl" lines expanded; throws hetnn::Error if missing.
std::string kernel_source(const std::string& file, int depth = 0);

}  // namespace hetnn::opencl
