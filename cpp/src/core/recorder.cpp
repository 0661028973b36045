#include "core/recorder.h"

#include <chrono>

namespace hetnn {

double host_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

thread_local int Recorder::paused_ = 0;

std::size_t Recorder::begin() {
  std::lock_guard<std::mutex> lock(mu_);
  depth_.fetch_add(1);
  return records_.size();
}

std::string& Recorder::detail() {
  thread_local std::string d;
  return d;
}

void Recorder::add(PendingRecord r) {
  if (paused_) return;
  if (r.rec.detail.empty()) r.rec.detail = detail();
  std::lock_guard<std::mutex> lock(mu_);
  if (depth_.load() > 0) records_.push_back(std::move(r));
}

std::vector<OpRecord> Recorder::end(std::size_t token, const std::function<void(PendingRecord&)>& resolve) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<OpRecord> out;
  for (std::size_t i = token; i < records_.size(); ++i) {
    PendingRecord& p = records_[i];
    if (p.handle) {
      resolve(p);
      p.handle.reset();
    }
    out.push_back(p.rec);
  }
  if (depth_.load() > 0 && depth_.fetch_sub(1) == 1) records_.clear();
  return out;
}

}  // namespace hetnn
