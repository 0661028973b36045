// hetnn._core: the reductions and statistics (core/reduction.cpp); hetnn._elementwise gives them their Array API
// signatures and Array methods.
#include <optional>
#include <string>

#include "core/errors.h"
#include "core/reduction.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace hetnn::python {

namespace {

// None (every axis), an int, or a tuple / list of ints.
Axes arg_axes(const py::handle& v, const char* op) {
  Axes a;
  if (v.is_none()) return a;
  auto one = [&](const py::handle& h) { return arg_axis(h, op, "axis", "None, an int or a tuple of ints"); };
  a.all = false;
  if (py::isinstance<py::tuple>(v) || py::isinstance<py::list>(v)) {
    for (const py::handle& h : v) a.list.push_back(one(h));
  } else {
    a.list.push_back(one(v));
  }
  return a;
}

}  // namespace

void bind_reduction(py::module_& m) {
  m.def(
      "reduce",
      [](const std::string& name, const Array& x, py::object axis, py::object keepdims, py::object dtype) {
        const RedOp op = red_op_from_name(name);
        const Axes axes = arg_axes(axis, name.c_str());
        const bool kd = arg_bool(keepdims, "keepdims", name.c_str());
        const std::optional<DType> t = arg_dtype(dtype);
        NoGil nogil(!small_host_work(x, x.size()));
        return hetnn::reduce(op, x, axes, kd, t);
      },
      py::arg("op"), py::arg("x"), py::arg("axis") = py::none(), py::arg("keepdims") = false,
      py::arg("dtype") = py::none(),
      "The reduction ``op`` (sum, prod, max, min, argmax, argmin, all, any) of x over ``axis`` (None: all).");
  m.def(
      "mean",
      [](const Array& x, py::object axis, py::object keepdims) {
        const Axes axes = arg_axes(axis, "mean");
        const bool kd = arg_bool(keepdims, "keepdims", "mean");
        NoGil nogil(!small_host_work(x, x.size()));
        return hetnn::mean(x, axes, kd);
      },
      py::arg("x"), py::arg("axis") = py::none(), py::arg("keepdims") = false, "The mean of x over ``axis``.");
  for (const char* name : {"var", "std"}) {
    const bool take_sqrt = std::string(name) == "std";
    m.def(
        name,
        [name, take_sqrt](const Array& x, py::object axis, py::object correction, py::object keepdims) {
          const Axes axes = arg_axes(axis, name);
          const double c = arg_real(correction, "correction", name);
          const bool kd = arg_bool(keepdims, "keepdims", name);
          NoGil nogil(!small_host_work(x, x.size()));
          return hetnn::var(x, axes, c, kd, take_sqrt);
        },
        py::arg("x"), py::arg("axis") = py::none(), py::arg("correction") = 0.0, py::arg("keepdims") = false,
        take_sqrt ? "The standard deviation of x over ``axis`` (correction: 1 for the sample's)."
                  : "The variance of x over ``axis`` (correction: 1 for the sample variance).");
  }
  for (const bool prod : {false, true}) {
    const char* name = prod ? "cumulative_prod" : "cumulative_sum";
    m.def(
        name,
        [prod, name](const Array& x, py::object axis, py::object dtype, py::object include_initial) {
          std::optional<int> a;
          if (!axis.is_none()) {
            const Axes ax = arg_axes(axis, name);
            if (ax.list.size() != 1) throw TypeError(std::string("hetnn.") + name + ": axis must be None or an int");
            a = ax.list[0];
          }
          const std::optional<DType> t = arg_dtype(dtype);
          const bool ii = arg_bool(include_initial, "include_initial", name);
          NoGil nogil(!small_host_work(x, x.size()));
          return prod ? hetnn::cumulative_prod(x, a, t, ii) : hetnn::cumulative_sum(x, a, t, ii);
        },
        py::arg("x"), py::arg("axis") = py::none(), py::arg("dtype") = py::none(),
        py::arg("include_initial") = false,
        prod ? "The running product of x along ``axis``." : "The running sum of x along ``axis``.");
  }
}

HETNN_BINDING(2, bind_reduction);

}  // namespace hetnn::python
