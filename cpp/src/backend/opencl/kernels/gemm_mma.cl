// gemm_mma.cl: C[b] = act(alpha * op(A[b]) * op(B[b]) + beta * C[b] + bias) for float16 and bfloat16 data on matrix
// units: products of 16 x 8 x 16 (m16n8k16) tiles with float32 accumulation, as cuBLAS computes them; with MMA_TF32,
// float32 data as TF32 (m16n8k8 tiles; each input rounded to 10 mantissa bits, to nearest with ties away from zero,
// as cvt.rna.tf32.f32 does; products and sums in float32). The member "mma" of the GEMM family; same arguments as
// gemm_vtiled (split-K only with CONV_WG).
//  - A work-group of WM x WN warps (32 work items each, one dimension) computes a TS_M x TS_N tile of C; each warp a
//    (TS_M / WM) x (TS_N / WN) piece of it as MT x NT tiles of 16 x 8, whose accumulators live in its registers.
//  - TS_K-deep slices of A and B are staged in two local buffers as raw values (16-bit, or tf32-rounded 32-bit), in
//    the layout the operand has in global memory (A[m][k] or, transposed, A[k][m]; B[k][n] or B[n][k]), so that
//    every store to local memory is one 16-byte vector; rows are padded (PAD_K, PAD_MN values) so that a warp's
//    fragment reads fall on distinct banks. A 16-bit fragment register is one 32-bit read where its two values are
//    adjacent (k-contiguous rows), else two 16-bit reads (a transposing scatter of 16-bit stores instead ran into
//    8-way bank conflicts); a tf32 register is one value. ST = 0: the next slice's global loads are in flight in
//    registers while the current one is multiplied, then stored to the other buffer (one barrier a slice). ST = 2-4:
//    a ring of ST buffers filled ST - 1 slices ahead by asynchronous copies straight into local memory (cp.async,
//    sm_80 and newer: no registers held, deeper prefetch), one barrier a slice; tf32 values are then staged raw and
//    rounded as fragments are read. Where a copy cannot be asynchronous (the emulation, sm_75, an operand not moved
//    as aligned 16-byte vectors, the convolution's gather) it is a plain copy in the same place of the ring.
//  - Global loads move 16 bytes (EV values) along the operand's contiguous dimension where the host set VA / VB
//    (that dimension a multiple of EV), else the same EV element by element with bounds.
//  - CONV_B: B is the im2col matrix of a convolution's input image (C, H, W), gathered element by element by the
//    loader (implicit GEMM: no column buffer), as gemm_vtiled's CONV_B; KH, KW compile-time, the rest arguments.
//  - CONV_WG: a convolution's weight gradient over the whole batch as one GEMM, as gemm_vtiled's CONV_WG: gw (O,
//    C*KH*KW) = gy (N, O, OH*OW) read as (O, N*OH*OW) times the columns gathered from x (N, C, H, W), read as B^T
//    (TRANS_B's layout). K is long, so work-group z takes K's slice [z * k_chunk, + k_chunk) and stores its float32
//    sums in slice z of C (the host adds the slices and rounds once to the data type).
//  - WG=1: Hopper's warpgroup instruction (wgmma.mma_async m64nNk16, sm_90a) instead of mma.sync: WM warpgroups of
//    128 work items stacked along M (WN = 1), each computing (TS_M / WM) x TS_N as m64 x TS_N steps read by the
//    instruction straight from local memory through descriptors. Slices are staged in 8 x 8 core matrices of 16-byte
//    rows without swizzling (an operand contiguous along K in global memory K-major, else M/N-major; the layouts an
//    H200 computed correctly in scripts/wgmma_probe.c), in a ring of ST >= 3 buffers filled ST - 2 slices ahead;
//    each slice's instructions run asynchronously while the next copies are issued, one group left in flight.
//    float16/bfloat16 GEMMs only (no convolution loaders, no tf32). Without MMA_PTX the instruction is emulated on
//    the same descriptors.
//  - MMA_PTX=1 (set by the host only after a probe GEMM built and computed correctly on the device): NVIDIA's
//    mma.sync through inline PTX (sm_80 and newer). Otherwise the instruction is emulated on the same fragment
//    addressing and the PTX ISA's fragment layout, so that every other part of this kernel runs and is tested on
//    any OpenCL device; the emulation is slow and only explicit parameters select it.
#include "common.cl"
#ifndef TS_M
#define TS_M 128
#endif
#ifndef TS_N
#define TS_N 128
#endif
#ifndef TS_K
#define TS_K 32
#endif
#ifndef WM
#define WM 2
#endif
#ifndef WN
#define WN 4
#endif
#ifndef VA
#define VA 0
#endif
#ifndef VB
#define VB 0
#endif
#ifndef MMA_PTX
#define MMA_PTX 0
#endif
#ifndef MMA_K8  // 1: float16 as two m16n8k8 per 16-deep step (sm_75; the host sets it), with MMA_PTX only
#define MMA_K8 0
#endif
#ifndef CONV_B
#define CONV_B 0
#endif
#if CONV_B && (VB || TRANS_B)
#error "CONV_B gathers B element by element, untransposed (VB = 0, TRANS_B = 0)"
#endif
#ifndef CONV_WG
#define CONV_WG 0
#endif
#if CONV_WG && (VB || !TRANS_B || TRANS_A || CONV_B)
#error "CONV_WG gathers B element by element in TRANS_B's layout, A untransposed (VB = 0, TRANS_B = 1, TRANS_A = 0)"
#endif
#ifndef LM  // 1: fragments loaded with ldmatrix (.trans for the layouts that need it); with MMA_PTX only
#define LM 0
#endif
#ifndef MMA_TF32
#define MMA_TF32 0
#endif
#ifndef WG  // 1: the warpgroup instruction (wgmma, sm_90a)
#define WG 0
#endif
#ifndef ST  // pipeline stages: 0, or 2..4 local buffers filled by asynchronous copies (WG: 3..8)
#define ST 0
#endif
#if WG && (ST < 3 || ST > 8 || WN != 1 || CONV_B || CONV_WG || MMA_TF32 || LM || MMA_K8)
#error "WG: 3..8 stages, WN = 1, float16/bfloat16 GEMMs without convolution loaders, tf32, ldmatrix or k8"
#endif
#if !WG && ST != 0 && (ST < 2 || ST > 4)
#error "ST is 0 or 2..4"
#endif
#define ASYNC (MMA_PTX && !MMA_K8 && ST)  // cp.async: sm_80 and newer (MMA_K8 marks sm_75)
#define NBUF (ST ? ST : 2)
// The inputs' type: the storage type's, or with a float32 result (C and bias float32: the float32 build) IN_HALF /
// IN_BF16
#if defined(STORE_BF16) && !defined(IN_BF16)
#define IN_BF16 1
#elif defined(STORE_HALF) && !defined(IN_HALF)
#define IN_HALF 1
#endif
#if !defined(IN_HALF) && !defined(IN_BF16) && !MMA_TF32
#error "gemm_mma computes float16 or bfloat16 data, or float32 data as tf32"
#endif
// The staged element, values per 16-byte vector, the instruction's depth, and the local rows' padding: k-contiguous
// rows (A[m][k], B[n][k]) and m/n-contiguous ones, chosen so that the 32 lanes' fragment reads hit 32 banks (tf32:
// lane (g, t) reads row g, column t of a k-contiguous slice, at word g * (TS_K + 4) + t; or row t, column g of an
// m/n-contiguous one, at t * (TS_M + 8) + g).
#if MMA_TF32
typedef uint elem;
#define EV 4
#define KI 8
#define PAD_K 4
#define PAD_MN 8
#else
typedef ushort elem;
#define EV 8
#define KI 16
#define PAD_K 8
#define PAD_MN 8
#endif
// The accumulators must stay in registers on the GPU (every index known at compile time); the emulation's
// epilogue is left rolled, which cut PoCL's build of a 64 x 32 tile from 12.8 s to 0.8 s.
#if MMA_PTX
#define PTX_UNROLL _Pragma("unroll")
#else
#define PTX_UNROLL _Pragma("unroll 1")
#endif
#if WG
#define LSIZE (128 * WM)
#define WTM (TS_M / WM)  // a warpgroup's rows
#define MI (WTM / 64)    // m64 steps per warpgroup
#else
#define LSIZE (32 * WM * WN)
#define WTM (TS_M / WM)  // a warp's piece of the tile
#define WTN (TS_N / WN)
#define MT (WTM / 16)    // 16 x 8 tiles per warp along M and N
#define NT (WTN / 8)
#endif
// Values per local row, and per slice: A as A[m][k] (LDA = TS_K + PAD_K) or, TRANS_A, A[k][m] (TS_M + PAD_MN); B
// as B[n][k] (TRANS_B) or B[k][n]
#if WG  // core matrices, no padding
#define A_LOCAL (TS_M * TS_K)
#elif TRANS_A
#define LDA (TS_M + PAD_MN)
#define A_LOCAL (TS_K * LDA)
#else
#define LDA (TS_K + PAD_K)
#define A_LOCAL (TS_M * LDA)
#endif
#if WG
#define B_LOCAL (TS_N * TS_K)
#elif TRANS_B
#define LDB (TS_K + PAD_K)
#define B_LOCAL (TS_N * LDB)
#else
#define LDB (TS_N + PAD_MN)
#define B_LOCAL (TS_K * LDB)
#endif
#define A_VECS (TS_M * TS_K / EV / LSIZE)  // 16-byte vectors each work item moves per slice
#define B_VECS (TS_N * TS_K / EV / LSIZE)

HOT uint pack2(ushort lo, ushort hi) { return (uint)lo | ((uint)hi << 16); }

// EV values as one 16-byte vector.
HOT uint4 pack_vec(const elem* v) {
#if MMA_TF32
  return (uint4)(v[0], v[1], v[2], v[3]);
#else
  return (uint4)(pack2(v[0], v[1]), pack2(v[2], v[3]), pack2(v[4], v[5]), pack2(v[6], v[7]));
#endif
}

// EV consecutive values at `at` (along the contiguous dimension), of which the first `n` exist (n <= 0: none).
HOT uint4 loadv(__global const elem* restrict p, const long at, const int n, const int vec) {
  if (vec) return n > 0 ? *(__global const uint4*)(p + at) : (uint4)(0);  // at: a multiple of EV, so aligned
  elem v[EV];
#pragma unroll
  for (int e = 0; e < EV; ++e) v[e] = e < n ? p[at + e] : (elem)0;
  return pack_vec(v);
}

#if CONV_B
// Column p = oh * OW + ow of the im2col matrix starts at input row ihb = oh * SH - PH and column iwb = ow * SW - PW;
// a work item's B columns are fixed for the whole K loop, so their positions are computed once (ihb = INT_MIN / 2
// past N: every row lands outside the image).
typedef struct {
  int C, H, W, sh, sw, ph, pw, dh, dw;
} ConvGeom;
#define CONV_PARAMS , const ConvGeom g, const int* ihb, const int* iwb
#define CONV_ARGS , geo, ihb, iwb
#elif CONV_WG
// Column j = (c * KH + ki) * KW + kj of the weight gradient reads x[n, c, oh * SH + ki * DH - PH, ow * SW + kj * DW
// - PW] at K index n * OHW + oh * OW + ow: a work item's columns are fixed for the whole K loop, so (c, the row and
// column offsets) are computed once (c = -1 past N).
typedef struct {
  int C, H, W, OW, OHW, sh, sw;
} ConvGeom;
#define CONV_PARAMS , const ConvGeom g, const int* jc, const int* jh, const int* jw
#define CONV_ARGS , geo, jc, jh, jw
#else
#define CONV_PARAMS
#define CONV_ARGS
#endif
#if CONV_WG  // A's rows run over images: the positions per image
#define A_PARAMS , const int ohw
#define A_FWD , ohw
#define A_ARGS , geo.OHW
#else
#define A_PARAMS
#define A_FWD
#define A_ARGS
#endif

#if MMA_TF32
// A float's bits rounded to tf32 (10 mantissa bits; to nearest, ties away from zero: cvt.rna.tf32.f32). Adding half
// of the dropped range to the magnitude carries into the exponent where it must (to infinity past the largest
// tf32); infinities stay, NaNs become one quiet NaN whose dropped bits are zero.
HOT uint to_tf32(const uint b) {
  if ((b & 0x7f800000u) == 0x7f800000u) return (b & 0x007fffffu) ? 0x7fffe000u : b;
  return (b + 0x1000u) & 0xffffe000u;
}
HOT uint4 to_tf32_4(const uint4 v) { return (uint4)(to_tf32(v.x), to_tf32(v.y), to_tf32(v.z), to_tf32(v.w)); }
#define STAGE(v) to_tf32_4(v)
#else
#define STAGE(v) (v)
#endif
#if MMA_TF32 && ST  // staged raw (an asynchronous copy cannot round): rounded as the fragments are read
#define FRAG(v) to_tf32(v)
#else
#define FRAG(v) (v)
#endif

#if !MMA_PTX
// A staged value as float, for the emulations (tf32: the raw 32 bits; 16-bit values in the low half)
static inline float raw_to_float(const uint bits) {
#if MMA_TF32
  return as_float(bits);
#elif defined(IN_BF16)
  return as_float(bits << 16);
#else
  const ushort h = (ushort)bits;
  return vload_half(0, (const half*)&h);
#endif
}
#endif

#if ASYNC
// 16 bytes global -> local without registers; `bytes` (16 or 0) of them read, the rest zero-filled. A committed
// group completes in order: waiting until at most ST - 2 are pending leaves the oldest slice landed.
#define CP_ASYNC16(dst, src, bytes)                                                              \
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"((uint)(size_t)(dst)), "l"(src), \
               "r"(bytes)                                                                        \
               : "memory")
#define CP_COMMIT() asm volatile("cp.async.commit_group;" ::: "memory")
#if WG  // slice kt is needed while slices up to kt + ST - 3 were committed: ST - 3 may stay pending
#if ST == 3
#define CP_WAIT() asm volatile("cp.async.wait_group 0;" ::: "memory")
#elif ST == 4
#define CP_WAIT() asm volatile("cp.async.wait_group 1;" ::: "memory")
#elif ST == 5
#define CP_WAIT() asm volatile("cp.async.wait_group 2;" ::: "memory")
#elif ST == 6
#define CP_WAIT() asm volatile("cp.async.wait_group 3;" ::: "memory")
#elif ST == 7
#define CP_WAIT() asm volatile("cp.async.wait_group 4;" ::: "memory")
#else
#define CP_WAIT() asm volatile("cp.async.wait_group 5;" ::: "memory")
#endif
#elif ST == 2
#define CP_WAIT() asm volatile("cp.async.wait_group 0;" ::: "memory")
#elif ST == 3
#define CP_WAIT() asm volatile("cp.async.wait_group 1;" ::: "memory")
#else
#define CP_WAIT() asm volatile("cp.async.wait_group 2;" ::: "memory")
#endif
#else
#define CP_COMMIT()
#define CP_WAIT()
#endif

#if WG
// Core-matrix staging. An R x TS_K operand slice (R = TS_M or TS_N) as TS_K / 16 blocks of R x 16 values; in a block,
// the 8 x 8 core matrix (r / 8, k / 8) at value (r / 8 * 2 + k / 8) * 64 (so 128 bytes between K-neighbours, the
// descriptors' LBO, and 256 between row neighbours, their SBO), holding K-major 8 rows of 8 values along K, or
// M/N-major 8 rows (along K) of 8 values along r. Vector i of a slice: eight consecutive vectors go to eight rows of
// one core matrix (distinct banks), the next eight to the next vector along the row.
HOT int km_off(const int r, const int kv, const int rows) {  // K-major: row r, values kv * 8..+7
  return (kv >> 1) * (rows * 16) + ((r >> 3) * 2 + (kv & 1)) * 64 + (r & 7) * 8;
}
HOT int mn_off(const int k, const int rv, const int rows) {  // M/N-major: depth k, rows rv * 8..+7
  return (k >> 4) * (rows * 16) + (rv * 2 + ((k >> 3) & 1)) * 64 + (k & 7) * 8;
}
#define KM_R(i) (((i) & 7) + 8 * ((i) / (8 * (TS_K / 8))))  // K-major vector i: its row, its vector along K
#define KM_V(i) (((i) >> 3) % (TS_K / 8))
#define MN_K(i, rows) (((i) & 7) + 8 * ((i) / (8 * ((rows) / 8))))  // M/N-major: its depth, its vector along r
#define MN_V(i, rows) (((i) >> 3) % ((rows) / 8))
HOT long a_src(const int i, const int M, const int K, const int m0, const int k0, int* n) {
#if TRANS_A  // A stored (K, M): vectors along M
  const int gk = k0 + MN_K(i, TS_M), gm = m0 + MN_V(i, TS_M) * EV;
  *n = gk < K ? M - gm : 0;
  return (long)gk * M + gm;
#else
  const int gm = m0 + KM_R(i), gk = k0 + KM_V(i) * EV;
  *n = gm < M ? K - gk : 0;
  return (long)gm * K + gk;
#endif
}
HOT int a_dst(const int i) {
#if TRANS_A
  return mn_off(MN_K(i, TS_M), MN_V(i, TS_M), TS_M);
#else
  return km_off(KM_R(i), KM_V(i), TS_M);
#endif
}
HOT long b_src(const int i, const int N, const int K, const int n0, const int k0, int* n) {
#if TRANS_B  // B stored (N, K): vectors along K
  const int gn = n0 + KM_R(i), gk = k0 + KM_V(i) * EV;
  *n = gn < N ? K - gk : 0;
  return (long)gn * K + gk;
#else  // B stored (K, N): vectors along N
  const int gk = k0 + MN_K(i, TS_N), gn = n0 + MN_V(i, TS_N) * EV;
  *n = gk < K ? N - gn : 0;
  return (long)gk * N + gn;
#endif
}
HOT int b_dst(const int i) {
#if TRANS_B
  return km_off(KM_R(i), KM_V(i), TS_N);
#else
  return mn_off(MN_K(i, TS_N), MN_V(i, TS_N), TS_N);
#endif
}
#else
// Vector i of a slice (k0): the index of its first value in the operand, how many of its EV values exist (*n; <= 0:
// none), and where it lies in the local slice (each in the operand's own layout: 16-byte aligned, since the row
// lengths and the vectors' offsets along a row are multiples of EV values).
HOT long a_src(const int i, const int M, const int K, const int m0, const int k0, int* n A_PARAMS) {
#if CONV_WG  // A[m][k] = gy[img][m][p] for k = img * OHW + p: a vector stays in one image where VA is set
  const int kv = i % (TS_K / EV), mm = i / (TS_K / EV), gm = m0 + mm, gk = k0 + kv * EV, img = gk / ohw;
  *n = gm < M ? K - gk : 0;
  return ((long)img * M + gm) * ohw + (gk - img * ohw);
#elif TRANS_A  // A stored (K, M): vectors along M
  const int mv = i % (TS_M / EV), kk = i / (TS_M / EV), gm = m0 + mv * EV, gk = k0 + kk;
  *n = gk < K ? M - gm : 0;
  return (long)gk * M + gm;
#else  // A stored (M, K): vectors along K
  const int kv = i % (TS_K / EV), mm = i / (TS_K / EV), gm = m0 + mm, gk = k0 + kv * EV;
  *n = gm < M ? K - gk : 0;
  return (long)gm * K + gk;
#endif
}
HOT int a_dst(const int i) {
#if TRANS_A
  return (i / (TS_M / EV)) * LDA + (i % (TS_M / EV)) * EV;
#else
  return (i / (TS_K / EV)) * LDA + (i % (TS_K / EV)) * EV;
#endif
}
HOT long b_src(const int i, const int N, const int K, const int n0, const int k0, int* n) {
#if TRANS_B  // B stored (N, K): vectors along K
  const int kv = i % (TS_K / EV), nn = i / (TS_K / EV), gn = n0 + nn, gk = k0 + kv * EV;
  *n = gn < N ? K - gk : 0;
  return (long)gn * K + gk;
#else  // B stored (K, N): vectors along N
  const int nv = i % (TS_N / EV), kk = i / (TS_N / EV), gn = n0 + nv * EV, gk = k0 + kk;
  *n = gk < K ? N - gn : 0;
  return (long)gk * N + gn;
#endif
}
HOT int b_dst(const int i) {
#if TRANS_B
  return (i / (TS_K / EV)) * LDB + (i % (TS_K / EV)) * EV;
#else
  return (i / (TS_N / EV)) * LDB + (i % (TS_N / EV)) * EV;
#endif
}
#endif  // WG

#if CONV_B
// Vector l of this work item's B slice (vector i = lid + l * LSIZE): B[k][p] = x[c, ihb + ki * DH, iwb + kj * DW]
// for k = (c * KH + ki) * KW + kj, EV columns a vector.
HOT uint4 conv_vec(__global const elem* restrict B, const int K, const int k0, const int i, const int l,
                      const ConvGeom g, const int* ihb, const int* iwb) {
  const int gk = k0 + i / (TS_N / EV);
  const int c = gk / (KH * KW), r = gk - c * (KH * KW), ki = r / KW, kj = r - ki * KW;
  elem v[EV];
#pragma unroll
  for (int e = 0; e < EV; ++e) {
    const int ih = ihb[l * EV + e] + ki * g.dh, iw = iwb[l * EV + e] + kj * g.dw;
    const bool in = gk < K && ih >= 0 && ih < g.H && iw >= 0 && iw < g.W;
    v[e] = in ? B[((long)c * g.H + ih) * g.W + iw] : (elem)0;
  }
  return pack_vec(v);
}
#endif

#if CONV_WG
// Vector i of A's slice value by value (OHW not a multiple of EV: the vector may span two images).
HOT uint4 wg_a_vec(__global const elem* restrict A, const int M, const int K, const int m0, const int k0,
                   const int i, const int ohw) {
  const int gm = m0 + i / (TS_K / EV), gk = k0 + (i % (TS_K / EV)) * EV;
  elem v[EV];
#pragma unroll
  for (int e = 0; e < EV; ++e) {
    const int k = gk + e, img = k / ohw;
    v[e] = gm < M && k < K ? A[((long)img * M + gm) * ohw + (k - img * ohw)] : (elem)0;
  }
  return pack_vec(v);
}

// Vector l of this work item's B slice (vector i = lid + l * LSIZE): B[j][k] (TRANS_B's layout) = x[img, c,
// oh * SH + jh, ow * SW + jw] for k = img * OHW + oh * OW + ow, EV consecutive values of K a vector.
HOT uint4 wg_vec(__global const elem* restrict B, const int K, const int k0, const int i, const int l,
                 const ConvGeom g, const int* jc, const int* jh, const int* jw) {
  const int gk = k0 + (i % (TS_K / EV)) * EV;
  int img = gk / g.OHW, q = gk - img * g.OHW, oh = q / g.OW, ow = q - oh * g.OW;
  elem v[EV];
#pragma unroll
  for (int e = 0; e < EV; ++e) {
    const int ih = oh * g.sh + jh[l], iw = ow * g.sw + jw[l];
    const bool in = gk + e < K && jc[l] >= 0 && ih >= 0 && ih < g.H && iw >= 0 && iw < g.W;
    v[e] = in ? B[(((long)img * g.C + jc[l]) * g.H + ih) * g.W + iw] : (elem)0;
    if (++ow == g.OW) ow = 0, ++oh;  // the next position, without dividing again
    if (++q == g.OHW) q = 0, oh = 0, ++img;
  }
  return pack_vec(v);
}
#endif

// ST = 0. Global -> registers: slice k0 of A (TS_M x TS_K) and of B.
HOT void load_a(__global const elem* restrict A, const int M, const int K, const int m0, const int k0,
                   const int lid, uint4* ra A_PARAMS) {
#pragma unroll
  for (int l = 0; l < A_VECS; ++l) {
#if CONV_WG
    if (!VA) {
      ra[l] = wg_a_vec(A, M, K, m0, k0, lid + l * LSIZE, ohw);
      continue;
    }
#endif
    int n;
    const long at = a_src(lid + l * LSIZE, M, K, m0, k0, &n A_FWD);
    ra[l] = loadv(A, at, n, VA);
  }
}

HOT void load_b(__global const elem* restrict B, const int N, const int K, const int n0, const int k0,
                   const int lid, uint4* rb CONV_PARAMS) {
#pragma unroll
  for (int l = 0; l < B_VECS; ++l) {
#if CONV_B
    rb[l] = conv_vec(B, K, k0, lid + l * LSIZE, l, g, ihb, iwb);
#elif CONV_WG
    rb[l] = wg_vec(B, K, k0, lid + l * LSIZE, l, g, jc, jh, jw);
#else
    int n;
    const long at = b_src(lid + l * LSIZE, N, K, n0, k0, &n);
    rb[l] = loadv(B, at, n, VB);
#endif
  }
}

// Registers -> local, tf32-rounded on the way.
HOT void store_a(__local elem* as, const int lid, const uint4* ra) {
#pragma unroll
  for (int l = 0; l < A_VECS; ++l) *(__local uint4*)(as + a_dst(lid + l * LSIZE)) = STAGE(ra[l]);
}

HOT void store_b(__local elem* bs, const int lid, const uint4* rb) {
#pragma unroll
  for (int l = 0; l < B_VECS; ++l) *(__local uint4*)(bs + b_dst(lid + l * LSIZE)) = STAGE(rb[l]);
}

// ST > 0. Global -> local for slice k0, raw: asynchronously where the operand moves as aligned 16-byte vectors (a
// vector past the edge reads nothing and lands as zeros), else through a register.
HOT void copy_a(__global const elem* restrict A, const int M, const int K, const int m0, const int k0,
                   const int lid, __local elem* as A_PARAMS) {
#pragma unroll
  for (int l = 0; l < A_VECS; ++l) {
    const int i = lid + l * LSIZE;
#if CONV_WG
    if (!VA) {
      *(__local uint4*)(as + a_dst(i)) = wg_a_vec(A, M, K, m0, k0, i, ohw);
      continue;
    }
#endif
    int n;
    const long at = a_src(i, M, K, m0, k0, &n A_FWD);
#if ASYNC
    if (VA) {
      CP_ASYNC16(as + a_dst(i), n > 0 ? A + at : A, n > 0 ? 16 : 0);
      continue;
    }
#endif
    *(__local uint4*)(as + a_dst(i)) = loadv(A, at, n, VA);
  }
}

HOT void copy_b(__global const elem* restrict B, const int N, const int K, const int n0, const int k0,
                   const int lid, __local elem* bs CONV_PARAMS) {
#pragma unroll
  for (int l = 0; l < B_VECS; ++l) {
    const int i = lid + l * LSIZE;
#if CONV_B
    *(__local uint4*)(bs + b_dst(i)) = conv_vec(B, K, k0, i, l, g, ihb, iwb);
#elif CONV_WG
    *(__local uint4*)(bs + b_dst(i)) = wg_vec(B, K, k0, i, l, g, jc, jh, jw);
#else
    int n;
    const long at = b_src(i, N, K, n0, k0, &n);
#if ASYNC
    if (VB) {
      CP_ASYNC16(bs + b_dst(i), n > 0 ? B + at : B, n > 0 ? 16 : 0);
      continue;
    }
#endif
    *(__local uint4*)(bs + b_dst(i)) = loadv(B, at, n, VB);
#endif
  }
}

#if !WG
// Fragments (PTX ISA; lane = 4 * group + t). mma.m16n8k16 with 16-bit inputs: register r of A's fragment holds
// A[group + 8 * (r & 1)][2t + 8 * (r >> 1) + {0, 1}] of a 16 x 16 piece, register r of B's holds
// B[2t + 8r + {0, 1}][group] of a 16 x 8 piece. mma.m16n8k8 with tf32 inputs: A's register r holds
// A[group + 8 * (r & 1)][t + 4 * (r >> 1)] of a 16 x 8 piece, B's B[t + 4r][group] of an 8 x 8 piece. Either way
// accumulator q is C[group + 8 * (q >> 1)][2t + (q & 1)]. These read the register that lane `ln` holds for tile i
// (j) at depth ks from the local slice.
#if MMA_TF32
HOT uint a_frag(const __local elem* as, const int ln, const int i, const int r, const int ks, const int wm) {
  const int m = wm * WTM + i * 16 + (ln >> 2) + 8 * (r & 1), k = ks + (ln & 3) + 4 * (r >> 1);
#if TRANS_A
  return FRAG(as[k * LDA + m]);
#else
  return FRAG(as[m * LDA + k]);
#endif
}
HOT uint b_frag(const __local elem* bs, const int ln, const int j, const int r, const int ks, const int wn) {
  const int n = wn * WTN + j * 8 + (ln >> 2), k = ks + (ln & 3) + 4 * r;
#if TRANS_B
  return FRAG(bs[n * LDB + k]);
#else
  return FRAG(bs[k * LDB + n]);
#endif
}
#else
HOT uint a_frag(const __local ushort* as, const int ln, const int i, const int r, const int ks, const int wm) {
  const int m = wm * WTM + i * 16 + (ln >> 2) + 8 * (r & 1), k = ks + 2 * (ln & 3) + 8 * (r >> 1);
#if TRANS_A
  return pack2(as[k * LDA + m], as[(k + 1) * LDA + m]);
#else
  return ((const __local uint*)as)[(m * LDA + k) >> 1];  // k even: an aligned pair
#endif
}
HOT uint b_frag(const __local ushort* bs, const int ln, const int j, const int r, const int ks, const int wn) {
  const int n = wn * WTN + j * 8 + (ln >> 2), k = ks + 2 * (ln & 3) + 8 * r;
#if TRANS_B
  return ((const __local uint*)bs)[(n * LDB + k) >> 1];
#else
  return pack2(bs[k * LDB + n], bs[(k + 1) * LDB + n]);
#endif
}
#endif

#if MMA_PTX
// c += a * b for one 16 x 8 x 16 tile (tf32: 16 x 8 x 8): a warp-wide instruction, every lane of the warp executes
// it together.
#if MMA_TF32
#define MMA(c, a, b)                                                                                        \
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, " \
               "{%0,%1,%2,%3};"                                                                            \
               : "+f"((c)[0]), "+f"((c)[1]), "+f"((c)[2]), "+f"((c)[3])                                    \
               : "r"((a)[0]), "r"((a)[1]), "r"((a)[2]), "r"((a)[3]), "r"((b)[0]), "r"((b)[1]))
#elif defined(IN_BF16)
#define MMA(c, a, b)                                                                                           \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, " \
               "{%0,%1,%2,%3};"                                                                               \
               : "+f"((c)[0]), "+f"((c)[1]), "+f"((c)[2]), "+f"((c)[3])                                       \
               : "r"((a)[0]), "r"((a)[1]), "r"((a)[2]), "r"((a)[3]), "r"((b)[0]), "r"((b)[1]))
#elif MMA_K8
// float16 on sm_75 (Turing has m16n8k8, not m16n8k16): a 16-deep step as two 8-deep ones. m16n8k8's A registers
// are (group, 2t..2t+1) and (group + 8, 2t..2t+1) and its B register (2t..2t+1, group): the k16 fragment's registers
// 0-1 and B's 0 for depths 0-7, registers 2-3 and B's 1 for depths 8-15, so the fragments stay as they are.
#define MMA_K8_STEP(c, a0, a1, b0)                                                                            \
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};" \
               : "+f"((c)[0]), "+f"((c)[1]), "+f"((c)[2]), "+f"((c)[3])                                      \
               : "r"(a0), "r"(a1), "r"(b0))
#define MMA(c, a, b)                          \
  do {                                        \
    MMA_K8_STEP(c, (a)[0], (a)[1], (b)[0]); \
    MMA_K8_STEP(c, (a)[2], (a)[3], (b)[1]); \
  } while (0)
#else
#define MMA(c, a, b)                                                                                       \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, " \
               "{%0,%1,%2,%3};"                                                                           \
               : "+f"((c)[0]), "+f"((c)[1]), "+f"((c)[2]), "+f"((c)[3])                                   \
               : "r"((a)[0]), "r"((a)[1]), "r"((a)[2]), "r"((a)[3]), "r"((b)[0]), "r"((b)[1]))
#endif
#if LM
// ldmatrix: each lane names one 16-byte row of one 8 x 8 matrix (lanes 8i..8i+7: matrix i); register i receives
// matrix i's values in the fragment layout (with .trans, the transposed matrix's). Addresses are the local
// (shared-window) offsets of the rows.
#define LDSM_X4(r, p) asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" \
    : "=r"((r)[0]), "=r"((r)[1]), "=r"((r)[2]), "=r"((r)[3]) : "r"((uint)(size_t)(p)) : "memory")
#define LDSM_X4_T(r, p) asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];" \
    : "=r"((r)[0]), "=r"((r)[1]), "=r"((r)[2]), "=r"((r)[3]) : "r"((uint)(size_t)(p)) : "memory")
#define LDSM_X2(r, p) asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" \
    : "=r"((r)[0]), "=r"((r)[1]) : "r"((uint)(size_t)(p)) : "memory")
#define LDSM_X2_T(r, p) asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];" \
    : "=r"((r)[0]), "=r"((r)[1]) : "r"((uint)(size_t)(p)) : "memory")
// A's four registers for tile i: matrices (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15), (m 8-15, k 8-15).
#if MMA_TF32
// tf32: an 8 x 8 matrix of 16-bit values is 8 rows of four 32-bit ones, lane 4g + t receiving row g's value t: A's
// register r is the matrix (m 0-7 or 8-15, k 0-3 or 4-7), read as it lies where rows run along k. The .trans form
// moves 16-bit halves, so m- or n-contiguous slices are read value by value.
HOT void a_frags_ldsm(const __local elem* as, const int lane, const int i, const int ks, const int wm, uint* r) {
#if TRANS_A
#pragma unroll
  for (int q = 0; q < 4; ++q) r[q] = a_frag(as, lane, i, q, ks, wm);
#else
  const int mat = lane >> 3, row = lane & 7, m = wm * WTM + i * 16 + 8 * (mat & 1), k = ks + 4 * (mat >> 1);
  LDSM_X4(r, as + (m + row) * LDA + k);
#pragma unroll
  for (int q = 0; q < 4; ++q) r[q] = FRAG(r[q]);
#endif
}
HOT void b_frags_ldsm(const __local elem* bs, const int lane, const int j, const int ks, const int wn, uint* r) {
#if TRANS_B  // B[n][k]: matrices (n 0-7, k 0-3) and (n 0-7, k 4-7)
  const int mat = (lane >> 3) & 1, row = lane & 7, n = wn * WTN + j * 8, k = ks + 4 * mat;
  LDSM_X2(r, bs + (n + row) * LDB + k);
  r[0] = FRAG(r[0]);
  r[1] = FRAG(r[1]);
#else
  r[0] = b_frag(bs, lane, j, 0, ks, wn);
  r[1] = b_frag(bs, lane, j, 1, ks, wn);
#endif
}
#else
HOT void a_frags_ldsm(const __local ushort* as, const int lane, const int i, const int ks, const int wm,
                         uint* r) {
  const int mat = lane >> 3, row = lane & 7, m = wm * WTM + i * 16 + 8 * (mat & 1), k = ks + 8 * (mat >> 1);
#if TRANS_A  // A[k][m]: rows along k, transposed on the way
  LDSM_X4_T(r, as + (k + row) * LDA + m);
#else
  LDSM_X4(r, as + (m + row) * LDA + k);
#endif
}
// B's two registers for tile j: matrices (k 0-7, n 0-7), (k 8-15, n 0-7); lanes 16-31 name rows too (unused).
HOT void b_frags_ldsm(const __local ushort* bs, const int lane, const int j, const int ks, const int wn,
                         uint* r) {
  const int mat = (lane >> 3) & 1, row = lane & 7, n = wn * WTN + j * 8, k = ks + 8 * mat;
#if TRANS_B  // B[n][k]
  LDSM_X2(r, bs + (n + row) * LDB + k);
#else  // B[k][n]: rows along k, transposed on the way
  LDSM_X2_T(r, bs + (k + row) * LDB + n);
#endif
}
#endif
#endif
#else
// The instruction emulated on the fragments' layout: lane `lane`'s accumulators of tile (i, j) gain the products of
// the values the owning lanes' registers would hold, read as those lanes would read them (a_frag, b_frag).
static inline void mma_emulated(float* c, const __local elem* as, const __local elem* bs, const int i, const int j,
                         const int ks, const int wm, const int wn, const int lane) {
  const int g = lane >> 2, t = lane & 3;
  for (int q = 0; q < 4; ++q) {
    const int row = g + 8 * (q >> 1), col = 2 * t + (q & 1);
    float s = 0.0f;
#if MMA_TF32  // value k of the row is in lane 4 * (row % 8) + k % 4, register row / 8 + 2 * (k / 4); of B's column in
              // lane 4 * col + k % 4, register k / 4
    for (int k = 0; k < 8; ++k)
      s += raw_to_float(a_frag(as, (row & 7) * 4 + (k & 3), i, (row >> 3) + 2 * (k >> 2), ks, wm)) *
           raw_to_float(b_frag(bs, col * 4 + (k & 3), j, k >> 2, ks, wn));
#else
    for (int k = 0; k < 16; ++k) {
      const uint aw = a_frag(as, (row & 7) * 4 + ((k & 7) >> 1), i, (row >> 3) + 2 * (k >> 3), ks, wm);
      const uint bw = b_frag(bs, col * 4 + ((k & 7) >> 1), j, k >> 3, ks, wn);
      s += raw_to_float((aw >> ((k & 1) * 16)) & 0xffffu) * raw_to_float((bw >> ((k & 1) * 16)) & 0xffffu);
    }
#endif
    c[q] += s;
  }
}
#endif

// One TS_K-deep slice (as, bs: local) multiplied into the accumulators acc of the kernel below (its lane, wm, wn):
// per KI-deep step the warp's fragments, then MT x NT instructions.
#if MMA_PTX
#if LM
#define LOAD_FRAGS(as, bs, ks)                                                             \
  _Pragma("unroll") for (int i = 0; i < MT; ++i) a_frags_ldsm(as, lane, i, ks, wm, af[i]); \
  _Pragma("unroll") for (int j = 0; j < NT; ++j) b_frags_ldsm(bs, lane, j, ks, wn, bf[j])
#else
#define LOAD_FRAGS(as, bs, ks)                                                                         \
  _Pragma("unroll") for (int i = 0; i < MT; ++i)                                                       \
    _Pragma("unroll") for (int r = 0; r < 4; ++r) af[i][r] = a_frag(as, lane, i, r, ks, wm);         \
  _Pragma("unroll") for (int j = 0; j < NT; ++j)                                                       \
    _Pragma("unroll") for (int r = 0; r < 2; ++r) bf[j][r] = b_frag(bs, lane, j, r, ks, wn)
#endif
#define MAC_SLICE(as, bs)                                                             \
  _Pragma("unroll") for (int ks = 0; ks < TS_K; ks += KI) {                           \
    uint af[MT][4], bf[NT][2];                                                        \
    LOAD_FRAGS(as, bs, ks);                                                           \
    _Pragma("unroll") for (int i = 0; i < MT; ++i)                                    \
      _Pragma("unroll") for (int j = 0; j < NT; ++j) MMA(acc[i][j], af[i], bf[j]);   \
  }
#else
#define MAC_SLICE(as, bs)                                        \
  for (int ks = 0; ks < TS_K; ks += KI)                          \
    for (int i = 0; i < MT; ++i)                                 \
      for (int j = 0; j < NT; ++j) mma_emulated(acc[i][j], as, bs, i, j, ks, wm, wn, lane)
#endif
#else  // WG
// A shared-memory matrix descriptor (PTX ISA, no swizzling): bits 0-13 the start address, 16-29 the leading byte
// offset (LBO: between core matrices along K, 128 bytes here), 32-45 the stride byte offset (SBO: between core
// matrices along M or N, 256 bytes), each in 16-byte units. `at` is the slice's local (shared-window) address; the
// emulation passes offsets from the ring's start instead.
HOT ulong wg_desc(const uint at) {
  return (ulong)((at & 0x3FFFFu) >> 4) | ((ulong)(128 >> 4) << 16) | ((ulong)(256 >> 4) << 32);
}
#if defined(IN_BF16)
#define WG_IN "bf16"
#else
#define WG_IN "f16"
#endif
#if TRANS_A  // the instruction's transpose immediates: 1 where the operand is staged M/N-major
#define WG_TA "1"
#else
#define WG_TA "0"
#endif
#if TRANS_B
#define WG_TB "0"
#else
#define WG_TB "1"
#endif
#if MMA_PTX
#include "gemm_wgmma_ops.cl"
// The epilogue's activation without IEEE division: ptxas makes div.rn.f32 and rcp.rn.f32 subroutine calls, and a
// call anywhere in the kernel serialises every wgmma (its note C7509). Sigmoid and tanh from the approximate
// reciprocal and exponential (a few ulp of float32; tanh below |x| = 1/16 by its odd series, where 1 - e^-2|x|
// would cancel); ReLU keeps NaN as ACTIVATE does.
static inline float wg_ex2(const float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
static inline float wg_rcp(const float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
static inline float wg_activate(const float x, const int act) {
  if (act == 1) return x < 0 ? 0 : x;
  if (act == 2) return wg_rcp(1.0f + wg_ex2(-x * M_LOG2E_F));
  if (act == 3) {
    const float a = fabs(x), x2 = x * x;
    if (a < 0.0625f) return x * (1.0f + x2 * (-1.0f / 3.0f + x2 * (2.0f / 15.0f)));
    const float e = wg_ex2(-2.0f * M_LOG2E_F * a);
    return copysign((1.0f - e) * wg_rcp(1.0f + e), x);
  }
  return x;
}
#define EPI_ACTIVATE(v, act) wg_activate(v, act)
#define WG_ADDR(p, base) ((uint)(size_t)(p))
#define WG_FENCE() asm volatile("//WG:wgmma.fence.sync.aligned;" ::: "memory")
#define WG_COMMIT() asm volatile("//WG:wgmma.commit_group.sync.aligned;" ::: "memory")
#define WG_WAIT1() asm volatile("//WG:wgmma.wait_group.sync.aligned 1;" ::: "memory")
// the generic proxy's writes to local memory (copies, asynchronous or not) made visible to the instruction's reads
#define PROXY_FENCE() asm volatile("fence.proxy.async.shared::cta;" ::: "memory")
#if TS_N == 64
#define WGMMA(d, da, db, sc, ab, bb) WGMMA_N64(d, da, db, sc)
#define WG_WAIT0(d) WG_WAIT0_N64(d)
#elif TS_N == 128
#define WGMMA(d, da, db, sc, ab, bb) WGMMA_N128(d, da, db, sc)
#define WG_WAIT0(d) WG_WAIT0_N128(d)
#elif TS_N == 256
#define WGMMA(d, da, db, sc, ab, bb) WGMMA_N256(d, da, db, sc)
#define WG_WAIT0(d) WG_WAIT0_N256(d)
#else
#error "WG: TS_N is 64, 128 or 256"
#endif
#else
#define WG_ADDR(p, base) ((uint)(((const __local uchar*)(p)) - ((const __local uchar*)(base))))
#define WG_FENCE()
#define WG_COMMIT()
#define WG_WAIT1()
#define WG_WAIT0(d)
#define PROXY_FENCE()
#define WGMMA(d, da, db, sc, ab, bb) wg_emulated(d, da, db, sc, ab, bb, lid)
// Value (r, k) of a descriptor's matrix (r along M or N), in bytes from the ring's start: the PTX ISA's no-swizzle
// layout as the descriptor states it (so a wrong LBO, SBO or address fails here as on the GPU).
static inline uint wg_at(const ulong desc, const int r, const int k, const int mn_major) {
  const uint start = (uint)(desc & 0x3FFFu) << 4, lbo = (uint)((desc >> 16) & 0x3FFFu) << 4;
  const uint sbo = (uint)((desc >> 32) & 0x3FFFu) << 4;
  return start + (r >> 3) * sbo + (k >> 3) * lbo + (mn_major ? (k & 7) * 16 + (r & 7) * 2 : (r & 7) * 16 + (k & 7) * 2);
}
// The instruction emulated for work item lid of its warpgroup: accumulator 4j + q of warp w, lane 4g + t is D[16w + g
// + 8(q / 2)][8j + 2t + q % 2] (the layout the H200 computed in scripts/wgmma_probe.c).
static inline void wg_emulated(float* d, const ulong da, const ulong db, const int sc, const __local ushort* ab,
                               const __local ushort* bb, const int lid) {
  const int w = (lid >> 5) & 3, g = (lid & 31) >> 2, t = lid & 3;
  for (int j = 0; j < TS_N / 8; ++j)
    for (int q = 0; q < 4; ++q) {
      const int row = 16 * w + g + 8 * (q >> 1), col = 8 * j + 2 * t + (q & 1);
      float s = 0.0f;
      for (int k = 0; k < 16; ++k)
        s += raw_to_float(ab[wg_at(da, row, k, TRANS_A) >> 1]) * raw_to_float(bb[wg_at(db, col, k, !TRANS_B) >> 1]);
      d[4 * j + q] = sc ? d[4 * j + q] + s : s;
    }
}
#endif
#endif  // WG

__kernel __attribute__((reqd_work_group_size(LSIZE, 1, 1)))
void gemm_mma(const int M, const int N, const int K, const float alpha, const float beta,
              __global const elem* restrict A, const long a_batch_stride,
              __global const elem* restrict B, const long b_batch_stride,
              __global STORAGE* restrict C, __global const STORAGE* restrict bias, const int has_bias,
              const int act, const int k_chunk, const int splits
#if CONV_B || CONV_WG
              , const int conv_c, const int conv_h, const int conv_w, const int conv_ow, const int sh, const int sw,
              const int ph, const int pw, const int dh, const int dw
#endif
#if CONV_WG
              , const int conv_ohw
#endif
) {
  const int lid = get_local_id(0), lane = lid & 31, warp = lid >> 5;
  const int g = lane >> 2, t = lane & 3;
#if WG
  const int wgi = lid >> 7, w4 = warp & 3;  // the warpgroup, the warp in it
#else
  const int wm = warp / WN, wn = warp % WN;
#endif
  const int n0 = get_group_id(0) * TS_N, m0 = get_group_id(1) * TS_M;
  const long batch = get_group_id(2);
  A += batch * a_batch_stride;
  B += batch * b_batch_stride;
  C += batch * (long)M * N;
#if CONV_WG  // z: a slice of K (the host passes no batch strides)
  const int kb = (int)batch * k_chunk, ke = min(K, kb + k_chunk);
#else
  const int kb = 0, ke = K;
#endif

  // uint4: 16-byte aligned rows (WG: 128-byte core matrices)
  __local uint4 as_[NBUF][A_LOCAL / EV] __attribute__((aligned(128)));
  __local uint4 bs_[NBUF][B_LOCAL / EV] __attribute__((aligned(128)));
#if WG
  // Not set here: the first step's instructions ignore the accumulators' values (sc = 0), and any other instruction
  // writing them (a zeroing move) makes ptxas serialise every wgmma. The epilogue reads 0 where K is empty.
  float acc[MI][TS_N / 2];
#if !MMA_PTX
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int r = 0; r < TS_N / 2; ++r) acc[i][r] = 0.0f;
#endif
#else
  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;
#endif

#if CONV_B
  const ConvGeom geo = {conv_c, conv_h, conv_w, sh, sw, ph, pw, dh, dw};  // g: the lane's group
  int ihb[B_VECS * EV], iwb[B_VECS * EV];
#pragma unroll
  for (int l = 0; l < B_VECS; ++l)
#pragma unroll
    for (int e = 0; e < EV; ++e) {
      const int gn = n0 + ((lid + l * LSIZE) % (TS_N / EV)) * EV + e, oh = gn / conv_ow;
      ihb[l * EV + e] = gn < N ? oh * sh - ph : INT_MIN / 2;
      iwb[l * EV + e] = (gn - oh * conv_ow) * sw - pw;
    }
#elif CONV_WG
  const ConvGeom geo = {conv_c, conv_h, conv_w, conv_ow, conv_ohw, sh, sw};
  int jc[B_VECS], jh[B_VECS], jw[B_VECS];
#pragma unroll
  for (int l = 0; l < B_VECS; ++l) {
    const int gn = n0 + (lid + l * LSIZE) / (TS_K / EV);
    const int c = gn / (KH * KW), r = gn - c * (KH * KW), ki = r / KW, kj = r - ki * KW;
    jc[l] = gn < N ? c : -1;
    jh[l] = ki * dh - ph;
    jw[l] = kj * dw - pw;
  }
#endif
#if WG
  // A ring of ST slices: slice kt in buffer kt % ST, copied ST - 2 slices ahead. At slice kt each work item waits for
  // its copies of it and fences them for the instruction's (asynchronous) reads; the barrier then stands for
  // everyone's, and for every warpgroup's wait after slice kt - 1 was issued, which left at most that slice's
  // instructions running: the buffer of slice kt - 2, which the copy issued next fills, is free.
  const int nk = (ke - kb + TS_K - 1) / TS_K;
  const __local ushort* ab = (const __local ushort*)as_;
  const __local ushort* bb = (const __local ushort*)bs_;
  // (The first ST - 2 copies in a loop of their own: instructions under a condition inside the main loop made the
  // compiler copy the accumulators where the branches meet, and ptxas then serialises every instruction.)
  for (int kt = 0; kt < ST - 2; ++kt) {
    if (kt < nk) {
      copy_a(A, M, ke, m0, kb + kt * TS_K, lid, (__local elem*)as_[kt]);
      copy_b(B, N, ke, n0, kb + kt * TS_K, lid, (__local elem*)bs_[kt] CONV_ARGS);
    }
    CP_COMMIT();
  }
  for (int kt = 0; kt < nk; ++kt) {
    CP_WAIT();
    PROXY_FENCE();
    barrier(CLK_LOCAL_MEM_FENCE);
    const int ahead = kt + ST - 2;
    if (ahead < nk) {
      copy_a(A, M, ke, m0, kb + ahead * TS_K, lid, (__local elem*)as_[ahead % ST]);
      copy_b(B, N, ke, n0, kb + ahead * TS_K, lid, (__local elem*)bs_[ahead % ST] CONV_ARGS);
    }
    CP_COMMIT();
    const __local ushort* as = (const __local ushort*)as_[kt % ST];
    const __local ushort* bs = (const __local ushort*)bs_[kt % ST];
    WG_FENCE();
#pragma unroll
    for (int s = 0; s < TS_K / 16; ++s) {
      const ulong db = wg_desc(WG_ADDR(bs + s * (TS_N * 16), bb));
#pragma unroll
      for (int i = 0; i < MI; ++i)
        WGMMA(acc[i], wg_desc(WG_ADDR(as + s * (TS_M * 16) + (wgi * WTM + i * 64) * 16, ab)), db, (kt | s) != 0,
              ab, bb);
    }
    WG_COMMIT();
    WG_WAIT1();
  }
#pragma unroll
  for (int i = 0; i < MI; ++i) WG_WAIT0(acc[i]);
#elif ST
  // A ring of ST slices: slice kt in buffer kt % ST, copied ST - 1 slices ahead (the first ST - 1 steps only copy).
  // At slice kt each work item waits for its own copies of it, the barrier for everyone's (and for every warp to be
  // done with slice kt - 1, whose buffer the copy issued next fills). A group is committed every step, empty or not,
  // so that the count of pending groups always means the same slices. One call site each for the copies and the
  // products (one inlined copy of each in the code).
  const int nk = (ke - kb + TS_K - 1) / TS_K;
  for (int kt = 1 - ST; kt < nk; ++kt) {
    if (kt >= 0) {
      CP_WAIT();
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    const int ahead = kt + ST - 1;
    if (ahead < nk) {
      copy_a(A, M, ke, m0, kb + ahead * TS_K, lid, (__local elem*)as_[ahead % ST] A_ARGS);
      copy_b(B, N, ke, n0, kb + ahead * TS_K, lid, (__local elem*)bs_[ahead % ST] CONV_ARGS);
    }
    CP_COMMIT();
    if (kt >= 0) MAC_SLICE((const __local elem*)as_[kt % ST], (const __local elem*)bs_[kt % ST]);
  }
#else
  uint4 ra[A_VECS], rb[B_VECS];
  if (ke > kb) {
    load_a(A, M, ke, m0, kb, lid, ra A_ARGS);
    load_b(B, N, ke, n0, kb, lid, rb CONV_ARGS);
    store_a((__local elem*)as_[0], lid, ra);
    store_b((__local elem*)bs_[0], lid, rb);
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  int buf = 0;
  for (int k0 = kb; k0 < ke; k0 += TS_K) {
    const int next = k0 + TS_K;
    if (next < ke) {  // in flight while this slice is multiplied
      load_a(A, M, ke, m0, next, lid, ra A_ARGS);
      load_b(B, N, ke, n0, next, lid, rb CONV_ARGS);
    }
    MAC_SLICE((const __local elem*)as_[buf], (const __local elem*)bs_[buf]);
    if (next < ke) {
      store_a((__local elem*)as_[buf ^ 1], lid, ra);
      store_b((__local elem*)bs_[buf ^ 1], lid, rb);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    buf ^= 1;
  }
#endif

  // Epilogue: acc[i][j][r] is C[m0 + wm * WTM + i * 16 + g + 8 * (r >> 1)][n0 + wn * WTN + j * 8 + 2t + (r & 1)];
  // WG: acc[i][4j + r] is C[m0 + wgi * WTM + i * 64 + 16 * w4 + g + 8 * (r >> 1)][n0 + j * 8 + 2t + (r & 1)].
#ifndef EPI_ACTIVATE
#define EPI_ACTIVATE(v, act) ACTIVATE(v, act)
#endif
#if WG
#define EPI_MT MI
#define EPI_NT (TS_N / 8)
#define EPI_ROW(i) (wgi * WTM + (i) * 64 + 16 * w4)
#define EPI_COL(j) ((j) * 8)
#define EPI_ACC(i, j, r) (nk > 0 ? acc[i][4 * (j) + (r)] : 0.0f)
#else
#define EPI_MT MT
#define EPI_NT NT
#define EPI_ROW(i) (wm * WTM + (i) * 16)
#define EPI_COL(j) (wn * WTN + (j) * 8)
#define EPI_ACC(i, j, r) acc[i][j][r]
#endif
PTX_UNROLL
  for (int i = 0; i < EPI_MT; ++i) {
PTX_UNROLL
    for (int h = 0; h < 2; ++h) {
      const int m = m0 + EPI_ROW(i) + g + 8 * h;
      if (m >= M) continue;
PTX_UNROLL
      for (int j = 0; j < EPI_NT; ++j) {
PTX_UNROLL
        for (int e = 0; e < 2; ++e) {
          const int n = n0 + EPI_COL(j) + 2 * t + e;
          if (n >= N) continue;
          const long at = (long)m * N + n;
          const float r = EPI_ACC(i, j, 2 * h + e);
          // beta == 0 overwrites: C may hold garbage or NaN that must not leak into the result.
          float v = beta == 0.0f ? alpha * r : alpha * r + beta * LOAD1(C, at);
          if (has_bias) v += LOAD1(bias, has_bias == 2 ? m : n);
          STORE1(EPI_ACTIVATE(v, act), C, at);
        }
      }
    }
  }
}
