// HETNN_CL_CHECK(call): throws hetnn::OpenCLError carrying the call's text, the status code and its name.
// Allocation-failure statuses throw hetnn::OutOfMemory instead (Python: MemoryError).
#pragma once
#include <CL/cl.h>

#include <string>

namespace hetnn::opencl {

const char* status_name(cl_int status);
[[noreturn]] void throw_cl_error(cl_int status, const std::string& call);

}  // namespace hetnn::opencl

#define HETNN_CL_CHECK(call)                                                     \
  do {                                                                           \
    const cl_int hetnn_cl_status_ = (call);                                      \
    if (hetnn_cl_status_ != CL_SUCCESS) ::hetnn::opencl::throw_cl_error(hetnn_cl_status_, #call); \
  } while (0)
