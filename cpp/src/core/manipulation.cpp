// The indexing and manipulation front (core/manipulation.h): index arithmetic, axes and shapes checked here, the
// data moved by the backends' copy_strided.
#include "core/manipulation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "core/errors.h"
#include "core/nn.h"
#include "core/reduction.h"

namespace hetnn {

namespace {

using Strides = std::vector<std::int64_t>;

std::string who(const char* name) { return std::string("hetnn.") + name; }

void check_valid(const char* name, const Array& x, const char* arg = "x") {
  if (!x.valid()) throw ValueError(who(name) + ": " + arg + " is not a valid array");
}

// Strides reading src (its own strides) as broadcast to `to` (0 along broadcast dimensions), or ValueError.
Strides broadcast_strides(const char* name, const Array& src, const Shape& to) {
  const Shape& s = src.shape();
  if (s.size() > to.size())
    throw ValueError(who(name) + ": a value of shape " + shape_str(s) + " cannot be broadcast to " + shape_str(to));
  Strides st(to.size(), 0);
  const Strides& cs = src.strides();
  for (std::size_t k = 0; k < s.size(); ++k) {
    const std::size_t o = to.size() - s.size() + k;
    if (s[k] == to[o]) st[o] = s[k] == 1 ? 0 : cs[k];
    else if (s[k] != 1)
      throw ValueError(who(name) + ": a value of shape " + shape_str(s) + " cannot be broadcast to " + shape_str(to));
  }
  return st;
}

int norm_axis(const char* name, int axis, int ndim, const char* arg = "axis") {
  if (axis < -ndim || axis >= ndim)
    throw AxisError(who(name) + ": " + arg + " " + std::to_string(axis) + " is out of bounds for an array of " +
                    std::to_string(ndim) + " dimension" + (ndim == 1 ? "" : "s"));
  return axis < 0 ? axis + ndim : axis;
}

// A new dense array of `shape` read from x's memory at off + idx . st (storage elements: x's own offset and
// strides already applied by the caller).
Array gather(const char* name, const Array& x, const Shape& shape, const Strides& st, std::int64_t off) {
  Array y = Array::empty(x.device(), shape, x.dtype());
  move_elements(name, x, st, off, y, shape, dense_strides(shape), 0);
  return y;
}

// A selection of an array: the shape, strides and offset of the elements an index picks.
struct View {
  Shape shape;
  Strides st;
  std::int64_t off = 0;
};

// Python's slice.indices for an axis of extent n, then the number of elements picked.
void slice_axis(const IndexItem& it, std::int64_t n, std::int64_t& start, std::int64_t& step, std::int64_t& len) {
  step = it.step.value_or(1);
  if (step == 0) throw ValueError("hetnn.Array[...]: a slice step cannot be zero");
  const std::int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? n : n - 1;
  auto bound = [&](const std::optional<std::int64_t>& v, std::int64_t dflt) {
    if (!v) return dflt;
    std::int64_t b = *v;
    if (b < 0) {
      b = b < std::numeric_limits<std::int64_t>::min() + n ? lower : b + n;
      return std::max(b, lower);
    }
    return std::min(b, upper);
  };
  start = bound(it.start, step > 0 ? lower : upper);
  const std::int64_t stop = bound(it.stop, step > 0 ? upper : lower);
  if (step > 0) len = stop > start ? (stop - start - 1) / step + 1 : 0;
  else len = start > stop ? (start - stop - 1) / (-step) + 1 : 0;
}

// The elements x[key] picks, in x's storage (its offset and strides applied).
View plan(const Array& x, const Index& key, const char* name) {
  const Shape& shape = x.shape();
  const int ndim = static_cast<int>(shape.size());
  int consumed = 0, ellipses = 0;
  for (const IndexItem& it : key) {
    if (it.kind == IndexItem::Kind::integer || it.kind == IndexItem::Kind::slice) ++consumed;
    if (it.kind == IndexItem::Kind::ellipsis) ++ellipses;
  }
  if (ellipses > 1) throw IndexError(who(name) + ": an index can only have a single ellipsis ('...')");
  if (consumed > ndim)
    throw IndexError(who(name) + ": too many indices for an array of " + std::to_string(ndim) + " dimension" +
                     (ndim == 1 ? "" : "s") + ": " + std::to_string(consumed) + " were indexed");
  const Strides& cs = x.strides();
  View v;
  v.off = x.offset();
  int axis = 0;
  auto whole = [&](int count) {
    for (int i = 0; i < count; ++i, ++axis) {
      v.shape.push_back(shape[axis]);
      v.st.push_back(cs[axis]);
    }
  };
  for (const IndexItem& it : key) {
    switch (it.kind) {
      case IndexItem::Kind::ellipsis: whole(ndim - consumed); break;
      case IndexItem::Kind::newaxis:
        v.shape.push_back(1);
        v.st.push_back(0);
        break;
      case IndexItem::Kind::integer: {
        const std::int64_t n = shape[axis];
        if (it.index < -n || it.index >= n)
          throw IndexError(who(name) + ": index " + std::to_string(it.index) + " is out of bounds for axis " +
                           std::to_string(axis) + " with size " + std::to_string(n));
        v.off += (it.index < 0 ? it.index + n : it.index) * cs[axis];
        ++axis;
        break;
      }
      case IndexItem::Kind::slice: {
        std::int64_t start = 0, step = 1, len = 0;
        slice_axis(it, shape[axis], start, step, len);
        if (len > 0) v.off += start * cs[axis];
        v.shape.push_back(len);
        v.st.push_back(cs[axis] * step);
        ++axis;
        break;
      }
    }
  }
  whole(ndim - axis);  // the axes after the last index
  return v;
}

DType promoted(const char* name, const std::vector<Array>& xs) {
  DType t = xs[0].dtype();
  for (std::size_t i = 1; i < xs.size(); ++i) {
    if (xs[i].device() != xs[0].device())
      throw TypeError(who(name) + ": the arrays are on different devices (" + xs[0].device()->id() + " and " +
                      xs[i].device()->id() + "); move them with .to(device) first");
    t = result_type(t, xs[i].dtype());
  }
  return t;
}

}  // namespace

Array getitem(const Array& x, const Index& key) {
  check_valid("Array.__getitem__", x);
  const View v = plan(x, key, "Array.__getitem__");
  return x.view(v.shape, v.st, v.off);
}

void setitem(Array& x, const Index& key, const Array& value) {
  const char* name = "Array.__setitem__";
  check_valid(name, x);
  check_valid(name, value, "value");
  if (value.device() != x.device())
    throw TypeError(who(name) + ": the value is on " + value.device()->id() + ", the array on " + x.device()->id() +
                    "; move it with .to(device) first");
  const View v = plan(x, key, name);
  Array src = value.dtype() == x.dtype() ? value : astype(value, x.dtype());
  if (src.same_memory(x)) src = src.copy();  // x[1:] = x[:-1]: read everything before writing
  const Strides ss = broadcast_strides(name, src, v.shape);
  move_elements(name, src, ss, src.offset(), x, v.shape, v.st, v.off);
}

Array permute_dims(const Array& x, const std::vector<int>& axes) {
  check_valid("permute_dims", x);
  const int ndim = x.ndim();
  if (static_cast<int>(axes.size()) != ndim)
    throw ValueError("hetnn.permute_dims: axes must list each of the " + std::to_string(ndim) +
                     " axes once, got " + std::to_string(axes.size()) + " axes");
  std::vector<bool> seen(static_cast<std::size_t>(ndim), false);
  Shape shape;
  Strides st;
  const Strides& cs = x.strides();
  for (int a : axes) {
    const int k = norm_axis("permute_dims", a, ndim);
    if (seen[static_cast<std::size_t>(k)])
      throw ValueError("hetnn.permute_dims: axis " + std::to_string(a) + " is given twice");
    seen[static_cast<std::size_t>(k)] = true;
    shape.push_back(x.shape()[k]);
    st.push_back(cs[k]);
  }
  return x.view(shape, st, x.offset());
}

Array matrix_transpose(const Array& x) {
  check_valid("matrix_transpose", x);
  if (x.ndim() < 2)
    throw ValueError("hetnn.matrix_transpose: x must have at least 2 dimensions, got shape " + shape_str(x.shape()));
  Shape shape = x.shape();
  Strides st = x.strides();
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  std::swap(st[st.size() - 1], st[st.size() - 2]);
  return x.view(shape, st, x.offset());
}

Array flip(const Array& x, const std::optional<std::vector<int>>& axes) {
  check_valid("flip", x);
  const int ndim = x.ndim();
  std::vector<bool> rev(static_cast<std::size_t>(ndim), !axes);
  if (axes) {
    for (int a : *axes) {
      const int k = norm_axis("flip", a, ndim);
      if (rev[static_cast<std::size_t>(k)]) throw ValueError("hetnn.flip: axis " + std::to_string(a) + " is given twice");
      rev[static_cast<std::size_t>(k)] = true;
    }
  }
  Strides st = x.strides();
  std::int64_t off = x.offset();
  for (int k = 0; k < ndim; ++k) {
    if (!rev[static_cast<std::size_t>(k)] || x.shape()[k] == 0) continue;
    off += (x.shape()[k] - 1) * st[k];
    st[k] = -st[k];
  }
  return x.view(x.shape(), st, off);
}

Array concat(const std::vector<Array>& xs, std::optional<int> axis) {
  if (xs.empty()) throw ValueError("hetnn.concat: needs at least one array");
  for (const Array& a : xs) check_valid("concat", a, "each array");
  const DType t = promoted("concat", xs);
  std::vector<Array> parts;
  for (const Array& a : xs) {
    Array p = a.dtype() == t ? a : astype(a, t);
    parts.push_back(axis ? p : p.reshape({p.size()}));
  }
  const int ndim = parts[0].ndim();
  if (ndim == 0) throw ValueError("hetnn.concat: 0-d arrays cannot be joined along an axis (use stack)");
  const int k = norm_axis("concat", axis.value_or(0), ndim);
  Shape shape = parts[0].shape();
  shape[k] = 0;
  for (const Array& p : parts) {
    bool fits = p.ndim() == ndim;
    for (int i = 0; fits && i < ndim; ++i) fits = i == k || p.shape()[i] == parts[0].shape()[i];
    if (!fits)
      throw ValueError("hetnn.concat: the arrays must have the same shape except along axis " + std::to_string(k) +
                       ", got " + shape_str(parts[0].shape()) + " and " + shape_str(p.shape()));
    shape[k] += p.shape()[k];
  }
  Array y = Array::empty(parts[0].device(), shape, t);
  const Strides ys = dense_strides(shape);
  std::int64_t at = 0;
  for (const Array& p : parts) {
    move_elements("concat", p, p.strides(), p.offset(), y, p.shape(), ys, at * ys[k]);
    at += p.shape()[k];
  }
  return y;
}

Array moveaxis(const Array& x, const std::vector<int>& source, const std::vector<int>& destination) {
  check_valid("moveaxis", x);
  const int ndim = x.ndim();
  if (source.size() != destination.size())
    throw ValueError("hetnn.moveaxis: source and destination must name as many axes, got " +
                     std::to_string(source.size()) + " and " + std::to_string(destination.size()));
  std::vector<int> src, dst;
  for (std::size_t i = 0; i < source.size(); ++i) {
    src.push_back(norm_axis("moveaxis", source[i], ndim, "source axis"));
    dst.push_back(norm_axis("moveaxis", destination[i], ndim, "destination axis"));
  }
  for (const auto* v : {&src, &dst}) {
    std::vector<int> sorted = *v;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      throw ValueError(std::string("hetnn.moveaxis: ") + (v == &src ? "source" : "destination") +
                       " names an axis twice");
  }
  std::vector<int> order;
  for (int k = 0; k < ndim; ++k)
    if (std::find(src.begin(), src.end(), k) == src.end()) order.push_back(k);
  std::vector<std::pair<int, int>> moves;
  for (std::size_t i = 0; i < src.size(); ++i) moves.emplace_back(dst[i], src[i]);
  std::sort(moves.begin(), moves.end());
  for (const auto& [d, a] : moves) order.insert(order.begin() + d, a);
  return permute_dims(x, order);
}

Array roll(const Array& x, const std::vector<std::int64_t>& shift, const std::optional<std::vector<int>>& axes) {
  check_valid("roll", x);
  if (!axes) {
    if (shift.size() != 1)
      throw ValueError("hetnn.roll: without an axis the shift must be one int, got " + std::to_string(shift.size()));
    return roll(x.reshape({x.size()}), shift, std::vector<int>{0}).reshape(x.shape());
  }
  const int ndim = x.ndim();
  if (shift.size() != axes->size() && shift.size() != 1 && axes->size() != 1)
    throw ValueError("hetnn.roll: shift and axis must have one entry each or as many, got " +
                     std::to_string(shift.size()) + " and " + std::to_string(axes->size()));
  std::vector<std::int64_t> by(static_cast<std::size_t>(ndim), 0);
  const std::size_t pairs = std::max(shift.size(), axes->size());
  for (std::size_t i = 0; i < pairs; ++i) {
    const int k = norm_axis("roll", (*axes)[axes->size() == 1 ? 0 : i], ndim);
    const std::int64_t n = x.shape()[k];
    if (n > 0) by[k] = ((by[k] + shift[shift.size() == 1 ? 0 : i] % n) % n + n) % n;
  }
  Array y = x.dense();
  const Strides cs = dense_strides(x.shape());
  for (int k = 0; k < ndim; ++k) {
    const std::int64_t s = by[k], n = x.shape()[k];
    if (s == 0) continue;
    Array out = Array::empty(x.device(), x.shape(), x.dtype());
    Shape head = x.shape(), tail = x.shape();
    head[k] = n - s;  // y[.., :n-s, ..] -> out[.., s:, ..]
    tail[k] = s;      // y[.., n-s:, ..] -> out[.., :s, ..]
    move_elements("roll", y, cs, 0, out, head, cs, s * cs[k]);
    move_elements("roll", y, cs, (n - s) * cs[k], out, tail, cs, 0);
    y = out;
  }
  return y.same_memory(x) ? x.to(x.device()) : y;  // a new array even with nothing to roll
}

Array tile(const Array& x, const std::vector<std::int64_t>& reps) {
  check_valid("tile", x);
  for (std::int64_t r : reps)
    if (r < 0) throw ValueError("hetnn.tile: repetitions must be >= 0, got " + std::to_string(r));
  const std::size_t d = std::max(static_cast<std::size_t>(x.ndim()), reps.size());
  Shape xs(d - x.shape().size(), 1);
  xs.insert(xs.end(), x.shape().begin(), x.shape().end());
  std::vector<std::int64_t> rs(d - reps.size(), 1);
  rs.insert(rs.end(), reps.begin(), reps.end());
  Strides cs(d - x.shape().size(), 0);
  const Strides xst = x.strides();
  cs.insert(cs.end(), xst.begin(), xst.end());
  Shape shape, out;
  Strides st;
  for (std::size_t k = 0; k < d; ++k) {
    shape.insert(shape.end(), {rs[k], xs[k]});
    st.insert(st.end(), {0, cs[k]});
    out.push_back(rs[k] * xs[k]);
  }
  return gather("tile", x, shape, st, x.offset()).reshape(out);
}

Array repeat(const Array& x, const std::vector<std::int64_t>& repeats, std::optional<int> axis) {
  check_valid("repeat", x);
  if (!axis) return repeat(x.reshape({x.size()}), repeats, 0);
  const int k = norm_axis("repeat", *axis, x.ndim());
  const std::int64_t n = x.shape()[k];
  for (std::int64_t r : repeats)
    if (r < 0) throw ValueError("hetnn.repeat: repeats must be >= 0, got " + std::to_string(r));
  if (repeats.size() == 1) {  // every element r times: a stride-0 axis after axis k
    Shape shape = x.shape(), out = x.shape();
    Strides st = x.strides();
    shape.insert(shape.begin() + k + 1, repeats[0]);
    st.insert(st.begin() + k + 1, 0);
    out[k] *= repeats[0];
    return gather("repeat", x, shape, st, x.offset()).reshape(out);
  }
  if (static_cast<std::int64_t>(repeats.size()) != n)
    throw ValueError("hetnn.repeat: repeats must be one count or one per element along axis " + std::to_string(k) +
                     " (" + std::to_string(n) + "), got " + std::to_string(repeats.size()));
  std::vector<std::int64_t> idx;
  for (std::int64_t i = 0; i < n; ++i) idx.insert(idx.end(), static_cast<std::size_t>(repeats[i]), i);
  const Array at = Array::from_host(x.device(), idx.data(), {static_cast<std::int64_t>(idx.size())}, DType::i64);
  return take(x, at, k);
}

std::vector<Array> unstack(const Array& x, int axis) {
  check_valid("unstack", x);
  if (x.ndim() == 0) throw ValueError("hetnn.unstack: a 0-d array has no axis to split");
  const int k = norm_axis("unstack", axis, x.ndim());
  const Strides& cs = x.strides();
  Shape shape = x.shape();
  Strides st = cs;
  shape.erase(shape.begin() + k);
  st.erase(st.begin() + k);
  std::vector<Array> out;  // views, as NumPy's
  for (std::int64_t i = 0; i < x.shape()[k]; ++i) out.push_back(x.view(shape, st, x.offset() + i * cs[k]));
  return out;
}

std::vector<Array> meshgrid(const std::vector<Array>& xs, const std::string& indexing) {
  if (indexing != "xy" && indexing != "ij")
    throw ValueError("hetnn.meshgrid: indexing must be 'xy' or 'ij', got '" + indexing + "'");
  Shape shape;
  for (const Array& a : xs) {
    check_valid("meshgrid", a, "each array");
    if (a.ndim() != 1)
      throw ValueError("hetnn.meshgrid: the arrays must be 1-D, got one of shape " + shape_str(a.shape()));
    if (a.device() != xs[0].device())
      throw ValueError("hetnn.meshgrid: the arrays must be on one device");
    shape.push_back(a.shape()[0]);
  }
  const bool swap = indexing == "xy" && xs.size() >= 2;
  if (swap) std::swap(shape[0], shape[1]);
  std::vector<Array> out;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    Strides st(shape.size(), 0);
    st[swap && i < 2 ? 1 - i : i] = xs[i].strides()[0];
    out.push_back(gather("meshgrid", xs[i], shape, st, xs[i].offset()));
  }
  return out;
}

namespace {
// x where (column - row) <= k (lower) or >= k (upper), zero elsewhere: the mask made on x's device.
Array triangle(const char* name, const Array& x, std::int64_t k, bool lower) {
  check_valid(name, x);
  if (x.ndim() < 2)
    throw ValueError(who(name) + ": x must have at least 2 dimensions, got shape " + shape_str(x.shape()));
  const std::int64_t m = x.shape()[x.ndim() - 2], n = x.shape()[x.ndim() - 1];
  EwScalar zero, one, km;
  one.i = 1;
  km.i = k;
  EwScalar rows_end, cols_end;
  rows_end.i = m;
  cols_end.i = n;
  const Array rows = arange(x.device(), zero, rows_end, one, DType::i64).reshape({m, 1});
  const Array cols = arange(x.device(), zero, cols_end, one, DType::i64).reshape({1, n});
  const Array diag = elementwise(EwOp::subtract, cols, &rows, nullptr);
  const Array mask = elementwise(lower ? EwOp::less_equal : EwOp::greater_equal, diag, km, false, nullptr);
  EwScalar fill;  // 0, or false for a bool x (the result keeps x's dtype)
  fill.is_bool = x.dtype() == DType::b8;
  return where(mask, x, scalar_array(x, fill), nullptr);
}
}  // namespace

Array tril(const Array& x, std::int64_t k) { return triangle("tril", x, k, true); }
Array triu(const Array& x, std::int64_t k) { return triangle("triu", x, k, false); }

Array stack(const std::vector<Array>& xs, int axis) {
  if (xs.empty()) throw ValueError("hetnn.stack: needs at least one array");
  for (const Array& a : xs) {
    check_valid("stack", a, "each array");
    if (a.shape() != xs[0].shape())
      throw ValueError("hetnn.stack: the arrays must have one shape, got " + shape_str(xs[0].shape()) + " and " +
                       shape_str(a.shape()));
  }
  const int k = norm_axis("stack", axis, xs[0].ndim() + 1);
  std::vector<Array> parts;
  for (const Array& a : xs) parts.push_back(expand_dims(a, k));
  return concat(parts, k);
}

Array expand_dims(const Array& x, int axis) {
  check_valid("expand_dims", x);
  const int n = x.ndim();
  if (axis < -n - 1 || axis > n)
    throw AxisError(who("expand_dims") + ": axis " + std::to_string(axis) + " is out of bounds for an array of " +
                    std::to_string(n) + " dimension" + (n == 1 ? "" : "s") + " (a new axis goes at -" +
                    std::to_string(n + 1) + " to " + std::to_string(n) + ")");
  const int k = axis < 0 ? axis + n + 1 : axis;
  Shape shape = x.shape();
  shape.insert(shape.begin() + k, 1);
  return x.reshape(shape);
}

Array squeeze(const Array& x, const std::optional<std::vector<int>>& axes) {
  check_valid("squeeze", x);
  const int ndim = x.ndim();
  std::vector<bool> drop(static_cast<std::size_t>(ndim), false);
  if (!axes) {
    for (int k = 0; k < ndim; ++k) drop[static_cast<std::size_t>(k)] = x.shape()[k] == 1;
  } else {
    for (int a : *axes) {
      const int k = norm_axis("squeeze", a, ndim);
      if (drop[static_cast<std::size_t>(k)])
        throw ValueError("hetnn.squeeze: axis " + std::to_string(a) + " is given twice");
      if (x.shape()[k] != 1)
        throw ValueError("hetnn.squeeze: axis " + std::to_string(a) + " has extent " +
                         std::to_string(x.shape()[k]) + ", only axes of extent 1 can be removed");
      drop[static_cast<std::size_t>(k)] = true;
    }
  }
  Shape shape;
  for (int k = 0; k < ndim; ++k)
    if (!drop[static_cast<std::size_t>(k)]) shape.push_back(x.shape()[k]);
  return x.reshape(shape);
}

Array take(const Array& x, const Array& indices, std::optional<int> axis) {
  check_valid("take", x);
  check_valid("take", indices, "indices");
  if (indices.device() != x.device())
    throw TypeError("hetnn.take: indices are on " + indices.device()->id() + ", x on " + x.device()->id() +
                    "; move them with .to(device) first");
  if (is_floating(indices.dtype()) || indices.dtype() == DType::b8)
    throw TypeError(std::string("hetnn.take: indices must be an integer array, got ") + dtype_name(indices.dtype()));
  if (indices.ndim() != 1)
    throw ValueError("hetnn.take: indices must be 1-d, got shape " + shape_str(indices.shape()));
  if (!axis && x.ndim() != 1)
    throw ValueError("hetnn.take: axis may be omitted only for a 1-d x, this one has shape " + shape_str(x.shape()));
  if (x.ndim() == 0) throw ValueError("hetnn.take: x must have at least one dimension");
  const int k = norm_axis("take", axis.value_or(0), x.ndim());
  const std::int64_t n = x.shape()[k], m = indices.size();
  Array idx = indices.dtype() == DType::i64 ? indices : astype(indices, DType::i64);
  if (m > 0) {  // bounds, read back: the device kernel clamps, so an index out of bounds must not reach it
    std::int64_t lo = 0, hi = 0;
    reduce(RedOp::min, idx, Axes{}, false).to_host(&lo);
    reduce(RedOp::max, idx, Axes{}, false).to_host(&hi);
    if (lo < -n || hi >= n)
      throw IndexError("hetnn.take: index " + std::to_string(lo < -n ? lo : hi) + " is out of bounds for axis " +
                       std::to_string(k) + " with size " + std::to_string(n));
    if (lo < 0) {
      EwScalar zero, size;
      size.i = n;
      size.f = static_cast<double>(n);
      const Array negative = elementwise(EwOp::less, idx, zero, false, nullptr);
      idx = where(negative, elementwise(EwOp::add, idx, size, false, nullptr), idx, nullptr);
    }
  }
  // the axis first (a strided copy unless it is already), rows gathered, the axis moved back
  std::vector<int> order{k};
  for (int i = 0; i < x.ndim(); ++i)
    if (i != k) order.push_back(i);
  const Array front = (k == 0 ? x : permute_dims(x, order)).dense();
  Shape shape = front.shape();
  shape[0] = m;
  Array out = Array::empty(x.device(), shape, x.dtype());
  if (m > 0 && shape_size(shape) > 0) take_rows(front, idx, 0, m, &out);
  if (k == 0) return out;
  std::vector<int> back(static_cast<std::size_t>(x.ndim()));
  for (int i = 0; i < x.ndim(); ++i) back[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = i;
  return permute_dims(out, back).dense();
}

namespace {

// Host values in int64 or float64, uploaded and converted to t on dev.
template <class V>
Array upload(const DevicePtr& dev, const std::vector<V>& v, DType t) {
  const Shape shape{static_cast<std::int64_t>(v.size())};
  if constexpr (std::is_same_v<V, std::int64_t>) {
    const Array a = Array::from_host(dev, v.data(), shape, DType::i64);
    return t == DType::i64 ? a : astype(a, t);
  } else {
    if (dev->supports(DType::f64)) {
      const Array a = Array::from_host(dev, v.data(), shape, DType::f64);
      return t == DType::f64 ? a : astype(a, t);
    }
    std::vector<float> f(v.begin(), v.end());
    const Array a = Array::from_host(dev, f.data(), shape, DType::f32);
    return t == DType::f32 ? a : astype(a, t);
  }
}

constexpr std::int64_t kMaxCreated = std::int64_t{1} << 40;  // elements: beyond any device's memory

}  // namespace

Array arange(const DevicePtr& dev, const EwScalar& start_in, const std::optional<EwScalar>& stop_in,
             const EwScalar& step, std::optional<DType> dtype) {
  // arange(stop) counts from 0
  const EwScalar start = stop_in ? start_in : EwScalar{};
  const EwScalar stop = stop_in ? *stop_in : start_in;
  const bool ints = !start.is_float && !stop.is_float && !step.is_float;
  const DType t = dtype ? *dtype : ints ? DType::i64 : default_real(dev);
  dev->require(t, "arange");
  if (t == DType::b8) throw TypeError("hetnn.arange: dtype bool is not a range's type");
  if (ints && !is_floating(t)) {
    if (step.i == 0) throw ValueError("hetnn.arange: step must not be zero");
    const long double span = static_cast<long double>(stop.i) - start.i;
    const long double count = std::ceil(span / step.i);
    if (count > kMaxCreated) throw ValueError("hetnn.arange: the range has too many elements to allocate");
    const std::int64_t n = count > 0 ? static_cast<std::int64_t>(count) : 0;
    std::vector<std::int64_t> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = start.i + i * step.i;
    return upload(dev, v, t);
  }
  const double a = start.is_float ? start.f : static_cast<double>(start.i);
  const double b = stop.is_float ? stop.f : static_cast<double>(stop.i);
  const double s = step.is_float ? step.f : static_cast<double>(step.i);
  if (!std::isfinite(a) || !std::isfinite(b) || !std::isfinite(s))
    throw ValueError("hetnn.arange: start, stop and step must be finite");
  if (s == 0) throw ValueError("hetnn.arange: step must not be zero");
  const double count = std::ceil((b - a) / s);
  if (count > static_cast<double>(kMaxCreated))
    throw ValueError("hetnn.arange: the range has too many elements to allocate");
  const std::int64_t n = count > 0 ? static_cast<std::int64_t>(count) : 0;
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = a + static_cast<double>(i) * s;
  if (!is_floating(t)) {
    std::vector<std::int64_t> w(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) w[i] = static_cast<std::int64_t>(v[i]);
    return upload(dev, w, t);
  }
  return upload(dev, v, t);
}

Array linspace(const DevicePtr& dev, double start, double stop, std::int64_t num, bool endpoint,
               std::optional<DType> dtype) {
  const DType t = dtype ? *dtype : default_real(dev);
  dev->require(t, "linspace");
  if (!is_floating(t))
    throw TypeError(std::string("hetnn.linspace: dtype must be a floating type, got ") + dtype_name(t));
  if (num < 0) throw ValueError("hetnn.linspace: num must be non-negative, got " + std::to_string(num));
  if (num > kMaxCreated) throw ValueError("hetnn.linspace: num is too large to allocate");
  if (!std::isfinite(start) || !std::isfinite(stop)) throw ValueError("hetnn.linspace: start and stop must be finite");
  const std::int64_t div = endpoint ? num - 1 : num;
  const double step = div > 0 ? (stop - start) / static_cast<double>(div) : 0.0;
  std::vector<double> v(static_cast<std::size_t>(num));
  for (std::int64_t i = 0; i < num; ++i) v[static_cast<std::size_t>(i)] = start + static_cast<double>(i) * step;
  if (endpoint && num > 1) v.back() = stop;
  return upload(dev, v, t);
}

Array eye(const DevicePtr& dev, std::int64_t n_rows, std::optional<std::int64_t> n_cols_in, std::int64_t k,
          std::optional<DType> dtype) {
  const std::int64_t n_cols = n_cols_in.value_or(n_rows);
  if (n_rows < 0 || n_cols < 0)
    throw ValueError("hetnn.eye: n_rows and n_cols must be non-negative, got " + std::to_string(n_rows) + " and " +
                     std::to_string(n_cols));
  const DType t = dtype.value_or(default_real(dev));
  Array y = Array::zeros(dev, {n_rows, n_cols}, t);
  // the diagonal: from (max(0, -k), max(0, k)), stepping n_cols + 1
  const std::int64_t r0 = k < 0 ? std::min(-k, n_rows) : 0, c0 = k > 0 ? std::min(k, n_cols) : 0;
  const std::int64_t m = std::max<std::int64_t>(0, std::min(n_rows - r0, n_cols - c0));
  if (m == 0) return y;
  EwScalar one;
  one.i = 1;
  one.f = 1.0;
  const Array v = full(dev, {}, one, &t);
  move_elements("eye", v, {0}, 0, y, {m}, {n_cols + 1}, r0 * n_cols + c0);
  return y;
}

}  // namespace hetnn
