// hetnn._core.ElementwiseKernel: user kernels (core/user_kernel.cpp); hetnn._user_kernels gives them CuPy's call.
#include <optional>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/user_kernel.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace hetnn::python {

namespace {

// The inputs as the kernels take them: Arrays (kept alive in `held`) or numbers.
std::vector<ElementwiseKernel::Input> inputs_of(const py::list& inputs, std::vector<Array>& held, const std::string& who) {
  held.reserve(inputs.size());
  std::vector<ElementwiseKernel::Input> in(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const py::handle h = inputs[i];
    if (py::isinstance<Array>(h)) {
      held.push_back(h.cast<Array>());
      in[i].array = &held.back();
    } else {
      in[i].scalar = arg_scalar(h, who.c_str());
    }
  }
  return in;
}

std::vector<Array> outputs_of(const py::list& outputs, const std::string& who) {
  std::vector<Array> out;
  for (const py::handle h : outputs) {
    if (!py::isinstance<Array>(h))
      throw TypeError("hetnn." + who + ": outputs must be hetnn Arrays, got " +
                      std::string(py::str(py::type::of(h).attr("__name__"))));
    out.push_back(h.cast<Array>());
  }
  return out;
}

// None (every axis), an int or a tuple of ints.
Axes axes_of(const py::handle& v, const std::string& who) {
  Axes a;
  if (v.is_none()) return a;
  a.all = false;
  auto one = [&](const py::handle& h) {
    if (PyBool_Check(h.ptr()) || !PyLong_Check(h.ptr()))
      throw TypeError("hetnn." + who + ": axis must be None, an int or a tuple of ints, got " +
                      std::string(py::str(py::type::of(h).attr("__name__"))));
    const long long k = h.cast<long long>();
    if (k < -(1LL << 20) || k > (1LL << 20)) throw AxisError("hetnn." + who + ": axis " + std::to_string(k) + " is out of bounds");
    return static_cast<int>(k);
  };
  if (py::isinstance<py::tuple>(v) || py::isinstance<py::list>(v)) {
    for (const py::handle& h : v) a.list.push_back(one(h));
  } else {
    a.list.push_back(one(v));
  }
  return a;
}

}  // namespace

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
          [](const ElementwiseKernel& k, py::list inputs, py::list outputs) -> py::list {
            const std::string who = "ElementwiseKernel '" + k.name() + "'";
            std::vector<Array> held;
            const auto in = inputs_of(inputs, held, who);
            const auto out = outputs_of(outputs, who);
            std::vector<Array> made;
            {
              NoGil nogil;
              made = k(in, out);
            }
            if (!out.empty()) return py::list();  // the caller has them: no second Python objects
            return py::cast(std::move(made)).cast<py::list>();
          },
          py::arg("inputs"), py::arg("outputs"),
          "Runs the kernel: inputs (Arrays or numbers), outputs (or []); returns the outputs it made ([] when given).");
  py::class_<ReductionKernel>(m, "ReductionKernel", "A user's reduction kernel (CuPy's design).")
      .def(py::init<const std::string&, const std::string&, std::string, std::string, std::string, std::string,
                    std::string, std::optional<std::string>, std::string>(),
           py::arg("in_params"), py::arg("out_params"), py::arg("map_expr"), py::arg("reduce_expr"),
           py::arg("post_map_expr"), py::arg("identity"), py::arg("name"), py::arg("reduce_type") = py::none(),
           py::arg("preamble") = "")
      .def_property_readonly("name", &ReductionKernel::name)
      .def_property_readonly("nin", &ReductionKernel::nin)
      .def_property_readonly("nout", &ReductionKernel::nout)
      .def(
          "call",
          [](const ReductionKernel& k, py::list inputs, py::list outputs, py::handle axis, py::handle keepdims) {
            const std::string who = "ReductionKernel '" + k.name() + "'";
            std::vector<Array> held;
            const auto in = inputs_of(inputs, held, who);
            const auto out = outputs_of(outputs, who);
            const Axes axes = axes_of(axis, who);
            const bool kd = arg_bool(keepdims, "keepdims", who.c_str());
            NoGil nogil;
            return k(in, axes, kd, out);
          },
          py::arg("inputs"), py::arg("outputs"), py::arg("axis") = py::none(), py::arg("keepdims") = false,
          "Runs the reduction over ``axis`` of the inputs' broadcast shape (None: all).");
}

HETNN_BINDING(2, bind_user_kernel);

}  // namespace hetnn::python
