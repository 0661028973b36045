// hetnn._core: the element-wise ops (core/elementwise.cpp) by name, astype, and the type rules; hetnn._elementwise
// turns them into functions and Array operators.
#include <cmath>
#include <limits>
#include <string>

#include "core/elementwise.h"
#include "core/errors.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace hetnn::python {

namespace {

const char* kind_name(EwKind k) {
  switch (k) {
    case EwKind::arith: return "arith";
    case EwKind::real: return "real";
    case EwKind::compare: return "compare";
    case EwKind::logical: return "logical";
    case EwKind::bitwise: return "bitwise";
    case EwKind::rounding: return "rounding";
    case EwKind::test: return "test";
    case EwKind::cast: return "cast";
  }
  return "";
}

}  // namespace

void bind_elementwise(py::module_& m) {
  m.def(
      "elementwise",
      // x2 and out as handles: pybind11 loads None into an Array* only on its second, converting pass, after a
      // failed first pass that formats an AttributeError (a third of a small array's call). With out given the
      // result is None (the caller has out): no second Python object for it.
      [](const std::string& name, const Array& x1, py::handle x2, bool scalar_first, py::handle out) -> py::object {
        const EwOp op = ew_op_from_name(name);
        if (!out.is_none() && !py::isinstance<Array>(out))
          throw TypeError("hetnn." + name + ": out must be a hetnn Array or None, got " +
                          py::str(py::type::of(out).attr("__name__")).cast<std::string>());
        Array* y = out.is_none() ? nullptr : &out.cast<Array&>();
        Array r;
        if (x2.is_none()) {
          NoGil nogil(!small_host_work(x1, x1.size()));
          r = hetnn::elementwise(op, x1, nullptr, y);
        } else if (py::isinstance<Array>(x2)) {
          const Array& b = x2.cast<const Array&>();
          // broadcasting makes at most size(x1) * size(x2) elements
          NoGil nogil(!small_host_work(x1, b.shape() == x1.shape() ? x1.size() : x1.size() * b.size()));
          r = scalar_first ? hetnn::elementwise(op, b, &x1, y) : hetnn::elementwise(op, x1, &b, y);
        } else {
          const EwScalar s = arg_scalar(x2, name.c_str());
          NoGil nogil(!small_host_work(x1, x1.size()));
          r = hetnn::elementwise(op, x1, s, scalar_first, y);
        }
        if (y) return py::none();
        return py::cast(std::move(r));
      },
      // out may be passed by position: hetnn._elementwise does (pybind11's keyword matching costs ~1 us a call)
      py::arg("op"), py::arg("x1"), py::arg("x2") = py::none(), py::arg("scalar_first") = false,
      py::arg("out") = py::none(),
      R"doc(The element-wise op ``op`` (a name of ``elementwise_ops()``) of x1 (and x2: an Array on x1's device or a
Python number; ``scalar_first``: x2 is the first operand), broadcast as NumPy does; into ``out`` when given (then
None is returned), else a new Array.)doc");
  m.def(
      "where",
      [](const Array& cond, py::object x1, py::object x2, Array* out) {
        const bool a1 = py::isinstance<Array>(x1), a2 = py::isinstance<Array>(x2);
        if (!a1 && !a2) throw TypeError("hetnn.where: x1 or x2 must be a hetnn Array (the other may be a number)");
        const Array A = a1 ? x1.cast<Array>() : scalar_array(x2.cast<Array>(), arg_scalar(x1, "where"));
        const Array B = a2 ? x2.cast<Array>() : scalar_array(A, arg_scalar(x2, "where"));
        NoGil nogil;
        return hetnn::where(cond, A, B, out);
      },
      py::arg("condition"), py::arg("x1"), py::arg("x2"), py::arg("out").none(true) = nullptr,
      "condition ? x1 : x2 element-wise, broadcast together (x1 or x2 may be a Python number).");
  m.def(
      "broadcast_shapes",
      [](const py::list& shapes) {
        Shape out;
        for (const py::handle s : shapes) out = hetnn::broadcast("broadcast_arrays", out, arg_shape(s, "shape",
                                                                                                  "broadcast_arrays"));
        return py::tuple(py::cast(out));
      },
      py::arg("shapes"), "The shape the given shapes broadcast to together (NumPy's rule), else ValueError.");
  m.def(
      "broadcast_to",
      [](const Array& x, py::handle shape) {
        const Shape s = arg_shape(shape, "shape", "broadcast_to");
        NoGil nogil;
        return hetnn::broadcast_to(x, s);
      },
      py::arg("x"), py::arg("shape"), "x broadcast to shape, a new array on x's device.");
  m.def(
      "full",
      [](const DevicePtr& dev, py::handle shape, py::handle fill_value, py::object dtype) {
        const Shape s = arg_shape(shape, "shape", "full");
        const EwScalar v = arg_scalar(fill_value, "full");
        const DType t = dtype.is_none() ? DType::f32 : dtype_from_name(py::str(dtype));
        NoGil nogil;
        return hetnn::full(dev, s, v, dtype.is_none() ? nullptr : &t);
      },
      py::arg("device"), py::arg("shape"), py::arg("fill_value"), py::arg("dtype") = py::none(),
      "An array of shape on device filled with fill_value (a Python number).");
  m.def(
      "astype",
      [](const Array& x, const std::string& dtype, bool copy) {
        const DType t = dtype_from_name(dtype);
        NoGil nogil;
        return hetnn::astype(x, t, copy);
      },
      py::arg("x"), py::arg("dtype"), py::arg("copy") = true,
      "x converted to dtype on its device (floating to integer saturates, NaN gives 0).");
  m.def("elementwise_ops", [] {
    py::list out;
    for (const std::string& name : ew_op_names()) {
      const EwInfo& info = ew_info(ew_op_from_name(name));
      out.append(py::make_tuple(name, info.arity, kind_name(info.kind)));
    }
    return out;
  }, "(name, arity, kind) of every element-wise op.");
  m.def(
      "result_type", [](const std::string& a, const std::string& b) {
        return std::string(dtype_name(result_type(dtype_from_name(a), dtype_from_name(b))));
      },
      py::arg("a"), py::arg("b"), "The dtype arrays of dtypes a and b promote to.");
}

HETNN_BINDING(2, bind_elementwise);

}  // namespace hetnn::python
