// hetnn._core.Generator: the counter-based random numbers (core/random.cpp); hetnn.random gives it NumPy's
// Generator signatures.
#include <cstdint>
#include <string>

#include "core/errors.h"
#include "core/random.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace hetnn::python {

namespace {

std::int64_t arg_int64(py::handle v, const char* name) {
  if (py::isinstance<py::bool_>(v) || !PyIndex_Check(v.ptr()))
    throw TypeError(std::string("hetnn.random: ") + name + " must be an int, got " +
                    std::string(py::str(py::type::of(v).attr("__name__"))));
  PyObject* o = PyNumber_Index(v.ptr());
  if (!o) {
    PyErr_Clear();
    throw TypeError(std::string("hetnn.random: ") + name + " must be an int, got " +
                    std::string(py::str(py::type::of(v).attr("__name__"))));
  }
  try {
    return py::reinterpret_steal<py::int_>(o).cast<std::int64_t>();
  } catch (const py::cast_error&) {
    throw ValueError(std::string("hetnn.random: ") + name + " " + std::string(py::str(v)) + " does not fit in int64");
  }
}

}  // namespace

void bind_random(py::module_& m) {
  py::class_<Generator>(m, "Generator", "A counter-based random stream (SplitMix64 over (seed, counter)).")
      .def(py::init([](py::handle seed) {
             if (py::isinstance<py::bool_>(seed) || !PyIndex_Check(seed.ptr()))
               throw TypeError("hetnn.random: seed must be an int, got " +
                               std::string(py::str(py::type::of(seed).attr("__name__"))));
             PyObject* o = PyNumber_Index(seed.ptr());
             if (!o) {
               PyErr_Clear();
               throw TypeError("hetnn.random: seed must be an int, got " +
                               std::string(py::str(py::type::of(seed).attr("__name__"))));
             }
             const py::int_ s = py::reinterpret_steal<py::int_>(o);
             try {
               return new Generator(s.cast<std::uint64_t>());
             } catch (const py::cast_error&) {
               throw ValueError("hetnn.random: seed must be in [0, 2**64), got " + std::string(py::str(seed)));
             }
           }),
           py::arg("seed"))
      .def_property_readonly("seed", &Generator::seed)
      .def_property_readonly("offset", &Generator::offset, "Counters used so far.")
      .def(
          "uniform",
          [](Generator& g, const DevicePtr& dev, py::handle shape, const std::string& dtype, py::handle low,
             py::handle high) {
            const Shape s = arg_shape(shape, "size", "random.uniform");
            const double lo = arg_real(low, "low", "random.uniform"), hi = arg_real(high, "high", "random.uniform");
            const DType t = dtype_from_name(dtype);
            NoGil nogil;
            return g.uniform(dev, s, t, lo, hi);
          },
          py::arg("device"), py::arg("shape"), py::arg("dtype"), py::arg("low"), py::arg("high"))
      .def(
          "normal",
          [](Generator& g, const DevicePtr& dev, py::handle shape, const std::string& dtype, py::handle loc,
             py::handle scale) {
            const Shape s = arg_shape(shape, "size", "random.normal");
            const double l = arg_real(loc, "loc", "random.normal"), sc = arg_real(scale, "scale", "random.normal");
            const DType t = dtype_from_name(dtype);
            NoGil nogil;
            return g.normal(dev, s, t, l, sc);
          },
          py::arg("device"), py::arg("shape"), py::arg("dtype"), py::arg("loc"), py::arg("scale"))
      .def(
          "integers",
          [](Generator& g, const DevicePtr& dev, py::handle shape, const std::string& dtype, py::handle low,
             py::handle last) {
            const Shape s = arg_shape(shape, "size", "random.integers");
            const std::int64_t lo = arg_int64(low, "low"), la = arg_int64(last, "high");
            const DType t = dtype_from_name(dtype);
            NoGil nogil;
            return g.integers(dev, s, t, lo, la);
          },
          py::arg("device"), py::arg("shape"), py::arg("dtype"), py::arg("low"), py::arg("last"));
}

HETNN_BINDING(2, bind_random);

}  // namespace hetnn::python
