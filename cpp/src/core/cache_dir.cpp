#include "core/cache_dir.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <sstream>

#include "core/warn.h"

namespace hetnn {

namespace {

bool make_dirs(const std::string& path) {
  std::string cur;
  std::stringstream ss(path);
  std::string part;
  if (!path.empty() && path[0] == '/') cur = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    cur += part + "/";
    if (mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  return true;
}

bool disabled(std::string v) {
  const auto b = v.find_first_not_of(" \t\n\r");
  v = b == std::string::npos ? "" : v.substr(b, v.find_last_not_of(" \t\n\r") - b + 1);
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v.empty() || v == "off" || v == "0" || v == "none";
}

}  // namespace

std::optional<std::string> cache_base() {
  if (const char* d = std::getenv("HETNN_CACHE_DIR")) {
    if (disabled(d)) return std::nullopt;
    return std::string(d);
  }
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/hetnn";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/hetnn";
  return std::nullopt;
}

std::optional<std::string> cache_dir(const std::string& sub) {
  static std::mutex mu;
  static std::set<std::string> warned;
  const auto base = cache_base();
  if (!base) return std::nullopt;
  const std::string dir = *base + "/" + sub;
  std::lock_guard<std::mutex> lock(mu);
  if (make_dirs(dir) && access(dir.c_str(), W_OK) == 0) return dir;
  if (warned.insert(dir).second)
    warn("cache directory " + dir + " is not writable (" + std::strerror(errno) +
         "); continuing without an on-disk cache (set HETNN_CACHE_DIR to change it)");
  return std::nullopt;
}

namespace {

std::optional<SipKey> read_key(const std::string& path) {
  const auto data = read_file(path);
  if (!data || data->size() != sizeof(SipKey)) return std::nullopt;
  SipKey k{};
  std::memcpy(k.data(), data->data(), k.size());
  return k;
}

// Bytes from the kernel's random source (getrandom, glibc 2.25; /dev/urandom where the call is missing). Not
// std::random_device: the static libstdc++ the module carries calls arc4random for it, a glibc 2.36 symbol, which
// would make the wheel's manylinux tag 2_36 and keep it off Ubuntu 22.04 (Colab, Kaggle).
void random_bytes(void* out, std::size_t n) {
  auto* p = static_cast<unsigned char*>(out);
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = getrandom(p + got, n - got, 0);
    if (r > 0) {
      got += static_cast<std::size_t>(r);
    } else if (r < 0 && errno == EINTR) {
      continue;
    } else {
      const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
      while (fd >= 0 && got < n) {
        const ssize_t u = read(fd, p + got, n - got);
        if (u <= 0 && errno != EINTR) break;
        if (u > 0) got += static_cast<std::size_t>(u);
      }
      if (fd >= 0) close(fd);
      if (got < n) throw std::runtime_error("no random bytes from getrandom or /dev/urandom");
    }
  }
}

// Writes a fresh key to a private temporary file and links it into place; link() fails when another process got
// there first, and then that process's key is the one everybody uses.
std::optional<SipKey> make_key(const std::string& path) {
  SipKey k{};
  random_bytes(k.data(), k.size());
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return std::nullopt;
  const bool written = write(fd, k.data(), k.size()) == static_cast<ssize_t>(k.size());
  close(fd);
  std::optional<SipKey> out;
  if (written && link(tmp.c_str(), path.c_str()) == 0) out = k;
  else if (written && errno == EEXIST) out = read_key(path);
  if (written && !out && std::rename(tmp.c_str(), path.c_str()) == 0) out = k;  // a damaged key file: replace it
  unlink(tmp.c_str());
  return out;
}

}  // namespace

std::optional<SipKey> cache_secret(const std::string& dir) {
  static std::mutex mu;
  static std::map<std::string, std::optional<SipKey>> keys;  // per directory: HETNN_CACHE_DIR may change
  std::lock_guard<std::mutex> lock(mu);
  auto it = keys.find(dir);
  if (it != keys.end()) return it->second;
  const std::string path = dir + "/key";
  auto k = read_key(path);
  if (!k) k = make_key(path);
  if (!k) warn("cannot read or create the cache key " + path + "; continuing without the on-disk cache there");
  return keys.emplace(dir, k).first->second;
}

std::uint64_t fnv1a_bytes(const void* data, std::size_t n, std::uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t h = seed;
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

std::uint64_t fnv1a(const std::string& s, std::uint64_t seed) { return fnv1a_bytes(s.data(), s.size(), seed); }

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::optional<std::string> atomic_target(const std::string& path, std::string* why) {
  auto refuse = [&](int err, const std::string& what) -> std::optional<std::string> {
    if (why) *why = path + ": " + what + "; hetnn writes a new file only where none is or a regular file was";
    errno = err;
    return std::nullopt;
  };
  if (path.empty()) return refuse(ENOENT, "an empty path");
  if (path.find('\0') != std::string::npos) return refuse(EINVAL, "a path with a NUL byte in it");
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return path;  // a new file
    return refuse(errno, std::strerror(errno));
  }
  std::string target = path;
  if (S_ISLNK(st.st_mode)) {  // the file the link names gets the new contents; the link stays a link
    char* real = realpath(path.c_str(), nullptr);
    if (real == nullptr) return refuse(ENOENT, "a symbolic link to nothing");
    target = real;
    std::free(real);
    if (stat(target.c_str(), &st) != 0) return refuse(errno, std::strerror(errno));
  }
  if (S_ISREG(st.st_mode)) return target;
  if (S_ISDIR(st.st_mode)) return refuse(EISDIR, "a directory");
  const char* kind = S_ISCHR(st.st_mode)    ? "a character device"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                     : S_ISFIFO(st.st_mode) ? "a FIFO"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "not a regular file";
  return refuse(EINVAL, kind);  // renaming over it would replace the node itself (as root: /dev/null)
}

bool write_file_atomic(const std::string& path, const std::string& data, std::string* why) {
  static std::mt19937_64 rng{[] {
    std::uint64_t seed = 0;
    random_bytes(&seed, sizeof seed);
    return seed;
  }()};
  static std::mutex mu;
  const auto target = atomic_target(path, why);
  if (!target) return false;
  std::string tmp;
  {
    std::lock_guard<std::mutex> lock(mu);
    tmp = *target + ".tmp." + std::to_string(getpid()) + "." + hex64(rng());
  }
  auto fail = [&](int fd) {  // the first error's errno survives the clean-up
    const int err = errno;
    if (why) *why = path + ": " + std::strerror(err);
    if (fd >= 0) close(fd);
    unlink(tmp.c_str());
    errno = err;
    return false;
  };
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int err = errno;
    if (why) *why = path + ": " + std::strerror(err);
    errno = err;
    return false;
  }
  std::size_t done = 0;
  while (done < data.size()) {  // every write checked: a full disk or a quota surfaces here, not at rename
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return fail(fd);
    }
    done += static_cast<std::size_t>(n);
  }
  if (fsync(fd) != 0 && errno != EINVAL) return fail(fd);  // the data is on disk before the name points at it
  if (close(fd) != 0) return fail(-1);
  if (std::rename(tmp.c_str(), target->c_str()) != 0) return fail(-1);
  return true;
}

std::optional<std::string> read_file(const std::string& path, std::size_t max_bytes) {
  // Non-blocking open and a regular-file check: a FIFO in the cache once blocked the first OpenCL call for ever,
  // and a link to /dev/zero read until the process was killed for memory.
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<std::string> out;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) <= max_bytes) {
    std::string data(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t got = 0;
    while (got < data.size()) {
      const ssize_t n = read(fd, data.data() + got, data.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    data.resize(got);  // a file that shrank meanwhile reads short: its checks reject it
    out = std::move(data);
  }
  close(fd);
  return out;
}

bool is_regular_or_absent(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode);
}

}  // namespace hetnn
