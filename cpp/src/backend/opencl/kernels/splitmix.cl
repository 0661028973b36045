// splitmix.cl: SplitMix64's output for counter k of the stream `seed` (core/ops.h splitmix64; the same integers on
// every device): dropout's masks (nn.cl) and the random numbers (random.cl).
#ifndef HETNN_SPLITMIX_CL
#define HETNN_SPLITMIX_CL
static inline ulong splitmix64(const ulong seed, const ulong k) {
  ulong z = seed + (k + 1) * 0x9E3779B97F4A7C15UL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
  return z ^ (z >> 31);
}
#endif
