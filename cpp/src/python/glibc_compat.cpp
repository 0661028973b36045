// What keeps the module loadable on glibc 2.34 (the wheel's manylinux_2_34 tag: Ubuntu 22.04, i.e. Colab and Kaggle,
// runs glibc 2.35). The static libstdc++ the module carries (GCC 12, built on glibc 2.36) pulls in std::random_device
// through its copy-on-write string instantiations, and random_device calls arc4random, new in glibc 2.36: a
// reference versioned GLIBC_2.36 makes the dynamic loader refuse the module on any older glibc. hetnn never uses
// random_device; this definition (hidden: not exported, so nothing else in the process binds to it) satisfies the
// reference inside the module with the kernel's random bytes.
#include <sys/random.h>

#include <cerrno>
#include <cstdint>

extern "C" __attribute__((visibility("hidden"), used)) std::uint32_t arc4random(void) {
  std::uint32_t v = 0;
  ssize_t r;
  do r = getrandom(&v, sizeof v, 0);
  while (r < 0 && errno == EINTR);
  return v;
}
