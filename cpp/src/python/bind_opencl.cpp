// hetnn._core: what only OpenCL devices have: measured ceilings, build diagnostics, GEMM parameters and their
// tuning store, and the test hooks for kernel variants and launch faults.
#include "core/device.h"
#include "core/errors.h"
#ifdef HETNN_HAVE_OPENCL
#include "backend/opencl/cl_backend.h"
#include "backend/opencl/cl_check.h"
#include "backend/opencl/gemm_tuning.h"
#endif

#include "python/bindings.h"

namespace py = pybind11;
using namespace hetnn;
using hetnn::python::NoGil;

namespace hetnn::python {

void bind_opencl(py::module_& m) {
  // The ceilings of an OpenCL device for `bench peak`: (FP32 FMA GFLOP/s, triad GB/s).
  m.def(
      "_opencl_peak",
      [](Device& d, std::size_t triad_bytes, int repeats) {
#ifdef HETNN_HAVE_OPENCL
        auto* cl = dynamic_cast<opencl::ClBackend*>(&d.backend());
        if (!cl) throw ValueError("_opencl_peak: " + d.id() + " is not an OpenCL device");
        if (triad_bytes < 4096 || repeats < 1) throw ValueError("_opencl_peak: triad_bytes >= 4096, repeats >= 1");
        NoGil nogil;
        return cl->measure_peak(triad_bytes, repeats);
#else
        throw ValueError("_opencl_peak: hetnn was built without OpenCL");
        return std::pair<double, double>{};
#endif
      },
      py::arg("device"), py::arg("triad_bytes"), py::arg("repeats") = 5);

  // Diagnostics used by the tests: build an OpenCL source; raise the error a status would raise.
  m.def(
      "_build_opencl",
      [](Device& d, const std::string& source, const std::string& options) {
#ifdef HETNN_HAVE_OPENCL
        auto* cl = dynamic_cast<opencl::ClBackend*>(&d.backend());
        if (!cl) throw ValueError("_build_opencl: " + d.id() + " is not an OpenCL device");
        NoGil nogil;
        cl->build_source(source, options);
#else
        throw ValueError("_build_opencl: hetnn was built without OpenCL");
#endif
      },
      py::arg("device"), py::arg("source"), py::arg("options") = "");
#ifdef HETNN_HAVE_OPENCL
  m.def("_raise_opencl_status", [](int status, const std::string& call) { opencl::throw_cl_error(status, call); });
#endif

  // GEMM kernel parameters of an OpenCL device (database entry or tuned override) for a problem of `macs`
  // multiply-adds (-1: the entry for large problems); None on the CPU device.
  m.def(
      "gemm_params",
      [](Device& d, const std::string& dtype, std::int64_t macs) -> py::object {
#ifdef HETNN_HAVE_OPENCL
        if (auto* cl = dynamic_cast<opencl::ClBackend*>(&d.backend())) {
          const auto p = cl->gemm_params(dtype_from_name(dtype), macs);
          return py::make_tuple(p.str(), p.source);
        }
#endif
        return py::none();
      },
      py::arg("device"), py::arg("dtype"), py::arg("macs") = -1);
  m.def(
      "set_gemm_params",
      [](Device& d, const std::string& dtype, const std::string& params, const std::string& source) {
#ifdef HETNN_HAVE_OPENCL
        if (auto* cl = dynamic_cast<opencl::ClBackend*>(&d.backend())) {
          if (params.empty()) {  // "" removes the override: the database decides again
            cl->clear_gemm_params(dtype_from_name(dtype));
            return;
          }
          auto p = opencl::GemmParams::parse(params);
          p.source = source;
          cl->set_gemm_params(dtype_from_name(dtype), p);
          return;
        }
#endif
        throw ValueError("set_gemm_params: " + d.id() + " is not an OpenCL device");
      },
      py::arg("device"), py::arg("dtype"), py::arg("params"), py::arg("source") = "tuned");
  m.def(
      "store_tuned_gemm",  // merges a tuner's result (a JSON object) into <cache>/tuning/gemm.json; returns the path
      [](Device& d, const std::string& dtype, const std::string& entry_json) -> std::string {
#ifdef HETNN_HAVE_OPENCL
        if (d.info().kind == "opencl") return opencl::store_tuned(d.info(), dtype, entry_json);
#endif
        throw ValueError("store_tuned_gemm: " + d.id() + " is not an OpenCL device");
      },
      py::arg("device"), py::arg("dtype"), py::arg("entry_json"));
  m.def(
      "tuning_path", []() -> py::object {
#ifdef HETNN_HAVE_OPENCL
        if (auto p = opencl::tuning_path()) return py::str(*p);
#endif
        return py::none();
      });
  m.def(
      "_set_kernel_variant",  // tests: run the GPU-shaped kernels on a CPU OpenCL device, or back ("")
      [](Device& d, const std::string& v) {
#ifdef HETNN_HAVE_OPENCL
        if (auto* cl = dynamic_cast<opencl::ClBackend*>(&d.backend())) return cl->set_kernel_variant(v);
#endif
        throw ValueError("_set_kernel_variant: " + d.id() + " is not an OpenCL device");
      },
      py::arg("device"), py::arg("variant"));
  m.def(
      "_inject_gemm_faults",  // test hook: the next n GEMMs running a tuned override fail as a bad launch would
      [](Device& d, int n) {
#ifdef HETNN_HAVE_OPENCL
        if (auto* cl = dynamic_cast<opencl::ClBackend*>(&d.backend())) return cl->inject_gemm_faults(n);
#endif
        throw ValueError("_inject_gemm_faults: " + d.id() + " is not an OpenCL device");
      },
      py::arg("device"), py::arg("n"));
}

}  // namespace hetnn::python
