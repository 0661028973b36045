// hetnn's on-disk cache: compiled OpenCL program binaries and tuned kernel parameters.
// Location: $HETNN_CACHE_DIR, else $XDG_CACHE_HOME/hetnn, else ~/.cache/hetnn. HETNN_CACHE_DIR=off disables it.
#pragma once
#include <cstdint>
#include <optional>

#include "core/siphash.h"
#include <string>
#include <vector>

namespace hetnn {

// $HETNN_CACHE_DIR, else $XDG_CACHE_HOME/hetnn, else $HOME/.cache/hetnn, not created; nullopt when disabled
// (HETNN_CACHE_DIR is "off", "none", "0" or blank, in any case) or when neither variable names a place.
std::optional<std::string> cache_base();
// The cache directory's `sub` folder, created if needed; nullopt when disabled or not writable (a warning says why,
// once).
std::optional<std::string> cache_dir(const std::string& sub);

// The secret key of the cache directory `dir` (`dir`/key, 16 random bytes, mode 0600), created on first use; one
// key for every process sharing the directory. nullopt (a warning says why, once) when it cannot be read or made.
std::optional<SipKey> cache_secret(const std::string& dir);

// 64-bit FNV-1a; chain by passing the previous hash as the seed.
std::uint64_t fnv1a_bytes(const void* data, std::size_t n, std::uint64_t seed = 1469598103934665603ULL);
std::uint64_t fnv1a(const std::string& s, std::uint64_t seed = 1469598103934665603ULL);
std::string hex64(std::uint64_t v);

// The file a new version of `path` is renamed onto: `path` when absent or a regular file, the regular file a
// symbolic link names (the link stays). nullopt, errno set and `why` saying what `path` is, for a directory, a
// device node, a FIFO, a socket or a dangling link: renaming over one would replace the node itself.
std::optional<std::string> atomic_target(const std::string& path, std::string* why = nullptr);
// Writes `data` to `path` atomically: a temporary file beside the target, every write and the fsync checked, then
// a rename (readers see the old or the new file; a full disk leaves the old one). False on failure, with errno set
// and `why` naming the path and the cause.
bool write_file_atomic(const std::string& path, const std::string& data, std::string* why = nullptr);
// The whole of a regular file of at most max_bytes; nullopt for anything else (absent, a FIFO, a device, too big).
std::optional<std::string> read_file(const std::string& path, std::size_t max_bytes = std::size_t(1) << 30);
bool is_regular_or_absent(const std::string& path);

}  // namespace hetnn
