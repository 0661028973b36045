// The precision float32 matrix products and convolutions compute in, in PyTorch's vocabulary
// (torch.set_float32_matmul_precision): "highest", float32 throughout (the default); "high", a device with TF32
// matrix units may round the inputs to TF32 (10 mantissa bits, round to nearest, ties away) and accumulate in
// float32. Devices without them compute float32 either way (Device.tf32_mode says which applies). A call's own
// precision= wins over the thread's (the context manager), which wins over the process's default.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hetnn {

enum class Precision : std::uint8_t { highest, high };

const char* precision_name(Precision p);
std::vector<std::string> precision_names();
// ValueError "<what> must be 'highest' or 'high', got '<name>'"
Precision precision_from_name(const std::string& name, const std::string& what);

void set_default_precision(Precision p);  // every thread without an override of its own
// Until set: HETNN_MATMUL_PRECISION ("highest" or "high"; ValueError naming it for anything else), else "highest".
Precision default_precision();
void set_thread_precision(std::optional<Precision> p);  // nullopt: the default again
std::optional<Precision> thread_precision();
// The precision a call with precision `given` (nullopt: none of its own) computes in.
Precision precision_in_force(std::optional<Precision> given);

}  // namespace hetnn
