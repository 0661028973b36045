#include "core/precision.h"

#include <atomic>
#include <cstdlib>

#include "core/errors.h"

namespace hetnn {

namespace {
constexpr std::uint8_t kUnset = 0xff;  // the environment not read yet
std::atomic<std::uint8_t> g_default{kUnset};
thread_local std::optional<Precision> t_override;
}  // namespace

const char* precision_name(Precision p) { return p == Precision::high ? "high" : "highest"; }

std::vector<std::string> precision_names() {
  return {precision_name(Precision::highest), precision_name(Precision::high)};
}

Precision precision_from_name(const std::string& name, const std::string& what) {
  for (Precision p : {Precision::highest, Precision::high})
    if (name == precision_name(p)) return p;
  const std::string hint = name == "medium" ? " (hetnn has no bfloat16 stand-in for float32: pass bfloat16 data)"
                                            : "";
  throw ValueError(what + " must be 'highest' (float32) or 'high' (TF32 where a device has it), got '" + name + "'" +
                   hint);
}

void set_default_precision(Precision p) { g_default.store(static_cast<std::uint8_t>(p)); }

Precision default_precision() {
  std::uint8_t v = g_default.load();
  if (v == kUnset) {  // HETNN_MATMUL_PRECISION sets the default of processes a program starts (MPI ranks, workers)
    const char* env = std::getenv("HETNN_MATMUL_PRECISION");
    const Precision p = env && *env ? precision_from_name(env, "HETNN_MATMUL_PRECISION") : Precision::highest;
    std::uint8_t expected = kUnset;
    g_default.compare_exchange_strong(expected, static_cast<std::uint8_t>(p));
    v = g_default.load();
  }
  return static_cast<Precision>(v);
}
void set_thread_precision(std::optional<Precision> p) { t_override = p; }
std::optional<Precision> thread_precision() { return t_override; }

Precision precision_in_force(std::optional<Precision> given) {
  if (given) return *given;
  if (t_override) return *t_override;
  return default_precision();
}

}  // namespace hetnn
