// hetnn._core: the pybind11 module. Thin: argument conversion, GIL release around device work, and the mapping of
// hetnn's C++ errors to Python exceptions. Validation lives in the core front (cpp/src/core).
// The bindings themselves live in bind_<area>.cpp, one file per op or area, each registered with HETNN_BINDING.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/warn.h"
#include "python/bindings.h"

namespace py = pybind11;
using namespace hetnn;

namespace hetnn::python {

namespace {

struct Binding {
  int stage;
  const char* name;
  BindFn fn;
};
std::vector<Binding>& registry() {
  static std::vector<Binding> r;  // filled by the bind_*.cpp files' static registrars, before PyInit runs
  return r;
}

}  // namespace

BindingRegistrar::BindingRegistrar(int stage, const char* name, BindFn fn) { registry().push_back({stage, name, fn}); }

void run_bindings(py::module_& m) {
  std::vector<Binding> r = registry();
  std::sort(r.begin(), r.end(), [](const Binding& a, const Binding& b) {
    return a.stage != b.stage ? a.stage < b.stage : std::string(a.name) < b.name;
  });
  for (const Binding& b : r) b.fn(m);
}

}  // namespace hetnn::python

namespace {

// Raises `type(message)` with extra attributes set on the instance.
void raise_with(PyObject* type, const std::string& message, const py::dict& attrs) {
  py::object exc = py::reinterpret_borrow<py::object>(type)(message);
  for (auto item : attrs) py::setattr(exc, item.first, item.second);
  PyErr_SetObject(type, exc.ptr());
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "hetnn native core: devices, arrays, kernels (oneDNN CPU and OpenCL backends)";
  python::install_exit_guard(m);

  static py::handle base = PyErr_NewExceptionWithDoc(
      "hetnn.HetnnError", "Base class of hetnn's own errors (driver and compiler failures).", PyExc_RuntimeError,
      nullptr);
  static py::handle cl_error = PyErr_NewExceptionWithDoc(
      "hetnn.OpenCLError", "An OpenCL call failed. Attributes: status (int), status_name, call.", base.ptr(),
      nullptr);
  static py::handle compile_error = PyErr_NewExceptionWithDoc(
      "hetnn.CompileError", "An OpenCL program failed to build. Attributes: log, options, kernel, device.",
      base.ptr(), nullptr);
  // NumPy's AxisError (numpy.exceptions since 1.25, numpy before): a ValueError and an IndexError
  static py::handle axis_error = [] {
    py::module_ np = py::module_::import("numpy");
    py::object t = py::hasattr(np, "exceptions") && py::hasattr(np.attr("exceptions"), "AxisError")
                       ? np.attr("exceptions").attr("AxisError")
                       : np.attr("AxisError");
    return t.release();
  }();
  m.attr("HetnnError") = base;
  m.attr("OpenCLError") = cl_error;
  m.attr("CompileError") = compile_error;

  // Core warnings become Python warnings (RuntimeWarning), raised with the GIL held.
  hetnn::set_warning_handler([](const std::string& msg) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    if (PyErr_WarnEx(PyExc_RuntimeWarning, ("hetnn: " + msg).c_str(), 1) != 0) PyErr_Clear();
  });

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const AxisError& e) {
      PyErr_SetString(axis_error.ptr(), e.what());
    } catch (const ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const OutOfMemory& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const OpenCLError& e) {
      py::dict a;
      a["status"] = e.status;
      a["status_name"] = e.status_name;
      a["call"] = e.call;
      raise_with(cl_error.ptr(), e.what(), a);
    } catch (const CompileError& e) {
      py::dict a;
      a["log"] = e.log;
      a["options"] = e.options;
      a["kernel"] = e.kernel;
      a["device"] = e.device;
      raise_with(compile_error.ptr(), e.what(), a);
    } catch (const Error& e) {
      PyErr_SetString(base.ptr(), e.what());
    } catch (const dnnl::error& e) {
      if (e.status == dnnl_out_of_memory)
        PyErr_SetString(PyExc_MemoryError, (std::string("oneDNN: ") + e.what()).c_str());
      else
        PyErr_SetString(base.ptr(), (std::string("oneDNN: ") + e.what()).c_str());
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError, "out of host memory");
    }
  });

  python::run_bindings(m);
}
