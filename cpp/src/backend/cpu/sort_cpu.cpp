// sort / argsort on the CPU device: each line (outer, inner) gathered with its positions, stably sorted
// (std::stable_sort over the compare type: float for 16-bit data, NaN the largest value), written back; lines in
// parallel.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_loops.h"
#include "backend/cpu/cpu_threads.h"
#include "core/errors.h"
#include "core/half.h"

namespace hetnn {

namespace {

float bf16_value(std::uint16_t s) {
  const std::uint32_t u = static_cast<std::uint32_t>(s) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

template <class S>
auto key_of(S s) {
  if constexpr (std::is_floating_point_v<S>) return s;
  else return static_cast<std::int64_t>(s);
}

// NaN is the largest value: ascending puts it last, descending first.
template <class V>
bool goes_before(V a, V b, bool descending) {
  if constexpr (std::is_floating_point_v<V>) {
    const bool na = std::isnan(a), nb = std::isnan(b);
    if (descending) return (na && !nb) || a > b;
    return (nb && !na) || a < b;
  } else {
    return descending ? a > b : a < b;
  }
}

template <class V>
struct Item {
  V key;
  std::int64_t pos;
};

// Items [0, n) sorted stably: in `parts` chunks on as many threads, then merged pairwise (left chunk first on ties).
template <class V>
void stable_sort_items(std::vector<Item<V>>& a, std::vector<Item<V>>& tmp, int parts, bool descending) {
  const auto before = [descending](const Item<V>& x, const Item<V>& y) { return goes_before(x.key, y.key, descending); };
  const std::int64_t n = static_cast<std::int64_t>(a.size());
  if (parts <= 1 || n < 8192) {
    std::stable_sort(a.begin(), a.end(), before);
    return;
  }
  std::vector<std::int64_t> cut(static_cast<std::size_t>(parts) + 1);
  for (int p = 0; p <= parts; ++p) cut[static_cast<std::size_t>(p)] = n * p / parts;
#pragma omp parallel for num_threads(parts) schedule(static, 1)
  for (int p = 0; p < parts; ++p)
    std::stable_sort(a.begin() + cut[static_cast<std::size_t>(p)], a.begin() + cut[static_cast<std::size_t>(p) + 1],
                     before);
  tmp.resize(a.size());
  for (std::size_t width = 1; width < static_cast<std::size_t>(parts); width *= 2) {
    const int pairs = static_cast<int>((static_cast<std::size_t>(parts) + 2 * width - 1) / (2 * width));
#pragma omp parallel for num_threads(pairs) schedule(static, 1)
    for (int q = 0; q < pairs; ++q) {
      const std::size_t lo = static_cast<std::size_t>(q) * 2 * width;
      const std::size_t mid = std::min(lo + width, static_cast<std::size_t>(parts));
      const std::size_t hi = std::min(lo + 2 * width, static_cast<std::size_t>(parts));
      std::merge(a.begin() + cut[lo], a.begin() + cut[mid], a.begin() + cut[mid], a.begin() + cut[hi],
                 tmp.begin() + cut[lo], before);  // std::merge takes the left range first on ties: stable
    }
    a.swap(tmp);
  }
}

// S: storage type; key(s): its compare value. Lines in parallel; a single long line is split over the threads.
template <class S, class Key>
void sort_lines(const SortDesc& d, const S* x, S* values, std::int64_t* indices, Key key) {
  using V = decltype(key(S{}));
  const std::int64_t lines = d.outer * d.inner, len = d.len;
  const int threads = cpu_threads::get();
  const int parts = lines >= threads ? 1 : std::max(1, threads / static_cast<int>(lines));
  const auto one = [&](std::int64_t l, std::vector<Item<V>>& items, std::vector<Item<V>>& tmp) {
    const std::int64_t o = l / d.inner, i = l % d.inner, base = o * len * d.inner + i;
    items.resize(static_cast<std::size_t>(len));
    for (std::int64_t j = 0; j < len; ++j) items[static_cast<std::size_t>(j)] = {key(x[base + j * d.inner]), j};
    stable_sort_items(items, tmp, parts, d.descending);
    for (std::int64_t j = 0; j < len; ++j) {
      const std::int64_t p = items[static_cast<std::size_t>(j)].pos;
      if (values) values[base + j * d.inner] = x[base + p * d.inner];
      if (indices) indices[base + j * d.inner] = p;
    }
  };
  if (parts > 1) {  // few lines: each sorted by all threads in turn
    std::vector<Item<V>> items, tmp;
    for (std::int64_t l = 0; l < lines; ++l) one(l, items, tmp);
    return;
  }
  parallel_ranges(lines, [&](std::int64_t l0, std::int64_t l1) {
    std::vector<Item<V>> items, tmp;
    for (std::int64_t l = l0; l < l1; ++l) one(l, items, tmp);
  });
}

// out[j] = the insertion point of v[j] in sorted (ascending, NaN last): lower bound (left) or upper bound (right).
template <class S, class Key>
void search_as(const SearchDesc& d, const Buffer& sorted, const Buffer& v, Buffer& out, Key key) {
  const S* s = static_cast<const S*>(sorted.host_ptr());
  const S* q = static_cast<const S*>(v.host_ptr());
  auto* o = static_cast<std::int64_t*>(out.host_ptr());
  parallel_ranges(d.m, [&](std::int64_t j0, std::int64_t j1) {
    for (std::int64_t j = j0; j < j1; ++j) {
      const auto me = key(q[j]);
      std::int64_t lo = 0, hi = d.n;
      while (lo < hi) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        const auto e = key(s[mid]);
        // left: past every element that goes before me; right: past every element that me does not go before
        if (d.right ? !goes_before(me, e, false) : goes_before(e, me, false)) lo = mid + 1;
        else hi = mid;
      }
      o[j] = lo;
    }
  });
}

template <class S, class Key>
void sort_as(const SortDesc& d, const Buffer& x, Buffer* values, Buffer* indices, Key key) {
  sort_lines<S>(d, static_cast<const S*>(x.host_ptr()), values ? static_cast<S*>(values->host_ptr()) : nullptr,
                indices ? static_cast<std::int64_t*>(indices->host_ptr()) : nullptr, key);
}

template <class S>
struct Tag {
  using type = S;
};

// Calls fn(Tag<S>{}, key) for dtype t: S its storage type, key(s) its compare value.
template <class Fn>
void by_dtype(DType t, const char* op, Fn&& fn) {
  const auto same = [](auto s) { return key_of(s); };
  switch (t) {
    case DType::f32: return fn(Tag<float>{}, same);
    case DType::f64: return fn(Tag<double>{}, same);
    case DType::f16: return fn(Tag<std::uint16_t>{}, [](std::uint16_t s) { return half_bits_to_float(s); });
    case DType::bf16: return fn(Tag<std::uint16_t>{}, bf16_value);
    case DType::i8: return fn(Tag<std::int8_t>{}, same);
    case DType::u8:
    case DType::b8: return fn(Tag<std::uint8_t>{}, same);
    case DType::i32: return fn(Tag<std::int32_t>{}, same);
    case DType::i64: return fn(Tag<std::int64_t>{}, same);
    default: throw TypeError(std::string("hetnn.") + op + ": unsupported dtype " + dtype_name(t));
  }
}

}  // namespace

void CpuBackend::searchsorted(const SearchDesc& d, const Buffer& sorted, const Buffer& v, Buffer& out) {
  cpu_threads::apply();
  timed("searchsorted", static_cast<std::uint64_t>(d.m) * (dtype_size(d.dtype) + 8), [&] {
    by_dtype(d.dtype, "searchsorted", [&](auto tag, auto key) {
      search_as<typename decltype(tag)::type>(d, sorted, v, out, key);
    });
  });
}

void CpuBackend::sort(const SortDesc& d, const Buffer& x, Buffer* values, Buffer* indices) {
  cpu_threads::apply();
  const std::uint64_t n = static_cast<std::uint64_t>(d.outer * d.len * d.inner);
  timed("sort", n * (dtype_size(d.dtype) + (values ? dtype_size(d.dtype) : 8)), [&] {
    by_dtype(d.dtype, "sort", [&](auto tag, auto key) {
      sort_as<typename decltype(tag)::type>(d, x, values, indices, key);
    });
  });
}

}  // namespace hetnn
