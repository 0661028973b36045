// hetnn._core: streams for hetnn.Stream (backend.h: create_stream, swap_stream, stream_wait). A StreamHandle holds
// its device and the backend's handle (null on a device whose commands finish before they return: synchronous).
#include <memory>

#include "core/device.h"
#include "core/errors.h"
#include "python/bindings.h"
#include "python/markers.h"

namespace py = pybind11;

namespace hetnn::python {

namespace {

struct StreamHandle {
  DevicePtr device;
  std::shared_ptr<void> handle;
};

// Makes `s` current on this thread for the life of the scope (the stream's own commands: its markers).
class OnStream {
 public:
  OnStream(const StreamHandle& s) : s_(s), prev_(s.device->backend().swap_stream(s.handle)) {}
  ~OnStream() { s_.device->backend().swap_stream(prev_); }
  OnStream(const OnStream&) = delete;
  OnStream& operator=(const OnStream&) = delete;

 private:
  const StreamHandle& s_;
  std::shared_ptr<void> prev_;
};

void same_device(const DevicePtr& a, const DevicePtr& b, const char* what) {
  if (a != b) throw ValueError(std::string(what) + ": the stream is on " + a->id() + ", not " + b->id());
}

}  // namespace

void bind_stream(py::module_& m) {
  py::class_<StreamHandle>(m, "StreamHandle")
      .def_property_readonly("device", [](const StreamHandle& s) { return s.device; })
      .def_property_readonly("synchronous", [](const StreamHandle& s) { return !s.handle; })
      .def("done",
           [](const StreamHandle& s) { return !s.handle || s.device->backend().stream_done(s.handle); })
      .def("record_marker",
           [](const StreamHandle& s) {
             NoGil nogil;
             OnStream on(s);
             return Marker{s.device, s.device->backend().record_marker()};
           })
      .def("wait_marker",
           [](const StreamHandle& s, const Marker& k) {
             same_device(s.device, k.device, "Stream.wait_event");
             NoGil nogil;
             s.device->backend().stream_wait(s.handle, k.handle);  // a synchronous stream's markers are complete
           });
  m.def(
      "create_stream",
      [](const DevicePtr& dev) {
        NoGil nogil;
        return StreamHandle{dev, dev->backend().create_stream()};
      },
      py::arg("device"), "A new stream (queue) on the device; synchronous where the device has no queue.");
  m.def(
      "swap_stream",
      [](const DevicePtr& dev, const StreamHandle* s) {
        if (s) same_device(s->device, dev, "swap_stream");
        std::shared_ptr<void> prev = dev->backend().swap_stream(s ? s->handle : nullptr);
        return StreamHandle{dev, std::move(prev)};
      },
      py::arg("device"), py::arg("stream").none(true),
      "Makes `stream` (None: the device's own queue) current for this thread's commands on the device; returns the "
      "previous one (a handle whose `synchronous` is true for the device's own queue).");
  m.def(
      "stream_wait",
      [](const DevicePtr& dev, const Marker& k) {
        same_device(k.device, dev, "Event.wait");
        NoGil nogil;
        dev->backend().stream_wait(nullptr, k.handle);
      },
      py::arg("device"), py::arg("marker"),
      "This thread's current queue of the device waits for the marker before its later commands (the host does not).");
  m.def(
      "stream_waits", [](const DevicePtr& dev) { return dev->backend().stream_waits(); }, py::arg("device"),
      "How many cross-queue waits hetnn has inserted on the device so far.");
}

HETNN_BINDING(1, bind_stream);

}  // namespace hetnn::python
