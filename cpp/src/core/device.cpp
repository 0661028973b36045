#include "core/device.h"

#include <atomic>
#include "core/fork.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

#include "core/errors.h"

namespace hetnn {

Backend& Device::backend() {
  if (!host_ && forked_child())
    throw Error("device " + info_.id + ": OpenCL cannot be used in a process forked from one that loaded hetnn (the "
                "driver's threads do not survive fork()); start worker processes with multiprocessing's 'spawn' "
                "method: multiprocessing.get_context('spawn') or set_start_method('spawn')");
  if (Backend* b = ready_.load(std::memory_order_acquire)) return *b;
  std::lock_guard<std::mutex> lock(mu_);
  if (!backend_) {
    backend_ = factory_();
    ready_.store(backend_.get(), std::memory_order_release);
  }
  return *backend_;
}

bool Device::started() const {
  std::lock_guard<std::mutex> lock(mu_);
  return backend_ != nullptr;
}

// float16 and bfloat16 everywhere: where the hardware has no arithmetic for them, stored in 16 bits and computed in
// float32 (info_.f16_mode / bf16_mode say which).
bool Device::supports(DType t) const { return t != DType::f64 || info_.fp64; }

void Device::require(DType t, const char* what) const {
  if (supports(t)) return;
  std::string hint = t == DType::f64 ? " (use dtype='float32')" : "";
  throw TypeError(std::string(what) + ": device " + info_.id + " (" + info_.name + ") does not support " +
                  dtype_name(t) + hint);
}

#ifndef HETNN_HAVE_OPENCL
std::vector<std::pair<DeviceInfo, BackendFactory>> enumerate_opencl() { return {}; }
std::string opencl_status() { return "hetnn was built without the OpenCL backend (HETNN_WITH_OPENCL=OFF or no OpenCL found)"; }
#endif

namespace {
std::atomic<bool> g_enumerated{false};
}

const std::vector<DevicePtr>& all_devices() {
  static const std::vector<DevicePtr> devices = [] {
    std::vector<DevicePtr> out;
    for (auto& [info, factory] : enumerate_cpu()) out.push_back(std::make_shared<Device>(info, factory));
    for (auto& [info, factory] : enumerate_opencl()) out.push_back(std::make_shared<Device>(info, factory));
    g_enumerated.store(true);
    return out;
  }();
  return devices;
}

std::vector<DevicePtr> started_devices() {
  std::vector<DevicePtr> out;
  if (!g_enumerated.load()) return out;  // nothing enumerated: nothing started (and no driver loaded now)
  for (const auto& d : all_devices())
    if (d->started()) out.push_back(d);
  return out;
}

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}
std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\n") - b + 1);
}
}  // namespace

std::string describe_devices() {
  std::ostringstream os;
  for (const auto& d : all_devices()) {
    const auto& i = d->info();
    os << "  " << i.id;
    if (i.ordinal >= 0) os << " (opencl:" << i.ordinal << ")";
    os << ": " << i.name << " [" << i.type << ", " << i.kind << "]\n";
  }
  std::string cl = opencl_status();
  if (!cl.empty()) os << "  (OpenCL: " << cl << ")\n";
  return os.str();
}

namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// PyOpenCL's "P" / "P:D" (platform and device indices; P alone: that platform's first device), or null.
DevicePtr find_pyopencl_pair(const std::string& spec, const std::vector<DevicePtr>& devs, bool* parsed) {
  const auto colon = spec.find(':');
  const std::string p = spec.substr(0, colon), d = colon == std::string::npos ? "0" : spec.substr(colon + 1);
  *parsed = all_digits(p) && all_digits(d);
  if (!*parsed) return nullptr;
  for (const auto& dev : devs)
    if (dev->info().kind == "opencl" && std::to_string(dev->info().platform_index) == p &&
        std::to_string(dev->info().device_index) == d)
      return dev;
  return nullptr;
}

}  // namespace

DevicePtr find_device(const std::string& raw) {
  const std::string spec = lower(trim(raw));
  const auto& devs = all_devices();
  auto fail = [&]() -> DevicePtr {
    throw ValueError("no device matches '" + raw + "'; available devices:\n" + describe_devices() +
                     "A spec is a device id, a type (cpu, gpu, opencl, accelerator), PyOpenCL's \"P:D\" or part of "
                     "a device name.");
  };
  if (spec.empty()) return fail();
  for (const auto& d : devs)  // exact id
    if (lower(d->id()) == spec) return d;
  if (spec.rfind("opencl:", 0) == 0 && spec.find(':', 7) == std::string::npos) {  // opencl:N
    const std::string n = spec.substr(7);
    if (all_digits(n)) {
      for (const auto& d : devs)
        if (d->info().ordinal >= 0 && std::to_string(d->info().ordinal) == n) return d;
      return fail();
    }
  }
  bool pair = false;
  if (DevicePtr d = find_pyopencl_pair(spec, devs, &pair)) return d;
  if (pair) return fail();
  if (spec == "cpu") return devs.front();  // the oneDNN device; an OpenCL CPU device is "opencl:cpu"
  if (spec == "opencl") {
    // PyOpenCL's choice of device, where a user has made it: PYOPENCL_CTX="P:D"
    if (const char* ctx = std::getenv("PYOPENCL_CTX"); ctx && *ctx) {
      bool ok = false;
      if (DevicePtr d = find_pyopencl_pair(lower(trim(ctx)), devs, &ok)) return d;
      throw ValueError(std::string("PYOPENCL_CTX='") + ctx + "' names no OpenCL device (\"P\" or \"P:D\"); "
                       "available devices:\n" + describe_devices());
    }
    for (const auto& d : devs)
      if (d->info().kind == "opencl") return d;
    return fail();
  }
  if (spec == "gpu" || spec == "accelerator" || spec == "opencl:cpu" || spec == "opencl:gpu") {
    const std::string type = spec.rfind("opencl:", 0) == 0 ? spec.substr(7) : spec;
    for (const auto& d : devs)
      if (d->info().kind == "opencl" && d->info().type == type) return d;
    return fail();
  }
  std::vector<DevicePtr> hits;  // substring of name, vendor, platform or version strings ("pocl", "nvidia")
  for (const auto& d : devs) {
    const auto& i = d->info();
    for (const std::string* field : {&i.name, &i.vendor, &i.platform, &i.platform_version, &i.version})
      if (lower(*field).find(spec) != std::string::npos) {
        hits.push_back(d);
        break;
      }
  }
  if (hits.size() == 1) return hits.front();
  if (hits.empty()) return fail();
  std::string names;
  for (const auto& d : hits) names += "  " + d->id() + ": " + d->info().name + " (" + d->info().platform + ")\n";
  throw ValueError("'" + raw + "' matches " + std::to_string(hits.size()) + " devices:\n" + names +
                   "name one by its id (for example '" + hits.back()->id() + "')");
}

std::string device_identity(const DeviceInfo& i) {
  return i.name + "|" + i.vendor + "|" + i.version + "|" + i.driver_version + "|" + i.platform + "|" +
         i.platform_version;
}

}  // namespace hetnn
