// random.cl: random (core/ops.h, RandomDesc): element i from SplitMix64 over (seed, offset + i), the same integers
// as the CPU device's; computed in CT (double for float64 output, float for the other floating types, long for
// integers) and stored as the output type. Build options: -DTIN_<T> (the computation type) -DTOUT_<T>, UNIT_BITS
// (uniform's precision: 53, 24, 11 or 8).
#include "ew_types.cl"
#include "splitmix.cl"

// u in [0, 1) with `bits` bits (core/ops.h unit_from_bits)
#if IS_FLOAT
static inline CT unit(const ulong draw, const int bits) {
  return (CT)(draw >> (64 - bits)) * ((CT)1 / (CT)(1UL << bits));
}
#endif

// dist: 0 uniform (a: low, b: high), 1 normal (a: loc, b: scale), 2 integers (low, span)
__kernel void random_fill(const long n, const int dist, const ulong seed, const ulong offset, const CT a, const CT b,
                          const long low, const ulong span, __global SOUT* y) {
  const long i = get_global_id(0);
  if (i >= n) return;
#if IS_FLOAT
  if (dist == 0) {
    STOREOUT(a + (b - a) * unit(splitmix64(seed, offset + (ulong)i), UNIT_BITS), y, i);
  } else {
    const int bits = UNIT_BITS == 53 ? 53 : 24;
    const ulong c = offset + 2 * (ulong)i;
    const CT u1 = unit(splitmix64(seed, c), bits) + (CT)1 / (CT)(1UL << bits);
    const CT u2 = unit(splitmix64(seed, c + 1), bits);
    STOREOUT(a + b * (sqrt((CT)-2 * log(u1)) * cos((CT)6.283185307179586476925286766559 * u2)), y, i);
  }
#else
  const ulong x = splitmix64(seed, offset + (ulong)i);
  const ulong k = span ? mul_hi(x, span) : x;
  STOREOUT((long)((ulong)low + k), y, i);
#endif
}
