// Shared helpers of the pybind11 module hetnn._core.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "core/array.h"

namespace hetnn::python {

namespace py = pybind11;

// One per bind_<area>.cpp; module.cpp calls them all.
void bind_device(py::module_& m);    // devices, threads, cache directory, atomic writes
void bind_opencl(py::module_& m);    // OpenCL-only: ceilings, diagnostics, GEMM parameters and tuning, test hooks
void bind_bench(py::module_& m);     // native benchmark peers
void bind_array(py::module_& m);     // hetnn._core.Array
void bind_nn(py::module_& m);        // training ops
void bind_matmul(py::module_& m);
void bind_max_pool(py::module_& m);
Shape to_shape(const py::sequence& seq, const char* what);

// Releases the GIL around device work (instead of py::gil_scoped_release). When the interpreter exits while a
// daemon thread is inside hetnn, CPython ends that thread with pthread_exit as it asks for the GIL back; the forced
// unwind must not cross a noexcept destructor (that aborted the process: "terminate called without an active
// exception"). So the destructor may throw (the unwind passes through), and a thread that comes back while the
// interpreter is finalizing never re-enters it: it parks until the process, which is exiting, ends (unless it is
// the main thread, which is the one finalizing).
// Called once at module initialisation (exit_guard.cpp): remembers the main thread and registers drain_for_exit
// with Python's atexit.
void install_exit_guard(py::module_& m);

class NoGil {
 public:
  NoGil();
  ~NoGil() noexcept(false);
  NoGil(const NoGil&) = delete;
  NoGil& operator=(const NoGil&) = delete;

 private:
  PyThreadState* state_;
};

}  // namespace hetnn::python
