// Typed errors thrown by the core and the backends. The Python bindings map each to a Python exception:
// ValueError -> ValueError, AxisError -> numpy's AxisError, TypeError -> TypeError, IndexError -> IndexError,
// OutOfMemory -> MemoryError, OpenCLError -> hetnn.OpenCLError,
// CompileError -> hetnn.CompileError. Nothing in hetnn aborts the process on a bad input or a driver error.
#pragma once
#include <stdexcept>
#include <string>

namespace hetnn {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ValueError : Error {
  using Error::Error;
};

struct TypeError : Error {
  using Error::Error;
};

// An index outside an axis, or an index the array cannot take (Python's IndexError, as NumPy's).
struct IndexError : Error {
  using Error::Error;
};

// An axis outside an array's dimensions: NumPy's AxisError in Python, both a ValueError and an IndexError (as the
// Array API asks).
struct AxisError : ValueError {
  using ValueError::ValueError;
};

struct OutOfMemory : Error {
  using Error::Error;
};

// A driver call returned an error status. `call` is the API call (and what it was doing).
struct OpenCLError : Error {
  OpenCLError(int status, std::string status_name, std::string call)
      : Error(call + " failed: " + status_name + " (" + std::to_string(status) + ")"),
        status(status), status_name(std::move(status_name)), call(std::move(call)) {}
  int status;
  std::string status_name;
  std::string call;
};

// A program failed to build (an OpenCL program, or a user kernel's C for the CPU device: `what`); `log` is the
// compiler's output.
struct CompileError : Error {
  CompileError(std::string kernel, std::string options, std::string device, std::string log,
               const std::string& what = "OpenCL program")
      : Error("building " + what + " '" + kernel + "' for " + device + " with options '" + options + "' failed:\n" +
              log),
        kernel(std::move(kernel)), options(std::move(options)), device(std::move(device)), log(std::move(log)) {}
  std::string kernel;
  std::string options;
  std::string device;
  std::string log;
};

}  // namespace hetnn
