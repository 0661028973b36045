// packed_layout.cl: the panel layout shared by pack.cl and gemm_packed.cl. op(A) is cut into panels of RM rows,
// op(B) into panels of RN = VW * NV columns, each stored k-major and zero-padded.
#include "common.cl"
#ifndef RM
#define RM 8
#endif
#ifndef VW
#define VW 16
#endif
#ifndef NV
#define NV 2
#endif
#define RN (VW * NV)
