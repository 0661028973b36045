// Regular against non-temporal (streaming) stores for a float32 add c = a + b over arrays of 1 to 256 MiB on every
// CPU (OpenMP), and the same add followed by a sum of c (does the output's leaving the caches cost the next op?).
// hetnn's CPU loops and its STREAM-style ceilings (bench peak, bench arrays' stream rows) use regular stores, which
// read each output line before writing it. Best of 10 per case. Build and run (x86-64 with AVX-512 or AVX2):
//   gcc -O2 -march=native -fopenmp scripts/stream_stores.c -o /tmp/stream_stores && /tmp/stream_stores
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX512F__)
#define W 16
#define VEC __m512
#define LOAD _mm512_load_ps
#define ADD _mm512_add_ps
#define STORE _mm512_store_ps
#define STREAM _mm512_stream_ps
#else
#define W 8
#define VEC __m256
#define LOAD _mm256_load_ps
#define ADD _mm256_add_ps
#define STORE _mm256_store_ps
#define STREAM _mm256_stream_ps
#endif

static void add(const float* a, const float* b, float* c, long n, int nt) {
  if (nt) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i += W) STREAM(c + i, ADD(LOAD(a + i), LOAD(b + i)));
    _mm_sfence();
  } else {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i += W) STORE(c + i, ADD(LOAD(a + i), LOAD(b + i)));
  }
}

static float sum(const float* c, long n) {  // vector accumulators: the loop reads at memory speed
  float s = 0;
#pragma omp parallel reduction(+ : s)
  {
    VEC acc0 = ADD(LOAD(c), LOAD(c)), acc1 = acc0;  // any start: the value only keeps the loop alive
#pragma omp for schedule(static)
    for (long i = 0; i < n; i += 2 * W) acc0 = ADD(acc0, LOAD(c + i)), acc1 = ADD(acc1, LOAD(c + i + W));
    float lanes[W] __attribute__((aligned(64)));
    STORE(lanes, ADD(acc0, acc1));
    for (int k = 0; k < W; ++k) s += lanes[k];
  }
  return s;
}

int main(void) {
  printf("threads %d; c = a + b, float32, GB/s counting 12 bytes an element; best of 10\n", omp_get_max_threads());
  printf("%10s %14s %14s %10s %18s %18s\n", "MiB/array", "regular GB/s", "streaming GB/s", "ratio", "add+sum regular ms",
         "add+sum stream ms");
  volatile float sink = 0;
  for (long mib = 1; mib <= 256; mib *= 4) {
    const long n = mib << 18;
    float *a = aligned_alloc(64, n * 4), *b = aligned_alloc(64, n * 4), *c = aligned_alloc(64, n * 4);
    memset(a, 0, n * 4), memset(b, 0, n * 4), memset(c, 0, n * 4);
    double best[2] = {1e9, 1e9}, chain[2] = {1e9, 1e9};
    for (int it = 0; it < 10; ++it)
      for (int nt = 0; nt < 2; ++nt) {  // interleaved
        double t = omp_get_wtime();
        add(a, b, c, n, nt);
        const double t1 = omp_get_wtime();
        sink += sum(c, n);
        const double t2 = omp_get_wtime();
        if (t1 - t < best[nt]) best[nt] = t1 - t;
        if (t2 - t < chain[nt]) chain[nt] = t2 - t;
      }
    printf("%10ld %14.1f %14.1f %10.2f %18.2f %18.2f\n", mib, 12.0 * n / best[0] / 1e9, 12.0 * n / best[1] / 1e9,
           best[0] / best[1], chain[0] * 1e3, chain[1] * 1e3);
    free(a), free(b), free(c);
  }
  return sink != sink;
}
