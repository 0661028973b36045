// hetnn._core: devices, their info and first-use counters, the process-wide thread count, the cache directory
// and the one atomic file writer.
#include <cerrno>
#include <cstring>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/cpu/blas_pool.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_gemm_paths.h"
#include "backend/cpu/cpu_threads.h"
#include "backend/cpu/host_allocator.h"
#include "backend/cpu/stream_store.h"
#include "core/cache_dir.h"
#include "core/device.h"
#include "core/errors.h"
#include "core/recorder.h"

#include "python/bindings.h"

#include <algorithm>
#include <map>
#include <string>

namespace py = pybind11;
using namespace hetnn;
using hetnn::python::NoGil;

namespace {

py::dict info_dict(const DeviceInfo& i) {
  py::dict d;
  for_each_field(i, [&](const char* name, const auto& value) { d[name] = value; });
  d["identity"] = device_identity(i);
  return d;
}

py::list records_list(const std::vector<OpRecord>& recs) {
  py::list out;
  for (const auto& r : recs)
    out.append(py::make_tuple(r.name, r.host_enqueue, r.start, r.end, r.bytes, r.detail));
  return out;
}

// Closes a capture (waiting for the device without the GIL) and returns its records.
std::vector<OpRecord> end_capture(Device& d, std::size_t token, bool details) {
  NoGil nogil;
  return d.backend().capture_end(token, details);
}

}  // namespace

namespace hetnn::python {

void bind_device(py::module_& m) {
  py::class_<Device, DevicePtr>(m, "Device")
      .def_property_readonly("id", &Device::id)
      .def_property_readonly("info",
                             [](const Device& d) {
                               py::dict info = info_dict(d.info());
                               py::list dtypes;  // what arrays (and ops) may hold on this device
                               for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32,
                                               DType::i64, DType::u8, DType::i8, DType::b8})
                                 if (d.supports(t)) dtypes.append(dtype_name(t));
                               info["dtypes"] = dtypes;
                               return info;
                             })
      .def_property_readonly("started", &Device::started)
      .def("synchronize",
           [](Device& d) {
             if (!d.started()) return;
             NoGil nogil;
             d.backend().synchronize();
           })
      .def("first_use_stats",
           [](Device& d) {
             const auto s = d.started() ? d.backend().first_use_stats() : Backend::FirstUseStats{};
             py::dict out;
             out["built"] = s.built;
             out["disk_hits"] = s.disk_hits;
             out["memory_hits"] = s.memory_hits;
             out["seconds"] = s.seconds;
             return out;
           })
      .def("_set_memory_limit", [](Device& d, std::size_t bytes) { d.backend().set_memory_limit(bytes); },
           py::arg("bytes"))
      .def("_set_queue_limit", [](Device& d, std::size_t commands) { d.backend().set_queue_limit(commands); },
           py::arg("commands"))
      .def("_set_wait_spin", [](Device& d, double seconds) { d.backend().set_wait_spin(seconds); },
           py::arg("seconds"))
      .def("memory_stats",
           [](Device& d) {
             const MemoryStats s = d.started() ? d.backend().memory_stats() : MemoryStats{};
             py::dict out;
             out["bytes_in_use"] = s.bytes_in_use;
             out["peak_bytes_in_use"] = s.peak_bytes_in_use;
             out["bytes_cached"] = s.bytes_cached;
             out["buffers_in_use"] = s.buffers_in_use;
             out["buffers_created"] = s.buffers_created;
             out["buffers_reused"] = s.buffers_reused;
             return out;
           })
      .def("transfer_paths",
           [](Device& d) {
             py::dict out;
             if (d.started())
               for (const auto& [k, v] : d.backend().transfer_paths()) out[py::str(k)] = v;
             return out;
           })
      .def("_set_transfer_staging", [](Device& d, int staged) { d.backend().set_transfer_staging(staged); },
           py::arg("staged"), "1 stages large pageable copies, 0 copies directly, -1 measures again (tests).")
      .def("reset_peak_memory_stats",
           [](Device& d) {
             if (d.started()) d.backend().reset_peak_memory_stats();
           })
      .def("release_cached_memory",
           [](Device& d) -> std::size_t {
             if (!d.started()) return 0;
             NoGil nogil;
             return d.backend().release_cached_memory();
           })
      .def("start",
           [](Device& d) {
             NoGil nogil;
             d.backend();
           },
           "Creates the backend (context, queue) now instead of at first use.")
      .def(
          "capture_begin",
          [](Device& d, bool details) {
            NoGil nogil;
            return d.backend().capture_begin(details);
          },
          py::arg("details") = true,
          "Opens a capture; details=False: device time per command name only (records of a name folded into one, "
          "no operands), closed with capture_totals.")
      .def(
          "capture_end",
          [](Device& d, std::size_t token, bool details) { return records_list(end_capture(d, token, details)); },
          py::arg("token"), py::arg("details") = true)
      .def(
          "capture_totals",
          [](Device& d, std::size_t token, bool details) {
            const std::vector<OpRecord> recs = end_capture(d, token, details);
            std::map<std::string, double> totals;  // a long fit's thousands of records, summed without Python
            for (const auto& r : recs) totals[r.name] += std::max(r.end - r.start, 0.0);
            return totals;
          },
          py::arg("token"), py::arg("details") = false,
          "capture_end summed: seconds of device time per command name.");

  m.def("devices", [] { return all_devices(); });
  m.def("find_device", &find_device, py::arg("spec"));
  m.def("opencl_status", &opencl_status);
  // Tests: run the CPU device's float16/bfloat16 ops through the converted path on any processor.
  m.def("_force_cpu_half_conversion", &force_cpu_half_conversion, py::arg("on"));
  // Tests: "matmul" / "sgemm" takes that oneDNN GEMM for every float32 product either can take; "auto" the table.
  m.def("_force_cpu_gemm_path", &force_cpu_gemm_path, py::arg("path"));
  m.def("_cpu_gemm_rule", &cpu_gemm_rule);
  // Streaming stores for large outputs (stream_store.h): the rule in words, whether an output of so many bytes
  // streams, and for tests -1 (the table), 0 (every output) or a threshold in bytes.
  m.def("_stream_store_rule", &stream_store_rule);
  m.def("_stream_output", &stream_output, py::arg("bytes"));
  m.def("_set_stream_store_threshold", &set_stream_store_threshold, py::arg("bytes"));
  m.def("_force_blocked_pool_level", &force_blocked_pool_level, py::arg("level"));
  m.def("describe_devices", &describe_devices);
#ifdef HETNN_HAVE_OPENCL
  m.attr("with_opencl") = true;
#else
  m.attr("with_opencl") = false;
#endif
  const dnnl_version_t* v = dnnl_version();
  m.attr("onednn_version") =
      std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);

  m.def("poison_enabled", &poison_enabled, "Whether HETNN_POISON fills new arrays with NaN bytes.");

  m.def(
      "write_file_atomic",  // the one atomic writer of hetnn's files (temporary file beside it, then rename)
      [](const std::string& path, const py::bytes& data) {
        std::string why;
        if (!write_file_atomic(path, std::string(data), &why)) {
          const int err = errno;
          PyErr_SetObject(PyExc_OSError, py::make_tuple(err, "cannot write " + why).ptr());
          throw py::error_already_set();
        }
      },
      py::arg("path"), py::arg("data"));
  m.def("available_memory", &available_memory,
        "Bytes the system can still hand out (MemAvailable plus free swap); 0 when unknown.");
  m.def(
      "atomic_target",  // where write_file_atomic (and the model writer) renames a new file onto; OSError if nowhere
      [](const std::string& path) {
        std::string why;
        auto target = atomic_target(path, &why);
        if (!target) {
          const int err = errno;
          PyErr_SetObject(PyExc_OSError, py::make_tuple(err, "cannot write " + why).ptr());
          throw py::error_already_set();
        }
        return *target;
      },
      py::arg("path"));
  m.def("cache_dir", []() -> py::object {  // hetnn's cache directory (not created); None when disabled
    if (auto p = cache_base()) return py::str(*p);
    return py::none();
  });
  m.def(
      "set_num_threads",
      [](py::int_ n) {  // any Python int: the range check (and its message) is cpu_threads::set's
        const long long v = PyLong_AsLongLong(n.ptr());
        if (v == -1 && PyErr_Occurred()) {
          PyErr_Clear();
          throw ValueError("set_num_threads: n must be in 1.." + std::to_string(cpu_threads::max_threads()) +
                           ", got " + std::string(py::str(n)));
        }
        cpu_threads::set(v);
      },
      py::arg("n"));
  m.def("get_num_threads", [] { return cpu_threads::get(); });
  auto libs = [](const std::vector<blas_pool::Library>& v) {
    py::list out;
    for (const auto& l : v)
      out.append(py::dict(py::arg("path") = l.path, py::arg("symbols") = l.symbols, py::arg("shared") = l.shared,
                          py::arg("why") = l.why));
    return out;
  };
  m.def(
      "share_blas_threads", [libs](bool on) { return libs(blas_pool::share(on)); }, py::arg("on"));
  m.def("blas_spin_exponent", &blas_pool::spin_exponent, py::arg("e"));
  m.def("blas_libraries", [libs] { return libs(blas_pool::libraries()); });
  m.def("blas_pool_stats", [] {
    const auto s = blas_pool::stats();
    return py::dict(py::arg("calls") = s.calls, py::arg("jobs") = s.jobs, py::arg("quieted") = s.quieted,
                    py::arg("wakeups") = s.wakeups, py::arg("on_openmp") = s.on_openmp,
                    py::arg("openmp_preempted") = s.openmp_preempted,
                    py::arg("openmp_avoided") = s.openmp_avoided,
                    py::arg("thread_failures") = s.thread_failures, py::arg("workers") = s.workers,
                    py::arg("spinning") = s.spinning);
  });
}

HETNN_BINDING(0, bind_device);

}  // namespace hetnn::python
