// The OpenCL entry points hetnn calls, resolved at run time from the ICD loader (libOpenCL.so.1) instead of linked:
// `import hetnn` and the CPU device work on a machine with no OpenCL loader, and opencl_status() says why there is
// no OpenCL device. The loader is $HETNN_OPENCL_LIBRARY when set (alone: "none" runs without OpenCL), else the one
// already in the process (so hetnn and a peer such as CLBlast share it), else libOpenCL.so.1 / libOpenCL.so from
// the library path, else the one a binary wheel ships beside the module.
//
// These definitions carry the headers' names and types, declared hidden (the pragma before the headers): they bind
// hetnn's own calls when linked into its module and are not exported to other libraries of the process.
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#include <cstdlib>
#include <string>

// the system headers first, so that only OpenCL's own declarations are hidden
#pragma GCC visibility push(hidden)
#include <CL/cl.h>
#pragma GCC visibility pop

#include "backend/opencl/cl_loader.h"

namespace hetnn::opencl {
namespace {

struct Loader {
  void* handle = nullptr;
  std::string error;
};

// <the folder of the module holding this code>/_opencl/libOpenCL.so.1: where a binary wheel ships an ICD loader
// (ocl-icd, which reads the system's /etc/OpenCL/vendors and $OCL_ICD_VENDORS) for machines that have none.
std::string bundled() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&bundled), &info) || !info.dli_fname) return "";
  std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash) + "/_opencl/libOpenCL.so.1";
}

Loader open_loader() {
  Loader l;
  std::string tried;
  auto attempt = [&](const char* name, int flags) {
    if (l.handle || !name || !*name) return;
    dlerror();
    l.handle = dlopen(name, flags);
    if (!l.handle && !(flags & RTLD_NOLOAD)) {
      const char* e = dlerror();
      tried += (tried.empty() ? "" : "; ") + std::string(e ? e : name);
    }
    if (l.handle && !dlsym(l.handle, "clGetPlatformIDs")) {  // some other library
      tried += (tried.empty() ? "" : "; ") + std::string(name) + " has no clGetPlatformIDs";
      dlclose(l.handle);
      l.handle = nullptr;
    }
  };
  const char* env = std::getenv("HETNN_OPENCL_LIBRARY");
  if (env && std::string(env) == "none") {
    l.error = "HETNN_OPENCL_LIBRARY is 'none'";
    return l;
  }
  if (env && *env) {  // named: that library alone ("none", or any name that does not load: no OpenCL)
    attempt(env, RTLD_NOW | RTLD_LOCAL);
  } else {
    attempt("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);  // already loaded (a peer library linked it)
    attempt("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    attempt("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
    attempt(bundled().c_str(), RTLD_NOW | RTLD_LOCAL);  // a binary wheel's own, for machines without one
  }
  if (!l.handle) l.error = "no OpenCL ICD loader could be loaded (" + tried + ")";
  return l;
}

const Loader& loader() {
  static const Loader l = open_loader();  // thread-safe once
  return l;
}

}  // namespace

std::string loader_error() { return loader().error; }

void* loader_symbol(const char* name) {
  const Loader& l = loader();
  return l.handle ? dlsym(l.handle, name) : nullptr;
}

}  // namespace hetnn::opencl

namespace {

template <class F>
F resolve(const char* name) {
  return reinterpret_cast<F>(hetnn::opencl::loader_symbol(name));
}

// A missing entry point reads as "no platform" for the enumeration and as an invalid operation elsewhere (unreached:
// without a loader no OpenCL object exists to call them on).
constexpr cl_int kNoLoader = -1001;  // CL_PLATFORM_NOT_FOUND_KHR
using ContextNotify = void(CL_CALLBACK*)(const char*, const void*, size_t, void*);
using BuildNotify = void(CL_CALLBACK*)(cl_program, void*);

}  // namespace

// cl_int-returning calls: NAME, (typed parameters), (arguments), status when the entry point is missing.
#define HETNN_CL_STATUS_CALLS(X)                                                                                     \
  X(clGetPlatformIDs, (cl_uint n, cl_platform_id * p, cl_uint * np), (n, p, np), kNoLoader)                          \
  X(clGetPlatformInfo, (cl_platform_id p, cl_platform_info w, size_t n, void* v, size_t* r), (p, w, n, v, r),         \
    CL_INVALID_PLATFORM)                                                                                             \
  X(clGetDeviceIDs, (cl_platform_id p, cl_device_type t, cl_uint n, cl_device_id * d, cl_uint * nd),                  \
    (p, t, n, d, nd), CL_INVALID_PLATFORM)                                                                           \
  X(clGetDeviceInfo, (cl_device_id d, cl_device_info w, size_t n, void* v, size_t* r), (d, w, n, v, r),               \
    CL_INVALID_DEVICE)                                                                                               \
  X(clRetainContext, (cl_context c), (c), CL_INVALID_CONTEXT)                                                        \
  X(clReleaseContext, (cl_context c), (c), CL_INVALID_CONTEXT)                                                       \
  X(clRetainCommandQueue, (cl_command_queue q), (q), CL_INVALID_COMMAND_QUEUE)                                       \
  X(clReleaseCommandQueue, (cl_command_queue q), (q), CL_INVALID_COMMAND_QUEUE)                                      \
  X(clRetainMemObject, (cl_mem m), (m), CL_INVALID_MEM_OBJECT)                                                       \
  X(clReleaseMemObject, (cl_mem m), (m), CL_INVALID_MEM_OBJECT)                                                      \
  X(clRetainProgram, (cl_program p), (p), CL_INVALID_PROGRAM)                                                        \
  X(clReleaseProgram, (cl_program p), (p), CL_INVALID_PROGRAM)                                                       \
  X(clBuildProgram, (cl_program p, cl_uint n, const cl_device_id* d, const char* o, BuildNotify f, void* u),          \
    (p, n, d, o, f, u), CL_INVALID_PROGRAM)                                                                          \
  X(clGetProgramInfo, (cl_program p, cl_program_info w, size_t n, void* v, size_t* r), (p, w, n, v, r),               \
    CL_INVALID_PROGRAM)                                                                                              \
  X(clGetProgramBuildInfo, (cl_program p, cl_device_id d, cl_program_build_info w, size_t n, void* v, size_t* r),     \
    (p, d, w, n, v, r), CL_INVALID_PROGRAM)                                                                          \
  X(clRetainKernel, (cl_kernel k), (k), CL_INVALID_KERNEL)                                                           \
  X(clReleaseKernel, (cl_kernel k), (k), CL_INVALID_KERNEL)                                                          \
  X(clSetKernelArg, (cl_kernel k, cl_uint i, size_t n, const void* v), (k, i, n, v), CL_INVALID_KERNEL)              \
  X(clWaitForEvents, (cl_uint n, const cl_event* e), (n, e), CL_INVALID_EVENT)                                       \
  X(clRetainEvent, (cl_event e), (e), CL_INVALID_EVENT)                                                              \
  X(clReleaseEvent, (cl_event e), (e), CL_INVALID_EVENT)                                                             \
  X(clGetEventProfilingInfo, (cl_event e, cl_profiling_info w, size_t n, void* v, size_t* r), (e, w, n, v, r),        \
    CL_INVALID_EVENT)                                                                                                \
  X(clFinish, (cl_command_queue q), (q), CL_INVALID_COMMAND_QUEUE)                                                   \
  X(clEnqueueReadBuffer,                                                                                             \
    (cl_command_queue q, cl_mem m, cl_bool b, size_t o, size_t n, void* p, cl_uint ne, const cl_event* w,            \
     cl_event* e),                                                                                                   \
    (q, m, b, o, n, p, ne, w, e), CL_INVALID_COMMAND_QUEUE)                                                          \
  X(clEnqueueWriteBuffer,                                                                                            \
    (cl_command_queue q, cl_mem m, cl_bool b, size_t o, size_t n, const void* p, cl_uint ne, const cl_event* w,      \
     cl_event* e),                                                                                                   \
    (q, m, b, o, n, p, ne, w, e), CL_INVALID_COMMAND_QUEUE)                                                          \
  X(clEnqueueCopyBuffer,                                                                                             \
    (cl_command_queue q, cl_mem s, cl_mem d, size_t so, size_t dof, size_t n, cl_uint ne, const cl_event* w,         \
     cl_event* e),                                                                                                   \
    (q, s, d, so, dof, n, ne, w, e), CL_INVALID_COMMAND_QUEUE)                                                       \
  X(clEnqueueFillBuffer,                                                                                             \
    (cl_command_queue q, cl_mem m, const void* p, size_t ps, size_t o, size_t n, cl_uint ne, const cl_event* w,      \
     cl_event* e),                                                                                                   \
    (q, m, p, ps, o, n, ne, w, e), CL_INVALID_COMMAND_QUEUE)                                                         \
  X(clEnqueueNDRangeKernel,                                                                                          \
    (cl_command_queue q, cl_kernel k, cl_uint d, const size_t* o, const size_t* g, const size_t* l, cl_uint ne,       \
     const cl_event* w, cl_event* e),                                                                                \
    (q, k, d, o, g, l, ne, w, e), CL_INVALID_COMMAND_QUEUE)                                                          \
  X(clEnqueueMarkerWithWaitList, (cl_command_queue q, cl_uint ne, const cl_event* w, cl_event* e), (q, ne, w, e),    \
    CL_INVALID_COMMAND_QUEUE)                                                                                        \
  X(clGetEventInfo, (cl_event e, cl_event_info w, size_t n, void* v, size_t* r), (e, w, n, v, r),                   \
    CL_INVALID_EVENT)                                                                                                \
  X(clEnqueueBarrierWithWaitList, (cl_command_queue q, cl_uint ne, const cl_event* w, cl_event* e), (q, ne, w, e),   \
    CL_INVALID_COMMAND_QUEUE)                                                                                        \
  X(clFlush, (cl_command_queue q), (q), CL_INVALID_COMMAND_QUEUE)                                                     \
  X(clEnqueueUnmapMemObject,                                                                                         \
    (cl_command_queue q, cl_mem m, void* p, cl_uint ne, const cl_event* w, cl_event* e), (q, m, p, ne, w, e),         \
    CL_INVALID_COMMAND_QUEUE)

// Calls that create an object: TYPE, NAME, (typed parameters), (arguments), the error-code parameter.
#define HETNN_CL_CREATE_CALLS(X)                                                                                     \
  X(cl_context, clCreateContext,                                                                                     \
    (const cl_context_properties* p, cl_uint n, const cl_device_id* d, ContextNotify f, void* u, cl_int* err),        \
    (p, n, d, f, u, err), err)                                                                                       \
  X(cl_command_queue, clCreateCommandQueue,                                                                          \
    (cl_context c, cl_device_id d, cl_command_queue_properties p, cl_int* err), (c, d, p, err), err)                 \
  X(cl_mem, clCreateBuffer, (cl_context c, cl_mem_flags f, size_t n, void* h, cl_int* err), (c, f, n, h, err), err)  \
  X(cl_program, clCreateProgramWithSource,                                                                           \
    (cl_context c, cl_uint n, const char** s, const size_t* l, cl_int* err), (c, n, s, l, err), err)                 \
  X(cl_program, clCreateProgramWithBinary,                                                                           \
    (cl_context c, cl_uint n, const cl_device_id* d, const size_t* l, const unsigned char** b, cl_int* st,           \
     cl_int* err),                                                                                                   \
    (c, n, d, l, b, st, err), err)                                                                                   \
  X(cl_kernel, clCreateKernel, (cl_program p, const char* name, cl_int* err), (p, name, err), err)                  \
  X(void*, clEnqueueMapBuffer,                                                                                       \
    (cl_command_queue q, cl_mem m, cl_bool b, cl_map_flags f, size_t o, size_t n, cl_uint ne, const cl_event* w,     \
     cl_event* e, cl_int* err),                                                                                      \
    (q, m, b, f, o, n, ne, w, e, err), err)

#define HETNN_DEFINE_STATUS(NAME, PARAMS, ARGS, MISSING)          \
  extern "C" cl_int NAME PARAMS {                                 \
    using F = cl_int(CL_API_CALL*) PARAMS;                        \
    static const F real_ = resolve<F>(#NAME);                     \
    return real_ ? real_ ARGS : (MISSING);                        \
  }
#define HETNN_DEFINE_CREATE(TYPE, NAME, PARAMS, ARGS, ERR)        \
  extern "C" TYPE NAME PARAMS {                                   \
    using F = TYPE(CL_API_CALL*) PARAMS;                          \
    static const F real_ = resolve<F>(#NAME);                     \
    if (real_) return real_ ARGS;                                 \
    if (ERR) *(ERR) = CL_INVALID_OPERATION;                       \
    return nullptr;                                               \
  }

HETNN_CL_STATUS_CALLS(HETNN_DEFINE_STATUS)
HETNN_CL_CREATE_CALLS(HETNN_DEFINE_CREATE)
