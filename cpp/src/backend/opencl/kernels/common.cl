// common.cl: element type, vector helpers and the fused epilogue shared by the GEMM kernels.
// Included textually (hetnn expands #include "x.cl" from the embedded kernel files before building).
#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#ifndef REAL
#define REAL float
#endif
// Helper functions are `static inline` (OpenCL C 1.2): a plain C99 `inline` function that the compiler does not
// inline is a call to an external definition nobody provides (clang for NVPTX left gemm_vtiled's mac_tile so:
// "Unresolved extern function"). The GEMM loops' pieces are HOT: inlined whatever the compiler's cost model says,
// since their register tiles would otherwise go through memory.
#define HOT static inline __attribute__((always_inline))
// Operand layout: A stored (M, K), or (K, M) with TRANS_A; B stored (K, N), or (N, K) with TRANS_B.
#ifndef TRANS_A
#define TRANS_A 0
#endif
#ifndef TRANS_B
#define TRANS_B 0
#endif
// Storage type of A, B, C and bias: REAL itself, or float16 / bfloat16 data converted to REAL (float) on load and
// rounded back on store. Half storage needs no cl_khr_fp16 (vload_half/vstore_half are core OpenCL), so any device
// runs float16 and bfloat16 GEMMs with float32 arithmetic.
#if defined(STORE_HALF)
#define STORAGE half
#define LOAD1(p, i) vload_half((i), (p))
#define STORE1(v, p, i) vstore_half((v), (i), (p))
#elif defined(STORE_BF16)
#define STORAGE ushort
#define LOAD1(p, i) as_float(((uint)(p)[i]) << 16)
#include "bf16.cl"
#define STORE1(v, p, i) ((p)[i] = bf16_from_float(v))
#else
#define STORAGE REAL
#define LOAD1(p, i) ((p)[i])
#define STORE1(v, p, i) ((p)[i] = (v))
#define NATIVE_STORAGE 1
#endif

#define HETNN_CAT_(a, b) a##b
#define HETNN_CAT(a, b) HETNN_CAT_(a, b)

// Epilogue: v = act(alpha * acc + beta * C + bias), with act a run-time argument (0 none, 1 relu, 2 sigmoid,
// 3 tanh): it runs once per output element, so a branch costs nothing and saves a compiled variant per activation.
// Works on scalars and vectors. ReLU keeps NaN (NaN < 0 is false), as PyTorch does.
#define ACTIVATE(x, act) \
  ((act) == 1 ? ((x) < 0 ? 0 : (x)) : (act) == 2 ? 1 / (1 + exp(-(x))) : (act) == 3 ? tanh(x) : (x))

// The tiled kernels' work-group (gemm.cl, gemm_vtiled.cl; global (N tiles * LN, M tiles * LM, batch * splits)):
// work item (tn, tm), number lid, of the TS_M x TS_N tile at (m0, n0); z = batch * splits + slice covers K elements
// [kb, ke) of its batch's A and B and writes C + z * M * N (split-K partials, or C itself when splits = 1).
#define TILED_GEMM_PROLOGUE                                                 \
  const int tn = get_local_id(0), tm = get_local_id(1);                     \
  const int lid = tm * LN + tn;                                             \
  const int n0 = get_group_id(0) * TS_N, m0 = get_group_id(1) * TS_M;       \
  const long z = get_global_id(2), batch = z / splits;                      \
  const int kb = (int)(z % splits) * k_chunk, ke = min(K, kb + k_chunk);    \
  A += batch * a_batch_stride;                                              \
  B += batch * b_batch_stride;                                              \
  C += z * (long)M * N;
