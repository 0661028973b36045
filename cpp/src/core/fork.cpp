#include "core/fork.h"

#include <pthread.h>

#include <atomic>

namespace hetnn {

namespace {

std::atomic<bool> g_forked{false};

void mark_child() { g_forked.store(true, std::memory_order_relaxed); }  // async-signal-safe: one atomic store

const int g_registered = pthread_atfork(nullptr, nullptr, mark_child);

}  // namespace

bool forked_child() {
  (void)g_registered;
  return g_forked.load(std::memory_order_relaxed);
}

}  // namespace hetnn
