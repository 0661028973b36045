// hetnn._core: max pooling (cpp/src/core/max_pool.h).
#include <array>
#include <vector>

#include <pybind11/stl.h>

#include "core/max_pool.h"

#include "python/bindings.h"

namespace py = pybind11;
using namespace hetnn;
using hetnn::python::NoGil;

namespace hetnn::python {

void bind_max_pool(py::module_& m) {
  // Max pooling. Window parameters arrive as (h, w) pairs, already normalised from int-or-pair by the Python front.
  using Pair = std::array<int, 2>;
  m.def(
      "max_pool2d",
      [](const Array& x, Pair k, Pair s, Pair p, Pair d, bool ceil_mode, bool return_indices, const Array* out,
         const Array* indices_out) -> py::object {
        Array y, idx;
        if (indices_out) idx = *indices_out;
        {
          NoGil nogil;
          y = hetnn::max_pool2d(x, Pool2dArgs{k, s, p, d, ceil_mode}, out,
                                return_indices || indices_out ? &idx : nullptr);
        }
        if (return_indices) return py::make_tuple(y, idx);
        return py::cast(y);
      },
      py::arg("x"), py::arg("kernel"), py::arg("stride"), py::arg("padding"), py::arg("dilation"),
      py::arg("ceil_mode"), py::arg("return_indices"), py::arg("out").none(true) = nullptr,
      py::arg("indices_out").none(true) = nullptr);
  m.def(
      "max_pool2d_shape",
      [](const Device& dev, const std::vector<std::int64_t>& shape, const std::string& dtype, Pair k, Pair s,
         Pair p, Pair d, bool ceil_mode) {
        const Pool2dDesc pd = pool2d_plan(shape, dtype_from_name(dtype), dev, Pool2dArgs{k, s, p, d, ceil_mode},
                                          "max_pool2d");
        return py::make_tuple(pd.N, pd.C, pd.OH, pd.OW);
      },
      py::arg("device"), py::arg("shape"), py::arg("dtype"), py::arg("kernel"), py::arg("stride"),
      py::arg("padding"), py::arg("dilation"), py::arg("ceil_mode"),
      "Validates max_pool2d arguments and returns the output shape.");
  m.def(
      "max_pool2d_backward",
      [](const Array& gy, const Array& idx, const std::vector<std::int64_t>& input_shape, Pair k, Pair s, Pair p,
         Pair d, bool ceil_mode, const Array* out) {
        NoGil nogil;
        return hetnn::max_pool2d_backward(gy, idx, input_shape, Pool2dArgs{k, s, p, d, ceil_mode}, out);
      },
      py::arg("grad_output"), py::arg("indices"), py::arg("input_shape"), py::arg("kernel"), py::arg("stride"),
      py::arg("padding"), py::arg("dilation"), py::arg("ceil_mode"), py::arg("out").none(true) = nullptr);
}

}  // namespace hetnn::python
