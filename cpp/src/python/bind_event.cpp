// hetnn._core: markers for hetnn.Event (backend.h: record_marker and the marker_* calls). A Marker holds its device
// and the backend's handle; every call releases the GIL while it may wait.
#include <memory>

#include "core/device.h"
#include "python/bindings.h"
#include "python/markers.h"

namespace py = pybind11;

namespace hetnn::python {

void bind_event(py::module_& m) {
  py::class_<Marker>(m, "Marker")
      .def_property_readonly("device", [](const Marker& k) { return k.device; })
      .def("done", [](const Marker& k) { return k.device->backend().marker_done(k.handle); })
      .def("wait",
           [](const Marker& k) {
             NoGil nogil;
             k.device->backend().marker_wait(k.handle);
           })
      .def("seconds", [](const Marker& k) {
        NoGil nogil;
        return k.device->backend().marker_seconds(k.handle);
      });
  m.def(
      "record_marker",
      [](const DevicePtr& dev) {
        NoGil nogil;
        return Marker{dev, dev->backend().record_marker()};
      },
      py::arg("device"), "A marker after every command issued so far on this thread's queue of the device.");
}

HETNN_BINDING(1, bind_event);

}  // namespace hetnn::python
