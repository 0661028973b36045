// Bindings of the training ops (core/nn.h), used by hetnn.nn and hetnn.optim. Device work runs without the GIL.
#include "core/matmul.h"
#include "core/nn.h"
#include "python/bindings.h"

namespace hetnn::python {

void bind_nn(py::module_& m) {
  m.def(
      "activation",
      [](const Array& x, const std::string& act, const Array* out) {
        const Activation a = activation_from_name(act);
        py::gil_scoped_release nogil;
        return hetnn::activation(x, a, out);
      },
      py::arg("x"), py::arg("act"), py::arg("out").none(true) = nullptr);
  m.def(
      "activation_backward",
      [](const Array& dy, const Array& y, const std::string& act, const Array* out) {
        const Activation a = activation_from_name(act);
        py::gil_scoped_release nogil;
        return hetnn::activation_backward(dy, y, a, out);
      },
      py::arg("grad_output"), py::arg("output"), py::arg("act"), py::arg("out").none(true) = nullptr);
  m.def(
      "softmax",
      [](const Array& x, const Array* out) {
        py::gil_scoped_release nogil;
        return hetnn::softmax(x, out);
      },
      py::arg("x"), py::arg("out").none(true) = nullptr);
  m.def(
      "loss",
      [](const std::string& kind, const Array& pred, const Array& target, const Array& acc, const Array* grad,
         double loss_scale, double grad_scale) {
        py::gil_scoped_release nogil;
        hetnn::loss(kind, pred, target, acc, grad, loss_scale, grad_scale);
      },
      py::arg("kind"), py::arg("pred"), py::arg("target"), py::arg("acc"), py::arg("grad").none(true),
      py::arg("loss_scale"), py::arg("grad_scale"));
  m.def(
      "metric",
      [](const std::string& kind, const Array& pred, const Array& target, const Array& acc) {
        py::gil_scoped_release nogil;
        hetnn::metric(kind, pred, target, acc);
      },
      py::arg("kind"), py::arg("pred"), py::arg("target"), py::arg("acc"));
  m.def(
      "sgd_update",
      [](const Array& param, const Array& grad, const Array* velocity, double lr, double momentum,
         double weight_decay, bool nesterov) {
        py::gil_scoped_release nogil;
        hetnn::sgd_update(param, grad, velocity, lr, momentum, weight_decay, nesterov);
      },
      py::arg("param"), py::arg("grad"), py::arg("velocity").none(true), py::arg("lr"), py::arg("momentum"),
      py::arg("weight_decay"), py::arg("nesterov"));
  m.def(
      "sum_rows",
      [](const Array& x, const Array* out, double beta) {
        py::gil_scoped_release nogil;
        return hetnn::sum_rows(x, out, beta);
      },
      py::arg("x"), py::arg("out").none(true) = nullptr, py::arg("beta") = 0.0);
  m.def(
      "take_rows",
      [](const Array& src, const Array& idx, std::int64_t offset, std::int64_t n, const Array* out) {
        py::gil_scoped_release nogil;
        return hetnn::take_rows(src, idx, offset, n, out);
      },
      py::arg("src"), py::arg("idx"), py::arg("offset"), py::arg("n"), py::arg("out").none(true) = nullptr);
}

}  // namespace hetnn::python
