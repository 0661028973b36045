// Device-time capture: while a capture is open on a backend, every command it runs (kernel, transfer, primitive)
// is recorded with its device start/end time. Timer, benchmark() and the profiler read these records, so a
// device time is the sum over *every* command a call enqueued, not just the last one.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace hetnn {

struct OpRecord {
  std::string name;           // "matmul", "h2d", "d2h", "d2d", "fill", or a kernel name
  double host_enqueue = 0.0;  // steady-clock seconds when the host issued it
  double start = 0.0;         // device clock, seconds (only differences are meaningful)
  double end = 0.0;
  std::uint64_t bytes = 0;    // bytes moved, for transfers
  std::string detail;         // the op's operands, e.g. "(64, 784) @ (128, 784)^T" (set by the fronts; see OpDetail)
};

// A record whose device times may only be known after the device has finished (OpenCL events).
struct PendingRecord {
  OpRecord rec;
  std::shared_ptr<void> handle;  // backend-specific (a retained cl_event); null when rec is already complete
};

class Recorder {
 public:
  bool active() const { return depth_.load(std::memory_order_relaxed) > 0 && paused_ == 0; }
  // Whether an open capture keeps each command's operands (OpDetail describes the op only then).
  bool detailed() const { return detail_depth_.load(std::memory_order_relaxed) > 0 && paused_ == 0; }
  // Commands issued by this thread while a Pause lives are not recorded (hetnn's own debug work, e.g. poisoning).
  struct Pause {
    Pause() { ++paused_; }
    ~Pause() { --paused_; }
    Pause(const Pause&) = delete;
    Pause& operator=(const Pause&) = delete;
  };
  // Opens a capture and returns its token (the position of its first record). details = false: the capture
  // only needs device time per command name (fit's History.device_time); while no capture wants details, complete
  // records of one name are folded into one (start 0, end the summed time, bytes summed), so that a fit of
  // millions of small commands keeps a few records, and the ops build no operand strings.
  std::size_t begin(bool details = true);
  void add(PendingRecord r);
  // Closes the capture opened with `token` (and `details` as it was opened); `resolve` fills in device times of
  // pending records first.
  std::vector<OpRecord> end(std::size_t token, bool details, const std::function<void(PendingRecord&)>& resolve);
  // The operands of the op the calling thread is running (OpDetail sets it while a capture is open); copied into
  // every record that thread adds.
  static std::string& detail();

 private:
  std::mutex mu_;
  std::atomic<int> depth_{0}, detail_depth_{0};
  std::vector<PendingRecord> records_;
  // name -> the folded record of that name, among the records after the newest capture's token
  std::unordered_map<std::string, std::size_t> folded_;
  static thread_local int paused_;
};

// Describes the calling thread's current op for the records its commands leave while a capture is open on
// `recorder`; `describe` (returning a std::string) runs only then, so ops pay nothing when nobody records.
class OpDetail {
 public:
  template <class F>
  OpDetail(bool capturing, F&& describe) {
    if (!capturing) return;
    saved_ = std::move(Recorder::detail());
    Recorder::detail() = describe();
    set_ = true;
  }
  ~OpDetail() {
    if (set_) Recorder::detail() = std::move(saved_);
  }
  OpDetail(const OpDetail&) = delete;
  OpDetail& operator=(const OpDetail&) = delete;

 private:
  std::string saved_;
  bool set_ = false;
};

double host_seconds();  // steady clock, seconds

}  // namespace hetnn
