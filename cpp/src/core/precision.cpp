#include "core/precision.h"

#include <atomic>

#include "core/errors.h"

namespace hetnn {

namespace {
std::atomic<std::uint8_t> g_default{static_cast<std::uint8_t>(Precision::highest)};
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
Precision default_precision() { return static_cast<Precision>(g_default.load()); }
void set_thread_precision(std::optional<Precision> p) { t_override = p; }
std::optional<Precision> thread_precision() { return t_override; }

Precision precision_in_force(std::optional<Precision> given) {
  if (given) return *given;
  if (t_override) return *t_override;
  return default_precision();
}

}  // namespace hetnn
