// Devices: the oneDNN CPU device and one device per OpenCL platform/device, enumerated once per process.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/dtype.h"

namespace hetnn {

struct DeviceInfo {
  std::string id;       // "cpu", "opencl:P:D"
  std::string kind;     // the backend: "cpu" (oneDNN and hetnn's loops, host memory) or "opencl"
  std::string type;     // hardware: "cpu", "gpu", "accelerator", "other"
  std::string name, vendor, driver_version, version, platform, platform_version;
  // Hardware architecture where the driver says it: "sm_90" (NVIDIA compute capability), "gfx90a" (AMD); else "".
  // The GEMM parameter table matches it before the device name (an H200 runs what was tuned on an H100).
  std::string arch;
  int platform_index = -1, device_index = -1, ordinal = -1;  // ordinal: N in "opencl:N"
  int compute_units = 0;
  int clock_mhz = 0;
  std::uint64_t global_mem = 0, local_mem = 0, max_alloc = 0;
  std::uint64_t cache_size = 0;  // last-level cache in bytes (0: unknown); bounds when DRAM ceilings apply
  std::uint64_t max_work_group_size = 0;
  bool fp64 = false, fp16 = false, bf16 = false;  // hardware arithmetic in that precision
  // How float16 / bfloat16 ops compute: "native (...)" in that precision, or "converted (...)": stored in 16 bits,
  // computed in float32 (the CPU device without oneDNN kernels for it; every OpenCL device).
  std::string f16_mode, bf16_mode;
  // What float32 products compute in at precision "high" (core/precision.h): "tensor cores (...)" (TF32) or
  // "float32 (exact) ..." with the reason.
  std::string tf32_mode;
  std::string isa;   // CPU device: oneDNN's effective ISA
  int threads = 0;   // CPU device: threads oneDNN uses
  std::string extensions;
};

// Every field of DeviceInfo, with the name it has outside C++ (Device.info() and the Python Device properties):
// f(name, value) per field. The one list of the fields; the bindings and the Python API are derived from it, and
// tests/test_devices.py fails when a field has no Python property.
template <class F>
void for_each_field(const DeviceInfo& i, F&& f) {
  f("id", i.id), f("kind", i.kind), f("type", i.type), f("name", i.name), f("arch", i.arch);
  f("vendor", i.vendor), f("driver_version", i.driver_version), f("version", i.version), f("platform", i.platform);
  f("platform_version", i.platform_version), f("platform_index", i.platform_index);
  f("device_index", i.device_index), f("ordinal", i.ordinal), f("compute_units", i.compute_units);
  f("clock_mhz", i.clock_mhz), f("global_mem", i.global_mem), f("local_mem", i.local_mem);
  f("max_alloc", i.max_alloc), f("cache_size", i.cache_size), f("max_work_group_size", i.max_work_group_size);
  f("fp64", i.fp64), f("fp16", i.fp16), f("bf16", i.bf16), f("float16_mode", i.f16_mode);
  f("bfloat16_mode", i.bf16_mode), f("tf32_mode", i.tf32_mode), f("isa", i.isa), f("threads", i.threads), f("extensions", i.extensions);
}

using BackendFactory = std::function<std::unique_ptr<Backend>()>;

class Device {
 public:
  Device(DeviceInfo info, BackendFactory factory)
      : info_(std::move(info)), factory_(std::move(factory)), host_(info_.kind == "cpu") {}
  const DeviceInfo& info() const { return info_; }
  // The CPU device: its ops are synchronous host work on the calling thread (they never wait for a queue).
  bool host() const { return host_; }
  const std::string& id() const { return info_.id; }
  // The backend is created on first use (OpenCL context, queue); throws OpenCLError if that fails.
  Backend& backend();
  bool started() const;
  // Whether arrays of this dtype may live here (TypeError message otherwise).
  bool supports(DType t) const;
  void require(DType t, const char* what) const;

 private:
  DeviceInfo info_;
  BackendFactory factory_;
  bool host_;
  mutable std::mutex mu_;
  std::unique_ptr<Backend> backend_;
  std::atomic<Backend*> ready_{nullptr};  // backend_ once made: every op asks for it (no lock, no string compare)
};

using DevicePtr = std::shared_ptr<Device>;

const std::vector<DevicePtr>& all_devices();
// The devices whose backend exists, without enumerating anything (empty before all_devices() first ran).
std::vector<DevicePtr> started_devices();
// Resolves a device spec: an id ("cpu", "opencl:0:0", "opencl:1"), a type ("cpu", "gpu", "opencl",
// "accelerator") or a case-insensitive substring of the device name, vendor, platform or version. Throws ValueError
// listing the available devices when nothing matches.
DevicePtr find_device(const std::string& spec);
std::string describe_devices();  // one line per device, for error messages
// What hetnn's stored files are keyed by (compiled programs, tuned parameters, measured ceilings): the device and
// its driver, "name|vendor|version|driver|platform|platform version". A new driver is a new identity.
std::string device_identity(const DeviceInfo& info);

// Registered by the backends (backend/cpu/cpu_info.cpp, backend/opencl/cl_enumerate.cpp).
std::vector<std::pair<DeviceInfo, BackendFactory>> enumerate_cpu();
std::vector<std::pair<DeviceInfo, BackendFactory>> enumerate_opencl();  // empty without OpenCL
std::string opencl_status();  // why no OpenCL device is listed (no backend built / no platform), or ""

}  // namespace hetnn
