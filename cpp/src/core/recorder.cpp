#include "core/recorder.h"

#include <algorithm>
#include <chrono>

namespace hetnn {

double host_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

thread_local int Recorder::paused_ = 0;

std::size_t Recorder::begin(bool details) {
  std::lock_guard<std::mutex> lock(mu_);
  depth_.fetch_add(1);
  if (details) detail_depth_.fetch_add(1);
  folded_.clear();  // records before this token are not this capture's: fold only into newer ones
  return records_.size();
}

std::string& Recorder::detail() {
  thread_local std::string d;
  return d;
}

void Recorder::add(PendingRecord r) {
  if (paused_) return;
  const bool details = detail_depth_.load() > 0;
  if (details && r.rec.detail.empty()) r.rec.detail = detail();
  std::lock_guard<std::mutex> lock(mu_);
  if (depth_.load() == 0) return;
  if (!details && !r.handle) {
    const double seconds = std::max(r.rec.end - r.rec.start, 0.0);
    const auto it = folded_.find(r.rec.name);
    if (it != folded_.end()) {
      OpRecord& f = records_[it->second].rec;
      f.end += seconds;
      f.bytes += r.rec.bytes;
      return;
    }
    r.rec.start = 0.0;
    r.rec.end = seconds;
    r.rec.detail.clear();
    folded_.emplace(r.rec.name, records_.size());
  }
  records_.push_back(std::move(r));
}

std::vector<OpRecord> Recorder::end(std::size_t token, bool details,
                                    const std::function<void(PendingRecord&)>& resolve) {
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
  if (details && detail_depth_.load() > 0) detail_depth_.fetch_sub(1);
  if (depth_.load() > 0 && depth_.fetch_sub(1) == 1) {
    records_.clear();
    folded_.clear();
  }
  return out;
}

}  // namespace hetnn
