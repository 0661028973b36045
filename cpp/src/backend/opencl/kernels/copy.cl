// copy.cl: copy_strided (core/ops.h, CopyDesc): out[oo + sum(idx * so)] = src[os + sum(idx * ss)] over the (at most
// 8) dimensions `shape8`, elements moved as raw bits of 1, 2, 4 or 8 bytes (one kernel per size).
#define COPY_STRIDED(NAME, T)                                                                                   \
  __kernel void NAME(const long n, const int nd, const long8 shape8, const long8 ss8, const long8 so8,          \
                     const long os, const long oo, __global const T* src, __global T* out) {                    \
    long i = get_global_id(0);                                                                                  \
    if (i >= n) return;                                                                                         \
    long sh[8], ss[8], so[8];                                                                                   \
    vstore8(shape8, 0, sh);                                                                                     \
    vstore8(ss8, 0, ss);                                                                                        \
    vstore8(so8, 0, so);                                                                                        \
    long a = os, b = oo;                                                                                        \
    for (int k = nd - 1; k >= 0; --k) {                                                                         \
      const long q = i % sh[k];                                                                                 \
      i /= sh[k];                                                                                               \
      a += q * ss[k];                                                                                           \
      b += q * so[k];                                                                                           \
    }                                                                                                           \
    out[b] = src[a];                                                                                            \
  }
COPY_STRIDED(copy_strided_1, uchar)
COPY_STRIDED(copy_strided_2, ushort)
COPY_STRIDED(copy_strided_4, uint)
COPY_STRIDED(copy_strided_8, ulong)
