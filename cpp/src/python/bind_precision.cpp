// hetnn._core: the precision float32 products compute in (core/precision.h); hetnn.set_matmul_precision and the
// context manager hetnn.matmul_precision are these.
#include <optional>
#include <string>

#include "core/precision.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace hetnn::python {

void bind_precision(py::module_& m) {
  m.def("matmul_precisions", &precision_names, "The precisions float32 products take, strictest first.");
  m.def(
      "check_matmul_precision",
      [](py::object p, const std::string& op) {
        return std::string(precision_name(arg_precision_name(p, op.c_str())));
      },
      py::arg("precision"), py::arg("op"), "precision as a name, or the TypeError / ValueError naming op.");
  m.def(
      "set_matmul_precision",
      [](py::object p) { set_default_precision(arg_precision_name(p, "set_matmul_precision")); },
      py::arg("precision"));
  m.def("matmul_precision_in_force", [] { return std::string(precision_name(precision_in_force(std::nullopt))); },
        "The precision a float32 product called now on this thread computes in (no precision= of its own).");
  m.def("default_matmul_precision", [] { return std::string(precision_name(default_precision())); });
  m.def("thread_matmul_precision", []() -> py::object {
    const auto p = thread_precision();
    return p ? py::object(py::str(precision_name(*p))) : py::object(py::none());
  });
  m.def(
      "set_thread_matmul_precision",
      [](py::object p) {
        set_thread_precision(p.is_none() ? std::nullopt
                                         : std::optional<Precision>(arg_precision_name(p, "matmul_precision")));
      },
      py::arg("precision").none(true));
}

HETNN_BINDING(2, bind_precision);

}  // namespace hetnn::python
