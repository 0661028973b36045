// Python arguments -> the core's argument types, with the op and the argument named in every message (bindings.h).
// Range checks (positive, at most half the kernel, ...) stay in the core: these only convert.
#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "core/errors.h"
#include "core/matmul.h"
#include "core/elementwise.h"
#include "python/bindings.h"

namespace hetnn::python {

namespace {

std::string describe(py::handle v) {
  return std::string(py::str(py::type::of(v).attr("__name__"))) + " (" + std::string(py::repr(v)) + ")";
}

bool is_bool(py::handle v) {
  if (PyBool_Check(v.ptr())) return true;
  const char* t = Py_TYPE(v.ptr())->tp_name;  // (no std::string: this runs for every argument of every call)
  return std::strcmp(t, "numpy.bool") == 0 || std::strcmp(t, "numpy.bool_") == 0;
}

// operator.index(v) (ints and NumPy integers; not bools, not floats) as a long long: TypeError "<op>: <name>
// <expected>, got ..." otherwise, ValueError "<op>: <name> <value> <too_big>" beyond `limit` in magnitude (or beyond
// 64 bits). The messages are built only when thrown.
long long index_value(py::handle v, const char* op, const char* name, const char* expected, long long limit,
                      const char* too_big) {
  int overflow = 0;
  if (PyLong_CheckExact(v.ptr())) {  // the common case, without the protocol
    const long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (!overflow && x >= -limit && x < limit) return x;
  }
  PyObject* i = is_bool(v) ? nullptr : PyNumber_Index(v.ptr());
  if (!i) {
    PyErr_Clear();
    throw TypeError(std::string(op) + ": " + name + " " + expected + ", got " + describe(v));
  }
  const py::object io = py::reinterpret_steal<py::object>(i);
  const long long x = PyLong_AsLongLongAndOverflow(io.ptr(), &overflow);
  if (overflow || x < -limit || x >= limit)
    throw ValueError(std::string(op) + ": " + name + " " + std::string(py::str(io)) + " " + too_big);
  return x;
}

int one_int(py::handle v, const char* name, const char* op) {
  return static_cast<int>(index_value(v, op, name, "must be an int or a pair of ints", 1LL << 31,
                                      "is out of range (|value| < 2**31)"));
}

// The numbers ABCs, looked up once (borrowed for the process's life: a static py::object would be released after
// the interpreter is gone).
PyObject* numbers_abc(const char* name) {
  static PyObject* integral = py::object(py::module_::import("numbers").attr("Integral")).release().ptr();
  static PyObject* real = py::object(py::module_::import("numbers").attr("Real")).release().ptr();
  return std::string(name) == "Integral" ? integral : real;
}

std::string type_name(py::handle v) { return py::str(py::type::of(v).attr("__name__")); }

}  // namespace

namespace {

// v's value when it is an int that fits in int64; else nullopt, with `overflow` its sign when it is an int that does
// not fit (0 when it is no int at all).
std::optional<std::int64_t> int_value(py::handle v, int& overflow) {
  PyObject* o = v.ptr();
  overflow = 0;
  if (PyLong_CheckExact(o)) {  // the common case, without the protocol lookups
    const long long k = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (!overflow) return k;
  } else if (!is_bool(v) && PyIndex_Check(o) && !py::isinstance<Array>(v) &&
             !(py::isinstance<py::array>(v) && py::array(py::reinterpret_borrow<py::object>(v)).ndim() > 0)) {
    PyObject* i = PyNumber_Index(o);  // NumPy integers, 0-d integer NumPy arrays
    if (i) {
      const py::object io = py::reinterpret_steal<py::object>(i);
      const long long k = PyLong_AsLongLongAndOverflow(io.ptr(), &overflow);
      if (!overflow) return k;
    } else {
      PyErr_Clear();
    }
  }
  return std::nullopt;
}

}  // namespace

std::int64_t arg_int(py::handle v, const char* op, const char* name, const char* expected) {
  int overflow = 0;
  if (const std::optional<std::int64_t> k = int_value(v, overflow)) return *k;
  if (overflow)
    throw ValueError(std::string("hetnn.") + op + ": " + name + " " + std::string(py::str(v)) +
                     " does not fit in int64");
  throw TypeError(std::string("hetnn.") + op + ": " + name + " must be " + expected + ", got " + type_name(v));
}

std::int64_t arg_int_clamped(py::handle v, const char* op, const char* name, std::int64_t limit) {
  int overflow = 0;
  if (const std::optional<std::int64_t> k = int_value(v, overflow)) return std::clamp(*k, -limit, limit);
  if (overflow) return overflow > 0 ? limit : -limit;
  throw TypeError(std::string("hetnn.") + op + ": " + name + " must be an int, got " + type_name(v));
}

int arg_axis(py::handle v, const char* op, const char* name, const char* expected) {
  const std::int64_t k = arg_int(v, op, name, expected);
  if (k < -(1 << 20) || k > (1 << 20))
    throw AxisError(std::string("hetnn.") + op + ": " + name + " " + std::to_string(k) + " is out of bounds");
  return static_cast<int>(k);
}

bool arg_bool(py::handle v, const char* name, const char* op) {
  if (is_bool(v)) return PyObject_IsTrue(v.ptr()) == 1;
  throw TypeError(std::string(op) + ": " + name + " must be a bool, got " + describe(v));
}

double arg_real(py::handle v, const char* name, const char* op) {
  if (PyFloat_CheckExact(v.ptr())) return PyFloat_AS_DOUBLE(v.ptr());  // the common cases, without the ABC check
  if (PyLong_CheckExact(v.ptr())) {
    const double x = PyLong_AsDouble(v.ptr());
    if (x == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      throw ValueError(std::string(op) + ": " + name + " " + std::string(py::repr(v)) + " is too large for a float");
    }
    return x;
  }
  const std::string what = std::string(op) + ": " + name;
  const py::module_ numbers = py::module_::import("numbers");
  if (is_bool(v) || !py::isinstance(v, numbers.attr("Real")))
    throw TypeError(what + " must be a real number, got " + describe(v));
  const double x = PyFloat_AsDouble(v.ptr());
  if (x == -1.0 && PyErr_Occurred()) {
    const bool overflow = PyErr_ExceptionMatches(PyExc_OverflowError);
    PyErr_Clear();
    if (overflow) throw ValueError(what + " " + std::string(py::repr(v)) + " is too large for a float");
    throw TypeError(what + " must be a real number, got " + describe(v));
  }
  return x;
}

Activation arg_activation(py::handle v, const char* op) {
  if (v.is_none()) return Activation::none;
  if (!py::isinstance<py::str>(v))
    throw TypeError(std::string(op) + ": activation must be None or one of 'relu', 'sigmoid', 'tanh', got " +
                    describe(v));
  return activation_from_name(v.cast<std::string>());
}

std::optional<DType> arg_dtype(const py::handle& v, const char* what) {
  if (v.is_none()) return std::nullopt;
  std::string name;
  if (py::isinstance<py::str>(v)) {
    name = v.cast<std::string>();
  } else {
    try {  // np.float32, np.dtype("float16"), ml_dtypes.bfloat16, ...
      name = py::str(py::module_::import("numpy").attr("dtype")(v).attr("name"));
    } catch (const py::error_already_set&) {
      name = py::str(v);
    }
  }
  try {
    return dtype_from_name(name);
  } catch (const TypeError& e) {
    if (!what) throw;
    throw TypeError(std::string(what) + ": " + e.what());
  }
}

Precision arg_precision_name(py::handle v, const char* op, bool none_allowed) {
  if (!py::isinstance<py::str>(v))
    throw TypeError(std::string(op) + ": precision must be " + (none_allowed ? "None, " : "") +
                    "'highest' or 'high', got " + describe(v));
  return precision_from_name(v.cast<std::string>(), std::string(op) + ": precision");
}

std::optional<Precision> arg_precision(py::handle v, const char* op) {
  if (v.is_none()) return std::nullopt;
  return arg_precision_name(v, op, true);
}

Conv2dArgs arg_conv2d(const char* op, py::object stride, py::object padding, py::object dilation, py::object groups,
                     py::object activation) {
  Conv2dArgs args;
  args.stride = arg_pair(stride, "stride", op);
  args.dilation = arg_pair(dilation, "dilation", op);
  if (py::isinstance<py::str>(padding)) {
    const std::string p = padding.cast<std::string>();
    if (p == "same") args.mode = Conv2dArgs::Padding::same;
    else if (p == "valid") args.mode = Conv2dArgs::Padding::valid;
    else throw ValueError(std::string(op) + ": padding must be an int, a pair of ints, 'same' or 'valid', got '" + p + "'");
  } else {
    args.padding = arg_pair(padding, "padding", op);
  }
  if (py::isinstance<py::sequence>(groups) || py::isinstance<py::bool_>(groups))
    throw TypeError(std::string(op) + ": groups must be an int, got " + std::string(py::repr(groups)));
  args.groups = arg_pair(groups, "groups", op)[0];
  args.act = arg_activation(activation, op);
  return args;
}

std::array<int, 2> arg_pair(py::handle v, const char* name, const char* op) {
  if (PyTuple_Check(v.ptr()) || PyList_Check(v.ptr())) {
    const py::sequence seq = py::reinterpret_borrow<py::sequence>(v);
    if (seq.size() == 1) {  // PyTorch accepts a 1-element sequence as "both"
      const int x = one_int(seq[0], name, op);
      return {x, x};
    }
    if (seq.size() != 2)
      throw ValueError(std::string(op) + ": " + name + " must be an int or a pair of ints, got " +
                       std::to_string(seq.size()) + " values " + std::string(py::repr(py::tuple(seq))));
    return {one_int(seq[0], name, op), one_int(seq[1], name, op)};
  }
  const int x = one_int(v, name, op);
  return {x, x};
}

Shape arg_shape(py::handle v, const char* name, const char* op) {
  const bool ndarray = py::isinstance<py::array>(v) && py::reinterpret_borrow<py::array>(v).ndim() == 1;
  if (!PyTuple_Check(v.ptr()) && !PyList_Check(v.ptr()) && !ndarray)
    throw TypeError(std::string(op) + ": " + name + " must be a sequence of ints, got " +
                    std::string(py::str(py::type::of(v).attr("__name__"))));
  Shape s;
  for (const py::handle item : py::reinterpret_borrow<py::iterable>(v))
    s.push_back(index_value(item, op, name, "must hold ints", std::numeric_limits<long long>::max(),
                            "does not fit in 64 bits"));
  return s;
}

Pool2dArgs arg_pool2d(const char* op, py::handle kernel_size, py::handle stride, py::handle padding,
                      py::handle dilation, py::handle ceil_mode) {
  if (kernel_size.is_none())
    throw TypeError(std::string(op) + ": kernel_size is required (an int or a pair of ints)");
  Pool2dArgs a;
  a.kernel = arg_pair(kernel_size, "kernel_size", op);
  const bool empty = (PyTuple_Check(stride.ptr()) || PyList_Check(stride.ptr())) && py::len(stride) == 0;
  a.stride = stride.is_none() || empty ? a.kernel : arg_pair(stride, "stride", op);
  a.padding = arg_pair(padding, "padding", op);
  a.dilation = arg_pair(dilation, "dilation", op);
  a.ceil_mode = arg_bool(ceil_mode, "ceil_mode", op);
  return a;
}

bool arg_zero_padding(py::handle padding_mode, const char* op) {
  const char* how = "padding_mode must be '-inf' (the padding never wins, as PyTorch's; an integer image's lowest "
                    "value) or 'zeros' (it holds zeros, index -1 where one wins)";
  if (!py::isinstance<py::str>(padding_mode))
    throw TypeError(std::string(op) + ": " + how + ", got " + std::string(py::repr(padding_mode)));
  const char* m = PyUnicode_AsUTF8(padding_mode.ptr());
  if (!m) throw py::error_already_set();
  if (std::strcmp(m, "-inf") == 0) return false;
  if (std::strcmp(m, "zeros") == 0) return true;
  throw ValueError(std::string(op) + ": " + how + ", got " + std::string(py::repr(padding_mode)));
}

EwScalar arg_scalar(const py::handle& v, const char* op) {
  EwScalar s;
  PyObject* o = v.ptr();
  if (PyFloat_CheckExact(o)) {  // the common cases first, without the ABC checks
    s.is_float = true;
    s.f = PyFloat_AS_DOUBLE(o);
    return s;
  }
  if (is_bool(v)) {
    s.is_bool = true;
    s.i = PyObject_IsTrue(o) == 1 ? 1 : 0;
    s.f = static_cast<double>(s.i);
    return s;
  }
  if (PyLong_CheckExact(o) || PyObject_IsInstance(o, numbers_abc("Integral")) == 1) {
    try {
      s.i = py::int_(py::reinterpret_borrow<py::object>(v)).cast<std::int64_t>();
    } catch (const py::cast_error&) {
      throw ValueError(std::string("hetnn.") + op + ": the Python int " + std::string(py::str(v)) +
                       " does not fit in int64");
    }
    s.f = static_cast<double>(s.i);
    return s;
  }
  if (PyObject_IsInstance(o, numbers_abc("Real")) == 1) {
    s.is_float = true;
    s.f = py::float_(py::reinterpret_borrow<py::object>(v)).cast<double>();
    return s;
  }
  PyErr_Clear();
  throw TypeError(std::string("hetnn.") + op + ": operands must be hetnn Arrays on one device or Python numbers, got " +
                  type_name(v));
}


}  // namespace hetnn::python
