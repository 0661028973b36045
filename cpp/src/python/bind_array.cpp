// hetnn._core.Array: construction from NumPy (copy, or zero-copy on the CPU device), transfers, attributes.
#include <cstring>
#include <optional>
#include <string>

#include "core/elementwise.h"
#include "core/errors.h"
#include "python/bindings.h"

namespace hetnn::python {

namespace {

// The NumPy array's data, checked: C-contiguous, aligned, native byte order (the Python layer converts first).
// Reads NumPy's flags and descriptor directly: these run on every call that passes NumPy arrays.
void check_ndarray(const py::array& arr, const char* what) {
  constexpr int kAligned = 0x0100;  // NPY_ARRAY_ALIGNED
  const int flags = py::detail::array_proxy(arr.ptr())->flags;
  if (!(flags & py::array::c_style)) throw ValueError(std::string(what) + ": the NumPy array must be C-contiguous");
  if (!(flags & kAligned)) throw ValueError(std::string(what) + ": the NumPy array is not aligned");
  const char order = py::detail::array_descriptor_proxy(arr.dtype().ptr())->byteorder;
  if (order == '>') throw ValueError(std::string(what) + ": the NumPy array is not in native byte order");
}

DType ndarray_dtype(const py::array& arr) {
  const auto* d = py::detail::array_descriptor_proxy(arr.dtype().ptr());
  switch (d->kind) {  // the common types without a Python call; anything else by name (e.g. ml_dtypes' bfloat16)
    case 'f':
      if (arr.itemsize() == 4) return DType::f32;
      if (arr.itemsize() == 8) return DType::f64;
      if (arr.itemsize() == 2) return DType::f16;
      break;
    case 'i':
      if (arr.itemsize() == 4) return DType::i32;
      if (arr.itemsize() == 8) return DType::i64;
      if (arr.itemsize() == 1) return DType::i8;
      break;
    case 'u':
      if (arr.itemsize() == 1) return DType::u8;
      break;
    case 'b':
      return DType::b8;
  }
  return dtype_from_name(py::str(arr.dtype().attr("name")));
}

Shape ndarray_shape(const py::array& arr) {
  return Shape(arr.shape(), arr.shape() + arr.ndim());
}

// Binds Array::empty / Array::zeros: (device, shape sequence, dtype name or None: the device's default real type,
// as full's and asarray's) with the GIL released while allocating.
auto allocator(Array (*fn)(const DevicePtr&, const Shape&, DType)) {
  return [fn](const DevicePtr& dev, const py::sequence& shape, const std::optional<std::string>& dtype) {
    const Shape s = arg_shape(shape, "shape", "Array");
    const DType t = dtype ? dtype_from_name(*dtype) : default_real(dev);
    NoGil nogil;
    return fn(dev, s, t);
  };
}

}  // namespace

void bind_array(py::module_& m) {
  m.def(
      "pinned_bytes",
      [](const DevicePtr& dev, std::int64_t nbytes) -> py::object {
        if (nbytes < 0) throw ValueError("pinned_empty: the size is negative (" + std::to_string(nbytes) + " bytes)");
        void* p = nullptr;
        std::shared_ptr<void> owner;
        {
          NoGil nogil;
          owner = dev->backend().alloc_pinned(static_cast<std::size_t>(nbytes), &p);
        }
        if (!owner) return py::none();
        // the NumPy array keeps the mapping (and its buffer) alive
        py::capsule keep(new std::shared_ptr<void>(std::move(owner)),
                         [](void* q) { delete static_cast<std::shared_ptr<void>*>(q); });
        return py::array(py::dtype("uint8"), {nbytes}, {std::int64_t{1}}, static_cast<unsigned char*>(p), keep);
      },
      py::arg("device"), py::arg("nbytes"),
      "nbytes of the device's page-locked staging memory as a uint8 NumPy array; None where it has none (the CPU "
      "device, whose memory is host memory).");
  py::class_<Array>(m, "Array")
      .def_static("empty", allocator(&Array::empty), py::arg("device"), py::arg("shape"),
                  py::arg("dtype").none(true) = py::none())
      .def_static("zeros", allocator(&Array::zeros), py::arg("device"), py::arg("shape"),
                  py::arg("dtype").none(true) = py::none())
      .def_static(
          "from_numpy",
          [](const DevicePtr& dev, const py::array& arr, bool nonblocking) {
            check_ndarray(arr, "asarray");
            const Shape s = ndarray_shape(arr);
            const DType t = ndarray_dtype(arr);
            const void* data = arr.data();
            NoGil nogil;
            if (!nonblocking) return Array::from_host(dev, data, s, t);
            Array a = Array::empty(dev, s, t);
            a.from_host_into_async(data);
            return a;
          },
          py::arg("device"), py::arg("array"), py::arg("nonblocking") = false,
          "Copies a C-contiguous NumPy array onto the device; with nonblocking, from the device's page-locked memory "
          "the host does not wait for the copy.")
      .def_static(
          "wrap_numpy",
          [](const DevicePtr& dev, const py::array& arr) -> py::object {
            check_ndarray(arr, "wrap_numpy");
            // The Array keeps the NumPy array alive; its reference is dropped with the GIL held.
            auto* ref = new py::object(arr);
            std::shared_ptr<void> owner(ref, [](void* p) {
              if (!Py_IsInitialized()) return;
              py::gil_scoped_acquire gil;
              delete static_cast<py::object*>(p);
            });
            Array a = Array::wrap_host(dev, const_cast<void*>(arr.data()), ndarray_shape(arr), ndarray_dtype(arr),
                                       owner);
            if (!a.valid()) return py::none();
            return py::cast(std::move(a));
          },
          py::arg("device"), py::arg("array"),
          "Zero-copy Array over a NumPy array's memory on a host-memory device (the CPU device); None elsewhere.")
      .def(
          "to_numpy",
          [](const Array& a) {
            py::array out(py::dtype(dtype_name(a.dtype())), a.shape());
            void* dst = out.mutable_data();
            {
              NoGil nogil;
              a.to_host(dst);
            }
            return out;
          },
          "Blocking device -> host copy into a new NumPy array.")
      .def(
          "host_numpy",
          [](const Array& a) -> py::object {
            auto* p = static_cast<unsigned char*>(a.storage() ? a.storage()->host_ptr() : nullptr);
            if (!p) return py::none();
            {
              NoGil nogil;
              a.device()->backend().synchronize();
            }
            // The NumPy array keeps the Array (and so its memory) alive; a view is seen with its strides.
            const auto e = static_cast<std::int64_t>(dtype_size(a.dtype()));
            std::vector<std::int64_t> bytes;
            for (std::int64_t s : a.strides()) bytes.push_back(s * e);
            py::capsule owner(new Array(a), [](void* q) { delete static_cast<Array*>(q); });
            return py::array(py::dtype(dtype_name(a.dtype())), a.shape(), bytes, p + a.offset() * e, owner);
          },
          "A NumPy array over the Array's memory where that is host memory (the CPU device), else None.")
      .def(
          "read_into",
          [](const Array& a, py::array& out, bool nonblocking) {
            check_ndarray(out, "read_into");
            if (!out.writeable()) throw ValueError("read_into: the NumPy array is read-only");
            if (ndarray_shape(out) != a.shape() || ndarray_dtype(out) != a.dtype())
              throw ValueError("read_into: the NumPy array does not match the Array's shape and dtype");
            void* dst = out.mutable_data();
            NoGil nogil;
            if (nonblocking) return a.to_host_async(dst);
            a.to_host(dst);
            return false;
          },
          py::arg("out"), py::arg("nonblocking") = false,
          "Copies the array into `out`; with nonblocking, into the device's page-locked memory the host does not wait "
          "(returns whether the copy was left running).")
      .def(
          "write_from",
          [](Array& a, const py::array& src) {
            check_ndarray(src, "write_from");
            if (ndarray_shape(src) != a.shape() || ndarray_dtype(src) != a.dtype())
              throw ValueError("write_from: the NumPy array does not match the Array's shape and dtype");
            const void* p = src.data();
            NoGil nogil;
            a.from_host_into(p);
          },
          py::arg("src"))
      .def(
          "copy_from",
          [](Array& a, const Array& src) {
            NoGil nogil;
            a.copy_from(src);
          },
          py::arg("src"), "Device -> device copy of src into this array (same device, dtype and size).")
      .def(
          "to",
          [](const Array& a, const DevicePtr& dev) {
            NoGil nogil;
            return a.to(dev);
          },
          py::arg("device"))
      .def("reshape", [](const Array& a, const py::sequence& shape) { return a.reshape(arg_shape(shape, "shape", "reshape")); },
           py::arg("shape"))
      .def(
          "rows",
          [](const Array& a, std::int64_t start, std::int64_t stop) {
            NoGil nogil;
            return a.rows(start, stop);
          },
          py::arg("start"), py::arg("stop"))
      .def(
          "set_rows",
          [](Array& a, std::int64_t start, std::int64_t stop, const Array& src) {
            NoGil nogil;
            a.set_rows(start, stop, src);
          },
          py::arg("start"), py::arg("stop"), py::arg("src"))
      .def("copy",
           [](const Array& a) {
             NoGil nogil;
             return a.copy();
           })
      .def_property_readonly("shape", [](const Array& a) { return py::tuple(py::cast(a.shape())); })
      .def_property_readonly("dtype", [](const Array& a) { return std::string(dtype_name(a.dtype())); })
      .def_property_readonly("device", [](const Array& a) { return a.device(); })
      .def_property_readonly("nbytes", &Array::nbytes)
      .def_property_readonly("size", &Array::size)
      .def_property_readonly("ndim", &Array::ndim)
      .def_property_readonly("strides",
                             [](const Array& a) {
                               const std::vector<std::int64_t> st = a.strides();
                               py::tuple t(st.size());
                               const auto e = static_cast<std::int64_t>(dtype_size(a.dtype()));
                               for (std::size_t k = 0; k < st.size(); ++k) t[k] = st[k] * e;
                               return t;
                             })
      .def_property_readonly("is_dense", &Array::is_dense)
      .def("same_memory", &Array::same_memory);
}

HETNN_BINDING(1, bind_array);

}  // namespace hetnn::python
