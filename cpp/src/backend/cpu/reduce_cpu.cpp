// Reductions and the running sum on the CPU device (core/reduction.h). Floating inputs accumulate in double and
// integers in int64 (sums and products wrap as NumPy's), whatever the result's type. Two loop orders:
//   along: one output at a time, its reduced elements read in chunks along the innermost reduced dimension (a
//          whole-array or last-axis reduction; a single output's range is split over the threads, the partials
//          combined in order so that argmax keeps the first index);
//   across: a block of consecutive outputs along the innermost kept dimension at once, each reduced element adding
//          a contiguous row to the block's accumulators (a reduction over a leading axis of a row-major array).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_convert.h"
#include "backend/cpu/cpu_loops.h"
#include "backend/cpu/cpu_threads.h"

namespace hetnn {

namespace {

constexpr std::int64_t kChunk = 512;
constexpr std::int64_t kRedPiece = 1 << 16;  // a piece of one output's elements the threads take in turn
constexpr std::int64_t kFewOutputs = 8;       // fewer outputs than this: each output's elements split in pieces
constexpr std::int64_t kWide = 4096;  // a leading-axis sum's block: rows of up to this many outputs at once
constexpr std::int64_t kParallelMin = 1 << 15;

// A leading-axis float32 sum's inner loops, at the processor's vector width: f[j] += four rows' elements (one pass
// over f for four rows: the loop is bound by f's loads and stores), f[j] += one row's, s[j] += f[j] in double.
HETNN_CLONES void add_four_rows(float* f, const float* a, const float* b, const float* c, const float* e,
                                std::int64_t m) {
  for (std::int64_t j = 0; j < m; ++j) f[j] += (a[j] + b[j]) + (c[j] + e[j]);
}
HETNN_CLONES void add_row(float* f, const float* a, std::int64_t m) {
  for (std::int64_t j = 0; j < m; ++j) f[j] += a[j];
}
HETNN_CLONES void widen_add(double* s, const float* f, std::int64_t m) {
  for (std::int64_t j = 0; j < m; ++j) s[j] += static_cast<double>(f[j]);
}

// m elements (any number) of a buffer of type t from element `off` at element stride `st`, as A.
template <class A>
void gather(DType t, const void* p, std::int64_t off, std::int64_t st, std::int64_t m, A* out) {
  auto run = [&](const auto* q) {
    q += off;
    if (st == 1) {
      for (std::int64_t j = 0; j < m; ++j) out[j] = static_cast<A>(q[j]);
    } else {
      for (std::int64_t j = 0; j < m; ++j) out[j] = static_cast<A>(q[j * st]);
    }
  };
  switch (t) {
    case DType::f32: return run(static_cast<const float*>(p));
    case DType::f64: return run(static_cast<const double*>(p));
    case DType::i32: return run(static_cast<const std::int32_t*>(p));
    case DType::i64: return run(static_cast<const std::int64_t*>(p));
    case DType::u8:
    case DType::b8: return run(static_cast<const std::uint8_t*>(p));
    case DType::i8: return run(static_cast<const std::int8_t*>(p));
    case DType::f16:
    case DType::bf16: {
      const auto* q = static_cast<const std::uint16_t*>(p) + off;
      float f[kChunk];
      for (std::int64_t j0 = 0; j0 < m; j0 += kChunk) {
        const std::int64_t c = std::min(kChunk, m - j0);
        if (st == 1) {
          widen_to_f32(t, q + j0, f, c);
        } else {
          for (std::int64_t j = 0; j < c; ++j) widen_to_f32(t, q + (j0 + j) * st, f + j, 1);
        }
        for (std::int64_t j = 0; j < c; ++j) out[j0 + j] = static_cast<A>(f[j]);
      }
      return;
    }
  }
}

template <class A>
constexpr bool kFloat = std::is_floating_point_v<A>;

// Integer sums and products wrap (two's complement, as NumPy's).
template <class A>
A add(A a, A b) {
  if constexpr (kFloat<A>) return a + b;
  else return static_cast<A>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
template <class A>
A mul(A a, A b) {
  if constexpr (kFloat<A>) return a * b;
  else return static_cast<A>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
}
template <class A>
bool isnan_(A v) {
  if constexpr (kFloat<A>) return v != v;
  else return false;
}
// v replaces the running maximum (minimum) b: larger (smaller), or the first NaN.
template <class A>
bool beats(RedOp op, A v, A b) {
  if (isnan_(b)) return false;
  if (isnan_(v)) return true;
  return op == RedOp::max || op == RedOp::argmax ? v > b : v < b;
}

// A running result: the value, and for argmax / argmin the flat index of the best so far (-1 before the first).
template <class A>
struct Part {
  A v;
  std::int64_t i = -1;
};

template <class A>
Part<A> identity(RedOp op) {
  switch (op) {
    case RedOp::prod:
    case RedOp::all: return {A(1)};
    default: return {A(0)};
  }
}

// Folds t[0, m) (reduced elements r0, r0 + 1, ...) into p.
template <class A>
void fold(RedOp op, const A* t, std::int64_t m, std::int64_t r0, Part<A>& p) {
  switch (op) {
    case RedOp::sum:
    case RedOp::sumsq: {
      A s[8] = {};  // eight independent sums: a vector's lanes
      std::int64_t j = 0;
      if (op == RedOp::sum) {
        for (; j + 8 <= m; j += 8)
          for (int k = 0; k < 8; ++k) s[k] = add(s[k], t[j + k]);
        for (; j < m; ++j) s[0] = add(s[0], t[j]);
      } else {
        for (; j + 8 <= m; j += 8)
          for (int k = 0; k < 8; ++k) s[k] += t[j + k] * t[j + k];
        for (; j < m; ++j) s[0] += t[j] * t[j];
      }
      p.v = add(p.v, add(add(add(s[0], s[1]), add(s[2], s[3])), add(add(s[4], s[5]), add(s[6], s[7]))));
      return;
    }
    case RedOp::prod:
      for (std::int64_t j = 0; j < m; ++j) p.v = mul(p.v, t[j]);
      return;
    case RedOp::all: {
      bool all = true;
      for (std::int64_t j = 0; j < m; ++j) all &= t[j] != A(0);
      if (!all) p.v = A(0);
      return;
    }
    case RedOp::any: {
      bool any = false;
      for (std::int64_t j = 0; j < m; ++j) any |= t[j] != A(0);
      if (any) p.v = A(1);
      return;
    }
    case RedOp::max:
    case RedOp::min:
    case RedOp::argmax:
    case RedOp::argmin:
      for (std::int64_t j = 0; j < m; ++j)
        if (p.i < 0 || beats(op, t[j], p.v)) p = {t[j], r0 + j};
      return;
  }
}

// p then q (q's elements come after p's).
template <class A>
void merge(RedOp op, Part<A>& p, const Part<A>& q) {
  switch (op) {
    case RedOp::sum:
    case RedOp::sumsq: p.v = add(p.v, q.v); return;
    case RedOp::prod: p.v = mul(p.v, q.v); return;
    case RedOp::all: p.v = (p.v != A(0) && q.v != A(0)) ? A(1) : A(0); return;
    case RedOp::any: p.v = (p.v != A(0) || q.v != A(0)) ? A(1) : A(0); return;
    default:
      if (q.i >= 0 && (p.i < 0 || beats(op, q.v, p.v))) p = q;
      return;
  }
}

// The coalesced reduced dimensions split as (outer dimensions, the innermost one).
struct Inner {
  Shape outer;
  std::vector<std::int64_t> os;
  std::int64_t len, st;
  explicit Inner(const ReduceDesc& d)
      : outer(d.rshape.begin(), d.rshape.end() - 1), os(d.rs.begin(), d.rs.end() - 1), len(d.rshape.back()),
        st(d.rs.back()) {
    if (outer.empty()) {
      outer = {1};
      os = {0};
    }
  }
};

// sum of p[0, n) in double, read straight from the buffer: 16 independent sums in T over blocks of 256 elements
// (16 additions each: float32's error stays within 16 ulp of a block's magnitude), each block's total added in
// double. Summing float32 in T vectorises on baseline x86-64; widening every element to double did not (6.9 GB/s a
// thread against 17 for float64 data).
template <class T>
inline __attribute__((always_inline)) double sum_contiguous(const T* p, std::int64_t n) {
  constexpr std::int64_t kBlock = 256;
  double total = 0;
  std::int64_t j = 0;
  for (; j + kBlock <= n; j += kBlock) {
    T s[16] = {};
    for (std::int64_t i = 0; i < kBlock; i += 16)
      for (int k = 0; k < 16; ++k) s[k] += p[j + i + k];
    for (int w = 8; w > 0; w /= 2)
      for (int k = 0; k < w; ++k) s[k] += s[k + w];
    total += static_cast<double>(s[0]);
  }
  for (; j < n; ++j) total += static_cast<double>(p[j]);
  return total;
}
// at the processor's vector width (the same additions in the same order at every width: the same bits)
HETNN_CLONES double sum_f32(const float* p, std::int64_t n) { return sum_contiguous(p, n); }
HETNN_CLONES double sum_f64(const double* p, std::int64_t n) { return sum_contiguous(p, n); }

// The reduced elements [r0, r1) of the output whose first element sits at `base`.
template <class A>
Part<A> along(const ReduceDesc& d, const Inner& in, const void* x, std::int64_t base, std::int64_t r0,
              std::int64_t r1) {
  Part<A> p = identity<A>(d.op);
  if constexpr (kFloat<A>) {
    // the common case (a sum along contiguous float32 / float64 elements): no gather into a buffer first
    if (d.op == RedOp::sum && in.st == 1 && in.outer.size() == 1 && in.outer[0] == 1 &&
        (d.in == DType::f32 || d.in == DType::f64)) {
      p.v = d.in == DType::f32 ? sum_f32(static_cast<const float*>(x) + base + r0, r1 - r0)
                               : sum_f64(static_cast<const double*>(x) + base + r0, r1 - r0);
      return p;
    }
  }
  A t[kChunk];
  Walker w(in.outer, in.os, r0 / in.len);
  std::int64_t j = r0 % in.len;
  for (std::int64_t r = r0; r < r1;) {
    const std::int64_t m = std::min({kChunk, in.len - j, r1 - r});
    gather(d.in, x, base + w.off + j * in.st, in.st, m, t);
    fold(d.op, t, m, r, p);
    r += m;
    j += m;
    if (j == in.len) {
      j = 0;
      w.next();
    }
  }
  return p;
}

// The result of p as the output element o.
template <class A>
void put(const ReduceDesc& d, const Part<A>& p, void* out, std::int64_t o) {
  if (d.op == RedOp::argmax || d.op == RedOp::argmin) {
    static_cast<std::int64_t*>(out)[o] = p.i;
  } else if ((d.op == RedOp::sum || d.op == RedOp::sumsq) && d.scale != 1.0) {
    const double v = static_cast<double>(p.v) * d.scale;
    store(d.out, out, o, 1, &v);
  } else {
    store(d.out, out, o, 1, &p.v);
  }
}

template <class A>
void reduce_along(const ReduceDesc& d, const void* x, void* out) {
  const Inner in(d);
  const Shape& ks = d.kshape;
  auto base = [&](std::int64_t o) { return Walker(ks, d.ks, o).off; };
  // many outputs: each on one thread; few: each split into pieces. The choice depends on the sizes alone, so a
  // result is the same bits on any number of threads.
  if (d.n_out >= kFewOutputs || d.n_red < kParallelMin) {
    parallel_ranges(
        d.n_out,
        [&](std::int64_t b, std::int64_t e) {
          Walker w(ks, d.ks, b);
          for (std::int64_t o = b; o < e; ++o, w.next()) put(d, along<A>(d, in, x, w.off, 0, d.n_red), out, o);
        },
        d.n_out * d.n_red >= kParallelMin ? 2 : std::numeric_limits<std::int64_t>::max());
    return;
  }
  // few outputs, many elements each: every output's elements in pieces the threads take as each finishes one (a
  // thread its VM preempts holds back a piece, not half of the array), merged in the pieces' order: the same bits
  // whatever the schedule and the number of threads
  const std::int64_t pieces = (d.n_red + kRedPiece - 1) / kRedPiece;
  std::vector<Part<A>> parts(static_cast<std::size_t>(pieces));
  for (std::int64_t o = 0; o < d.n_out; ++o) {
    const std::int64_t b0 = base(o);
    parallel_pieces(d.n_red, kRedPiece, [&](std::int64_t r0, std::int64_t r1) {
      parts[static_cast<std::size_t>(r0 / kRedPiece)] = along<A>(d, in, x, b0, r0, r1);
    });
    Part<A> p = parts[0];
    for (std::int64_t k = 1; k < pieces; ++k) merge(d.op, p, parts[static_cast<std::size_t>(k)]);
    put(d, p, out, o);
  }
}

template <class A>
void reduce_across(const ReduceDesc& d, const void* x, void* out) {
  const Shape ko(d.kshape.begin(), d.kshape.end() - 1);
  const std::vector<std::int64_t> kos(d.ks.begin(), d.ks.end() - 1);
  const Shape kouter = ko.empty() ? Shape{1} : ko;
  const std::vector<std::int64_t> kostr = ko.empty() ? std::vector<std::int64_t>{0} : kos;
  const std::int64_t len = d.kshape.back(), kst = d.ks.back();
  const bool plain = d.op == RedOp::sum || d.op == RedOp::sumsq;
  // a block: `width` consecutive outputs; sums take whole rows of up to kWide (each thread then streams whole rows)
  const std::int64_t width = plain ? std::min(len, kWide) : kChunk;
  const std::int64_t per = (len + width - 1) / width, blocks = (d.n_out / len) * per;
  // The block's outputs over the reduced elements [r0, r1), into dst[0, m).
  auto block = [&](std::int64_t blk, std::int64_t r0, std::int64_t r1, Part<A>* dst) {
    std::vector<A> tv(static_cast<std::size_t>(width)), sv(static_cast<std::size_t>(width));
    A* t = tv.data();
    A* sums = sv.data();  // sum and sumsq in a plain array (the loop the compiler vectorises)
    const std::int64_t q = blk / per, j0 = (blk % per) * width, m = std::min(width, len - j0);
    const std::int64_t base = Walker(kouter, kostr, q).off + j0 * kst;
    std::fill(dst, dst + m, identity<A>(d.op));
    std::fill(sums, sums + m, A(0));
    Walker w(d.rshape, d.rs, r0);
    if constexpr (kFloat<A>) {
      if (d.op == RedOp::sum && d.in == DType::f32 && kst == 1) {
        // contiguous float32 rows: added in float over runs of 16 rows (vectorised; 16 additions keep the error
        // within 16 ulp of a run's magnitude), each run's sums added in double
        std::vector<float> fv(static_cast<std::size_t>(m));
        float* f = fv.data();
        const float* px = static_cast<const float*>(x) + base;
        for (std::int64_t r = r0; r < r1;) {
          const std::int64_t run = std::min<std::int64_t>(16, r1 - r);
          std::fill(f, f + m, 0.0f);
          std::int64_t k = 0;
          for (; k + 4 <= run; k += 4, r += 4) {
            const float* rows[4];
            for (const float*& row : rows) {
              row = px + w.off;
              w.next();
            }
            add_four_rows(f, rows[0], rows[1], rows[2], rows[3], m);
          }
          for (; k < run; ++k, ++r, w.next()) add_row(f, px + w.off, m);
          if constexpr (std::is_same_v<A, double>) widen_add(sums, f, m);
          else for (std::int64_t j = 0; j < m; ++j) sums[j] += static_cast<A>(f[j]);
        }
        for (std::int64_t j = 0; j < m; ++j) dst[j].v = sums[j];
        return m;
      }
    }
    for (std::int64_t r = r0; r < r1; ++r, w.next()) {
      gather(d.in, x, base + w.off, kst, m, t);
      if (d.op == RedOp::sum) {
        for (std::int64_t j = 0; j < m; ++j) sums[j] = add(sums[j], t[j]);
      } else if (d.op == RedOp::sumsq) {
        for (std::int64_t j = 0; j < m; ++j) sums[j] += t[j] * t[j];
      } else {
        for (std::int64_t j = 0; j < m; ++j) fold(d.op, t + j, 1, r, dst[j]);
      }
    }
    if (plain)
      for (std::int64_t j = 0; j < m; ++j) dst[j].v = sums[j];
    return m;
  };
  const std::int64_t min_par = d.n_out * d.n_red >= kParallelMin ? 2 : std::numeric_limits<std::int64_t>::max();
  const int nt = omp_get_max_threads();
  // fewer blocks than threads (few, long columns): each block's rows are split over the threads as well
  const std::int64_t split = blocks >= nt || d.n_red < 64 * nt ? 1 : (nt + blocks - 1) / blocks;
  if (split == 1) {
    parallel_ranges(
        blocks,
        [&](std::int64_t b, std::int64_t e) {
          std::vector<Part<A>> acc(static_cast<std::size_t>(width));
          for (std::int64_t blk = b; blk < e; ++blk) {
            const std::int64_t m = block(blk, 0, d.n_red, acc.data());
            const std::int64_t o0 = (blk / per) * len + (blk % per) * width;
            for (std::int64_t j = 0; j < m; ++j) put(d, acc[j], out, o0 + j);
          }
        },
        min_par);
    return;
  }
  std::vector<Part<A>> parts(static_cast<std::size_t>(split * blocks * width));
  parallel_ranges(
      blocks * split,
      [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t u = b; u < e; ++u) {
          const std::int64_t blk = u / split, c = u % split;
          block(blk, d.n_red * c / split, d.n_red * (c + 1) / split, parts.data() + u * width);
        }
      },
      min_par);
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t o0 = (blk / per) * len + (blk % per) * width, m = std::min(width, len - (blk % per) * width);
    for (std::int64_t j = 0; j < m; ++j) {
      Part<A> p = parts[static_cast<std::size_t>(blk * split * width + j)];
      for (std::int64_t c = 1; c < split; ++c)
        merge(d.op, p, parts[static_cast<std::size_t>((blk * split + c) * width + j)]);
      put(d, p, out, o0 + j);
    }
  }
}

template <class A>
void reduce_as(const ReduceDesc& d, const void* x, void* out) {
  if (d.n_red == 0) {  // the identity everywhere (a zero-extent reduced dimension: no walker over it)
    for (std::int64_t o = 0; o < d.n_out; ++o) put(d, identity<A>(d.op), out, o);
    return;
  }
  // across when the outputs' innermost dimension is the more contiguous one and long enough to fill a block
  if (d.kshape.back() >= 16 && d.ks.back() < d.rs.back() && d.n_out > 1) return reduce_across<A>(d, x, out);
  reduce_along<A>(d, x, out);
}

template <class A>
void scan_as(const ScanDesc& d, const void* x, void* out) {
  const std::int64_t ii = d.include_initial ? 1 : 0, olen = d.len + ii;
  const std::int64_t per = (d.inner + kChunk - 1) / kChunk;
  parallel_ranges(
      d.outer * per,
      [&](std::int64_t b, std::int64_t e) {
        A acc[kChunk], t[kChunk];
        for (std::int64_t u = b; u < e; ++u) {
          const std::int64_t o = u / per, j0 = (u % per) * kChunk, m = std::min(kChunk, d.inner - j0);
          std::fill(acc, acc + m, A(d.prod ? 1 : 0));
          const std::int64_t xb = o * d.len * d.inner + j0, yb = o * olen * d.inner + j0;
          if (ii) store(d.out, out, yb, m, acc);
          if (d.inner == 1) {  // one contiguous line: chunks along it
            for (std::int64_t l = 0; l < d.len; l += kChunk) {
              const std::int64_t c = std::min(kChunk, d.len - l);
              gather(d.in, x, xb + l, 1, c, t);
              if (d.prod) for (std::int64_t j = 0; j < c; ++j) t[j] = acc[0] = mul(acc[0], t[j]);
              else for (std::int64_t j = 0; j < c; ++j) t[j] = acc[0] = add(acc[0], t[j]);
              store(d.out, out, yb + ii + l, c, t);
            }
            continue;
          }
          for (std::int64_t l = 0; l < d.len; ++l) {
            gather(d.in, x, xb + l * d.inner, 1, m, t);
            if (d.prod) for (std::int64_t j = 0; j < m; ++j) acc[j] = mul(acc[j], t[j]);
            else for (std::int64_t j = 0; j < m; ++j) acc[j] = add(acc[j], t[j]);
            store(d.out, out, yb + (l + ii) * d.inner, m, acc);
          }
        }
      },
      d.outer * d.len * d.inner >= kParallelMin ? 2 : std::numeric_limits<std::int64_t>::max());
}

}  // namespace

void CpuBackend::reduce(const ReduceDesc& d, const Buffer& x, Buffer& out) {
  cpu_threads::apply();
  const std::uint64_t bytes = static_cast<std::uint64_t>(d.n_out) * static_cast<std::uint64_t>(d.n_red) *
                                  dtype_size(d.in) +
                              static_cast<std::uint64_t>(d.n_out) * dtype_size(d.out);
  timed(red_name(d.op), bytes, [&] {
    const void* px = static_cast<const unsigned char*>(x.host_ptr()) + d.off * dtype_size(d.in);
    if (is_floating(d.in)) reduce_as<double>(d, px, out.host_ptr());
    else reduce_as<std::int64_t>(d, px, out.host_ptr());
  }, d.n_out * d.n_red >= kParallelMin);  // below, no OpenMP region (the split still follows the team's size)
}

void CpuBackend::cumulative_sum(const ScanDesc& d, const Buffer& x, Buffer& out) {
  cpu_threads::apply();
  const std::uint64_t n = static_cast<std::uint64_t>(d.outer * d.len * d.inner);
  timed(d.prod ? "cumulative_prod" : "cumulative_sum", n * (dtype_size(d.in) + dtype_size(d.out)), [&] {
    if (is_floating(d.in)) scan_as<double>(d, x.host_ptr(), out.host_ptr());
    else scan_as<std::int64_t>(d, x.host_ptr(), out.host_ptr());
  });
}

}  // namespace hetnn
