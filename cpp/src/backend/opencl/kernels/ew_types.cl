// ew_types.cl: the storage and computation types of the element-wise and reduction kernels (included textually).
// Build options -DTIN_<T> -DTOUT_<T>, T one of F32 F64 F16 BF16 I32 I64 U8 I8 B8, give: SIN / SOUT (the input's and
// output's storage types), CT (the computation type: float for the 16-bit types), LOADIN(p, i) (element i of an
// input as CT), STOREOUT(v, p, i) (v stored as the output type: floating to integer saturates, NaN gives 0; bool
// is v != 0), IS_FLOAT, IS_SIGNED and UCT (the unsigned type of an integer CT).
#if defined(TIN_F64) || defined(TOUT_F64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#include "bf16.cl"

#if defined(TIN_F32)
#define SIN float
#define CT float
#define IS_FLOAT 1
#elif defined(TIN_F64)
#define SIN double
#define CT double
#define IS_FLOAT 1
#elif defined(TIN_F16)
#define SIN half
#define CT float
#define IS_FLOAT 1
#define LOADIN(p, i) vload_half((i), (p))
#elif defined(TIN_BF16)
#define SIN ushort
#define CT float
#define IS_FLOAT 1
#define LOADIN(p, i) as_float(((uint)(p)[i]) << 16)
#elif defined(TIN_I32)
#define SIN int
#define CT int
#define UCT uint
#define IS_SIGNED 1
#elif defined(TIN_I64)
#define SIN long
#define CT long
#define UCT ulong
#define IS_SIGNED 1
#elif defined(TIN_U8) || defined(TIN_B8)
#define SIN uchar
#define CT uchar
#define UCT uchar
#define IS_SIGNED 0
#elif defined(TIN_I8)
#define SIN char
#define CT char
#define UCT uchar
#define IS_SIGNED 1
#endif
#ifndef IS_FLOAT
#define IS_FLOAT 0
#endif
#ifndef LOADIN
#define LOADIN(p, i) ((p)[i])
#endif

// Stores v (a CT) as the output type.
#if IS_FLOAT  // OpenCL C makes convert_T_sat(NaN) 0; PoCL 3.0 (pip's pocl-binary-distribution) gave the type's minimum
#define TO_INT(T, v) ((v) != (v) ? (T)0 : convert_##T##_sat(v))
#else
#define TO_INT(T, v) ((T)(v))
#endif
#if defined(TOUT_F32)
#define SOUT float
#define STOREOUT(v, p, i) ((p)[i] = (float)(v))
#elif defined(TOUT_F64)
#define SOUT double
#define STOREOUT(v, p, i) ((p)[i] = (double)(v))
#elif defined(TOUT_F16)
#define SOUT half
#define STOREOUT(v, p, i) vstore_half((float)(v), (i), (p))
#elif defined(TOUT_BF16)
#define SOUT ushort
#define STOREOUT(v, p, i) ((p)[i] = bf16_from_float((float)(v)))
#elif defined(TOUT_I32)
#define SOUT int
#define STOREOUT(v, p, i) ((p)[i] = TO_INT(int, v))
#elif defined(TOUT_I64)
#define SOUT long
#define STOREOUT(v, p, i) ((p)[i] = TO_INT(long, v))
#elif defined(TOUT_U8)
#define SOUT uchar
#define STOREOUT(v, p, i) ((p)[i] = TO_INT(uchar, v))
#elif defined(TOUT_I8)
#define SOUT char
#define STOREOUT(v, p, i) ((p)[i] = TO_INT(char, v))
#elif defined(TOUT_B8)
#define SOUT uchar
#define STOREOUT(v, p, i) ((p)[i] = (uchar)((v) != 0))
#endif
