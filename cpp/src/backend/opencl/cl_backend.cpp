#include "backend/opencl/cl_backend.h"

#include <sys/mman.h>

#include <fstream>

#include <algorithm>
#include <limits>
#include <sstream>
#include <tuple>
#include <utility>

#include "backend/cpu/blas_pool.h"
#include "backend/opencl/cl_args.h"
#include "backend/opencl/cl_check.h"
#include "backend/opencl/gemm_tuning.h"
#include "core/cpu_relax.h"
#include "core/errors.h"
#include "core/warn.h"

namespace hetnn::opencl {

namespace {

class ClBuffer final : public Buffer {
 public:
  ClBuffer(Mem m, std::size_t n, std::shared_ptr<ClAllocator> pool, std::size_t capacity)
      : Buffer(n), mem(std::move(m)), pool_(std::move(pool)), capacity_(capacity) {}
  ~ClBuffer() override {
    if (pool_) pool_->give(std::move(mem), capacity_);
  }
  Mem mem;

 private:
  std::shared_ptr<ClAllocator> pool_;
  std::size_t capacity_;
};

cl_mem mem_of(const Buffer& b) { return static_cast<const ClBuffer&>(b).mem.get(); }

Context make_context(cl_platform_id platform, cl_device_id device) {
  cl_int st = CL_SUCCESS;
  const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform), 0};
  Context c(clCreateContext(props, 1, &device, nullptr, nullptr, &st));
  HETNN_CL_CHECK(st);
  return c;
}

Queue make_queue(const Context& context, cl_device_id device) {
  cl_int st = CL_SUCCESS;
  Queue q(clCreateCommandQueue(context.get(), device, CL_QUEUE_PROFILING_ENABLE, &st));
  HETNN_CL_CHECK(st);
  return q;
}

// A stream: an in-order queue of its own, numbered (queue handles may be reused once released; the numbers are not).
struct ClStream {
  std::uint64_t id;
  Queue queue;
  Event last;  // its last command (under the backend's use_mu_)
};

bool event_complete(cl_event e) {
  cl_int st = CL_QUEUED;
  return clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr) == CL_SUCCESS &&
         st <= CL_COMPLETE;
}

// Per thread, the stream each backend's commands go to (none: its own queue).
thread_local std::vector<std::pair<const ClBackend*, std::shared_ptr<ClStream>>> current_streams;

}  // namespace

ClBackend::ClBackend(cl_platform_id platform, cl_device_id device, DeviceInfo info)
    : device_(device),
      info_(std::move(info)),
      context_(make_context(platform, device)),
      queue_(make_queue(context_, device)),
      programs_(context_.get(), device_, info_),
      // Cache freed buffers up to 1/8 of the device's memory (at most 2 GiB).
      pool_(std::make_shared<ClAllocator>(
          static_cast<std::size_t>(std::min<std::uint64_t>(info_.global_mem / 8, std::uint64_t{2} << 30)))) {}

ClBackend::~ClBackend() {
  // let pending commands finish before their buffers go; status ignored
  for (const auto& s : stream_list_) clFinish(static_cast<ClStream*>(s.get())->queue.get());
  if (queue_) clFinish(queue_.get());
}

ClBackend::Target ClBackend::target() const {
  for (const auto& [backend, stream] : current_streams)
    if (backend == this) return {stream->queue.get(), stream->id, stream.get()};
  return {queue_.get(), 0, nullptr};
}

template <class F>
cl_event ClBackend::submit(const cl_mem* mems, std::size_t n, bool host_waits, bool want_event, F&& enq) {
  if (on_host_cpus_) blas_pool::quiet();  // the driver's threads run on the CPUs BLAS workers may be spinning on
  const Target t = target();
  if (t.queue == queue_.get()) queue_pending_.store(true, std::memory_order_relaxed);
  const bool keep = want_event || recorder_.active();
  const bool poll = host_waits && wait_spin_.load(std::memory_order_relaxed) > 0;
  cl_event ev = nullptr;
  {
    std::shared_lock<std::shared_mutex> shared(use_mu_);
    if (!streams_) {  // one queue: in order, nothing to track
      enq(t.queue, 0u, static_cast<const cl_event*>(nullptr), (keep || poll) ? &ev : nullptr,
          host_waits && !poll ? CL_TRUE : CL_FALSE);
      if (!poll) return ev;
    }
  }
  if (!ev) {  // streams: each buffer's last use orders it across queues
    std::unique_lock<std::shared_mutex> lock(use_mu_);
    std::vector<cl_event> waits;
    for (std::size_t i = 0; i < n; ++i) {
      const auto it = last_use_.find(mems[i]);
      if (it != last_use_.end() && it->second.queue != t.id &&
          std::find(waits.begin(), waits.end(), it->second.ev.get()) == waits.end())
        waits.push_back(it->second.ev.get());
    }
    enq(t.queue, static_cast<cl_uint>(waits.size()), waits.empty() ? nullptr : waits.data(), &ev, CL_FALSE);
    stream_waits_ += waits.size();
    for (std::size_t i = 0; i < n; ++i) {
      clRetainEvent(ev);
      last_use_[mems[i]] = {t.id, Event(ev)};
    }
    if (t.stream) {
      clRetainEvent(ev);
      static_cast<ClStream*>(t.stream)->last = Event(ev);
    }
    if (last_use_.size() > prune_at_) {  // forget the uses that have finished (a released buffer's among them)
      for (auto it = last_use_.begin(); it != last_use_.end();)
        it = event_complete(it->second.ev.get()) ? last_use_.erase(it) : std::next(it);
      prune_at_ = std::max<std::size_t>(4096, 2 * last_use_.size());
    }
  }
  if (host_waits) {
    const cl_int st = await(t.queue, ev);
    if (st != CL_COMPLETE) {
      clReleaseEvent(ev);
      throw_cl_error(st, "clWaitForEvents(a transfer)");
    }
  }
  if (!keep) {
    clReleaseEvent(ev);
    ev = nullptr;
  }
  return ev;
}

std::shared_ptr<void> ClBackend::create_stream() {
  auto s = std::make_shared<ClStream>(ClStream{next_stream_++, make_queue(context_, device_), Event()});
  bool first = false;
  {
    std::unique_lock<std::shared_mutex> lock(use_mu_);  // no untracked command is being enqueued now
    first = !streams_;
    streams_ = true;
    forget_idle_streams();
    stream_list_.push_back(s);
  }
  if (first) HETNN_CL_CHECK(clFinish(queue_.get()));  // what ran untracked has finished before anything is ordered
  return s;
}

void ClBackend::forget_idle_streams() {
  stream_list_.erase(std::remove_if(stream_list_.begin(), stream_list_.end(),
                                    [](const std::shared_ptr<void>& p) {
                                      const auto* s = static_cast<const ClStream*>(p.get());
                                      return p.use_count() == 1 && (!s->last || event_complete(s->last.get()));
                                    }),
                     stream_list_.end());
}

std::shared_ptr<void> ClBackend::swap_stream(std::shared_ptr<void> s) {
  auto next = std::static_pointer_cast<ClStream>(std::move(s));
  for (auto it = current_streams.begin(); it != current_streams.end(); ++it) {
    if (it->first != this) continue;
    std::shared_ptr<void> prev = it->second;
    if (next)
      it->second = std::move(next);
    else
      current_streams.erase(it);
    return prev;
  }
  if (next) current_streams.emplace_back(this, std::move(next));
  return nullptr;
}

void ClBackend::stream_wait(const std::shared_ptr<void>& s, const std::shared_ptr<void>& marker) {
  cl_event ev = static_cast<cl_event>(marker.get());
  const Target t = target();
  auto* stream = s ? static_cast<ClStream*>(s.get()) : static_cast<ClStream*>(t.stream);
  const cl_command_queue q = stream ? stream->queue.get() : t.queue;
  cl_event barrier = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    HETNN_CL_CHECK(clEnqueueBarrierWithWaitList(q, 1, &ev, &barrier));
  }
  Event hold(barrier);
  if (stream) {
    std::unique_lock<std::shared_mutex> lock(use_mu_);
    stream->last = hold;  // the stream is not done before what it waits for
  }
}

bool ClBackend::stream_done(const std::shared_ptr<void>& s) {
  Event last;
  {
    std::shared_lock<std::shared_mutex> lock(use_mu_);
    last = static_cast<ClStream*>(s.get())->last;
  }
  return !last || event_complete(last.get());
}

std::shared_ptr<void> ClBackend::pinned_owner(const void* p, std::size_t n) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard<std::mutex> lock(pinned_mu_);
  auto it = pinned_.upper_bound(a);
  if (it == pinned_.begin()) return nullptr;
  --it;
  if (a + n > it->first + it->second.first) return nullptr;
  return it->second.second.lock();
}

void ClBackend::keep_until(const Event& ev, std::shared_ptr<void> keep) {
  std::lock_guard<std::mutex> lock(pinned_mu_);
  in_flight_.erase(std::remove_if(in_flight_.begin(), in_flight_.end(),
                                  [](const std::pair<Event, std::shared_ptr<void>>& f) {
                                    return event_complete(f.first.get());
                                  }),
                   in_flight_.end());
  in_flight_.emplace_back(ev, std::move(keep));
}

void ClBackend::record(const char* name, cl_event ev, double host_enqueue, std::uint64_t bytes) {
  if (!ev) return;
  OpRecord r;
  r.name = name;
  r.host_enqueue = host_enqueue;
  r.bytes = bytes;
  recorder_.add({std::move(r), std::shared_ptr<void>(ev, [](void* e) { clReleaseEvent(static_cast<cl_event>(e)); })});
}

void ClBackend::resolve(PendingRecord& p) {
  cl_event ev = static_cast<cl_event>(p.handle.get());
  cl_ulong start = 0, end = 0;
  if (clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr) == CL_SUCCESS &&
      clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr) == CL_SUCCESS) {
    p.rec.start = static_cast<double>(start) * 1e-9;
    p.rec.end = static_cast<double>(end) * 1e-9;
  }
}

namespace {

// MemAvailable of /proc/meminfo in bytes (0: unknown).
std::uint64_t host_available_memory() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (f >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

}  // namespace

// Live buffers plus this one must fit the device's global memory, and on CPU-type devices (whose "device memory" is
// the host's) the host's available memory: else MemoryError here, not an abort inside the driver.
// An inaccessible, unreserved mapping touches no memory and costs two system calls per new buffer.
bool address_space_for(std::size_t bytes) {
  const std::size_t want = bytes + (std::size_t{64} << 20);
  void* p = mmap(nullptr, want, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  munmap(p, want);
  return true;
}

void ClBackend::check_room(std::size_t nbytes, std::size_t capacity) {
  const std::size_t live = pool_->live();
  const std::size_t limit = memory_limit_ ? memory_limit_ : info_.global_mem;
  if (limit && live + capacity > limit) {
    pool_->clear();
    throw OutOfMemory("cannot allocate " + std::to_string(nbytes) + " bytes on " + info_.id + " (" + info_.name +
                      "): " + std::to_string(live) + " bytes are in use of its " + std::to_string(limit) +
                      " bytes of memory (free arrays, or hetnn.empty_cache())");
  }
  if (info_.type == "cpu" && !address_space_for(capacity) && (pool_->clear(), !address_space_for(capacity)))
    throw OutOfMemory("cannot allocate " + std::to_string(nbytes) + " bytes on " + info_.id + " (" + info_.name +
                      "): the process's address space is exhausted (ulimit -v / RLIMIT_AS)");
  if (info_.type == "cpu" && capacity >= (std::size_t{64} << 20)) {
    const std::uint64_t avail = host_available_memory();
    if (avail && capacity + (std::uint64_t{256} << 20) > avail + pool_->clear())
      throw OutOfMemory("cannot allocate " + std::to_string(nbytes) + " bytes on " + info_.id + " (" + info_.name +
                        "): the host has " + std::to_string(avail) + " bytes of memory available");
  }
}

std::shared_ptr<Buffer> ClBackend::alloc(std::size_t nbytes) {
  if (nbytes > info_.max_alloc)
    throw OutOfMemory("cannot allocate " + std::to_string(nbytes) + " bytes on " + info_.id + " (" + info_.name +
                      "): its largest allocation is " + std::to_string(info_.max_alloc) + " bytes");
  const std::size_t capacity = std::min<std::size_t>(ClAllocator::capacity_for(std::max<std::size_t>(nbytes, 4)),
                                                      std::max<std::size_t>(info_.max_alloc, 4));
  Mem m = pool_->take(capacity);
  if (!m) {
    check_room(nbytes, capacity);
    cl_int st = CL_SUCCESS;
    m = Mem(clCreateBuffer(context_.get(), CL_MEM_READ_WRITE, capacity, nullptr, &st));
    if (st == CL_MEM_OBJECT_ALLOCATION_FAILURE || st == CL_OUT_OF_RESOURCES) {  // cached buffers may be in the way
      pool_->clear();
      m = Mem(clCreateBuffer(context_.get(), CL_MEM_READ_WRITE, capacity, nullptr, &st));
    }
    if (st != CL_SUCCESS) throw_cl_error(st, "clCreateBuffer(" + std::to_string(nbytes) + " bytes)");
    pool_->track_new(capacity);
  }
  return std::make_shared<ClBuffer>(std::move(m), nbytes, pool_, capacity);
}

std::shared_ptr<void> ClBackend::alloc_pinned(std::size_t nbytes, void** ptr) {
  const std::size_t n = std::max<std::size_t>(nbytes, 1);
  cl_int st = CL_SUCCESS;
  Mem m(clCreateBuffer(context_.get(), CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, n, nullptr, &st));
  if (st == CL_MEM_OBJECT_ALLOCATION_FAILURE || st == CL_OUT_OF_HOST_MEMORY || st == CL_INVALID_BUFFER_SIZE)
    throw OutOfMemory("cannot allocate " + std::to_string(nbytes) + " bytes of page-locked host memory for " +
                      info_.id + " (" + info_.name + ")");
  if (st != CL_SUCCESS) throw_cl_error(st, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR, " + std::to_string(n) + " bytes)");
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    p = clEnqueueMapBuffer(queue_.get(), m.get(), CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, n, 0, nullptr, nullptr, &st);
  }
  if (st != CL_SUCCESS || !p) throw_cl_error(st, "clEnqueueMapBuffer(page-locked staging memory)");
  *ptr = p;
  // the mapping outlives any array using it: unmapped on the queue (kept alive with the buffer), never throwing
  std::shared_ptr<void> owner(p, [q = queue_, m = std::move(m)](void* mapped) {
    if (clEnqueueUnmapMemObject(q.get(), m.get(), mapped, 0, nullptr, nullptr) == CL_SUCCESS) clFinish(q.get());
  });
  std::lock_guard<std::mutex> lock(pinned_mu_);  // found again by address for the asynchronous copies
  for (auto it = pinned_.begin(); it != pinned_.end();) it = it->second.second.expired() ? pinned_.erase(it) : std::next(it);
  pinned_[reinterpret_cast<std::uintptr_t>(p)] = {n, owner};
  return owner;
}

std::shared_ptr<void> ClBackend::record_marker() {
  cl_event ev = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const cl_command_queue q = target().queue;
    HETNN_CL_CHECK(clEnqueueMarkerWithWaitList(q, 0, nullptr, &ev));
    clFlush(q);  // submitted now: `done` turns true when the work before it finishes, not at the next wait
  }
  return std::shared_ptr<void>(ev, [](void* e) { clReleaseEvent(static_cast<cl_event>(e)); });
}

bool ClBackend::marker_done(const std::shared_ptr<void>& m) {
  cl_int status = CL_QUEUED;
  HETNN_CL_CHECK(clGetEventInfo(static_cast<cl_event>(m.get()), CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status),
                                &status, nullptr));
  if (status < 0) throw_cl_error(status, "an Event's commands (clGetEventInfo: they failed)");
  return status == CL_COMPLETE;
}

void ClBackend::marker_wait(const std::shared_ptr<void>& m) {
  cl_event ev = static_cast<cl_event>(m.get());
  HETNN_CL_CHECK(clWaitForEvents(1, &ev));  // flushes the event's queue first
}

double ClBackend::marker_seconds(const std::shared_ptr<void>& m) {
  marker_wait(m);
  cl_ulong end = 0;
  HETNN_CL_CHECK(clGetEventProfilingInfo(static_cast<cl_event>(m.get()), CL_PROFILING_COMMAND_END, sizeof(end), &end,
                                         nullptr));
  return static_cast<double>(end) * 1e-9;
}

void ClBackend::transfer(int direction, cl_mem m, std::size_t off, void* host, std::size_t n) {
  if (direction == 0)
    staged(0, n, host) ? staged_write(m, off, host, n) : direct_write(m, off, host, n);
  else
    staged(1, n, host) ? staged_read(m, off, host, n) : read_mem(m, off, n, host);
}

void ClBackend::write(Buffer& dst, std::size_t off, const void* src, std::size_t n) {
  transfer(0, mem_of(dst), off, const_cast<void*>(src), n);  // only read from: a copy to the device
}

void ClBackend::direct_write(cl_mem m, std::size_t off, const void* src, std::size_t n) {
  const double t = host_seconds();
  cl_event ev = submit(&m, 1, true, false, [&](cl_command_queue q, cl_uint nw, const cl_event* w, cl_event* e, cl_bool b) {
    HETNN_CL_CHECK(clEnqueueWriteBuffer(q, m, b, off, n, src, nw, w, e));
  });
  record("h2d", ev, t, n);
}

void ClBackend::read(const Buffer& src, std::size_t off, void* dst, std::size_t n) { transfer(1, mem_of(src), off, dst, n); }

void ClBackend::read_mem(cl_mem m, std::size_t off, std::size_t n, void* dst) {
  const double t = host_seconds();
  cl_event ev = submit(&m, 1, true, false, [&](cl_command_queue q, cl_uint nw, const cl_event* w, cl_event* e, cl_bool b) {
    HETNN_CL_CHECK(clEnqueueReadBuffer(q, m, b, off, n, dst, nw, w, e));
  });
  record("d2h", ev, t, n);
}

Event ClBackend::copy_started(int direction, cl_mem m, std::size_t off, void* host, std::size_t n) {
  const double t = host_seconds();
  cl_command_queue used = nullptr;
  cl_event ev = submit(&m, 1, false, true, [&](cl_command_queue q, cl_uint nw, const cl_event* w, cl_event* e, cl_bool) {
    if (direction == 0)
      HETNN_CL_CHECK(clEnqueueWriteBuffer(q, m, CL_FALSE, off, n, host, nw, w, e));
    else
      HETNN_CL_CHECK(clEnqueueReadBuffer(q, m, CL_FALSE, off, n, host, nw, w, e));
    used = q;
  });
  clFlush(used);  // started now, not at the queue's next wait
  if (recorder_.active()) {
    clRetainEvent(ev);
    record(direction == 0 ? "h2d" : "d2h", ev, t, n);
  }
  return Event(ev);
}

bool ClBackend::copy_async(int direction, cl_mem m, std::size_t off, void* host, std::size_t n) {
  std::shared_ptr<void> keep = pinned_owner(host, n);
  if (!keep) {  // ordinary memory: blocking, as CUDA's copies from pageable memory
    transfer(direction, m, off, host, n);
    return false;
  }
  keep_until(copy_started(direction, m, off, host, n), std::move(keep));
  return true;
}

bool ClBackend::write_async(Buffer& dst, std::size_t off, const void* src, std::size_t n) {
  return copy_async(0, mem_of(dst), off, const_cast<void*>(src), n);  // only read from: a copy to the device
}

bool ClBackend::read_async(const Buffer& src, std::size_t off, void* dst, std::size_t n) {
  return copy_async(1, mem_of(src), off, dst, n);
}

void ClBackend::copy(const Buffer& src, std::size_t so, Buffer& dst, std::size_t d_off, std::size_t n) {
  const double t = host_seconds();
  const cl_mem ms[2] = {mem_of(src), mem_of(dst)};
  cl_event ev = submit(ms, 2, false, false, [&](cl_command_queue q, cl_uint nw, const cl_event* w, cl_event* e, cl_bool) {
    HETNN_CL_CHECK(clEnqueueCopyBuffer(q, ms[0], ms[1], so, d_off, n, nw, w, e));
  });
  record("d2d", ev, t, n);
}

void ClBackend::fill(Buffer& dst, std::size_t off, std::size_t n, unsigned char value) {
  const cl_uchar pattern = value;
  fill_mem(mem_of(dst), &pattern, 1, off, n);
}

void ClBackend::fill_mem(cl_mem m, const void* pattern, std::size_t pattern_size, std::size_t off, std::size_t n) {
  const double t = host_seconds();
  cl_event ev = submit(&m, 1, false, false, [&](cl_command_queue q, cl_uint nw, const cl_event* w, cl_event* e, cl_bool) {
    HETNN_CL_CHECK(clEnqueueFillBuffer(q, m, pattern, pattern_size, off, n, nw, w, e));
  });
  record("fill", ev, t, n);
}

void ClBackend::build_source(const std::string& source, const std::string& options) {
  build_program(context_.get(), device_, source.c_str(), "<source>", options, info_.name);
}

cl_int ClBackend::await(cl_command_queue q, cl_event ev) const {
  const double spin = wait_spin_.load(std::memory_order_relaxed);
  if (spin > 0) {
    clFlush(q);  // a command never submitted would never complete
    const double until = host_seconds() + spin;
    for (unsigned i = 1;; ++i) {
      cl_int st = CL_QUEUED;
      if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr) != CL_SUCCESS) break;
      if (st <= CL_COMPLETE) return st;
      if (i % 32 == 0 && host_seconds() > until) break;
      cpu_relax();
    }
  }
  const cl_int w = clWaitForEvents(1, &ev);
  cl_int st = CL_QUEUED;
  if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr) == CL_SUCCESS && st < 0) return st;
  return w == CL_SUCCESS ? CL_COMPLETE : w;
}

void ClBackend::synchronize() {
  std::vector<std::shared_ptr<void>> streams;
  {
    std::shared_lock<std::shared_mutex> lock(use_mu_);
    streams = stream_list_;
  }
  const bool poll = wait_spin_.load(std::memory_order_relaxed) > 0;
  for (const auto& s : streams) {
    auto* stream = static_cast<ClStream*>(s.get());
    Event last;
    if (poll) {
      std::shared_lock<std::shared_mutex> lock(use_mu_);
      last = stream->last;
    }
    if (last) {
      const cl_int st = await(stream->queue.get(), last.get());
      if (st != CL_COMPLETE) throw_cl_error(st, "clWaitForEvents(synchronize)");
    }
    HETNN_CL_CHECK(clFinish(stream->queue.get()));
  }
  if (poll && queue_pending_.exchange(false)) {  // polls a marker behind the queue's work, then finds it idle
    cl_event m = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      HETNN_CL_CHECK(clEnqueueMarkerWithWaitList(queue_.get(), 0, nullptr, &m));
    }
    const Event marker(m);
    const cl_int st = await(queue_.get(), m);
    if (st != CL_COMPLETE) throw_cl_error(st, "clWaitForEvents(synchronize)");
  }
  HETNN_CL_CHECK(clFinish(queue_.get()));
  streams.clear();
  {
    std::unique_lock<std::shared_mutex> lock(use_mu_);
    forget_idle_streams();
  }
  {
    std::lock_guard<std::mutex> lock(pinned_mu_);
    in_flight_.clear();  // all complete
  }
  std::lock_guard<std::mutex> lock(fence_mu_);
  fences_.clear();
}

cl_kernel ClBackend::kernel(const std::string& file, const std::string& name, const std::string& options) {
  const std::string key = file + '\n' + name + '\n' + options;
  auto it = kernels_.find(key);
  if (it != kernels_.end()) return it->second.get();
  cl_program prog = programs_.get(file, options);
  cl_int st = CL_SUCCESS;
  Kernel k(clCreateKernel(prog, name.c_str(), &st));
  if (st == CL_INVALID_KERNEL_NAME) {  // a cached binary of some other program: drop it, build from source once
    warn("the cached OpenCL program for " + file + " lacks kernel " + name + "; rebuilding it from source");
    programs_.discard(file, options);
    prog = programs_.get(file, options);
    k = Kernel(clCreateKernel(prog, name.c_str(), &st));
  }
  if (st != CL_SUCCESS) throw_cl_error(st, "clCreateKernel(" + name + ")");
  return kernels_.emplace(key, std::move(k)).first->second.get();
}

cl_mem ClBackend::mem(const Buffer& b) { return mem_of(b); }

void ClBackend::load_tuned_once() {
  if (tuned_loaded_) return;
  tuned_loaded_ = true;
  apply_stored_tuning(std::nullopt);
}

void ClBackend::apply_stored_tuning(std::optional<GemmType> only) {
  for (const auto& [dtype, entry] : load_tuned(info_)) {
    try {
      const GemmType t = GemmType::from_name(dtype);
      if (only && !(t == *only)) continue;
      gemm_overrides_[t] = parse_tuned(entry, info_, t);
    } catch (const Error& e) {
      warn("ignoring tuned " + dtype + " GEMM parameters for " + info_.id + " (" + e.what() + ")");
    }
  }
}

const GemmParams* ClBackend::override_for(GemmType t, std::int64_t macs) const {
  const auto it = gemm_overrides_.find(t);
  if (it == gemm_overrides_.end()) return nullptr;
  for (const GemmParams& p : it->second)  // size classes in increasing max_macs, then the entry for any size
    if (p.max_macs < 0 || (macs >= 0 && macs <= p.max_macs)) return &p;
  return nullptr;
}

GemmParams ClBackend::gemm_params(GemmType t, std::int64_t macs) {
  std::lock_guard<std::mutex> lock(mu_);
  return gemm_params_locked(t, macs);
}

GemmParams ClBackend::gemm_params_locked(GemmType t, std::int64_t macs) {
  load_tuned_once();
  const GemmParams* p = override_for(t, macs);
  if (p) return *p;
  // the probe runs only where a matrix-unit entry could apply (NVIDIA; 16-bit data or tf32)
  const bool units = t.matrix_units_possible() && matrix_units(t);
  if (t.tf32 && !units) return gemm_params_locked(DType::f32, macs);
  // a warpgroup entry asks its own probe only where one would apply (sm_90)
  GemmParams p_db = gemm_database_lookup(info_, t, macs, units, true);
  if (p_db.wg && !warpgroup_units(t)) p_db = gemm_database_lookup(info_, t, macs, units, false);
  return p_db;
}

void ClBackend::clear_gemm_params(GemmType t) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    load_tuned_once();
    gemm_overrides_.erase(t);
    apply_stored_tuning(t);
  }
  forget_conv_choices();
}

// "benchmark"'s choices were timed on the GEMM parameters then in force: other parameters may change the winner.
// (After mu_ is released: a measurement holds conv_choice_mu_ and then takes mu_.)
void ClBackend::forget_conv_choices() {
  std::lock_guard<std::recursive_mutex> lock(conv_choice_mu_);
  conv_choices_.clear();
}

void* ClBackend::extension(const std::string& name) {
  if (name == GemmTuning::kName) return static_cast<GemmTuning*>(this);
  if (name == KernelTools::kName) return static_cast<KernelTools*>(this);
  if (name == RawHandles::kName) return static_cast<RawHandles*>(this);
  return nullptr;
}

std::pair<std::string, std::string> ClBackend::params(GemmType t, std::int64_t macs) {
  const GemmParams p = gemm_params(t, macs);
  return {p.str(), p.source};
}

void ClBackend::set(GemmType t, const std::string& params, const std::string& source) {
  if (params.empty()) return clear_gemm_params(t);
  GemmParams p = GemmParams::parse(params);
  p.source = source;
  set_gemm_params(t, p);
}

void ClBackend::set_gemm_params(GemmType t, const GemmParams& p) {
  p.check_dtype(t);
  p.validate(info_, t);
  {
    std::lock_guard<std::mutex> lock(mu_);
    load_tuned_once();
    GemmParams q = p;
    q.source = p.source.empty() ? "tuned" : p.source;
    q.max_macs = -1;
    gemm_overrides_[t] = {q};  // one entry for every size, replacing any size classes
  }
  forget_conv_choices();
}

cl_mem ClBackend::scratch(int slot, std::size_t bytes) {
  if (scratch_.size() <= static_cast<std::size_t>(slot)) scratch_.resize(slot + 1);
  auto& [mem, size] = scratch_[slot];
  if (!mem || size < bytes) {
    const std::size_t want = std::max<std::size_t>(bytes, 256);
    if (want > info_.max_alloc)
      throw OutOfMemory("a kernel needs a " + std::to_string(want) + "-byte work buffer on " + info_.id +
                        ", above its largest allocation (" + std::to_string(info_.max_alloc) + " bytes)");
    if (info_.type == "cpu" && !address_space_for(want))
      throw OutOfMemory("a kernel needs a " + std::to_string(want) + "-byte work buffer on " + info_.id +
                        ": the process's address space is exhausted (ulimit -v / RLIMIT_AS)");
    cl_int st = CL_SUCCESS;
    Mem m(clCreateBuffer(context_.get(), CL_MEM_READ_WRITE, want, nullptr, &st));
    if (st != CL_SUCCESS) throw_cl_error(st, "clCreateBuffer(scratch, " + std::to_string(want) + " bytes)");
    mem = std::move(m);
    size = want;
  }
  return mem.get();
}

void ClBackend::enqueue_planes(const char* name, cl_kernel k, std::int64_t cols, std::int64_t rows,
                               std::int64_t planes) {
  const bool gpu = gpu_kernels();
  const std::size_t lx = gpu ? 32 : 16, ly = gpu ? 4 : 1;
  const std::size_t local[3] = {lx, ly, 1};
  const std::size_t global[3] = {round_up(static_cast<std::size_t>(cols), lx),
                                 round_up(static_cast<std::size_t>(rows), ly), static_cast<std::size_t>(planes)};
  enqueue(name, k, 3, global, local);
}

void ClBackend::enqueue(const char* name, cl_kernel k, int dims, const std::size_t* global, const std::size_t* local) {
  const double t = host_seconds();
  const std::vector<cl_mem>& mems = kernel_mems();  // the buffers among the arguments just set (ArgSetter)
  cl_event ev = submit(mems.data(), mems.size(), false, false,
                       [&](cl_command_queue q, cl_uint nw, const cl_event* w, cl_event* e, cl_bool) {
                         const cl_int st = clEnqueueNDRangeKernel(q, k, dims, nullptr, global, local, nw, w, e);
                         if (st != CL_SUCCESS) throw_cl_error(st, std::string("clEnqueueNDRangeKernel(") + name + ")");
                       });
  record(name, ev, t, 0);
  throttle();
}

void ClBackend::throttle() {
  std::lock_guard<std::mutex> lock(fence_mu_);
  if (!fence_every_ || ++since_fence_ < fence_every_) return;
  since_fence_ = 0;
  cl_event m = nullptr;
  HETNN_CL_CHECK(clEnqueueMarkerWithWaitList(target().queue, 0, nullptr, &m));
  fences_.emplace_back(m);
  while (fences_.size() > kMaxFences) {  // wait for the oldest: the queue drains to ~kMaxFences * fence_every_
    cl_event f = fences_.front().get();
    const cl_int st = clWaitForEvents(1, &f);
    fences_.pop_front();
    if (st != CL_SUCCESS) throw_cl_error(st, "clWaitForEvents(queue back-pressure)");
  }
}

void ClBackend::set_queue_limit(std::size_t commands) {
  std::lock_guard<std::mutex> lock(fence_mu_);
  fence_every_ = commands ? std::max<std::size_t>(1, commands / kMaxFences) : 0;
  since_fence_ = 0;
}


std::string conv_pack_options(const Conv2dDesc& c) {
  return " -DKH=" + std::to_string(c.kh) + " -DKW=" + std::to_string(c.kw) + " -DCONV_SW=" + std::to_string(c.sw);
}

// The tap table pack_b_conv_t reads (pack.cl): for taps r < n, (c*H*W + i*DH*W + j*DW, i*DH, j*DW),
// and past C*kh*kw an i*DH no output row reaches inside the image. Made once per layout and kept (the last 64).
cl_mem ClBackend::conv_taps(const Conv2dDesc& c, std::int64_t n) {
  const std::string key = std::to_string(c.C) + "," + std::to_string(c.H) + "," + std::to_string(c.W) + "," +
                          std::to_string(c.kh) + "," + std::to_string(c.kw) + "," + std::to_string(c.dh) + "," +
                          std::to_string(c.dw) + "," + std::to_string(n);
  if (auto it = conv_taps_.find(key); it != conv_taps_.end()) return it->second.get();
  std::vector<cl_int> t(static_cast<std::size_t>(3 * n));
  const std::int64_t ck = c.C * c.kh * c.kw;
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t ch = r / (c.kh * c.kw), i = r / c.kw % c.kh, j = r % c.kw;
    t[3 * r] = r < ck ? static_cast<cl_int>((ch * c.H + i * c.dh) * c.W + j * c.dw) : 0;
    t[3 * r + 1] = r < ck ? static_cast<cl_int>(i * c.dh) : std::numeric_limits<cl_int>::min() / 2;
    t[3 * r + 2] = r < ck ? static_cast<cl_int>(j * c.dw) : 0;
  }
  if (conv_taps_.size() >= 64) conv_taps_.clear();
  cl_int st = CL_SUCCESS;
  Mem m(clCreateBuffer(context_.get(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, t.size() * sizeof(cl_int), t.data(),
                       &st));
  if (st != CL_SUCCESS) throw_cl_error(st, "clCreateBuffer(convolution tap table)");
  return conv_taps_.emplace(key, std::move(m)).first->second.get();
}

void ClBackend::matmul_packed(const GemmParams& p, const MatmulDesc& d, cl_mem a, cl_mem b, cl_mem c, cl_mem bias,
                              const Conv2dDesc* conv, bool row_bias) {
  const std::string base = common_options(d.dtype) + " " + p.defines();
  const std::string pack_opts = base + " -DTRANS_A=" + std::to_string(d.trans_a) + " -DTRANS_B=" +
                                std::to_string(d.trans_b);
  const std::string pack_b_opts = conv ? pack_opts + conv_pack_options(*conv) : pack_opts;
  const cl_int has_bias = d.has_bias ? (conv || row_bias ? 2 : 1) : 0, act = static_cast<cl_int>(d.act);
  const std::size_t elt = d.dtype == DType::f64 ? 8 : 4;  // panels hold the compute type (float for 16-bit data)
  const std::int64_t rn = static_cast<std::int64_t>(p.vw) * p.nv;
  const std::int64_t panels_m = (d.M + p.rm - 1) / p.rm, panels_n = (d.N + rn - 1) / rn;
  const cl_int M = static_cast<cl_int>(d.M), N = static_cast<cl_int>(d.N), K = static_cast<cl_int>(d.K);
  // Read A and B in place where their layout allows (see gemm_packed.cl); 16-bit data is always packed (converted).
  // Only what is packed gets a pack kernel and a work buffer.
  const bool native = d.dtype == DType::f32 || d.dtype == DType::f64;
  const bool direct_a = native && p.pack_a == 0;
  const bool direct_b = !conv && native && p.pack_b == 0 && !d.trans_b && d.N % rn == 0;
  const char* pack_b_name = conv ? "pack_b_conv" : "pack_b";
  cl_kernel ka = direct_a ? nullptr : kernel("pack.cl", "pack_a", pack_opts);
  cl_kernel kb = direct_b ? nullptr : kernel("pack.cl", pack_b_name, pack_b_opts);
  // The batch runs in chunks of entries, one enqueue per kernel each; a chunk's packed panels (of the operands that
  // differ per entry) stay within kChunkBytes of scratch.
  const std::size_t pa = direct_a ? 0 : static_cast<std::size_t>(panels_m * d.K * p.rm) * elt;  // one entry's
  const std::size_t pb = direct_b ? 0 : static_cast<std::size_t>(panels_n * d.K * rn) * elt;
  const bool per_a = d.batch_a != 1, per_b = d.batch_b != 1;
  const std::size_t per_entry = (per_a ? pa : 0) + (per_b ? pb : 0);
  constexpr std::size_t kChunkBytes = std::size_t{64} << 20;
  const std::int64_t chunk =
      per_entry ? std::clamp<std::int64_t>(static_cast<std::int64_t>(kChunkBytes / per_entry), 1, d.batch) : d.batch;
  cl_mem ap = direct_a ? nullptr : scratch(0, pa * static_cast<std::size_t>(per_a ? chunk : 1));
  cl_mem bp = direct_b ? nullptr : scratch(1, pb * static_cast<std::size_t>(per_b ? chunk : 1));
  cl_kernel kg = kernel("gemm_packed.cl", "gemm_packed",
                        base + " -DDIRECT_A=" + std::to_string(direct_a) + " -DDIRECT_B=" + std::to_string(direct_b));
  const cl_long a_es = per_a ? d.M * d.K : 0;  // operand strides between entries (for conv, B's are images)
  const cl_long b_es = !per_b ? 0 : conv ? conv->C * conv->H * conv->W : d.K * d.N;
  const cl_long pa_es = per_a ? static_cast<cl_long>(pa / elt) : 0;  // packed panel strides between entries
  const cl_long pb_es = per_b ? static_cast<cl_long>(pb / elt) : 0;
  for (std::int64_t i = 0; i < d.batch; i += chunk) {
    const std::int64_t nz = std::min(chunk, d.batch - i);
    const cl_long a_off = i * a_es, b_off = i * b_es;
    if (!direct_a && K > 0 && (i == 0 || per_a)) {
      ArgSetter{ka, "pack_a"}(M)(K)(a)(a_off)(ap)(a_es)(pa_es);
      const std::size_t g[3] = {static_cast<std::size_t>(K), static_cast<std::size_t>(panels_m),
                                static_cast<std::size_t>(per_a ? nz : 1)};
      enqueue("matmul:pack_a", ka, 3, g, nullptr);
    }
    if (!direct_b && K > 0 && (i == 0 || per_b)) {
      ArgSetter pack{kb, pack_b_name};
      pack(K)(N)(b)(b_off)(bp)(b_es)(pb_es);
      if (conv) {
        pack(static_cast<cl_int>(conv->H))(static_cast<cl_int>(conv->W))(static_cast<cl_int>(conv->OW));
        pack(cl_int{conv->sh})(cl_int{conv->ph})(cl_int{conv->pw})(cl_int{conv->dh})(cl_int{conv->dw});
      }
      const std::size_t g[3] = {static_cast<std::size_t>(K), static_cast<std::size_t>(panels_n),
                                static_cast<std::size_t>(per_b ? nz : 1)};
      enqueue(conv ? "matmul:pack_b_conv" : "matmul:pack_b", kb, 3, g, nullptr);
    }
    const cl_long rm = p.rm;
    cl_long a_ps = K * rm, a_is = 1, a_ks = rm, ao = 0;  // packed panels
    if (direct_a) {
      ao = a_off;
      if (d.trans_a) a_ps = rm, a_is = 1, a_ks = M;
      else a_ps = rm * K, a_is = K, a_ks = 1;
    }
    const cl_long b_ps = direct_b ? rn : K * rn, b_ks = direct_b ? static_cast<cl_long>(N) : rn;
    const cl_long bo = direct_b ? b_off : 0;
    const cl_long a_bs = direct_a ? a_es : pa_es, b_bs = direct_b ? b_es : pb_es;
    ArgSetter set{kg, "gemm_packed"};
    set(M)(N)(K).real(d.alpha, d.dtype).real(d.beta, d.dtype);
    set(direct_a ? a : ap)(ao)(a_ps)(a_is)(a_ks)(direct_b ? b : bp)(bo)(b_ps)(b_ks)(c)(cl_long{i * d.M * d.N});
    set(bias)(has_bias)(act)(a_bs)(b_bs)(cl_long{d.M * d.N});
    const std::size_t lx = static_cast<std::size_t>(p.lx), ly = static_cast<std::size_t>(p.ly);
    const std::size_t g[3] = {round_up(static_cast<std::size_t>(panels_m), lx),
                              round_up(static_cast<std::size_t>(panels_n), lx ? ly : 1), static_cast<std::size_t>(nz)};
    const std::size_t l[3] = {lx, ly, 1};
    enqueue("matmul", kg, 3, g, lx ? l : nullptr);
  }
}

// Split-K slices: when the output's tiles leave more than a tenth of two work-groups per compute unit idle and K is
// long, enough slices to give each unit two work-groups, each slice at least 256 deep, partials within 64 MiB. Tiles
// that nearly fill the units are not split (H200, 2048^3 in 128x128 tiles: 256 tiles for 264 places; two slices
// each made two waves and a reduction pass).
std::int64_t gemm_k_splits(std::int64_t tiles, std::int64_t K, int ts_k, int compute_units, std::int64_t slice_elems,
                           std::size_t part_bytes) {
  if (compute_units <= 0 || 10 * tiles >= 9 * 2 * std::int64_t{compute_units}) return 1;
  const std::int64_t min_chunk = std::max<std::int64_t>(256, 4 * std::int64_t{ts_k});
  std::int64_t s = std::min<std::int64_t>((2 * compute_units + tiles - 1) / tiles, K / min_chunk);
  const std::int64_t max_partials = (std::int64_t{64} << 20) / static_cast<std::int64_t>(part_bytes);
  s = std::min<std::int64_t>(s, max_partials / std::max<std::int64_t>(1, slice_elems));
  if (s <= 1) return 1;
  const std::int64_t chunk = (K + s - 1) / s;
  return (K + chunk - 1) / chunk;  // no empty slice
}

std::pair<std::int64_t, std::int64_t> gemm_k_chunk(std::int64_t K, std::int64_t splits, int ts_k) {
  if (splits <= 1) return {std::max<std::int64_t>(K, 1), 1};
  const std::int64_t chunk = ((K + splits - 1) / splits + ts_k - 1) / ts_k * ts_k;
  return {chunk, (K + chunk - 1) / chunk};
}

void ClBackend::split_reduce(const MatmulDesc& d, std::int64_t splits, cl_mem parts, cl_mem c, cl_mem bias,
                             cl_int has_bias, bool parts_real) {
  const std::string opts = common_options(d.dtype) + (parts_real ? " -DPARTS_REAL=1" : "");
  cl_kernel r = kernel("gemm.cl", "gemm_split_reduce", opts);
  ArgSetter{r, "gemm_split_reduce"}(static_cast<cl_int>(d.M))(static_cast<cl_int>(d.N))(static_cast<cl_int>(splits))
      .real(d.alpha, d.dtype)
      .real(d.beta, d.dtype)(parts)(c)(bias)(has_bias)(static_cast<cl_int>(d.act));
  const std::size_t rl[2] = {64, 1};
  const std::size_t rg[2] = {round_up(static_cast<std::size_t>(d.M * d.N), 64), static_cast<std::size_t>(d.batch)};
  enqueue("matmul:split_reduce", r, 2, rg, rl);
}

namespace {

// For the tiled kernels (gemm.cl, gemm_vtiled.cl), whose partials are stored in the data type.
std::int64_t tiled_k_splits(const GemmParams& p, const MatmulDesc& d, int compute_units) {
  if (d.dtype != DType::f32 && d.dtype != DType::f64) return 1;  // partials are stored in the data type
  const std::int64_t tiles = ((d.M + p.ts_m - 1) / p.ts_m) * ((d.N + p.ts_n - 1) / p.ts_n) * d.batch;
  return gemm_k_splits(tiles, d.K, p.ts_k, compute_units, d.batch * d.M * d.N, dtype_size(d.dtype));
}

}  // namespace

void ClBackend::matmul_tiled(const GemmParams& p, const MatmulDesc& d, cl_mem a, cl_mem b, cl_mem c, cl_mem bias,
                             const Conv2dDesc* conv, bool weight_grad) {
  const bool vt = p.family == GemmParams::Family::vtiled;
  if (conv && (!vt || d.trans_a || d.trans_b != weight_grad || (weight_grad && d.batch != 1)))
    throw Error("implicit-GEMM convolution needs the vtiled GEMM kernel and its own layout (a defect of hetnn)");
  const char* file = vt ? "gemm_vtiled.cl" : "gemm.cl";
  const char* name = vt ? "gemm_vtiled" : "gemm_tiled";
  std::string opts = common_options(d.dtype) + " " + p.defines() + " -DTRANS_A=" + std::to_string(d.trans_a) +
                     " -DTRANS_B=" + std::to_string(d.trans_b);
  if (vt) {
    // Vector global loads along an operand's contiguous dimension when it is a multiple of 4 (then a vector lies
    // wholly inside or outside the matrix, and every row starts aligned) and each work item moves whole vectors.
    const bool native = d.dtype == DType::f32 || d.dtype == DType::f64;
    const std::int64_t wg = static_cast<std::int64_t>(p.ts_m / p.wpt_m) * (p.ts_n / p.wpt_n);
    // the weight gradient's A rows are an image's positions: vectors stay inside one when OH*OW is a multiple of 4
    const std::int64_t a_run = weight_grad ? conv->OH * conv->OW : d.trans_a ? d.M : d.K;
    const bool va = native && a_run % 4 == 0 && (p.ts_m * p.ts_k) % (4 * wg) == 0 &&
                    (d.trans_a ? p.ts_m : p.ts_k) % 4 == 0;
    const bool vb = !conv && native && (d.trans_b ? d.K : d.N) % 4 == 0 && (p.ts_n * p.ts_k) % (4 * wg) == 0 &&
                    (d.trans_b ? p.ts_k : p.ts_n) % 4 == 0;
    const bool vc = native && p.vwn > 1 && d.N % p.vwn == 0;
    opts += std::string(" -DVA=") + (va ? "4" : "1") + " -DVB=" + (vb ? "4" : "1") + " -DVC=" + (vc ? "1" : "0");
    if (conv)
      opts += std::string(weight_grad ? " -DCONV_WG=1" : " -DCONV_B=1") + " -DKH=" + std::to_string(conv->kh) +
              " -DKW=" + std::to_string(conv->kw);
  }
  const cl_int has_bias = d.has_bias ? (conv ? 2 : 1) : 0, act = static_cast<cl_int>(d.act);  // conv: per row
  const cl_int M = static_cast<cl_int>(d.M), N = static_cast<cl_int>(d.N), K = static_cast<cl_int>(d.K);
  const std::size_t local[3] = {static_cast<std::size_t>(p.ts_n / p.wpt_n), static_cast<std::size_t>(p.ts_m / p.wpt_m), 1};
  if (vt && !conv && p.sk > 0 && d.batch == 1 && d.K > 0) {
    // Stream-K where the tiles do not fill whole waves of sk x compute-units work-groups
    const std::int64_t tiles = ((d.M + p.ts_m - 1) / p.ts_m) * ((d.N + p.ts_n - 1) / p.ts_n);
    const std::int64_t groups = std::int64_t{p.sk} * std::max(1, info_.compute_units);
    const std::int64_t slices = tiles * ((d.K + p.ts_k - 1) / p.ts_k);
    if (tiles % groups != 0 && slices >= groups) {
      cl_mem parts = scratch(2, static_cast<std::size_t>(groups * 2 * p.ts_m * p.ts_n) *
                                    (d.dtype == DType::f64 ? 8 : 4));  // REAL: float for 16-bit storage
      cl_kernel k = kernel(file, "gemm_vtiled_sk", opts);
      ArgSetter set{k, "gemm_vtiled_sk"};
      set(M)(N)(K).real(d.alpha, d.dtype).real(d.beta, d.dtype);
      set(a)(b)(c)(bias)(has_bias)(act)(static_cast<cl_int>(groups))(parts);
      const std::size_t global[3] = {static_cast<std::size_t>(groups) * local[0], local[1], 1};
      enqueue("matmul", k, 3, global, local);
      cl_kernel f = kernel(file, "gemm_sk_fixup", opts);
      ArgSetter fix{f, "gemm_sk_fixup"};
      fix(M)(N)(K).real(d.alpha, d.dtype).real(d.beta, d.dtype);
      fix(c)(bias)(has_bias)(act)(static_cast<cl_int>(groups))(parts);
      const std::size_t fl[2] = {16, 16};
      const std::size_t fg[2] = {round_up(static_cast<std::size_t>(d.N), 16), round_up(static_cast<std::size_t>(d.M), 16)};
      enqueue("matmul:sk_fixup", f, 2, fg, fl);
      return;
    }
  }
  // 16-bit data's weight gradient: its slices (one, or split-K's) summed in float32, rounded once by the reduction
  const bool parts_real = weight_grad && d.dtype != DType::f32 && d.dtype != DType::f64;
  std::int64_t splits = tiled_k_splits(p, d, info_.compute_units);
  if (parts_real) {
    const std::int64_t tiles = ((d.M + p.ts_m - 1) / p.ts_m) * ((d.N + p.ts_n - 1) / p.ts_n);
    splits = gemm_k_splits(tiles, d.K, p.ts_k, info_.compute_units, d.M * d.N, 4);
  }
  cl_kernel k = kernel(file, name, opts + (parts_real ? " -DPARTS_REAL=1" : ""));
  const cl_long sa = d.batch_a == 1 ? 0 : d.M * d.K;
  const cl_long sb = d.batch_b == 1 ? 0 : conv ? conv->C * conv->H * conv->W : d.K * d.N;  // forward: an image
  std::int64_t chunk;
  std::tie(chunk, splits) = gemm_k_chunk(d.K, splits, p.ts_k);
  cl_mem out = splits > 1 || parts_real
                   ? scratch(2, static_cast<std::size_t>(splits * d.batch * d.M * d.N) *
                                    (parts_real ? 4 : dtype_size(d.dtype)))
                   : c;
  ArgSetter set{k, name};
  set(M)(N)(K).real(d.alpha, d.dtype).real(d.beta, d.dtype);
  set(a)(sa)(b)(sb)(out)(bias)(has_bias)(act)(static_cast<cl_int>(chunk))(static_cast<cl_int>(splits));
  if (conv) {
    set(static_cast<cl_int>(conv->C))(static_cast<cl_int>(conv->H))(static_cast<cl_int>(conv->W));
    set(static_cast<cl_int>(conv->OH))(static_cast<cl_int>(conv->OW));
    set(cl_int{conv->sh})(cl_int{conv->sw})(cl_int{conv->ph})(cl_int{conv->pw});
    set(cl_int{conv->dh})(cl_int{conv->dw});
  }
  const std::size_t global[3] = {static_cast<std::size_t>((d.N + p.ts_n - 1) / p.ts_n) * local[0],
                                 static_cast<std::size_t>((d.M + p.ts_m - 1) / p.ts_m) * local[1],
                                 static_cast<std::size_t>(d.batch * splits)};
  enqueue("matmul", k, 3, global, local);
  if (splits > 1 || parts_real) split_reduce(d, splits, out, c, bias, has_bias, parts_real);
}

std::string ClBackend::common_options(DType t) const {
  switch (t) {
    case DType::f64: return "-cl-std=CL1.2 -DREAL=double -DUSE_FP64=1";
    case DType::f16: return "-cl-std=CL1.2 -DREAL=float -DSTORE_HALF=1";
    case DType::bf16: return "-cl-std=CL1.2 -DREAL=float -DSTORE_BF16=1";
    default: return "-cl-std=CL1.2 -DREAL=float";
  }
}

// A float32 result of 16-bit operands on a family other than the matrix-unit one: the float32 product of the
// operands widened to float32 (exact: a 16-bit value is a float32 one), as the converted path computes, without
// rounding its result to 16 bits.
void ClBackend::matmul_widened(const MatmulDesc& d, const Buffer& a, const Buffer& b, Buffer& c, const Buffer* bias) {
  MatmulDesc d32 = d;
  d32.dtype = DType::f32;
  d32.out_f32 = d32.allow_tf32 = false;
  const auto widened = [&](const Buffer& x, std::int64_t n) {
    std::shared_ptr<Buffer> w = alloc(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)) * 4);
    ElementwiseDesc e;
    e.op = EwOp::cast;
    e.in = d.dtype;
    e.out = DType::f32;
    e.n = n;
    e.shape.assign(1, n);
    e.sa.assign(1, 1);
    e.sb.assign(1, 1);
    if (n) elementwise(e, x, nullptr, *w);
    return w;
  };
  const std::shared_ptr<Buffer> a32 = widened(a, d.batch_a * d.M * d.K), b32 = widened(b, d.batch_b * d.K * d.N);
  matmul(d32, *a32, *b32, c, bias);
}

void ClBackend::matmul(const MatmulDesc& d_in, const Buffer& a, const Buffer& b, Buffer& c, const Buffer* bias) {
  if (!matmul_locked(d_in, a, b, c, bias)) matmul_widened(d_in, a, b, c, bias);
}

bool ClBackend::matmul_locked(const MatmulDesc& d_in, const Buffer& a, const Buffer& b, Buffer& c,
                              const Buffer* bias) {
  std::lock_guard<std::mutex> lock(mu_);
  const GemmType type = gemm_type(d_in);
  const GemmParams p = gemm_params_locked(type, d_in.M * d_in.N * d_in.K);
  const auto writes_f32 = [&](const GemmParams& q) { return !d_in.out_f32 || q.family == GemmParams::Family::mma; };
  if (!writes_f32(p)) return false;
  MatmulDesc d = d_in;
  d.allow_tf32 = type.tf32 && p.family == GemmParams::Family::mma;  // else float32's parameters: exact float32
  cl_mem bm = bias ? mem_of(*bias) : mem_of(c);  // not read when has_bias = 0, but must be a valid buffer
  auto run = [&](const GemmParams& q) {
    if (q.family == GemmParams::Family::packed)
      matmul_packed(q, d, mem_of(a), mem_of(b), mem_of(c), bm);
    else if (q.family == GemmParams::Family::mma)
      matmul_mma(q, d, mem_of(a), mem_of(b), mem_of(c), bm, matrix_units(type));
    else
      matmul_tiled(q.fitted(d.M, d.N), d, mem_of(a), mem_of(b), mem_of(c), bm);
  };
  try {
    if (gemm_faults_ > 0 && override_for(type, d.M * d.N * d.K)) {
      --gemm_faults_;
      throw OpenCLError(-5, "CL_OUT_OF_RESOURCES", "clEnqueueNDRangeKernel(matmul) [injected by a test]");
    }
    run(p);
  } catch (const OutOfMemory&) {
    throw;
  } catch (const Error& e) {
    // A tuned entry passed validate() yet failed to build or launch (a hand-edited file, a driver with other
    // limits): drop it for this process and use the database's kernel. Build and launch errors come before the first
    // GEMM kernel is queued, so C is still untouched. The database's own kernels failing is a real error.
    const GemmParams* used = override_for(type, d.M * d.N * d.K);
    if (!used || used->str() != p.str()) throw;
    const std::string source = used->source;
    gemm_overrides_.erase(type);
    const GemmParams fallback = gemm_params_locked(type, d.M * d.N * d.K);
    d.allow_tf32 = type.tf32 && fallback.family == GemmParams::Family::mma;
    std::string why = e.what();
    why = why.substr(0, why.find('\n'));
    warn("dropping the " + source + " " + type.name() + " GEMM parameters '" + p.str() + "' of " +
         info_.id + " for this process: " + why + ". Using '" + fallback.str() +
         "'; re-run `python -m hetnn tune gemm` to replace the entry.");
    if (!writes_f32(fallback)) return false;
    run(fallback);
  }
  return true;
}

}  // namespace hetnn::opencl
