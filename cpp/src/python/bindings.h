// Shared helpers of the pybind11 module hetnn._core.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>

#include "core/array.h"
#include "core/ops.h"

namespace hetnn {
struct EwScalar;  // core/elementwise.h
}

namespace pybind11::detail {
// Optional Array arguments (`const Array* out` with a None default): pybind11's generic loader accepts None only on
// its second, converting pass, after a first pass that fails and formats an AttributeError for every None it meets
// (asking the type for a foreign module's caster). An op called with out=None paid for that and for converting all
// its arguments twice (2-3 us of a small max_pool2d's 3.8). None is a null pointer on the first pass here; given
// where a reference is expected, the call still fails as before (pybind11's reference_cast_error -> TypeError).
// Every translation unit that binds an Array includes this header, so the specialisation is the only one.
template <>
class type_caster<hetnn::Array> : public type_caster_base<hetnn::Array> {
 public:
  bool load(handle src, bool convert) {
    if (src.is_none()) {
      value = nullptr;
      return true;
    }
    return type_caster_base<hetnn::Array>::load(src, convert);
  }
};
}  // namespace pybind11::detail

namespace hetnn::python {

namespace py = pybind11;

// Each bind_<area>.cpp registers its function with HETNN_BINDING(stage, fn); module.cpp runs them all, by stage
// (0: Device, 1: Array, whose types later signatures name; 2: everything else) and then by name.
using BindFn = void (*)(py::module_&);
struct BindingRegistrar {
  BindingRegistrar(int stage, const char* name, BindFn fn);
};
void run_bindings(py::module_& m);
#define HETNN_BINDING(stage, fn) \
  static const ::hetnn::python::BindingRegistrar hetnn_binding_##fn { stage, #fn, fn }

// Python arguments as the ops take them, with messages naming the op and the argument (python/args.cpp).
// A bool (True/False or a NumPy bool), else TypeError.
bool arg_bool(py::handle v, const char* name, const char* op);
// A real number (int, float, NumPy real; not bool), finite-sized as a double, else TypeError / ValueError.
double arg_real(py::handle v, const char* name, const char* op);
// An int or a pair of ints (a 1-element sequence means both) within C int range -> (h, w).
std::array<int, 2> arg_pair(py::handle v, const char* name, const char* op);
// None or an activation's name ("relu", "sigmoid", "tanh"), else TypeError/ValueError naming the op.
Activation arg_activation(py::handle v, const char* op);
// None, or a dtype as NumPy names it (a name, a NumPy dtype or scalar type, ml_dtypes' bfloat16), else TypeError
// naming `what` when given.
std::optional<DType> arg_dtype(const py::handle& v, const char* what = nullptr);
// None (the precision in force) or a precision's name ("highest", "high"), else TypeError / ValueError.
std::optional<Precision> arg_precision(py::handle v, const char* op);
// A precision's name, else TypeError / ValueError ("None, " among the choices the message lists when none_allowed).
Precision arg_precision_name(py::handle v, const char* op, bool none_allowed = false);
// conv2d's stride, padding (int, pair, "same", "valid"), dilation, groups and activation.
Conv2dArgs arg_conv2d(const char* op, py::object stride, py::object padding, py::object dilation, py::object groups,
                      py::object activation);
// An int (a Python int, a NumPy integer, a 0-d integer NumPy array; not a bool, an array or a hetnn Array), else
// TypeError "hetnn.<op>: <name> must be <expected>, got <type>", or ValueError when it does not fit in int64.
std::int64_t arg_int(py::handle v, const char* op, const char* name, const char* expected = "an int");
// arg_int, an int beyond +-limit taken as +-limit (however large: where any such value means the same).
std::int64_t arg_int_clamped(py::handle v, const char* op, const char* name, std::int64_t limit);
// arg_int within +-2**20 (AxisError "... is out of bounds" beyond: the core checks the array's own bounds).
int arg_axis(py::handle v, const char* op, const char* name = "axis", const char* expected = "an int");
// A Python bool, int or float (or a NumPy scalar of those kinds) as a weak scalar of the op `op`, else TypeError.
EwScalar arg_scalar(const py::handle& v, const char* op);
// A shape: a tuple, list or 1-D NumPy array of ints.
Shape arg_shape(py::handle v, const char* name, const char* op);
// Window arguments of the pooling ops with PyTorch's defaults: stride None (or empty) means kernel_size.
Pool2dArgs arg_pool2d(const char* op, py::handle kernel_size, py::handle stride, py::handle padding,
                      py::handle dilation, py::handle ceil_mode);
// max pooling's padding_mode: '-inf' (false) or 'zeros' (true), else TypeError / ValueError naming both.
bool arg_zero_padding(py::handle padding_mode, const char* op);

// Releases the GIL around device work (instead of py::gil_scoped_release). When the interpreter exits while a
// daemon thread is inside hetnn, CPython ends that thread with pthread_exit as it asks for the GIL back; the forced
// unwind must not cross a noexcept destructor (that aborted the process: "terminate called without an active
// exception"). So the destructor may throw (the unwind passes through), and a thread that comes back while the
// interpreter is finalizing never re-enters it: it parks until the process, which is exiting, ends (unless it is
// the main thread, which is the one finalizing).
// Called once at module initialisation (exit_guard.cpp): remembers the main thread and registers drain_for_exit
// with Python's atexit.
void install_exit_guard(py::module_& m);

class NoGil {
 public:
  NoGil() : NoGil(true) {}
  // release false: the GIL stays held and nothing is counted (small_host_work below).
  explicit NoGil(bool release);
  ~NoGil() noexcept(false);
  NoGil(const NoGil&) = delete;
  NoGil& operator=(const NoGil&) = delete;

 private:
  PyThreadState* state_ = nullptr;
};

// Whether a call's work is small host work, done with the GIL held: CPU-device work (synchronous, on the calling
// thread, never waiting for a queue) over at most kSmallHostWork elements. Releasing and taking back the GIL costs
// about 0.1 us, a fifth of an element-wise call on 1 KiB, and such a call holds the GIL no longer than NumPy's.
constexpr std::int64_t kSmallHostWork = 4096;
inline bool small_host_work(const Array& a, std::int64_t elements) {
  return a.device() && a.device()->host() && elements <= kSmallHostWork;  // an invalid array: the front's error
}

}  // namespace hetnn::python
