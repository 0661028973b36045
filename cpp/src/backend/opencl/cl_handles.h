// RAII owners for OpenCL handles: release on destruction (never throwing), retain on copy.
#pragma once
#include <CL/cl.h>

#include <utility>

namespace hetnn::opencl {

template <class T, cl_int (*Retain)(T), cl_int (*Release)(T)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T h) : h_(h) {}  // takes ownership of one reference
  Handle(const Handle& o) : h_(o.h_) {
    if (h_) Retain(h_);
  }
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle& operator=(Handle o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  ~Handle() {
    if (h_) Release(h_);  // status ignored: destructors never throw
  }
  T get() const { return h_; }
  explicit operator bool() const { return h_ != nullptr; }

 private:
  T h_ = nullptr;
};

using Context = Handle<cl_context, clRetainContext, clReleaseContext>;
using Queue = Handle<cl_command_queue, clRetainCommandQueue, clReleaseCommandQueue>;
using Mem = Handle<cl_mem, clRetainMemObject, clReleaseMemObject>;
using Program = Handle<cl_program, clRetainProgram, clReleaseProgram>;
using Kernel = Handle<cl_kernel, clRetainKernel, clReleaseKernel>;
using Event = Handle<cl_event, clRetainEvent, clReleaseEvent>;

}  // namespace hetnn::opencl
