// hetnn._core: matmul (cpp/src/core/matmul.h).
#include <pybind11/stl.h>

#include "core/matmul.h"

#include "python/bindings.h"

namespace py = pybind11;
using namespace hetnn;
using hetnn::python::NoGil;

namespace hetnn::python {

void bind_matmul(py::module_& m) {
  m.def("activations", &activation_names, "The activations matmul and Dense fuse (the core's list).");
  m.def(
      "matmul",
      [](const Array& a, const Array& b, const Array* out, bool trans_a, bool trans_b, double alpha, double beta,
         const Array* bias, const std::string& activation) {
        MatmulArgs args{trans_a, trans_b, alpha, beta, bias, activation_from_name(activation)};
        NoGil nogil;
        return hetnn::matmul(a, b, out, args);
      },
      py::arg("a"), py::arg("b"), py::arg("out").none(true), py::arg("trans_a"), py::arg("trans_b"),
      py::arg("alpha"), py::arg("beta"), py::arg("bias").none(true) = nullptr, py::arg("activation") = "");
  m.def(
      "matmul_shape",
      [](const Array& a, const Array& b, bool trans_a, bool trans_b, double beta) {
        Shape s;
        matmul_plan(a, b, nullptr, MatmulArgs{trans_a, trans_b, 1.0, beta}, &s);
        return py::tuple(py::cast(s));
      },
      py::arg("a"), py::arg("b"), py::arg("trans_a"), py::arg("trans_b"), py::arg("beta") = 0.0,
      "Validates matmul operands and returns the result's shape.");
}

HETNN_BINDING(2, bind_matmul);

}  // namespace hetnn::python
