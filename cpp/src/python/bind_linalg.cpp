// hetnn._core: tensordot (core/linalg.h); hetnn._linalg gives it the Array API's signature.
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/linalg.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace hetnn::python {

namespace {

// A sequence of ints (x1's or x2's summed axes).
std::vector<int> axis_list(const py::handle& v, const char* which) {
  if (!py::isinstance<py::tuple>(v) && !py::isinstance<py::list>(v))
    throw TypeError(std::string("hetnn.tensordot: axes must be an int or a pair of sequences of ints, got a ") +
                    which + " entry of type " + std::string(py::str(py::type::of(v).attr("__name__"))));
  std::vector<int> out;
  for (const py::handle& h : v) out.push_back(arg_axis(h, "tensordot", "an axis", "an int"));
  return out;
}

}  // namespace

void bind_linalg(py::module_& m) {
  m.def(
      "tensordot",
      [](const Array& x1, const Array& x2, py::handle axes) {
        if (!py::isinstance<py::tuple>(axes) && !py::isinstance<py::list>(axes)) {
          const int n = arg_axis(axes, "tensordot", "axes", "an int or a pair of sequences of ints");
          NoGil nogil;
          return tensordot(x1, x2, n);
        }
        const py::sequence pair = py::reinterpret_borrow<py::sequence>(axes);
        if (pair.size() != 2)
          throw ValueError("hetnn.tensordot: axes must be an int or a pair of sequences of ints, got " +
                           std::to_string(pair.size()) + " entries");
        const std::vector<int> a = axis_list(pair[0], "first"), b = axis_list(pair[1], "second");
        NoGil nogil;
        return tensordot(x1, x2, a, b);
      },
      py::arg("x1"), py::arg("x2"), py::arg("axes") = 2,
      "The sum of products over the paired axes (an int n: x1's last n with x2's first n).");
}

HETNN_BINDING(2, bind_linalg);

}  // namespace hetnn::python
