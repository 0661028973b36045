// Non-temporal ("streaming") stores for large outputs on the CPU device. A regular store first reads the output's
// cache line from memory; a streaming store writes the line without reading it and without keeping it in the caches.
// For outputs far larger than the caches that saves a third of an add's memory traffic (an Emerald Rapids VM: a
// float32 add of 64 MiB arrays 1.65-1.74x faster, the next op reading the output included 1.42x), while an output
// the next op would find in the caches is slower so (4 MiB there: the add and a sum of its output 0.87x). So the
// size from which outputs stream is set per processor family from a measurement (scripts/stream_stores.c), and
// never where none was made. The same rule writes the STREAM-style ceilings (bench peak's triad, bench arrays'
// stream rows), so a row and its ceiling are measured the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hetnn {

// Whether an output of `bytes` bytes is written with streaming stores on this processor.
bool stream_output(std::size_t bytes);

// Copies `bytes` from `src` (a chunk in the first-level cache, or any memory not overlapping dst) to `dst`: the
// whole 64-byte lines of dst with streaming stores, the partial lines at either end with regular ones. Call
// stream_fence() before the output is read by another thread (at the end of a parallel piece).
void stream_copy(void* dst, const void* src, std::size_t bytes);

// Sets `bytes` bytes at dst to `value` the same way.
void stream_fill(void* dst, unsigned char value, std::size_t bytes);

// Orders this thread's streaming stores before everything it does after (sfence).
void stream_fence();

// The rule in force, in words (hetnn._core._stream_store_rule(); cpu_session.sh prints it).
std::string stream_store_rule();

// Test hook: -1 the table, 0 streaming for every output, a positive figure: from that many bytes. Throws
// ValueError below -1.
void set_stream_store_threshold(std::int64_t bytes);

}  // namespace hetnn
