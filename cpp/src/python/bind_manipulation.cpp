// hetnn._core: indexing, manipulation and the creation functions arange, linspace and eye (core/manipulation.cpp);
// hetnn._manipulation gives them their Array API signatures and Array methods. Views (basic indexing, transposes,
// flips, expand_dims, squeeze, unstack) move no data, so they keep the GIL: releasing it costs more than they do.
#include <optional>
#include <string>
#include <vector>

#include "core/elementwise.h"
#include "core/errors.h"
#include "core/manipulation.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace hetnn::python {

namespace {

std::string type_name(const py::handle& h) { return py::str(py::type::of(h).attr("__name__")); }

// An int, a NumPy integer or another scalar with __index__ (not a bool, an array or a hetnn Array).
bool is_int(const py::handle& h) {
  return !PyBool_Check(h.ptr()) && PyIndex_Check(h.ptr()) && !py::isinstance<Array>(h) &&
         !(py::isinstance<py::array>(h) && py::array(py::reinterpret_borrow<py::object>(h)).ndim() > 0);
}

std::int64_t as_int64(const py::handle& h, const char* what) {
  PyObject* o = PyNumber_Index(h.ptr());
  if (!o) {  // a 0-d float array passes PyIndex_Check
    PyErr_Clear();
    throw IndexError(std::string("hetnn.Array[...]: ") + what + " must be an integer, got " + type_name(h));
  }
  try {
    return py::reinterpret_steal<py::int_>(o).cast<std::int64_t>();
  } catch (const py::cast_error&) {
    throw IndexError(std::string("hetnn.Array[...]: ") + what + " " + std::string(py::str(h)) +
                     " does not fit in int64");
  }
}

std::optional<std::int64_t> slice_part(const py::object& v) {
  if (v.is_none()) return std::nullopt;
  if (!is_int(v))
    throw TypeError("hetnn.Array[...]: slice bounds and steps must be integers or None, got " + type_name(v));
  return as_int64(v, "the slice bound");
}

// a[key]'s key as the core's Index: ints, slices, None, Ellipsis; anything else an IndexError pointing at take.
// The key as a mask: a bool hetnn Array alone (the Array API's boolean array indexing), else nullptr.
const Array* bool_mask(const py::handle& key) {
  if (!py::isinstance<Array>(key)) return nullptr;
  const Array& a = key.cast<const Array&>();
  return a.valid() && a.dtype() == DType::b8 ? &a : nullptr;
}

Index arg_index(const py::handle& key) {
  Index idx;
  auto one = [&](const py::handle& h) {
    IndexItem it;
    if (h.is_none()) {
      it.kind = IndexItem::Kind::newaxis;
    } else if (h.ptr() == Py_Ellipsis) {
      it.kind = IndexItem::Kind::ellipsis;
    } else if (PySlice_Check(h.ptr())) {
      it.kind = IndexItem::Kind::slice;
      it.start = slice_part(h.attr("start"));
      it.stop = slice_part(h.attr("stop"));
      it.step = slice_part(h.attr("step"));
    } else if (PyBool_Check(h.ptr()) || std::string(Py_TYPE(h.ptr())->tp_name).rfind("numpy.bool", 0) == 0) {
      throw IndexError("hetnn.Array[...]: True and False are not indices; a mask is a bool hetnn Array of the "
                       "array's leading shape (x[mask])");
    } else if (bool_mask(h)) {
      throw IndexError("hetnn.Array[...]: a mask (a bool Array) must be the whole index, x[mask], not one of "
                       "several; select the other axes first");
    } else if (is_int(h)) {
      it.index = as_int64(h, "the index");
    } else if (py::isinstance<Array>(h) && h.cast<const Array&>().ndim() == 0 &&
               !is_floating(h.cast<const Array&>().dtype()) && h.cast<const Array&>().dtype() != DType::b8) {
      // a 0-d integer array as an index (the Array API allows it): its value, read back
      const Array& a = h.cast<const Array&>();
      const Array v = a.dtype() == DType::i64 ? a : astype(a, DType::i64);
      v.to_host(&it.index);
    } else {
      throw IndexError("hetnn.Array[...]: only integers, slices (':'), None, the Ellipsis ('...'), 0-d "
                       "integer arrays and a bool hetnn Array (a mask, alone) are valid indices, got " +
                       type_name(h) + "; take elements at an array of indices with hetnn.take(x, indices, "
                       "axis=...); a NumPy mask goes to the device first: hetnn.asarray(mask, device=x.device)");
    }
    idx.push_back(it);
  };
  if (py::isinstance<py::tuple>(key)) {
    for (const py::handle& h : key) one(h);
  } else {
    one(key);
  }
  return idx;
}

// An int or a tuple / list of ints; None gives nullopt.
std::optional<std::vector<int>> arg_axes(const py::handle& v, const char* op) {
  if (v.is_none()) return std::nullopt;
  std::vector<int> axes;
  if (py::isinstance<py::tuple>(v) || py::isinstance<py::list>(v)) {
    for (const py::handle& h : v) axes.push_back(arg_axis(h, op));
  } else {
    axes.push_back(arg_axis(v, op));
  }
  return axes;
}

// An int or a tuple / list of ints (`name` of `op`).
std::vector<std::int64_t> arg_counts(const py::handle& v, const char* op, const char* name) {
  std::vector<std::int64_t> out;
  if (py::isinstance<py::tuple>(v) || py::isinstance<py::list>(v)) {
    for (const py::handle& h : v) out.push_back(arg_int(h, op, name));
  } else {
    out.push_back(arg_int(v, op, name));
  }
  return out;
}

std::vector<Array> arg_arrays(const py::handle& v, const char* op) {
  if (!py::isinstance<py::tuple>(v) && !py::isinstance<py::list>(v))
    throw TypeError(std::string("hetnn.") + op + ": arrays must be a tuple or list of hetnn Arrays, got " +
                    type_name(v));
  std::vector<Array> xs;
  for (const py::handle& h : v) {
    if (!py::isinstance<Array>(h))
      throw TypeError(std::string("hetnn.") + op + ": arrays must hold hetnn Arrays, got " + type_name(h) +
                      " (hetnn.asarray(..., device=) moves host data)");
    xs.push_back(h.cast<Array>());
  }
  return xs;
}

}  // namespace

void bind_manipulation(py::module_& m) {
  m.def(
      "getitem",
      [](const Array& x, py::handle key) {
        if (const Array* mask = bool_mask(key)) {
          NoGil nogil;
          return getitem_mask(x, *mask);
        }
        const Index idx = arg_index(key);
        return getitem(x, idx);
      },
      py::arg("x"), py::arg("key"), "x[key] (basic indexing) as a new array on x's device.");
  m.def(
      "setitem",
      [](Array& x, py::handle key, const Array& value) {
        if (const Array* mask = bool_mask(key)) {
          NoGil nogil;
          setitem_mask(x, *mask, value);
          return;
        }
        const Index idx = arg_index(key);
        NoGil nogil;
        setitem(x, idx, value);
      },
      py::arg("x"), py::arg("key"), py::arg("value"), "x[key] = value (an Array on x's device, broadcast).");
  m.def(
      "permute_dims",
      [](const Array& x, py::handle axes) {
        const auto a = arg_axes(axes, "permute_dims");
        if (!a) throw TypeError("hetnn.permute_dims: axes must be a tuple of ints, got None");
        return permute_dims(x, *a);
      },
      py::arg("x"), py::arg("axes"), "x with its axes in the order ``axes``.");
  m.def(
      "matrix_transpose",
      [](const Array& x) {
        return matrix_transpose(x);
      },
      py::arg("x"), "x with its last two axes swapped.");
  m.def(
      "flip",
      [](const Array& x, py::handle axis) {
        const auto a = arg_axes(axis, "flip");
        return flip(x, a);
      },
      py::arg("x"), py::arg("axis") = py::none(), "x reversed along ``axis`` (None: every axis).");
  m.def(
      "concat",
      [](py::handle arrays, py::handle axis) {
        const std::vector<Array> xs = arg_arrays(arrays, "concat");
        const std::optional<int> a = axis.is_none() ? std::nullopt : std::optional<int>(arg_axis(axis, "concat"));
        NoGil nogil;
        return concat(xs, a);
      },
      py::arg("arrays"), py::arg("axis") = 0, "The arrays joined along ``axis`` (None: flattened first).");
  m.def(
      "moveaxis",
      [](const Array& x, py::handle source, py::handle destination) {
        const auto s = arg_axes(source, "moveaxis"), d = arg_axes(destination, "moveaxis");
        if (!s || !d) throw TypeError("hetnn.moveaxis: source and destination must be ints or tuples of ints");
        return moveaxis(x, *s, *d);
      },
      py::arg("x"), py::arg("source"), py::arg("destination"), "x with axes `source` moved to `destination`.");
  m.def(
      "roll",
      [](const Array& x, py::handle shift, py::handle axis) {
        const auto sh = arg_counts(shift, "roll", "shift");
        const auto a = arg_axes(axis, "roll");
        NoGil nogil;
        return roll(x, sh, a);
      },
      py::arg("x"), py::arg("shift"), py::arg("axis") = py::none(), "x's elements shifted along `axis`.");
  m.def(
      "tile",
      [](const Array& x, py::handle reps) {
        const auto r = arg_counts(reps, "tile", "repetitions");
        NoGil nogil;
        return tile(x, r);
      },
      py::arg("x"), py::arg("repetitions"), "x repeated `repetitions` times along each axis.");
  m.def(
      "repeat",
      [](const Array& x, py::handle repeats, py::handle axis) {
        const auto r = arg_counts(repeats, "repeat", "repeats");
        const std::optional<int> a = axis.is_none() ? std::nullopt : std::optional<int>(arg_axis(axis, "repeat"));
        NoGil nogil;
        return repeat(x, r, a);
      },
      py::arg("x"), py::arg("repeats"), py::arg("axis") = py::none(), "Each element repeated along `axis`.");
  m.def(
      "unstack",
      [](const Array& x, py::handle axis) {
        const int a = arg_axis(axis, "unstack");
        return unstack(x, a);
      },
      py::arg("x"), py::arg("axis") = 0, "The arrays x holds along `axis`.");
  m.def(
      "meshgrid",
      [](py::handle arrays, const std::string& indexing) {
        const std::vector<Array> xs = arg_arrays(arrays, "meshgrid");
        NoGil nogil;
        return meshgrid(xs, indexing);
      },
      py::arg("arrays"), py::arg("indexing") = "xy", "Coordinate grids of 1-D arrays.");
  for (const char* name : {"tril", "triu"}) {
    const bool lower = name[3] == 'l';
    m.def(
        name,
        [lower, name](const Array& x, py::handle k) {
          const std::int64_t kk = arg_int(k, name, "k");
          NoGil nogil;
          return lower ? tril(x, kk) : triu(x, kk);
        },
        py::arg("x"), py::arg("k") = 0,
        lower ? "x with the elements above diagonal k set to zero." : "x with the elements below diagonal k set to zero.");
  }
  m.def(
      "stack",
      [](py::handle arrays, py::handle axis) {
        const std::vector<Array> xs = arg_arrays(arrays, "stack");
        const int a = arg_axis(axis, "stack");
        NoGil nogil;
        return stack(xs, a);
      },
      py::arg("arrays"), py::arg("axis") = 0, "The arrays (of one shape) joined along a new ``axis``.");
  m.def(
      "expand_dims",
      [](const Array& x, py::handle axis) {
        const int a = arg_axis(axis, "expand_dims");
        return expand_dims(x, a);
      },
      py::arg("x"), py::arg("axis") = 0, "A view of x with an axis of extent 1 at ``axis``.");
  m.def(
      "squeeze",
      [](const Array& x, py::handle axis) {
        const auto a = arg_axes(axis, "squeeze");
        return squeeze(x, a);
      },
      py::arg("x"), py::arg("axis") = py::none(), "A view of x without the axes ``axis`` (of extent 1).");
  m.def(
      "take",
      [](const Array& x, const Array& indices, py::handle axis) {
        const std::optional<int> a = axis.is_none() ? std::nullopt : std::optional<int>(arg_axis(axis, "take"));
        NoGil nogil;
        return take(x, indices, a);
      },
      py::arg("x"), py::arg("indices"), py::arg("axis") = py::none(),
      "The elements of x at ``indices`` (1-d, integer) along ``axis``.");
  m.def(
      "arange",
      [](const DevicePtr& dev, py::handle start, py::handle stop, py::handle step, py::handle dtype) {
        const EwScalar a = arg_scalar(start, "arange");
        const std::optional<EwScalar> b =
            stop.is_none() ? std::nullopt : std::optional<EwScalar>(arg_scalar(stop, "arange"));
        const EwScalar s = arg_scalar(step, "arange");
        if (a.is_bool || (b && b->is_bool) || s.is_bool)
          throw TypeError("hetnn.arange: start, stop and step must be numbers, not bools");
        const std::optional<DType> t = arg_dtype(dtype);
        NoGil nogil;
        return arange(dev, a, b, s, t);
      },
      py::arg("device"), py::arg("start"), py::arg("stop") = py::none(), py::arg("step") = 1,
      py::arg("dtype") = py::none(), "Values from start to stop (exclusive) by step on device.");
  m.def(
      "linspace",
      [](const DevicePtr& dev, py::handle start, py::handle stop, py::handle num, py::handle endpoint,
         py::handle dtype) {
        const double a = arg_real(start, "start", "linspace"), b = arg_real(stop, "stop", "linspace");
        const std::int64_t n = arg_int(num, "linspace", "num");
        const bool e = arg_bool(endpoint, "endpoint", "linspace");
        const std::optional<DType> t = arg_dtype(dtype);
        NoGil nogil;
        return linspace(dev, a, b, n, e, t);
      },
      py::arg("device"), py::arg("start"), py::arg("stop"), py::arg("num"), py::arg("endpoint") = true,
      py::arg("dtype") = py::none(), "num values evenly spaced from start to stop on device.");
  m.def(
      "eye",
      [](const DevicePtr& dev, py::handle n_rows, py::handle n_cols, py::handle k, py::handle dtype) {
        const std::int64_t r = arg_int(n_rows, "eye", "n_rows");
        const std::optional<std::int64_t> c =
            n_cols.is_none() ? std::nullopt : std::optional<std::int64_t>(arg_int(n_cols, "eye", "n_cols"));
        const std::int64_t diag = arg_int_clamped(k, "eye", "k", std::int64_t{1} << 62);  // beyond: no diagonal
        const std::optional<DType> t = arg_dtype(dtype);
        NoGil nogil;
        return eye(dev, r, c, diag, t);
      },
      py::arg("device"), py::arg("n_rows"), py::arg("n_cols") = py::none(), py::arg("k") = 0,
      py::arg("dtype") = py::none(), "Ones on the k-th diagonal of an n_rows x n_cols array on device.");
}

HETNN_BINDING(2, bind_manipulation);

}  // namespace hetnn::python
