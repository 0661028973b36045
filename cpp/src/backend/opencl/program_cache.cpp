#include "backend/opencl/program_cache.h"

#include <cstring>
#include <sstream>
#include <vector>

#include "backend/opencl/cl_check.h"
#include "backend/opencl/kernel_sources.h"
#include "core/errors.h"

namespace hetnn::opencl {

namespace {
const char* embedded(const std::string& file) {
  for (int i = 0; i < kKernelSourceCount; ++i)
    if (file == kKernelSources[i].file) return kKernelSources[i].text;
  throw Error("no embedded OpenCL kernel file '" + file + "'");
}
}  // namespace

std::string kernel_source(const std::string& file, int depth) {
  if (depth > 8) throw Error("OpenCL kernel includes nest too deeply at '" + file + "'");
  std::istringstream in(embedded(file));
  std::string line, out;
  while (std::getline(in, line)) {
    const std::string directive = "#include \"";
    if (line.rfind(directive, 0) == 0) {
      const auto end = line.find('"', directive.size());
      out += kernel_source(line.substr(directive.size(), end - directive.size()), depth + 1);
    } else {
      out += line;
    }
    out += '\n';
  }
  return out;
}

cl_program ProgramCache::get(const std::string& file, const std::string& options) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto key = std::make_pair(file, options);
  auto it = programs_.find(key);
  if (it != programs_.end()) return it->second.get();

  Program prog = build_program(context_, device_, kernel_source(file).c_str(), file, options, device_name_);
  return programs_.emplace(key, std::move(prog)).first->second.get();
}

Program build_program(cl_context context, cl_device_id device, const char* source, const std::string& name,
                      const std::string& options, const std::string& device_name) {
  const std::size_t len = std::strlen(source);
  cl_int status = CL_SUCCESS;
  Program prog(clCreateProgramWithSource(context, 1, &source, &len, &status));
  HETNN_CL_CHECK(status);
  const cl_int build = clBuildProgram(prog.get(), 1, &device, options.c_str(), nullptr, nullptr);
  if (build != CL_SUCCESS) {
    std::size_t log_size = 0;
    clGetProgramBuildInfo(prog.get(), device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &log_size);
    std::vector<char> log(log_size + 1, '\0');
    clGetProgramBuildInfo(prog.get(), device, CL_PROGRAM_BUILD_LOG, log_size, log.data(), nullptr);
    if (build == CL_BUILD_PROGRAM_FAILURE || build == CL_INVALID_BUILD_OPTIONS || build == CL_COMPILE_PROGRAM_FAILURE)
      throw CompileError(name, options, device_name, log.data());
    throw_cl_error(build, "clBuildProgram(" + name + ")");
  }
  return prog;
}

}  // namespace hetnn::opencl
