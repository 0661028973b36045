// Transfers between device buffers and ordinary (pageable) host memory staged through page-locked memory. A GPU
// driver copies pageable memory through its own staging or slower paths (hetnn's pageable copies on an H200 ran at
// 6.7 / 3.8 GB/s against 55 GB/s from page-locked memory); two page-locked chunks, double-buffered, let the host copy
// one chunk while the device copies the other. Whether that is faster is a property of the device and its driver: a
// CPU OpenCL device (PoCL) copies pageable memory as fast as page-locked memory and staging only adds a memcpy. So
// the first large transfer of each direction measures both on a scratch buffer and keeps the faster.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>
#include <vector>

#include "backend/opencl/cl_backend.h"
#include "backend/opencl/cl_check.h"
#include "core/errors.h"

namespace hetnn::opencl {

namespace {

constexpr std::size_t kStageMin = std::size_t{4} << 20;     // smaller copies go directly (latency-bound)
constexpr std::size_t kStageChunk = std::size_t{4} << 20;   // each of the two page-locked chunks
constexpr std::size_t kCalibrateBytes = std::size_t{32} << 20;
constexpr int kCalibrateRounds = 3;
constexpr double kMargin = 0.9;  // staged must take at most this share of the direct time to be chosen

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// HETNN_STAGING: "0" never, "1" always (copies of kStageMin bytes or more), else measured.
int forced_staging() {
  const char* e = std::getenv("HETNN_STAGING");
  if (e && std::strcmp(e, "0") == 0) return 0;
  if (e && std::strcmp(e, "1") == 0) return 1;
  return -1;
}

void wait(Event& ev) {
  if (!ev) return;
  cl_event e = ev.get();
  const cl_int st = clWaitForEvents(1, &e);
  ev = Event();
  if (st != CL_SUCCESS) throw_cl_error(st, "clWaitForEvents(a staged transfer)");
}

}  // namespace

bool ClBackend::staged(int direction, std::size_t n, const void* host) {
  if (n < kStageMin || pinned_owner(host, n)) return false;  // page-locked memory goes directly
  std::lock_guard<std::mutex> lock(stage_mu_);
  if (stage_verdict_[direction] < 0) calibrate_staging(direction);
  return stage_verdict_[direction] == 1;
}

void ClBackend::staged_write(cl_mem m, std::size_t off, const void* src, std::size_t n) {
  std::lock_guard<std::mutex> lock(stage_mu_);  // one transfer at a time uses the chunks
  staged_write_unlocked(m, off, src, n);
}

void ClBackend::staged_read(cl_mem m, std::size_t off, void* dst, std::size_t n) {
  std::lock_guard<std::mutex> lock(stage_mu_);
  staged_read_unlocked(m, off, dst, n);
}

void ClBackend::staged_write_unlocked(cl_mem m, std::size_t off, const void* src, std::size_t n) {
  Event pending[2];
  try {
    for (std::size_t done = 0, i = 0; done < n; ++i) {
      const std::size_t c = std::min(kStageChunk, n - done), b = i % 2;
      wait(pending[b]);  // the chunk's previous copy has left it
      std::memcpy(stage_ptr_[b], static_cast<const unsigned char*>(src) + done, c);
      pending[b] = copy_started(0, m, off + done, stage_ptr_[b], c);
      done += c;
    }
    wait(pending[0]);
    wait(pending[1]);
  } catch (...) {
    for (Event& e : pending)  // the chunks must be free before anything reuses them; the first error is reported
      if (e) {
        cl_event h = e.get();
        clWaitForEvents(1, &h);
      }
    throw;
  }
}

void ClBackend::staged_read_unlocked(cl_mem m, std::size_t off, void* dst, std::size_t n) {
  Event pending[2];
  std::size_t size[2] = {0, 0};
  try {
    size[0] = std::min(kStageChunk, n);
    pending[0] = copy_started(1, m, off, stage_ptr_[0], size[0]);
    for (std::size_t done = 0, i = 0; done < n; ++i) {
      const std::size_t b = i % 2, next = done + size[b];
      if (next < n) {  // the next chunk's copy runs while this one is copied out
        size[1 - b] = std::min(kStageChunk, n - next);
        pending[1 - b] = copy_started(1, m, off + next, stage_ptr_[1 - b], size[1 - b]);
      }
      wait(pending[b]);
      std::memcpy(static_cast<unsigned char*>(dst) + done, stage_ptr_[b], size[b]);
      done = next;
    }
  } catch (...) {
    for (Event& e : pending)
      if (e) {
        cl_event h = e.get();
        clWaitForEvents(1, &h);
      }
    throw;
  }
}

void ClBackend::calibrate_staging(int direction) {
  const char* name = direction == 0 ? "host -> device" : "device -> host";
  const int forced = forced_staging();
  const auto no_room = [&](const char* what) {  // direct, as every transfer went before
    stage_verdict_[direction] = 0;
    stage_why_[direction] = std::string("direct (no room for ") + what + ")";
  };
  try {
    stage_chunks();
  } catch (const OutOfMemory&) {
    return no_room("the page-locked chunks");
  }
  if (forced >= 0) {
    stage_verdict_[direction] = forced;
    stage_why_[direction] = std::string(forced ? "staged" : "direct") + " (HETNN_STAGING=" + std::to_string(forced) + ")";
    return;
  }
  // Both ways on a scratch buffer, alternating, not recorded in an open capture: the faster by median (staged must
  // win by a margin: it costs host memory bandwidth the direct copy does not).
  Recorder::Pause pause;
  if (info_.type == "cpu" && !address_space_for(2 * kCalibrateBytes)) return no_room("the measurement");
  std::vector<unsigned char> host;
  try {
    host.assign(kCalibrateBytes, 1);
  } catch (const std::bad_alloc&) {
    return no_room("the measurement");
  }
  cl_int st = CL_SUCCESS;
  Mem scratch(clCreateBuffer(context_.get(), CL_MEM_READ_WRITE, kCalibrateBytes, nullptr, &st));
  if (st != CL_SUCCESS) return no_room("the measurement");
  const cl_mem m = scratch.get();
  direct_write(m, 0, host.data(), kCalibrateBytes);  // first touch
  std::vector<double> direct, via;
  for (int r = 0; r < kCalibrateRounds; ++r) {
    for (int staged_now = 0; staged_now < 2; ++staged_now) {
      const double t0 = now();
      if (direction == 0)
        staged_now ? staged_write_unlocked(m, 0, host.data(), kCalibrateBytes)
                   : direct_write(m, 0, host.data(), kCalibrateBytes);
      else
        staged_now ? staged_read_unlocked(m, 0, host.data(), kCalibrateBytes)
                   : read_mem(m, 0, kCalibrateBytes, host.data());
      (staged_now ? via : direct).push_back(now() - t0);
    }
  }
  std::sort(direct.begin(), direct.end());
  std::sort(via.begin(), via.end());
  const double td = direct[direct.size() / 2], ts = via[via.size() / 2];
  stage_verdict_[direction] = ts <= kMargin * td ? 1 : 0;
  std::ostringstream why;
  why.precision(3);
  why << (stage_verdict_[direction] ? "staged" : "direct") << " (measured " << name << ", "
      << (kCalibrateBytes >> 20) << " MiB: direct " << kCalibrateBytes / td / 1e9 << " GB/s, staged "
      << kCalibrateBytes / ts / 1e9 << " GB/s)";
  stage_why_[direction] = why.str();
}

void ClBackend::stage_chunks() {
  if (stage_owner_[0] && stage_owner_[1]) return;  // kept for the process's life
  void* p[2] = {nullptr, nullptr};
  std::shared_ptr<void> owner[2];
  for (int b = 0; b < 2; ++b) owner[b] = alloc_pinned(kStageChunk, &p[b]);  // both, or neither (OutOfMemory)
  for (int b = 0; b < 2; ++b) stage_owner_[b] = std::move(owner[b]), stage_ptr_[b] = p[b];
}

void ClBackend::set_transfer_staging(int staged) {
  std::lock_guard<std::mutex> lock(stage_mu_);
  if (staged > 0) stage_chunks();
  for (int d = 0; d < 2; ++d) {
    stage_verdict_[d] = staged < 0 ? -1 : (staged ? 1 : 0);
    stage_why_[d] = staged < 0 ? "" : std::string(staged ? "staged" : "direct") + " (set for this process)";
  }
}

std::map<std::string, std::string> ClBackend::transfer_paths() {
  std::lock_guard<std::mutex> lock(stage_mu_);
  std::map<std::string, std::string> out;
  for (int d = 0; d < 2; ++d)
    out[d == 0 ? "h2d" : "d2h"] = stage_verdict_[d] < 0 ? "not measured yet" : stage_why_[d];
  return out;
}

}  // namespace hetnn::opencl
