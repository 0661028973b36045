// common.cl: element type, vector helpers and the fused epilogue shared by the GEMM kernels.
// Included textually (hetnn expands #include "x.cl" from the embedded kernel files before building).
#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#ifndef REAL
#define REAL float
#endif
// Operand layout: A stored (M, K), or (K, M) with TRANS_A; B stored (K, N), or (N, K) with TRANS_B.
#ifndef TRANS_A
#define TRANS_A 0
#endif
#ifndef TRANS_B
#define TRANS_B 0
#endif
#define HETNN_CAT_(a, b) a##b
#define HETNN_CAT(a, b) HETNN_CAT_(a, b)

// Epilogue: v = act(alpha * acc + beta * C + bias), with act a run-time argument (0 none, 1 relu, 2 sigmoid,
// 3 tanh): it runs once per output element, so a branch costs nothing and saves a compiled variant per activation.
// Works on scalars and vectors. ReLU keeps NaN (NaN < 0 is false), as PyTorch does.
#define ACTIVATE(x, act) \
  ((act) == 1 ? ((x) < 0 ? 0 : (x)) : (act) == 2 ? 1 / (1 + exp(-(x))) : (act) == 3 ? tanh(x) : (x))
