// Bindings of the training ops (core/nn.h), used by hetnn.nn and hetnn.optim. Device work runs without the GIL.
#include <tuple>
#include <type_traits>

#include "core/errors.h"
#include "core/matmul.h"
#include "core/nn.h"
#include "core/train/trainer.h"
#include "python/bindings.h"

namespace hetnn::python {

namespace {

// A Python callable as a trainer hook (empty for None): called with the GIL; the reference is held by a shared_ptr
// released with the GIL, as the trainer may be destroyed from C++ code without it.
std::function<void(std::int64_t)> python_hook(const py::object& hook) {
  if (hook.is_none()) return nullptr;
  std::shared_ptr<py::object> f(new py::object(hook), [](py::object* p) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    delete p;
  });
  return [f](std::int64_t rows) {
    py::gil_scoped_acquire gil;
    (*f)(rows);
  };
}

// Trainer.run_epoch with one learning rate (Lr = double) or one per step (std::vector<double>); progress as the
// trainer's, called with the GIL.
// A Python progress callable (or None) as the trainer's, called with the GIL.
std::function<void(std::int64_t)> progress_hook(const py::object& progress) {
  if (progress.is_none()) return nullptr;
  return [&progress](std::int64_t done) {
    py::gil_scoped_acquire gil;
    progress(done);
  };
}

template <class Lr>
void run_epoch(Trainer& t, const Array& X, const Array& Y, const Array* labels, const Array& idx, std::int64_t batch,
               const Lr& lr, const Array& acc_loss, const py::object& progress) {
  const auto report = progress_hook(progress);
  NoGil nogil;
  t.run_epoch(X, Y, labels, idx, batch, lr, acc_loss, report);
}

// Trainer.fit_epoch: order an int64 array of idx's size (or None), lr one rate or one per step.
template <class Lr>
std::vector<double> fit_epoch(Trainer& t, const Array& X, const Array& Y, const Array* labels, const Array& idx,
                              const py::object& order, std::int64_t batch, const Lr& lr, const Array& acc_loss,
                              const py::object& progress) {
  const auto report = progress_hook(progress);
  std::vector<double> lrs;
  if constexpr (std::is_same_v<Lr, double>)
    lrs.assign(static_cast<std::size_t>(Trainer::epoch_steps(idx.size(), batch)), lr);
  else
    lrs = lr;
  if (order.is_none()) {
    NoGil nogil;
    return t.fit_epoch(X, Y, labels, idx, nullptr, batch, lrs, acc_loss, report);
  }
  const auto o = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(order);
  if (!o || o.ndim() != 1 || o.size() != idx.size())
    throw ValueError("Trainer.fit_epoch: order must be a 1-D integer array of " + std::to_string(idx.size()) +
                     " row numbers");
  NoGil nogil;
  return t.fit_epoch(X, Y, labels, idx, o.data(), batch, lrs, acc_loss, report);
}

}  // namespace

void bind_nn(py::module_& m) {
  using Pair = std::array<int, 2>;
  py::class_<Trainer>(m, "Trainer", "The C++ loops of hetnn.nn.Sequential's fit, predict and evaluate (core/train/trainer.h).")
      .def(py::init<>())
      .def("add_dense",
           [](Trainer& t, const Array& W, const Array* b, const Array& dW, const Array* db, const std::string& act) {
             t.add_dense(W, b, dW, db, activation_from_name(act));
           },
           py::arg("W"), py::arg("b").none(true), py::arg("dW"), py::arg("db").none(true), py::arg("act"))
      .def("add_activation", [](Trainer& t, const std::string& act) { t.add_activation(activation_from_name(act)); })
      .def("add_flatten", &Trainer::add_flatten)
      .def("add_reshape", [](Trainer& t, const py::sequence& shape) { t.add_reshape(arg_shape(shape, "shape", "Reshape")); })
      .def("add_maxpool",
           [](Trainer& t, Pair k, Pair s, Pair p, Pair d, bool ceil_mode) {
             t.add_maxpool(Pool2dArgs{k, s, p, d, ceil_mode});
           })
      .def("add_avgpool",
           [](Trainer& t, Pair k, Pair s, Pair p, bool ceil_mode, bool count_include_pad,
              std::optional<int> divisor_override) {
             t.add_avgpool(Pool2dArgs{k, s, p, Pair{1, 1}, ceil_mode}, count_include_pad, divisor_override);
           })
      .def("add_conv",
           [](Trainer& t, const Array& W, const Array* b, const Array& dW, const Array* db, py::object stride,
              py::object padding, py::object dilation, py::object groups, py::object act) {
             t.add_conv(W, b, dW, db, arg_conv2d("Conv2d", stride, padding, dilation, groups, act));
           },
           py::arg("W"), py::arg("b").none(true), py::arg("dW"), py::arg("db").none(true), py::arg("stride"),
           py::arg("padding"), py::arg("dilation"), py::arg("groups"), py::arg("act"))
      .def("add_global_avgpool", &Trainer::add_global_avgpool)
      .def("add_dropout", &Trainer::add_dropout, py::arg("p"), py::arg("seed"))
      .def("set_loss", &Trainer::set_loss)
      .def(
          "set_compute_dtype", [](Trainer& t, const std::string& dtype) { t.set_compute_dtype(dtype_from_name(dtype)); },
          py::arg("dtype"),
          "Mixed precision: the 16-bit type the layers compute in on copies of their float32 parameters.")
      .def_property("loss_scale", &Trainer::loss_scale,
                    [](Trainer& t, py::object v) { t.set_loss_scale(arg_real(v, "loss_scale", "Sequential")); },
                    "float16 mixed precision: the loss gradient's scale (dynamic, as GradScaler's).")
      .def_property_readonly("skipped_steps", &Trainer::skipped_steps,
                             "Updates skipped for a gradient that was not finite (float16 mixed precision).")
      .def(
          "predict",
          [](Trainer& t, const Array& x) {
            NoGil nogil;
            return t.predict(x);
          },
          py::arg("x"))
      .def(
          "predict_rows",
          [](Trainer& t, const Array& X, std::int64_t batch, bool softmax) {
            NoGil nogil;
            return t.predict_rows(X, batch, softmax);
          },
          py::arg("X"), py::arg("batch"), py::arg("softmax"),
          "The outputs of every row of X, in minibatches of batch rows (softmax: of each output row).")
      .def(
          "evaluate_rows",
          [](Trainer& t, const Array& X, const Array& Y, const Array* labels, std::int64_t batch,
             const Array* acc_loss) {
            NoGil nogil;
            t.evaluate_rows(X, Y, labels, batch, acc_loss);
          },
          py::arg("X"), py::arg("Y"), py::arg("labels").none(true), py::arg("batch"), py::arg("acc_loss").none(true),
          "The loss (into acc_loss) and the metrics summed over every row of X, in minibatches of batch rows.")
      .def_property_readonly("layer_kinds",
                             [](const Trainer& t) {
                               std::vector<std::string> out;
                               for (const auto& l : t.layers()) out.emplace_back(l->kind());
                               return out;
                             })
      .def("add_metric", &Trainer::add_metric, py::arg("kind"), py::arg("acc"), py::arg("probs"))
      .def("clear_metrics", &Trainer::clear_metrics)
      .def("add_param", &Trainer::add_param, py::arg("p"), py::arg("grad"), py::arg("velocity").none(true))
      .def("set_sgd", &Trainer::set_sgd, py::arg("momentum"), py::arg("weight_decay"), py::arg("nesterov"))
      .def("add_adam_param", &Trainer::add_adam_param, py::arg("p"), py::arg("grad"), py::arg("m"), py::arg("v"),
           py::arg("vmax").none(true))
      .def("set_adam", &Trainer::set_adam, py::arg("beta1"), py::arg("beta2"), py::arg("eps"),
           py::arg("weight_decay"), py::arg("amsgrad"), py::arg("decoupled"), py::arg("steps_done"))
      .def_property_readonly("adam_steps", &Trainer::adam_steps)
      .def_property("device_layouts", &Trainer::device_layouts, &Trainer::set_device_layouts)
      .def(
          "set_step_hooks",
          [](Trainer& t, const py::object& before_update, const py::object& before_step,
             const py::object& after_step) {
            t.set_step_hooks(python_hook(before_update), python_hook(before_step), python_hook(after_step));
          },
          py::arg("before_update"), py::arg("before_step") = py::none(), py::arg("after_step") = py::none(),
          "before_update(rows) after each step's backward pass, before_step(rows) before its forward, "
          "after_step(rows) after its update (None: none).")
      .def("set_dropout_stream", &Trainer::set_dropout_stream, py::arg("stream"))
      .def("run_epoch", &run_epoch<double>, py::arg("X"), py::arg("Y"), py::arg("labels").none(true), py::arg("idx"),
           py::arg("batch"), py::arg("lr"), py::arg("acc_loss"), py::arg("progress") = py::none(),
           "One epoch; progress(samples_issued) is called from the loop at most every 0.1 s and at the end.")
      .def("run_epoch", &run_epoch<std::vector<double>>, py::arg("X"), py::arg("Y"), py::arg("labels").none(true),
           py::arg("idx"), py::arg("batch"), py::arg("lr"), py::arg("acc_loss"), py::arg("progress") = py::none(),
           "One epoch with a learning rate per step (lr: a list, at least one per step).")
      .def("fit_epoch", &fit_epoch<double>, py::arg("X"), py::arg("Y"), py::arg("labels").none(true),
           py::arg("idx"), py::arg("order").none(true), py::arg("batch"), py::arg("lr"), py::arg("acc_loss"),
           py::arg("progress") = py::none(),
           "One epoch of fit in one call: the sums zeroed, idx set to order (None: kept), the steps, the sums read "
           "back ([loss, metrics...]).")
      .def("fit_epoch", &fit_epoch<std::vector<double>>, py::arg("X"), py::arg("Y"), py::arg("labels").none(true),
           py::arg("idx"), py::arg("order").none(true), py::arg("batch"), py::arg("lr"), py::arg("acc_loss"),
           py::arg("progress") = py::none())
      .def_static("epoch_steps", &Trainer::epoch_steps, py::arg("n"), py::arg("batch"));

  const auto table = [](const std::vector<train::TableRow>& rows) {
    std::vector<std::tuple<std::string, std::string, std::string>> out;
    for (const auto& r : rows) out.emplace_back(r.kind, r.python, r.source);
    return out;
  };
  m.def("layer_table", [table] { return table(train::layer_table()); },
        "The training loop's layers: (kind, Python classes, C++ file) per row (core/train/layers.h).");
  m.def("optimizer_table", [table] { return table(train::optimizer_table()); },
        "The training loop's optimizers: (kind, Python class, C++ file) per row (core/train/layers.h).");

  m.def(
      "activation",
      [](const Array& x, const std::string& act, const Array* out) {
        const Activation a = activation_from_name(act);
        NoGil nogil;
        return hetnn::activation(x, a, out);
      },
      py::arg("x"), py::arg("act"), py::arg("out").none(true) = nullptr);
  m.def(
      "activation_backward",
      [](const Array& dy, const Array& y, const std::string& act, const Array* out) {
        const Activation a = activation_from_name(act);
        NoGil nogil;
        return hetnn::activation_backward(dy, y, a, out);
      },
      py::arg("grad_output"), py::arg("output"), py::arg("act"), py::arg("out").none(true) = nullptr);
  m.def(
      "softmax",
      [](const Array& x, const Array* out) {
        NoGil nogil;
        return hetnn::softmax(x, out);
      },
      py::arg("x"), py::arg("out").none(true) = nullptr);
  m.def(
      "loss",
      [](const std::string& kind, const Array& pred, const Array& target, const Array& acc, const Array* grad,
         double loss_scale, double grad_scale) {
        NoGil nogil;
        hetnn::loss(kind, pred, target, acc, grad, loss_scale, grad_scale);
      },
      py::arg("kind"), py::arg("pred"), py::arg("target"), py::arg("acc"), py::arg("grad").none(true),
      py::arg("loss_scale"), py::arg("grad_scale"));
  m.def(
      "batch_loss",
      [](const std::string& kind, const Array& pred, const Array& target, const Array& acc, const Array* grad) {
        NoGil nogil;
        hetnn::batch_loss(kind, pred, target, acc, grad);
      },
      py::arg("kind"), py::arg("pred"), py::arg("target"), py::arg("acc"), py::arg("grad").none(true) = nullptr);
  m.def(
      "metric",
      [](const std::string& kind, const Array& pred, const Array& target, const Array& acc) {
        NoGil nogil;
        hetnn::metric(kind, pred, target, acc);
      },
      py::arg("kind"), py::arg("pred"), py::arg("target"), py::arg("acc"));
  m.def(
      "sgd_update",
      [](const Array& param, const Array& grad, const Array* velocity, double lr, double momentum,
         double weight_decay, bool nesterov) {
        NoGil nogil;
        hetnn::sgd_update(param, grad, velocity, lr, momentum, weight_decay, nesterov);
      },
      py::arg("param"), py::arg("grad"), py::arg("velocity").none(true), py::arg("lr"), py::arg("momentum"),
      py::arg("weight_decay"), py::arg("nesterov"));
  m.def(
      "adam_update",
      [](const Array& param, const Array& grad, const Array& m, const Array& v, const Array* vmax, double lr,
         double beta1, double beta2, double eps, double weight_decay, std::int64_t step, bool amsgrad,
         bool decoupled) {
        NoGil nogil;
        hetnn::adam_update(param, grad, m, v, vmax, lr, beta1, beta2, eps, weight_decay, step, amsgrad, decoupled);
      },
      py::arg("param"), py::arg("grad"), py::arg("m"), py::arg("v"), py::arg("vmax").none(true), py::arg("lr"),
      py::arg("beta1"), py::arg("beta2"), py::arg("eps"), py::arg("weight_decay"), py::arg("step"),
      py::arg("amsgrad"), py::arg("decoupled"));
  m.def(
      "dropout",
      [](const Array& x, double p, std::uint64_t seed, const Array* out) {
        NoGil nogil;
        return hetnn::dropout(x, p, seed, out);
      },
      py::arg("x"), py::arg("p"), py::arg("seed"), py::arg("out").none(true) = nullptr,
      "Inverted dropout: x * mask / (1 - p), the mask a function of (seed, element index) alone; the same call on "
      "the gradient is the backward pass.");
  m.def("check_dropout_p", &hetnn::check_dropout_p, py::arg("p"), py::arg("who"),
        "Raises ValueError unless 0 <= p <= 1: the core's check of a dropout probability.");
  m.def(
      "sum_rows",
      [](const Array& x, const Array* out, double beta) {
        NoGil nogil;
        return hetnn::sum_rows(x, out, beta);
      },
      py::arg("x"), py::arg("out").none(true) = nullptr, py::arg("beta") = 0.0);
  m.def(
      "take_rows",
      [](const Array& src, const Array& idx, std::int64_t offset, std::int64_t n, const Array* out) {
        NoGil nogil;
        return hetnn::take_rows(src, idx, offset, n, out);
      },
      py::arg("src"), py::arg("idx"), py::arg("offset"), py::arg("n"), py::arg("out").none(true) = nullptr);
}

HETNN_BINDING(2, bind_nn);

}  // namespace hetnn::python
