// hetnn._core.ElementwiseKernel: user kernels (core/user_kernel.cpp); hetnn._user_kernels gives them CuPy's call.
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/user_kernel.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace hetnn::python {

void bind_user_kernel(py::module_& m) {
  py::class_<ElementwiseKernel>(m, "ElementwiseKernel", "A user's element-wise kernel (CuPy's design).")
      .def(py::init<const std::string&, const std::string&, std::string, std::string, std::string>(),
           py::arg("in_params"), py::arg("out_params"), py::arg("operation"), py::arg("name"),
           py::arg("preamble") = "")
      .def_property_readonly("name", &ElementwiseKernel::name)
      .def_property_readonly("nin", [](const ElementwiseKernel& k) { return k.in_params().size(); })
      .def_property_readonly("nout", [](const ElementwiseKernel& k) { return k.out_params().size(); })
      .def(
          "call",
          [](const ElementwiseKernel& k, py::list inputs, py::list outputs) {
            std::vector<Array> held;  // the Arrays the inputs point into
            held.reserve(inputs.size());
            std::vector<ElementwiseKernel::Input> in(inputs.size());
            for (std::size_t i = 0; i < inputs.size(); ++i) {
              const py::handle h = inputs[i];
              if (py::isinstance<Array>(h)) {
                held.push_back(h.cast<Array>());
                in[i].array = &held.back();
              } else {
                in[i].scalar = arg_scalar(h, ("ElementwiseKernel '" + k.name() + "'").c_str());
              }
            }
            std::vector<Array> out;
            for (const py::handle h : outputs) {
              if (!py::isinstance<Array>(h))
                throw TypeError("hetnn.ElementwiseKernel '" + k.name() + "': outputs must be hetnn Arrays, got " +
                                std::string(py::str(py::type::of(h).attr("__name__"))));
              out.push_back(h.cast<Array>());
            }
            NoGil nogil;
            return k(in, out);
          },
          py::arg("inputs"), py::arg("outputs"), "Runs the kernel: inputs (Arrays or numbers), outputs (or []).");
}

HETNN_BINDING(2, bind_user_kernel);

}  // namespace hetnn::python
