// A marker of hetnn.Event: its device and the backend's handle (backend.h: record_marker), shared by the event and
// stream bindings.
#pragma once
#include <memory>

#include "core/device.h"

namespace hetnn::python {

struct Marker {
  DevicePtr device;
  std::shared_ptr<void> handle;
};

}  // namespace hetnn::python
