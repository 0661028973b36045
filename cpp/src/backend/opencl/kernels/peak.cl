// peak.cl: the device ceilings of `python -m hetnn bench peak`.

// FP32 FMA throughput: 8 independent chains of PEAK_VEC-wide vectors per work-item (explicit vectors, so CPU devices
// get full-width FMA instructions without relying on work-group vectorisation; GPUs split them into scalars), `iters`
// fused multiply-adds each that keep the values bounded (a < 1, small b): 16 * PEAK_VEC * iters FLOP per work-item.
// On a CPU the 8 chains must fit its vector registers: 16-wide where AVX-512 has 32 registers of 16 floats, 8-wide on
// AVX2 (16-wide chains there take 16 of its 16 registers and spill: PoCL read half the native loop's rate).
#ifndef PEAK_VEC
#define PEAK_VEC 16
#endif
#define VEC_(n) float##n
#define VEC(n) VEC_(n)
#define VT VEC(PEAK_VEC)
__kernel void fma_peak(__global float* out, const int iters, const float a, const float b) {
  const float16 s16 = (float16)((float)get_global_id(0) * 1e-9f) +
                      (float16)(0.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 10.f, 11.f, 12.f, 13.f, 14.f, 15.f) *
                          1e-3f;
#if PEAK_VEC == 16
  const VT s = s16;
#else
  const VT s = s16.lo;
#endif
  const VT va = (VT)(a), vb = (VT)(b);
  VT x0 = s, x1 = s + 0.01f, x2 = s + 0.02f, x3 = s + 0.03f, x4 = s + 0.04f, x5 = s + 0.05f, x6 = s + 0.06f,
     x7 = s + 0.07f;
  for (int i = 0; i < iters; ++i) {
    x0 = fma(x0, va, vb); x1 = fma(x1, va, vb); x2 = fma(x2, va, vb); x3 = fma(x3, va, vb);
    x4 = fma(x4, va, vb); x5 = fma(x5, va, vb); x6 = fma(x6, va, vb); x7 = fma(x7, va, vb);
  }
  const VT t = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
#if PEAK_VEC == 16
  const float8 h = t.lo + t.hi;
#else
  const float8 h = t;
#endif
  const float4 q = h.lo + h.hi;
  out[get_global_id(0)] = (q.x + q.y) + (q.z + q.w);  // stored, so the chains are not optimised away
}

// STREAM triad on device memory: a = b + s * c (12 bytes per element, STREAM's count).
__kernel void triad(__global float* a, __global const float* b, __global const float* c, const float s) {
  const size_t i = get_global_id(0);
  a[i] = b[i] + s * c[i];
}
