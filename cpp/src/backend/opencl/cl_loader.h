// The ICD loader, opened at run time (cl_loader.cpp): hetnn does not link libOpenCL, so that it imports and runs on
// the CPU device where no OpenCL is installed.
#pragma once
#include <CL/cl.h>

#include <string>

namespace hetnn::opencl {

// Why no ICD loader could be opened ("" once one is): what each attempt said.
std::string loader_error();

// An entry point of the loader, or nullptr (no loader, or a loader without it).
void* loader_symbol(const char* name);

}  // namespace hetnn::opencl
