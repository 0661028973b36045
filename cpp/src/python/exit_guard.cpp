// The process's exit while other threads are inside hetnn (exit_guard and NoGil).
//
// A daemon thread inside a hetnn call when the interpreter exits: CPython ends it with pthread_exit as it asks for the
// GIL back, so NoGil's destructor may throw (the forced unwind passes through) and a thread that comes back during
// finalisation parks instead. Device work still running at exit is the other danger: PoCL compiles kernels lazily on
// its worker threads, and LLVM's static destructors running under a compile segfaulted the process (seen with a
// daemon thread pooling in a loop). So at exit (Python's atexit, before the C++ static destructors) hetnn stops other
// threads from starting calls, waits for the calls in flight and finishes every started device's queue.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/device.h"
#include "python/bindings.h"

namespace hetnn::python {

namespace {
unsigned long main_thread_ident = 0;  // the thread that runs the interpreter's finalisation
std::atomic<int> in_flight{0};        // NoGil sections open now
std::atomic<bool> exiting{false};     // drain_for_exit has started

bool on_main_thread() { return PyThread_get_thread_ident() == main_thread_ident; }

// A forked child has only the thread that forked, which held the GIL (os.fork): no section of the parent's other
// threads is open there, and counting them made the child's exit wait out drain_for_exit's timeout.
const int g_fork_reset = pthread_atfork(nullptr, nullptr, [] { in_flight.store(0); });

[[noreturn]] void park() {
  for (;;) pause();  // the process is exiting: this thread waits for it to end
}

// Python's atexit: no new calls from other threads, the calls in flight finished (at most `timeout_s`), every
// started device idle.
void drain_for_exit(double timeout_s) {
  exiting.store(true);
  PyThreadState* state = PyEval_SaveThread();
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (in_flight.load() > 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (const auto& dev : started_devices()) {
    try {
      dev->backend().synchronize();
    } catch (...) {  // exiting anyway: a device error here has no one to report to
    }
  }
  PyEval_RestoreThread(state);
}
}  // namespace

NoGil::NoGil(bool release) {
  if (!release) return;
  if (exiting.load() && !on_main_thread()) {
    PyEval_SaveThread();  // the exiting main thread needs the GIL; this thread never comes back
    park();
  }
  in_flight.fetch_add(1);
  state_ = PyEval_SaveThread();
}

NoGil::~NoGil() noexcept(false) {
  if (!state_) return;  // the GIL was kept
#if PY_VERSION_HEX >= 0x030D0000
  const bool finalizing = Py_IsFinalizing();
#else
  const bool finalizing = _Py_IsFinalizing();
#endif
  // Only other threads park: the main thread runs the finalisation itself (a __del__ or an atexit handler calling
  // hetnn), and parking it hung the process at exit.
  if (finalizing && !on_main_thread()) {
    in_flight.fetch_sub(1);
    park();
  }
  // The section stays counted until the GIL is back: drain_for_exit waits for the count with the GIL released, so
  // finalisation cannot start while this thread is on its way to the GIL. Counted out before, a daemon thread that
  // asked for the GIL as finalisation began was ended by CPython (pthread_exit) inside this destructor, and the
  // forced unwind aborted the process (17 exits in 200 beside two busy loops).
  PyEval_RestoreThread(state_);
  in_flight.fetch_sub(1);
}

void install_exit_guard(py::module_& m) {
  main_thread_ident = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  m.def("_drain_for_exit", &drain_for_exit, py::arg("timeout_s") = 30.0);
  py::module_::import("atexit").attr("register")(m.attr("_drain_for_exit"));
}

}  // namespace hetnn::python
