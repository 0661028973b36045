// Warnings from the core and the backends (a corrupt cache entry ignored, a cache directory not writable). The
// Python module routes them to Python's `warnings`; elsewhere they go to stderr. Never throws.
#pragma once
#include <functional>
#include <string>

namespace hetnn {

void warn(const std::string& message);
void set_warning_handler(std::function<void(const std::string&)> handler);

}  // namespace hetnn
