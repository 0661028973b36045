// hetnn._core: what only OpenCL devices have: measured ceilings, build diagnostics, GEMM parameters and their
// tuning store, and the test hooks for kernel variants and launch faults.
#include "backend/extensions.h"
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

namespace {
// The extension T of d's backend, or a ValueError naming the call and the device.
template <class T>
T& need(Device& d, const char* call) {
  if (T* x = find_extension<T>(d.backend())) return *x;
  throw ValueError(std::string(call) + ": " + d.id() + " is not an OpenCL device");
}
}  // namespace

void bind_opencl(py::module_& m) {
  // Interop: the raw OpenCL handles as integers (PyOpenCL's Context/CommandQueue/Buffer.from_int_ptr take them).
  m.def(
      "_cl_handles",
      [](Device& d) -> py::object {
#ifdef HETNN_HAVE_OPENCL
        if (auto* h = find_extension<opencl::RawHandles>(d.backend())) {
          py::dict out;
          out["context"] = reinterpret_cast<std::uintptr_t>(h->context());
          out["queue"] = reinterpret_cast<std::uintptr_t>(h->queue());
          out["device"] = reinterpret_cast<std::uintptr_t>(h->device_id());
          return std::move(out);
        }
#endif
        (void)d;
        return py::none();
      },
      py::arg("device"));
  m.def(
      "_cl_buffer",
      [](const Array& a) -> std::uintptr_t {
#ifdef HETNN_HAVE_OPENCL
        if (auto* h = find_extension<opencl::RawHandles>(a.device()->backend())) {
          if (!a.is_dense())
            throw ValueError("Array.cl_buffer: this array is a view (from indexing, a transpose or a flip) whose "
                             "elements do not start the buffer in C order; take the handle of a.copy()");
          return reinterpret_cast<std::uintptr_t>(h->buffer(*a.buffer()));
        }
#endif
        throw TypeError("Array.cl_buffer: the array is on " + a.device()->id() +
                        ", not an OpenCL device (it has no cl_mem); move it with .to(device)");
      },
      py::arg("a"));

  // The ceilings of an OpenCL device for `bench peak`: (FP32 FMA GFLOP/s, triad GB/s).
  m.def(
      "_opencl_peak",
      [](Device& d, std::size_t triad_bytes, int repeats) {
        auto& tools = need<KernelTools>(d, "_opencl_peak");
        if (triad_bytes < 4096 || repeats < 1) throw ValueError("_opencl_peak: triad_bytes >= 4096, repeats >= 1");
        NoGil nogil;
        return tools.measure_peak(triad_bytes, repeats);
      },
      py::arg("device"), py::arg("triad_bytes"), py::arg("repeats") = 5);

  // Diagnostics used by the tests: build an OpenCL source; raise the error a status would raise.
  m.def(
      "_build_opencl",
      [](Device& d, const std::string& source, const std::string& options) {
        auto& tools = need<KernelTools>(d, "_build_opencl");
        NoGil nogil;
        tools.build_source(source, options);
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
        if (auto* t = find_extension<GemmTuning>(d.backend())) {
          const auto [params, source] = t->params(GemmType::from_name(dtype), macs);
          return py::make_tuple(params, source);
        }
        return py::none();
      },
      py::arg("device"), py::arg("dtype"), py::arg("macs") = -1);
  // How products of a 16-bit dtype compute on an OpenCL device (probing its matrix units once); None elsewhere.
  m.def(
      "precision_mode",
      [](Device& d, const std::string& dtype) -> py::object {
        if (auto* t = find_extension<GemmTuning>(d.backend())) return py::str(t->precision_mode(GemmType::from_name(dtype)));
        return py::none();
      },
      py::arg("device"), py::arg("dtype"));
  m.attr("GEMM_SMALL_MACS") = GemmTuning::kSmallMacs;  // the small size class of the database and the tuner
  m.def(
      "set_gemm_params",
      [](Device& d, const std::string& dtype, const std::string& params, const std::string& source) {
        // "" removes the override: the stored tuned entry, else the database, decides again
        need<GemmTuning>(d, "set_gemm_params").set(GemmType::from_name(dtype), params, source);
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
        need<KernelTools>(d, "_set_kernel_variant").set_kernel_variant(v);
      },
      py::arg("device"), py::arg("variant"));
  // Device.set_conv_algorithm / conv_algorithm / conv_choices ("auto" is the device's choice, stored as "").
  const auto set_conv_algorithm = [](Device& d, const std::string& a) {
    KernelTools* k = find_extension<KernelTools>(d.backend());
    if (k) return k->set_conv_algorithm(a == "auto" ? "" : a);
    if (a != "auto" && a != "")
      throw ValueError("set_conv_algorithm: " + d.id() + "'s convolutions are oneDNN's, which picks its own " +
                       "algorithm; only 'auto' applies there (the algorithms apply to OpenCL devices), got '" + a + "'");
  };
  m.def("set_conv_algorithm", set_conv_algorithm, py::arg("device"), py::arg("algorithm"));
  m.def("_set_conv_algorithm", set_conv_algorithm, py::arg("device"), py::arg("algorithm"));  // tests: "" too
  m.def(
      "conv_algorithm",
      [](Device& d) -> std::string {
        KernelTools* k = find_extension<KernelTools>(d.backend());
        const std::string a = k ? k->conv_algorithm() : "";
        return a.empty() ? "auto" : a;
      },
      py::arg("device"));
  m.def(
      "conv_choices",
      [](Device& d) {
        py::list out;
        if (KernelTools* k = find_extension<KernelTools>(d.backend()))
          for (const KernelTools::ConvChoice& c : k->conv_choices()) {
            py::dict ms;
            for (const auto& [name, t] : c.ms) ms[py::str(name)] = t;
            out.append(py::dict(py::arg("shape") = c.shape, py::arg("algorithm") = c.algorithm, py::arg("ms") = ms,
                                py::arg("calls") = c.calls, py::arg("flags") = c.flags));
          }
        return out;
      },
      py::arg("device"));
  m.def(
      "_inject_gemm_faults",  // test hook: the next n GEMMs running a tuned override fail as a bad launch would
      [](Device& d, int n) {
        need<GemmTuning>(d, "_inject_gemm_faults").inject_faults(n);
      },
      py::arg("device"), py::arg("n"));
}

HETNN_BINDING(2, bind_opencl);

}  // namespace hetnn::python
