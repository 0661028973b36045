// common.cl: element type, vector helpers and the fused epilogue shared by the GEMM kernels.
// Included textually (hetnn expands #include "x.cl" from the embedded kernel files before building).
#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#ifndef REAL
#define REAL float
#endif
#define HETNN_CAT_(a, b) a##b
#define HETNN_CAT(a, b) HETNN_CAT_(a, b)

// Epilogue: v = act(alpha * acc + beta * C + bias). ACT: 0 none, 1 relu, 2 sigmoid, 3 tanh. HAS_BIAS: 0 or 1.
#ifndef ACT
#define ACT 0
#endif
#ifndef HAS_BIAS
#define HAS_BIAS 0
#endif
#if ACT == 1
#define ACTIVATE(x) ((x) < 0 ? 0 : (x)) /* NaN stays NaN, as in PyTorch */
#elif ACT == 2
#define ACTIVATE(x) (1 / (1 + exp(-(x))))
#elif ACT == 3
#define ACTIVATE(x) tanh(x)
#else
#define ACTIVATE(x) (x)
#endif
