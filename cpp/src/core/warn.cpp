#include "core/warn.h"

#include <cstdio>
#include <mutex>

namespace hetnn {

namespace {
std::mutex g_mu;
std::function<void(const std::string&)> g_handler;
}  // namespace

void set_warning_handler(std::function<void(const std::string&)> handler) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_handler = std::move(handler);
}

void warn(const std::string& message) {
  std::function<void(const std::string&)> h;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    h = g_handler;
  }
  try {
    if (h) {
      h(message);
      return;
    }
  } catch (...) {
  }
  std::fprintf(stderr, "hetnn warning: %s\n", message.c_str());
}

}  // namespace hetnn
