// hetnn._core: sort and argsort (core/sort.h). Arguments as the user gives them; hetnn._sorting converts arrays.
#include <string>

#include "core/errors.h"
#include "core/sort.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace hetnn::python {


void bind_sort(py::module_& m) {
  for (const bool values : {true, false}) {
    const char* name = values ? "sort" : "argsort";
    m.def(
        name,
        [values, name](const Array& x, py::object axis, py::object descending, py::object stable) {
          const int a = arg_axis(axis, name);
          const bool desc = arg_bool(descending, "descending", name);
          const bool st = arg_bool(stable, "stable", name);
          NoGil nogil;
          return values ? hetnn::sort(x, a, desc, st) : hetnn::argsort(x, a, desc, st);
        },
        py::arg("x"), py::arg("axis") = -1, py::arg("descending") = false, py::arg("stable") = true,
        values ? "A sorted copy of x along ``axis`` (stable; NaN the largest value)."
               : "The int64 positions along ``axis`` that sort x (stable; NaN the largest value).");
  }
}

void bind_searchsorted(py::module_& m) {
  m.def(
      "searchsorted",
      [](const Array& x1, const Array& x2, py::object side, const Array* sorter) {
        if (!py::isinstance<py::str>(side))
          throw TypeError("hetnn.searchsorted: side must be 'left' or 'right', got " + std::string(py::repr(side)));
        const std::string s = side.cast<std::string>();
        NoGil nogil;
        return hetnn::searchsorted(x1, x2, s, sorter);
      },
      py::arg("x1"), py::arg("x2"), py::arg("side") = "left", py::arg("sorter").none(true) = nullptr,
      "Where each element of x2 goes in the sorted 1-D x1 (int64, x2's shape).");
  m.def(
      "nonzero",
      [](const Array& x) {
        std::vector<Array> out;
        {
          NoGil nogil;
          out = hetnn::nonzero(x);
        }
        return py::tuple(py::cast(out));
      },
      py::arg("x"), "The int64 coordinates of x's non-zero elements, one array per dimension.");
  m.def(
      "unique",
      [](const Array& x, bool indices, bool inverse, bool counts) {
        UniqueParts u;
        {
          NoGil nogil;
          u = hetnn::unique(x, indices, inverse, counts);
        }
        const auto opt = [](const Array& a) { return a.valid() ? py::cast(a) : py::none(); };
        return py::make_tuple(u.values, opt(u.indices), opt(u.inverse), opt(u.counts));
      },
      py::arg("x"), py::arg("indices") = false, py::arg("inverse") = false, py::arg("counts") = false,
      "(values, indices or None, inverse or None, counts or None): the Array API's unique_* in one call.");
}

HETNN_BINDING(2, bind_sort);
HETNN_BINDING(2, bind_searchsorted);

}  // namespace hetnn::python
