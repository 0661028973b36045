// Shared helpers of the pybind11 module hetnn._core.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "core/array.h"

namespace hetnn::python {

namespace py = pybind11;

void bind_array(py::module_& m);
void bind_nn(py::module_& m);  // bind_nn.cpp: training ops
Shape to_shape(const py::sequence& seq, const char* what);

}  // namespace hetnn::python
