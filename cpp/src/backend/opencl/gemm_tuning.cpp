#include "backend/opencl/gemm_tuning.h"

#include <algorithm>
#include <cmath>
#include <mutex>

#include "core/cache_dir.h"
#include "core/errors.h"
#include "core/warn.h"

namespace hetnn::opencl {

namespace {
constexpr int kFormat = 1;
std::mutex g_mu;  // one writer at a time in this process (merge, then atomic replace)

// The "devices" object of the file at `path`; throws ValueError saying what is wrong with it.
json::Object read_devices(const std::string& path) {
  if (!is_regular_or_absent(path)) throw ValueError("not a regular file");
  const auto text = read_file(path, std::size_t{64} << 20);
  if (!text) return {};
  const json::Value root = json::parse(*text);
  const json::Value* fmt = root.get("format");
  const json::Value* devices = root.get("devices");
  if (!fmt || !fmt->number() || *fmt->number() != kFormat || !devices || !devices->object())
    throw ValueError("unexpected format");
  for (const auto& [key, per_dtype] : *devices->object()) {
    if (!per_dtype.object()) throw ValueError("an entry is not a mapping of dtype to parameters");
    for (const auto& [dtype, entry] : *per_dtype.object())
      if (!entry.object()) throw ValueError("an entry is not a mapping of dtype to parameters");
  }
  return *devices->object();
}
}  // namespace

std::string tuning_key(const DeviceInfo& dev) { return device_identity(dev); }

std::optional<std::string> tuning_path() {
  const auto base = cache_base();
  if (!base) return std::nullopt;
  return *base + "/tuning/gemm.json";
}

std::map<std::string, json::Value> load_tuned(const DeviceInfo& dev) {
  const auto path = tuning_path();
  if (!path) return {};
  json::Object devices;
  try {
    std::lock_guard<std::mutex> lock(g_mu);
    devices = read_devices(*path);
  } catch (const Error& e) {
    warn("ignoring the tuning cache " + *path + " (" + e.what() + "); re-run `python -m hetnn tune gemm`");
    return {};
  }
  auto it = devices.find(tuning_key(dev));
  if (it == devices.end()) return {};
  const json::Object& per_dtype = *it->second.object();
  return {per_dtype.begin(), per_dtype.end()};
}

std::vector<GemmParams> parse_tuned(const json::Value& entry, const DeviceInfo& dev, GemmType type) {
  const json::Value* date = entry.get("date");
  const std::string source = "tuned " + (date && date->string() ? *date->string() : std::string());
  const auto one = [&](const json::Value& e, std::int64_t max_macs) {
    const json::Value* params = e.get("params");
    if (!params || !params->string()) throw ValueError("no \"params\" string");
    GemmParams p = GemmParams::parse(*params->string());
    p.check_dtype(type);
    p.validate(dev, type);
    p.source = max_macs < 0 ? source : source + " (problems up to " + std::to_string(max_macs) + " multiply-adds)";
    p.max_macs = max_macs;
    return p;
  };
  std::vector<GemmParams> out;
  if (const json::Value* classes = entry.get("by_size")) {
    const auto* list = std::get_if<json::Array>(&classes->v);
    if (!list) throw ValueError("\"by_size\" is not a list");
    for (const json::Value& c : *list) {
      const json::Value* m = c.get("max_macs");
      if (!m || !m->number() || !(*m->number() >= 1 && *m->number() <= 9e18) || std::floor(*m->number()) != *m->number())
        throw ValueError("a \"by_size\" entry needs an integer \"max_macs\" >= 1");
      out.push_back(one(c, static_cast<std::int64_t>(*m->number())));
    }
    std::sort(out.begin(), out.end(), [](const GemmParams& a, const GemmParams& b) { return a.max_macs < b.max_macs; });
  }
  out.push_back(one(entry, -1));
  return out;
}

std::string store_tuned(const DeviceInfo& dev, const std::string& dtype, const std::string& entry_json) {
  json::Value entry = json::parse(entry_json);
  if (!entry.object() || !entry.get("params") || !entry.get("params")->string())
    throw ValueError("a tuning entry must be an object with a \"params\" string");
  const auto path = tuning_path();
  if (!path) throw ValueError("the cache is disabled (HETNN_CACHE_DIR=off): nowhere to store tuning results");
  if (!cache_dir("tuning")) throw ValueError("the tuning cache " + *path + " cannot be written");
  std::lock_guard<std::mutex> lock(g_mu);
  json::Object devices;
  try {
    devices = read_devices(*path);
  } catch (const Error&) {  // a corrupt file was ignored on reading (with a warning); it is replaced now
  }
  json::Value& per_dtype = devices[tuning_key(dev)];
  if (!per_dtype.object()) per_dtype = json::Object{};
  (*per_dtype.object())[dtype] = std::move(entry);
  json::Object root;
  root["format"] = json::Value(kFormat);
  root["devices"] = json::Value(std::move(devices));
  if (!write_file_atomic(*path, json::dump(json::Value(std::move(root))) + "\n"))
    throw ValueError("the tuning cache " + *path + " cannot be written");
  return *path;
}

}  // namespace hetnn::opencl
