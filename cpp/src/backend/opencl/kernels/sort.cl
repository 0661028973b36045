// sort.cl: stable sorts of the lines (outer, len, inner) of an array, NaN the largest value (core/ops.h SortDesc).
// A merge sort: sort_gather copies each line into a contiguous run of (key, position) pairs; every sort_merge pass
// merges neighbouring runs of `width` into runs of 2 * width, one work-item per element, which finds its place by
// a binary search in the other run (left-run elements go before equal right-run ones: stable); sort_scatter writes
// the values and/or positions back in the array's layout. log2(len) passes of n work-items each.
#include "ew_types.cl"

// RAW: the element's bits (16-bit floats are moved as ushort, never converted); KEY: its compare value.
#if defined(TIN_F16)
#define RAW ushort
#define KEY(p, i) vload_half((i), (__global const half*)(p))
#elif defined(TIN_BF16)
#define RAW ushort
#define KEY(p, i) as_float(((uint)(p)[i]) << 16)
#else
#define RAW SIN
#define KEY(p, i) ((p)[i])
#endif

// Whether a goes before b (strictly): NaN is the largest value.
#if IS_FLOAT
#define BEFORE(a, b, desc) ((desc) ? ((isnan(a) && !isnan(b)) || (a) > (b)) : ((isnan(b) && !isnan(a)) || (a) < (b)))
#else
#define BEFORE(a, b, desc) ((desc) ? (a) > (b) : (a) < (b))
#endif

// Element e = line * len + j of the working runs <- x[o, j, i] (line = o * inner + i).
__kernel void sort_gather(const long n, const long len, const long inner, __global const RAW* x,
                          __global RAW* keys, __global long* pos) {
  const long e = get_global_id(0);
  if (e >= n) return;
  const long line = e / len, j = e % len, o = line / inner, i = line % inner;
  keys[e] = x[(o * len + j) * inner + i];
  pos[e] = j;
}

// One merge pass: runs [r * width, (r + 1) * width) of each line, the even run with the odd one after it.
__kernel void sort_merge(const long n, const long len, const long width, const int desc,
                         __global const RAW* keys, __global const long* pos, __global RAW* keys_out,
                         __global long* pos_out) {
  const long e = get_global_id(0);
  if (e >= n) return;
  const long line = e / len, j = e % len, lb = line * len;
  const long run = j / width, pair = (run & ~1L) * width;
  const long other = (run & 1) ? pair : pair + width;            // the partner run's start
  const long other_end = (run & 1) ? pair + width : min(len, pair + 2 * width);
  long dst = j;
  if (other < len) {
    const long k = j - run * width;                              // place within its own run
    const CT me = KEY(keys, lb + j);
    long lo = other, hi = other_end;                             // how many partner elements go first
    if (run & 1) {  // a right-run element: every left-run element not after it
      while (lo < hi) {
        const long mid = (lo + hi) >> 1;
        const CT v = KEY(keys, lb + mid);
        if (!BEFORE(me, v, desc)) lo = mid + 1; else hi = mid;
      }
    } else {  // a left-run element: the right-run elements strictly before it
      while (lo < hi) {
        const long mid = (lo + hi) >> 1;
        const CT v = KEY(keys, lb + mid);
        if (BEFORE(v, me, desc)) lo = mid + 1; else hi = mid;
      }
    }
    dst = pair + k + (lo - other);
  }
  keys_out[lb + dst] = keys[lb + j];
  pos_out[lb + dst] = pos[lb + j];
}

// values[o, j, i] / indices[o, j, i] <- the sorted runs (either may be absent: want_values / want_indices 0).
__kernel void sort_scatter(const long n, const long len, const long inner, const int want_values,
                           const int want_indices, __global const RAW* keys, __global const long* pos,
                           __global RAW* values, __global long* indices) {
  const long e = get_global_id(0);
  if (e >= n) return;
  const long line = e / len, j = e % len, o = line / inner, i = line % inner;
  const long at = (o * len + j) * inner + i;
  if (want_values) values[at] = keys[e];
  if (want_indices) indices[at] = pos[e];
}

// out[j] = the insertion point of v[j] in the ascending `sorted` (n elements, NaN last): the first position whose
// element does not go before v[j] (right 0), or the first whose element v[j] goes before (right 1).
__kernel void searchsorted(const long n, const long m, const int right, __global const RAW* sorted,
                           __global const RAW* v, __global long* out) {
  const long j = get_global_id(0);
  if (j >= m) return;
  const CT me = KEY(v, j);
  long lo = 0, hi = n;
  while (lo < hi) {
    const long mid = lo + ((hi - lo) >> 1);
    const CT e = KEY(sorted, mid);
    if (right ? !BEFORE(me, e, 0) : BEFORE(e, me, 0)) lo = mid + 1; else hi = mid;
  }
  out[j] = lo;
}
