// How many OpenMP threads the CPU device's ops use. OpenMP keeps that number per thread (an ICV), so one process-
// wide setting is stored here and applied on each calling thread at its next CPU op; a limit set directly through
// OpenMP on a thread (threadpoolctl's threadpool_limits) holds there until hetnn's setting changes again.
#pragma once

namespace hetnn::cpu_threads {

// n in 1..max_threads() threads for every CPU op from now on, on every thread (0: OpenMP's own default again).
void set(long long n);
int max_threads();
// The number of threads the next CPU op on the calling thread will use.
int get();
// Applies a changed setting to the calling thread; called at the start of every CPU op (an atomic load).
void apply();

}  // namespace hetnn::cpu_threads
