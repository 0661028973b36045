// reduce.cl: the reductions of core/reduction.h and the running sum, one program per (input type, output type);
// the op is a run-time argument, its numbers RED_<name> come from the build options (generated from HETNN_RED_OPS).
// Accumulators: float for float32 and the 16-bit types, double for float64 (or a float64 result), long for
// integers and bool (sums and products wrap, as on the CPU device).
// Kernels:
//   reduce_groups  a work-group of LOCAL items per (output, part): the items stride through the part's reduced
//                  elements (neighbouring items read neighbouring elements when the innermost reduced stride is 1),
//                  then a tree in local memory. With parts > 1 the groups leave partials that reduce_parts finishes
//                  (a whole-array reduction spread over many groups).
//   reduce_items   one item per output, its reduced elements in order (many outputs: a leading-axis reduction,
//                  where neighbouring items read neighbouring elements).
//   reduce_chunks  on CPU devices in place of reduce_groups: an item per (output, part) streaming its contiguous
//                  part (a work-group's tree and barriers cost a CPU more than they save).
//   reduce_columns on CPU devices in place of reduce_items where the outputs are neighbours in x: an item per
//                  COLS outputs, walking the reduced axis.
//   reduce_rows    on CPU devices, sums over the leading axis of whole rows: an item per block of rows into a
//                  partial row, reduce_rows_finish adding them.
//   scan_lines     one item per line of the running sum.
#include "ew_types.cl"

#if IS_FLOAT
#if defined(TIN_F64) || defined(TOUT_F64)
#define ACC double
#else
#define ACC float
#endif
#define ISNAN(v) isnan(v)
#else
#define ACC long
#define ISNAN(v) 0
#endif
#if defined(TOUT_F64)
#define SCALE_T double
#else
#define SCALE_T float
#endif
#ifndef LOCAL
#define LOCAL 256
#endif

#if IS_FLOAT
#define ADD(a, b) ((a) + (b))
#define MUL(a, b) ((a) * (b))
#else
#define ADD(a, b) ((long)((ulong)(a) + (ulong)(b)))
#define MUL(a, b) ((long)((ulong)(a) * (ulong)(b)))
#endif

// RED_FIXED_OP (ClBackend::op_built_in: CPU-type devices, reductions over 2^20 elements or more): the op fixed at
// build time, so that fold's choice folds away inside the loops (PoCL evaluated it element by element).
#ifdef RED_FIXED_OP
#define OP_OF(arg) RED_FIXED_OP
#else
#define OP_OF(arg) (arg)
#endif

#define IS_ARG(op) ((op) == RED_argmax || (op) == RED_argmin)
#define IS_BEST(op) ((op) == RED_max || (op) == RED_min || IS_ARG(op))

ACC ident(const int op) { return (op == RED_prod || op == RED_all) ? (ACC)1 : (ACC)0; }

// v replaces b as the running maximum (minimum): larger (smaller), or the first NaN.
int beats(const int op, const ACC v, const ACC b) {
  if (ISNAN(b)) return 0;
  if (ISNAN(v)) return 1;
  return (op == RED_max || op == RED_argmax) ? v > b : v < b;
}

// Element r (value v) into the running (a, ai).
void fold(const int op, ACC* a, long* ai, const ACC v, const long r) {
  if (op == RED_sum) *a = ADD(*a, v);
  else if (op == RED_sumsq) *a = *a + v * v;
  else if (op == RED_prod) *a = MUL(*a, v);
  else if (op == RED_all) *a = (*a != 0 && v != 0) ? 1 : 0;
  else if (op == RED_any) *a = (*a != 0 || v != 0) ? 1 : 0;
  else if (*ai < 0 || beats(op, v, *a)) {
    *a = v;
    *ai = r;
  }
}

// Two partials over any elements: the better, the smaller index on a tie (both NaN counts as a tie).
void merge(const int op, ACC* a, long* ai, const ACC b, const long bi) {
  if (!IS_BEST(op)) {
    if (op == RED_prod) *a = MUL(*a, b);
    else if (op == RED_all) *a = (*a != 0 && b != 0) ? 1 : 0;
    else if (op == RED_any) *a = (*a != 0 || b != 0) ? 1 : 0;
    else *a = ADD(*a, b);
    return;
  }
  if (bi < 0) return;
  if (*ai < 0 || beats(op, b, *a) || (!beats(op, *a, b) && bi < *ai)) {
    *a = b;
    *ai = bi;
  }
}

// Element offset of flat index i over nd dimensions (row-major) with strides st.
long offset_of(long i, const int nd, const long8 shape8, const long8 st8) {
  if (nd == 1) return i * st8.s0;
  long sh[8], st[8];
  vstore8(shape8, 0, sh);
  vstore8(st8, 0, st);
  long off = 0;
  for (int k = nd - 1; k >= 0; --k) {
    off += (i % sh[k]) * st[k];
    i /= sh[k];
  }
  return off;
}

void put(const int op, const ACC a, const long ai, const int scaled, const SCALE_T scale, __global SOUT* y,
         const long o) {
  if (IS_ARG(op)) {
    ((__global long*)y)[o] = ai;
  } else if (scaled) {
    STOREOUT((SCALE_T)a * scale, y, o);
  } else {
    STOREOUT(a, y, o);
  }
}

__kernel __attribute__((reqd_work_group_size(LOCAL, 1, 1))) void reduce_groups(
    const int op_arg, const long n_red, const long parts, const int knd, const long8 kshape, const long8 ks,
    const int rnd, const long8 rshape, const long8 rs, const long x0, const int scaled, const SCALE_T scale,
    __global const SIN* x, __global SOUT* y, __global ACC* pv, __global long* pi) {
  const int op = OP_OF(op_arg);
  __local ACC lv[LOCAL];
  __local long li[LOCAL];
  const long g = get_group_id(0), o = g / parts, c = g % parts;
  const int t = get_local_id(0);
  const long base = x0 + offset_of(o, knd, kshape, ks);  // x0: a view's first element
  const long r0 = n_red * c / parts, r1 = n_red * (c + 1) / parts;
  ACC a = ident(op);
  long ai = -1;
  for (long r = r0 + t; r < r1; r += LOCAL) {
    const ACC v = (ACC)LOADIN(x, base + offset_of(r, rnd, rshape, rs));
    fold(op, &a, &ai, v, r);
  }
  lv[t] = a;
  li[t] = ai;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = LOCAL / 2; s > 0; s >>= 1) {
    if (t < s) {
      ACC m = lv[t];
      long mi = li[t];
      merge(op, &m, &mi, lv[t + s], li[t + s]);
      lv[t] = m;
      li[t] = mi;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (t != 0) return;
  if (parts == 1) {
    put(op, lv[0], li[0], scaled, scale, y, o);
  } else {
    pv[g] = lv[0];
    pi[g] = li[0];
  }
}

// One item per (output, part), its part's reduced elements in order (CPU devices: each item streams a contiguous
// range, as a thread would); partials to reduce_parts when parts > 1.
// Eight running partials p[0..7] over a contiguous part [r0, r1) of a line: lane k takes elements r + k, the tail
// goes to p[0], then the lanes fold into p[0], each step STEP (of the partial a_ and the value v_, each evaluated
// once); VAL(i) is element i's value. One chain waited ~4 cycles an element; fold's per-element choice of op kept the
// loop scalar where the op is a run-time argument.
#define EIGHT_LANES(T, INIT, VAL, STEP)                 \
  T p[8];                                               \
  for (int k = 0; k < 8; ++k) p[k] = (INIT);            \
  long r = r0;                                          \
  for (; r + 8 <= r1; r += 8)                           \
    for (int k = 0; k < 8; ++k) {                       \
      const long i = r + k;                             \
      const T a_ = p[k], v_ = (VAL);                    \
      p[k] = (STEP);                                    \
    }                                                   \
  for (; r < r1; ++r) {                                 \
    const long i = r;                                   \
    const T a_ = p[0], v_ = (VAL);                      \
    p[0] = (STEP);                                      \
  }                                                     \
  for (int k = 1; k < 8; ++k) {                         \
    const T a_ = p[0], v_ = p[k];                       \
    p[0] = (STEP);                                      \
  }
ACC step_sum(const ACC a, const ACC v) { return ADD(a, v); }
// max (mx) or min keeping the first of equals; a NaN wins and then stays
ACC step_keep(const int mx, const ACC b, const ACC v) {
  return (ISNAN(b) || (mx ? b >= v : b <= v)) ? b : v;
}

__kernel void reduce_chunks(const int op_arg, const long n_out, const long n_red, const long parts, const int knd,
                            const long8 kshape, const long8 ks, const int rnd, const long8 rshape, const long8 rs,
                            const long x0, const int scaled, const SCALE_T scale, __global const SIN* x,
                            __global SOUT* y, __global ACC* pv, __global long* pi) {
  const int op = OP_OF(op_arg);
  const long g = get_global_id(0);
  if (g >= n_out * parts) return;
  const long o = g / parts, c = g % parts;
  const long base = x0 + offset_of(o, knd, kshape, ks);  // x0: a view's first element
  const long r0 = n_red * c / parts, r1 = n_red * (c + 1) / parts;
  ACC a = ident(op);
  long ai = -1;
  if (op == RED_sum && rnd == 1 && rs.s0 == 1) {
    // sums (and means) in a loop of their own, without fold's choice of op per element: where the op is a run-time
    // argument (arrays below op_built_in's size) the general loop ran scalar, 0.35 ms for 1 MiB of float32 on PoCL
    EIGHT_LANES(ACC, 0, (ACC)LOADIN(x, base + (i)), step_sum(a_, v_))
    a = p[0];
  } else if ((op == RED_any || op == RED_all) && rnd == 1 && rs.s0 == 1) {
    // any and all (NaN counts as true, as != 0 says) as eight running ORs or ANDs, likewise
    const int all = op == RED_all;
    EIGHT_LANES(int, all, (ACC)LOADIN(x, base + (i)) != 0, (all ? (a_ & v_) : (a_ | v_)))
    a = (ACC)p[0];
  } else if ((op == RED_max || op == RED_min) && rnd == 1 && rs.s0 == 1 && r1 > r0) {
    // maxima (minima) likewise, without indices (fold kept one per element and ran scalar even with the op built
    // in: 1.9 ms for 16 MiB against the sum's 0.34): the first of equals stays, a NaN wins and then stays
    const int mx = op == RED_max;
    EIGHT_LANES(ACC, (ACC)LOADIN(x, base + r0), (ACC)LOADIN(x, base + (i)), step_keep(mx, a_, v_))
    a = p[0];
    ai = r0;  // any index: the part is not empty (merge and put read the value only)
  } else if (IS_ARG(op) && rnd == 1 && rs.s0 == 1 && r1 > r0) {
    // argmax (argmin): eight lanes, each keeping its first best (a strict win replaces it; the first NaN wins),
    // merged by value then index (merge), without fold's per-element choice of op
    const int mx = op == RED_argmax;
    ACC p[8];
    long q[8];
    for (int k = 0; k < 8; ++k) p[k] = (ACC)LOADIN(x, base + r0), q[k] = r0;
    long r = r0;
#define WINS(v, b) (!ISNAN(b) && (ISNAN(v) || (mx ? (v) > (b) : (v) < (b))))
    for (; r + 8 <= r1; r += 8)
      for (int k = 0; k < 8; ++k) {
        const ACC v = (ACC)LOADIN(x, base + r + k);
        const int w = WINS(v, p[k]);
        p[k] = w ? v : p[k];
        q[k] = w ? r + k : q[k];
      }
    for (; r < r1; ++r) {
      const ACC v = (ACC)LOADIN(x, base + r);
      if (WINS(v, p[0])) p[0] = v, q[0] = r;
    }
#undef WINS
    for (int k = 1; k < 8; ++k) merge(op, &p[0], &q[0], p[k], q[k]);
    a = p[0];
    ai = q[0];
  } else if (rnd == 1 && rs.s0 == 1) {
    // eight running partials, merged at the end (one chain of additions waited ~4 cycles an element); merge keeps
    // the first maximum and the first NaN by their indices, so the order of the partials does not matter
    ACC p[8];
    long pi8[8];
    for (int k = 0; k < 8; ++k) p[k] = a, pi8[k] = -1;
    long r = r0;
    for (; r + 8 <= r1; r += 8)
      for (int k = 0; k < 8; ++k) fold(op, &p[k], &pi8[k], (ACC)LOADIN(x, base + r + k), r + k);
    for (; r < r1; ++r) fold(op, &p[0], &pi8[0], (ACC)LOADIN(x, base + r), r);
    for (int k = 1; k < 8; ++k) merge(op, &p[0], &pi8[0], p[k], pi8[k]);
    a = p[0];
    ai = pi8[0];
  } else {
    for (long r = r0; r < r1; ++r) fold(op, &a, &ai, (ACC)LOADIN(x, base + offset_of(r, rnd, rshape, rs)), r);
  }
  if (parts == 1) {
    put(op, a, ai, scaled, scale, y, o);
  } else {
    pv[g] = a;
    pi[g] = ai;
  }
}

__kernel void reduce_parts(const int op_arg, const long n_out, const long parts, const int scaled,
                           const SCALE_T scale,
                           __global const ACC* pv, __global const long* pi, __global SOUT* y) {
  const int op = OP_OF(op_arg);
  const long o = get_global_id(0);
  if (o >= n_out) return;
  ACC a = pv[o * parts];
  long ai = pi[o * parts];
  for (long c = 1; c < parts; ++c) merge(op, &a, &ai, pv[o * parts + c], pi[o * parts + c]);
  put(op, a, ai, scaled, scale, y, o);
}

__kernel void reduce_items(const int op_arg, const long n_out, const long n_red, const int knd, const long8 kshape,
                           const long8 ks, const int rnd, const long8 rshape, const long8 rs, const long x0,
                           const int scaled, const SCALE_T scale, __global const SIN* x, __global SOUT* y) {
  const int op = OP_OF(op_arg);
  const long o = get_global_id(0);
  if (o >= n_out) return;
  const long base = x0 + offset_of(o, knd, kshape, ks);  // x0: a view's first element
  ACC a = ident(op);
  long ai = -1;
  for (long r = 0; r < n_red; ++r) fold(op, &a, &ai, (ACC)LOADIN(x, base + offset_of(r, rnd, rshape, rs)), r);
  put(op, a, ai, scaled, scale, y, o);
}

// CPU devices, a reduction over one strided axis whose outputs lie next to each other in x (a leading-axis sum of a
// matrix): an item per COLS neighbouring outputs, walking the reduced axis with their partials, so that each step
// reads COLS neighbouring elements (reduce_items walked one column per item: a cache line per element; 64 columns
// ran 1.13x 16 on PoCL). Each output's elements in order, as reduce_items.
#ifndef COLS
#define COLS 64
#endif
__kernel void reduce_columns(const int op_arg, const long n_out, const long n_red, const long rstride, const long x0,
                             const int scaled, const SCALE_T scale, __global const SIN* x, __global SOUT* y) {
  const int op = OP_OF(op_arg);
  const long o0 = get_global_id(0) * COLS;
  if (o0 >= n_out) return;
  const int m = (int)min((long)COLS, n_out - o0);
  ACC a[COLS];
  long ai[COLS];
  for (int k = 0; k < COLS; ++k) {
    a[k] = ident(op);
    ai[k] = -1;
  }
  for (long r = 0; r < n_red; ++r) {
    const long b = x0 + r * rstride + o0;
    if (m == COLS) {  // a fixed count: the compiler unrolls and vectorises it
      for (int k = 0; k < COLS; ++k) fold(op, &a[k], &ai[k], (ACC)LOADIN(x, b + k), r);
    } else {
      for (int k = 0; k < m; ++k) fold(op, &a[k], &ai[k], (ACC)LOADIN(x, b + k), r);
    }
  }
  for (int k = 0; k < m; ++k) put(op, a[k], ai[k], scaled, scale, y, o0 + k);
}

// CPU devices, a sum over the leading axis of rows stored one after another (x[r][o], row length n_out): item p adds
// its rows [n_red * p / parts, n_red * (p + 1) / parts) into its own partial row pv[p][.] (in cache), each row read
// front to back; reduce_rows_finish adds the partial rows in order. reduce_columns walked 64 columns per item a row
// apart, a page apart for rows of 1024 floats, which no prefetcher follows (PoCL: 0.41x of the read ceiling).
__kernel void reduce_rows(const long n_out, const long n_red, const long parts, const long x0,
                          __global const SIN* restrict x, __global ACC* restrict pv) {
  const long p = get_global_id(0);
  if (p >= parts) return;
  const long r0 = n_red * p / parts, r1 = n_red * (p + 1) / parts;
  __global ACC* restrict a = pv + p * n_out;
  for (long o = 0; o < n_out; ++o) a[o] = 0;
  for (long r = r0; r < r1; ++r) {
    __global const SIN* restrict row = x + x0 + r * n_out;
    for (long o = 0; o < n_out; ++o) a[o] = ADD(a[o], (ACC)LOADIN(row, o));
  }
}

__kernel void reduce_rows_finish(const long n_out, const long parts, const int scaled, const SCALE_T scale,
                                 __global const ACC* pv, __global SOUT* y) {
  const long o = get_global_id(0);
  if (o >= n_out) return;
  ACC a = pv[o];
  for (long p = 1; p < parts; ++p) a = ADD(a, pv[p * n_out + o]);
  put(RED_sum, a, -1, scaled, scale, y, o);
}

// Line (o, i) of x (outer, len, inner) into y (outer, len + initial, inner): running sums, or products (prod).
__kernel void scan_lines(const long outer, const long len, const long inner, const int initial, const int prod,
                         __global const SIN* x, __global SOUT* y) {
  const long u = get_global_id(0);
  if (u >= outer * inner) return;
  const long o = u / inner, i = u % inner;
  const long xb = o * len * inner + i, yb = o * (len + initial) * inner + i;
  ACC a = prod ? 1 : 0;
  if (initial) STOREOUT(a, y, yb);
  for (long l = 0; l < len; ++l) {
    const ACC v = (ACC)LOADIN(x, xb + l * inner);
    a = prod ? MUL(a, v) : ADD(a, v);
    STOREOUT(a, y, yb + (l + initial) * inner);
  }
}
