// bf16.cl: float -> bfloat16 rounding shared by the kernels that store bfloat16 (bfloat16 is the upper half of a
// float, so loading is a shift; storing rounds to nearest even and keeps NaN a NaN).
#ifndef HETNN_BF16_CL
#define HETNN_BF16_CL
static inline ushort bf16_from_float(float v) {
  uint b = as_uint(v);
  if ((b & 0x7fffffffu) > 0x7f800000u) b |= 0x00400000u;
  else b += 0x7fffu + ((b >> 16) & 1u);
  return (ushort)(b >> 16);
}
#endif
