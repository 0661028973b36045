// Can an OpenCL kernel reach Hopper's warpgroup matrix instructions (wgmma, sm_90a), and at what rate? Issue 39 asks
// for wgmma on sm_90 where it measurably wins over mma.sync (whose ceiling from OpenCL was 639 TFLOP/s on an H200).
// wgmma assembles only in a module whose target is sm_90a (ptxas: "not supported on .target 'sm_90'"), and NVIDIA's
// OpenCL compiler writes `.target sm_90`. Three ways are tried, each reported:
//   source          the instructions as inline PTX, built as usual (expected to fail: the module's target)
//   -cl-nv-arch     the same with the build option -cl-nv-arch sm_90a
//   patched PTX     built with each instruction written as a PTX comment ("//WG:"; the compiler substitutes the
//                   operands into it as into any asm text), then the program's binary (PTX on NVIDIA) with the
//                   comments opened and the target set to sm_90a, built again from that binary
// With the first way that builds: one warpgroup computes a 64 x N x 16 product of small integers (exact in float32)
// against the host's, through shared-memory descriptors without swizzling (8 x 8 core matrices of 16-bit values,
// 128 bytes each): N = 8 with both operands K-major, then N = 64 with each of A and B K-major or MN-major (the
// transposed forms a GEMM of row-major B needs), each with LBO and SBO as the PTX ISA names them or swapped; then
// the rate of a loop of m64nNk16 instructions on every compute unit.
//   gcc -O2 scripts/wgmma_probe.c -lOpenCL -o /tmp/wgmma_probe && /tmp/wgmma_probe
//   /tmp/wgmma_probe --emit N HIDE   (prints the kernels' source: N in 8, 16, ..., 256; HIDE 0 or 1)
//   /tmp/wgmma_probe --patch FILE    (prints FILE's PTX as the third way patches it)
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char* s;
  size_t n, cap;
} Str;

static void add(Str* b, const char* fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    const int w = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    if (b->n + (size_t)w < b->cap) {
      b->n += (size_t)w;
      return;
    }
    b->cap = 2 * (b->cap + (size_t)w + 64);
    b->s = realloc(b->s, b->cap);
  }
}

// The wgmma instruction for one m64nNk16 step: d (N / 2 float32 accumulators per work item) += A (desc a) * B
// (desc b), each K-major or, transposed (ta, tb), MN-major; scale_d 0 ignores d's old value.
static void wgmma(Str* b, int n, const char* wg, const char* scale_d, int ta, int tb) {
  const int r = n / 2;
  add(b, "  asm volatile(\"%s{ .reg .pred p;\\n\"\n  \"%ssetp.ne.b32 p, %%%d, 0;\\n\"\n", wg, wg, r + 2);
  add(b, "  \"%swgmma.mma_async.sync.aligned.m64n%dk16.f32.f16.f16 {", wg, n);
  for (int i = 0; i < r; ++i) add(b, "%s%%%d", i ? ", " : "", i);
  add(b, "}, %%%d, %%%d, p, 1, 1, %d, %d;\\n\"\n  \"%s}\\n\"\n  : ", r, r + 1, ta, tb, wg);
  for (int i = 0; i < r; ++i) add(b, "%s\"+f\"(d[%d])", i ? ", " : "", i);
  add(b, "\n  : \"l\"(da), \"l\"(db), \"r\"(%s) : \"memory\");\n", scale_d);
}

// wgmma.wait_group 0 with the accumulators as its operands, so that no read of them is placed before it (ptxas then
// serialises the instructions or injects a wait of its own).
static void wait_all(Str* b, int n, const char* wg) {
  add(b, "  asm volatile(\"%swgmma.wait_group.sync.aligned 0;\" : ", wg);
  for (int i = 0; i < n / 2; ++i) add(b, "%s\"+f\"(d[%d])", i ? ", " : "", i);
  add(b, " :: \"memory\");\n");
}

static char* source(int n, int hide) {
  const char* wg = hide ? "//WG:" : "";
  Str b = {0};
  add(&b, "// wgmma probe, N = %d%s\n", n, hide ? ", instructions hidden in comments" : "");
  add(&b, "#define N %d\n#define R (N / 2)\n", n);
  // element (r, k) of an R x 16 K-major operand in core matrices of 8 x 8: matrix (r / 8, k / 8) at
  // (r / 8 * 2 + k / 8) * 64 values; so 128 bytes between K-neighbours (LBO), 256 between row-block ones (SBO)
  add(&b, "static inline int core(int r, int k) { return ((r >> 3) * 2 + (k >> 3)) * 64 + (r & 7) * 8 + (k & 7); }\n");
  // MN-major (the transposed forms): the same core matrices, each 8 rows of K holding 8 values along M or N
  add(&b, "static inline int core_mn(int r, int k) { return ((r >> 3) * 2 + (k >> 3)) * 64 + (k & 7) * 8 + (r & 7); }\n");
  // (the PTX ISA's descriptor: bits 0-13 the address, 16-29 LBO, 32-45 SBO, each in 16-byte units; swizzle bits 62-63
  // zero; the tile test also tries LBO and SBO the other way round, in case the no-swizzle layout reads them so)
  add(&b, "static inline ulong desc(__local const ushort* p, uint lbo, uint sbo) {\n"
          "  const uint a = (uint)(size_t)p;\n"
          "  return (ulong)((a & 0x3FFFFu) >> 4) | ((ulong)(lbo >> 4) << 16) | ((ulong)(sbo >> 4) << 32);\n}\n");
  add(&b, "#define FENCE() asm volatile(\"%swgmma.fence.sync.aligned;\" ::: \"memory\")\n", wg);
  add(&b, "#define COMMIT() asm volatile(\"%swgmma.commit_group.sync.aligned;\" ::: \"memory\")\n", wg);
  add(&b, "#define WAIT(n) asm volatile(\"%swgmma.wait_group.sync.aligned \" #n \";\" ::: \"memory\")\n", wg);
  // A (64 x 16, row-major) and B (16 x N, row-major) staged K-major; D (64 x N): the accumulator layout of
  // m16n8 tiles per warp (warp w rows 16w..16w+15): d[4j + q] = D[16w + g + 8(q >> 1)][8j + 2t + (q & 1)]
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {  // wg_tile_TATB: A, B staged K-major (0) or MN-major (1)
      add(&b, "__kernel __attribute__((reqd_work_group_size(128, 1, 1)))\n"
              "void wg_tile_%d%d(__global const ushort* A, __global const ushort* B, __global float* D, uint lbo,\n"
              "                uint sbo) {\n"
              "  __local ushort as[64 * 16] __attribute__((aligned(256)));\n"
              "  __local ushort bs[N * 16] __attribute__((aligned(256)));\n"
              "  const int lid = get_local_id(0);\n"
              "  for (int i = lid; i < 64 * 16; i += 128) as[%s(i / 16, i %% 16)] = A[i];\n"
              "  for (int i = lid; i < 16 * N; i += 128) bs[%s(i %% N, i / N)] = B[i];\n"
              "  asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
              "  barrier(CLK_LOCAL_MEM_FENCE);\n"
              "  const ulong da = desc(as, lbo, sbo), db = desc(bs, lbo, sbo);\n"
              "  float d[R];\n"
              "#pragma unroll\n  for (int i = 0; i < R; ++i) d[i] = 0.0f;\n"
              "  FENCE();\n", ta, tb, ta ? "core_mn" : "core", tb ? "core_mn" : "core");
      wgmma(&b, n, wg, "0", ta, tb);
      add(&b, "  COMMIT();\n");
      wait_all(&b, n, wg);
      add(&b, "  const int w = lid >> 5, g = (lid & 31) >> 2, t = lid & 3;\n"
              "#pragma unroll\n  for (int j = 0; j < N / 8; ++j)\n"
              "#pragma unroll\n    for (int q = 0; q < 4; ++q)\n"
              "      D[(16 * w + g + 8 * (q >> 1)) * N + 8 * j + 2 * t + (q & 1)] = d[4 * j + q];\n}\n");
    }
  // the rate: `iters` turns of four instructions on the same operands (one group committed a turn, the previous
  // turn's left in flight), every work-group one warpgroup
  add(&b, "__kernel __attribute__((reqd_work_group_size(128, 1, 1)))\n"
          "void wg_rate(__global float* out, const int iters) {\n"
          "  __local ushort as[64 * 16] __attribute__((aligned(256)));\n"
          "  __local ushort bs[N * 16] __attribute__((aligned(256)));\n"
          "  const int lid = get_local_id(0);\n"
          "  for (int i = lid; i < 64 * 16; i += 128) as[i] = 0x2C00;\n"  // 1/16
          "  for (int i = lid; i < N * 16; i += 128) bs[i] = 0x2C00;\n"
          "  asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
          "  barrier(CLK_LOCAL_MEM_FENCE);\n"
          "  const ulong da = desc(as, 128, 256), db = desc(bs, 128, 256);\n"
          "  float d[R];\n"
          "#pragma unroll\n  for (int i = 0; i < R; ++i) d[i] = 0.0f;\n"
          "  for (int it = 0; it < iters; ++it) {\n"
          "    FENCE();\n");
  for (int i = 0; i < 4; ++i) wgmma(&b, n, wg, "1", 0, 0);
  add(&b, "    COMMIT();\n    WAIT(1);\n  }\n");
  wait_all(&b, n, wg);
  add(&b, "  float s = 0.0f;\n#pragma unroll\n  for (int i = 0; i < R; ++i) s += d[i];\n"
          "  out[get_global_id(0)] = s;\n}\n");
  return b.s;
}

static void first_errors(const char* log) {
  int shown = 0;
  for (const char* p = log; *p && shown < 4;) {
    const char* e = strchr(p, '\n');
    const size_t len = e ? (size_t)(e - p) : strlen(p);
    if (strstr(p, "rror") && (size_t)(strstr(p, "rror") - p) < len) {
      printf("    %.*s\n", (int)(len > 300 ? 300 : len), p);
      ++shown;
    }
    p += len + (e != NULL);
  }
  if (!shown) printf("    log: %.300s\n", log);
}

static cl_context ctx;
static cl_device_id dev;
static cl_command_queue q;

static cl_program build_source(const char* src, const char* options, cl_int* e) {
  cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, e);
  if (*e) return p;
  *e = clBuildProgram(p, 1, &dev, options, NULL, NULL);
  return p;
}

static char* build_log(cl_program p) {
  size_t n = 0;
  clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
  char* log = calloc(n + 1, 1);
  clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, n, log, NULL);
  return log;
}

static char* binary(cl_program p) {
  size_t n = 0;
  clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL);
  unsigned char* bin = calloc(n + 1, 1);
  clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL);
  return (char*)bin;
}

// The program's PTX with the hidden instructions opened and the target made sm_90a (NULL: no "//WG:" in it, or no
// sm_90 target).
static char* patched(const char* ptx) {
  const char* target = strstr(ptx, ".target sm_90");
  if (!strstr(ptx, "//WG:") || !target || (target[13] != '\n' && target[13] != ' ' && target[13] != ','))
    return NULL;
  const size_t at = (size_t)(target - ptx) + 13;
  Str b = {0};
  add(&b, "%s", "");
  for (size_t i = 0; ptx[i];) {
    if (i == at) add(&b, "a");
    if (!strncmp(ptx + i, "//WG:", 5)) {
      i += 5;
      continue;
    }
    add(&b, "%c", ptx[i++]);
  }
  return b.s;
}

// route 0: source; 1: -cl-nv-arch sm_90a; 2: patched PTX
static cl_program build_route(int route, int n, int verbose) {
  cl_int e;
  char* src = source(n, route == 2);
  cl_program p = build_source(src, route == 1 ? "-cl-nv-arch sm_90a" : "", &e);
  free(src);
  if (e) {
    if (verbose) {
      char* log = build_log(p);
      printf("  build failed (%d)\n", e);
      first_errors(log);
      free(log);
    }
    clReleaseProgram(p);
    return NULL;
  }
  char* ptx = binary(p);
  if (verbose) {
    const char* t = strstr(ptx, ".target");
    printf("  built; program's %.20s\n", t ? t : "(no .target)");
  }
  if (route != 2) {
    free(ptx);
    return p;
  }
  clReleaseProgram(p);
  char* fixed = patched(ptx);
  if (!fixed) {
    if (verbose) printf("  the program's binary holds no \"//WG:\" comments or no sm_90 target: %.200s\n", ptx);
    free(ptx);
    return NULL;
  }
  free(ptx);
  const size_t len = strlen(fixed) + 1;  // NVIDIA's binaries are NUL-terminated PTX text
  const unsigned char* bin = (const unsigned char*)fixed;
  cl_int status;
  p = clCreateProgramWithBinary(ctx, 1, &dev, &len, &bin, &status, &e);
  if (!e) e = clBuildProgram(p, 1, &dev, "", NULL, NULL);
  free(fixed);
  if (e) {
    if (verbose) {
      char* log = build_log(p);
      printf("  the patched PTX failed to build (%d, status %d)\n", e, status);
      first_errors(log);
      free(log);
    }
    clReleaseProgram(p);
    return NULL;
  }
  if (verbose) printf("  the patched PTX (target sm_90a) built\n");
  return p;
}

static unsigned short half_of(int v) {  // small integers |v| <= 8 as float16 bits
  if (v == 0) return 0;
  unsigned short sign = v < 0 ? 0x8000 : 0;
  int a = v < 0 ? -v : v, e = 0;
  while ((a >> e) > 1) ++e;
  return (unsigned short)(sign | ((e + 15) << 10) | (((a << 10) >> e) & 0x3FF));
}

static int tile_test(cl_program p, int n, const char* kname, cl_uint lbo, cl_uint sbo) {
  cl_int e;
  unsigned short a[64 * 16], b[16 * 256];
  int ai[64 * 16], bi[16 * 256];
  for (int i = 0; i < 64 * 16; ++i) ai[i] = (i * 7 + i / 16 * 3) % 9 - 4, a[i] = half_of(ai[i]);
  for (int i = 0; i < 16 * n; ++i) bi[i] = (i * 5 + i / n) % 7 - 3, b[i] = half_of(bi[i]);
  cl_mem ma = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof a, a, &e);
  cl_mem mb = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof b, b, &e);
  cl_mem md = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, 64 * 256 * sizeof(float), NULL, &e);
  cl_kernel k = clCreateKernel(p, kname, &e);
  clSetKernelArg(k, 0, sizeof ma, &ma);
  clSetKernelArg(k, 1, sizeof mb, &mb);
  clSetKernelArg(k, 2, sizeof md, &md);
  clSetKernelArg(k, 3, sizeof lbo, &lbo);
  clSetKernelArg(k, 4, sizeof sbo, &sbo);
  size_t g = 128, l = 128;
  e = clEnqueueNDRangeKernel(q, k, 1, NULL, &g, &l, 0, NULL, NULL);
  static float d[64 * 256];
  for (int i = 0; i < 64 * n; ++i) d[i] = -1e30f;
  cl_int r = clEnqueueReadBuffer(q, md, CL_TRUE, 0, 64 * n * sizeof(float), d, 0, NULL, NULL);
  int bad = 0, first = -1;
  for (int m = 0; m < 64; ++m)
    for (int j = 0; j < n; ++j) {
      int want = 0;
      for (int kk = 0; kk < 16; ++kk) want += ai[m * 16 + kk] * bi[kk * n + j];
      if (d[m * n + j] != (float)want) {
        if (first < 0) first = m * n + j;
        ++bad;
      }
    }
  printf("  64 x %d x 16 tile, %s (LBO %u, SBO %u): enqueue %d, read %d, %d of %d wrong", n, kname, lbo, sbo, e, r,
         bad, 64 * n);
  if (first >= 0) printf(" (first at row %d column %d: %g)", first / n, first % n, d[first]);
  printf("\n");
  clReleaseKernel(k);
  clReleaseMemObject(ma);
  clReleaseMemObject(mb);
  clReleaseMemObject(md);
  return bad == 0 && e == 0 && r == 0;
}

static void rate(cl_program p, int n, cl_uint units) {
  cl_int e;
  const int iters = 4096;
  const size_t groups = 4 * (size_t)units, g = groups * 128, l = 128;
  cl_mem out = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, g * sizeof(float), NULL, &e);
  cl_kernel k = clCreateKernel(p, "wg_rate", &e);
  clSetKernelArg(k, 0, sizeof out, &out);
  clSetKernelArg(k, 1, sizeof iters, &iters);
  double best = 1e30;
  for (int rep = 0; rep < 6; ++rep) {  // the first is the warm-up
    cl_event ev;
    e = clEnqueueNDRangeKernel(q, k, 1, NULL, &g, &l, 0, NULL, &ev);
    if (e) break;
    clWaitForEvents(1, &ev);
    cl_ulong t0 = 0, t1 = 0;
    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
    clReleaseEvent(ev);
    if (rep && (double)(t1 - t0) < best) best = (double)(t1 - t0);
  }
  const double flop = 2.0 * 64 * n * 16 * 4 * (double)iters * (double)groups;
  float check = 0;
  clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof check, &check, 0, NULL, NULL);
  printf("  rate m64n%dk16: enqueue %d, %.1f TFLOP/s (best of 5, %zu work-groups x %d x 4 instructions; "
         "out[0] %g, expected %g)\n", n, e, e ? 0.0 : flop / best * 1e-3, groups, iters, check,
         (double)iters * 4 * 16 / 256.0 * (n / 2));
  clReleaseKernel(k);
  clReleaseMemObject(out);
}

int main(int argc, char** argv) {
  if (argc == 3 && !strcmp(argv[1], "--patch")) {  // the PTX file's patched form (to check it offline)
    FILE* f = fopen(argv[2], "rb");
    if (!f) return 2;
    Str in = {0};
    int c;
    add(&in, "%s", "");
    while ((c = fgetc(f)) != EOF) add(&in, "%c", c);
    fclose(f);
    char* out = patched(in.s);
    if (!out) return 1;
    fputs(out, stdout);
    return 0;
  }
  if (argc == 4 && !strcmp(argv[1], "--emit")) {
    char* s = source(atoi(argv[2]), atoi(argv[3]));
    fputs(s, stdout);
    free(s);
    return 0;
  }
  cl_platform_id ps[8];
  cl_uint np = 0;
  clGetPlatformIDs(8, ps, &np);
  for (cl_uint i = 0; i < np; ++i) {
    char name[256] = {0};
    clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
    if (!strstr(name, "NVIDIA") || clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_GPU, 1, &dev, NULL)) continue;
    cl_int e;
    char dn[256] = {0}, dv[256] = {0};
    cl_uint units = 0;
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof dn, dn, NULL);
    clGetDeviceInfo(dev, CL_DRIVER_VERSION, sizeof dv, dv, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    printf("%s, driver %s, %u compute units\n", dn, dv, units);
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    q = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &e);
    const char* names[3] = {"source", "-cl-nv-arch sm_90a", "patched PTX"};
    int works = -1;
    for (int route = 0; route < 3; ++route) {
      printf("%s:\n", names[route]);
      cl_program p = build_route(route, 8, 1);
      if (!p) continue;
      const int ok = tile_test(p, 8, "wg_tile_00", 128, 256) || tile_test(p, 8, "wg_tile_00", 256, 128);
      clReleaseProgram(p);
      if (ok && works < 0) works = route;
    }
    if (works < 0) {
      printf("verdict: no way to wgmma from OpenCL here\n");
      return 1;
    }
    printf("verdict: wgmma through \"%s\"\n", names[works]);
    for (int n = 64; n <= 256; n *= 2) {
      cl_program p = build_route(works, n, 0);
      if (!p) {
        printf("  N = %d: no longer builds\n", n);
        continue;
      }
      // every layout at N = 64 (8 core matrices along N): which of LBO and SBO is which, per layout
      for (int t = 0; n == 64 && t < 4; ++t) {
        const char* names4[4] = {"wg_tile_00", "wg_tile_01", "wg_tile_10", "wg_tile_11"};
        if (!tile_test(p, n, names4[t], 128, 256)) tile_test(p, n, names4[t], 256, 128);
      }
      rate(p, n, units);
      clReleaseProgram(p);
    }
    return 0;
  }
  printf("no NVIDIA GPU\n");
  return 2;
}
