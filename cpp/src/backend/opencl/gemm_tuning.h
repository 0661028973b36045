// Tuned GEMM parameters on disk: <cache>/tuning/gemm.json, {"format": 1, "devices": {"<device identity>":
// {"<dtype>": {"params": "family=...", "gflops": ..., "date": "...", "by_size": [{"max_macs": N, "params": ...}],
// ...}}}}: "params" for any problem, "by_size" (optional) for problems of at most N multiply-adds, since one tile
// does not suit both: on a GPU the large tiles that win at 4096^3 leave most compute units idle on small problems. Written by `python -m hetnn tune gemm`
// (store_tuned); read by ClBackend's parameter lookup the first time a device needs GEMM parameters, so every op
// that runs a GEMM (matmul, fit, predict) uses them.
#pragma once
#include <map>
#include <optional>
#include <string>

#include <vector>

#include "backend/opencl/gemm_params.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/json.h"

namespace hetnn::opencl {

std::string tuning_key(const DeviceInfo& dev);       // device_identity()
std::optional<std::string> tuning_path();            // nullopt when the cache is disabled
// This device's entries, by dtype name. No file: none. An unreadable or malformed file: none, with a warning.
std::map<std::string, json::Value> load_tuned(const DeviceInfo& dev);
// The parameters of one stored entry, validated for the device: the size classes ("by_size") in increasing
// max_macs, then the entry for any size (max_macs = -1). Throws ValueError naming what is wrong.
std::vector<GemmParams> parse_tuned(const json::Value& entry, const DeviceInfo& dev, GemmType type);
// Merges one entry (a JSON object with a "params" string) into the file, written atomically; returns the path.
// Throws ValueError when the entry is malformed, the cache is disabled or the file cannot be written.
std::string store_tuned(const DeviceInfo& dev, const std::string& dtype, const std::string& entry_json);

}  // namespace hetnn::opencl
