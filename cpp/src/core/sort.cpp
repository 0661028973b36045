// sort / argsort front (core/sort.h): validate once, then dispatch to the device's backend.
#include "core/sort.h"

#include <string>

#include "core/errors.h"
#include "core/elementwise.h"
#include "core/manipulation.h"
#include "core/reduction.h"
#include "core/ops.h"

namespace hetnn {

namespace {

Array sort_impl(const Array& x_in, int axis, bool want_values, const char* op, bool descending) {
  const Array x = x_in.dense();  // views read as dense copies
  if (!x.valid()) throw ValueError(std::string("hetnn.") + op + ": x is not an array");
  const int nd = x.ndim();
  if (nd == 0)
    throw ValueError(std::string("hetnn.") + op + ": x is 0-d; sorting needs an axis (reshape it to (1,) first)");
  if (axis < -nd || axis >= nd)
    throw AxisError(std::string("hetnn.") + op + ": axis " + std::to_string(axis) +
                    " is out of bounds for an array of " + std::to_string(nd) + " dimension" +
                    (nd == 1 ? "" : "s"));
  const int a = axis < 0 ? axis + nd : axis;
  SortDesc d;
  d.dtype = x.dtype();
  d.descending = descending;
  d.outer = 1;
  d.inner = 1;
  const Shape& s = x.shape();
  for (int k = 0; k < nd; ++k) {
    if (k < a) d.outer *= s[static_cast<std::size_t>(k)];
    if (k > a) d.inner *= s[static_cast<std::size_t>(k)];
  }
  d.len = s[static_cast<std::size_t>(a)];
  if (d.len > (std::int64_t{1} << 31) - 1)
    throw ValueError(std::string("hetnn.") + op + ": an axis of " + std::to_string(d.len) +
                     " elements is too long to sort (at most 2^31 - 1)");
  Array out = Array::empty(x.device(), s, want_values ? d.dtype : DType::i64);
  if (d.outer * d.len * d.inner == 0) return out;
  x.device()->backend().sort(d, *x.buffer(), want_values ? out.buffer().get() : nullptr,
                             want_values ? nullptr : out.buffer().get());
  return out;
}

}  // namespace

Array sort(const Array& x, int axis, bool descending, bool /*stable*/) {
  return sort_impl(x, axis, true, "sort", descending);
}

Array argsort(const Array& x, int axis, bool descending, bool /*stable*/) {
  return sort_impl(x, axis, false, "argsort", descending);
}

Array searchsorted(const Array& x1_in, const Array& x2_in, const std::string& side, const Array* sorter_in) {
  const Array x1 = x1_in.dense();  // views read as dense copies
  const Array x2 = x2_in.dense();  // views read as dense copies
  const Array sorter_d = sorter_in ? sorter_in->dense() : Array();
  const Array* sorter = sorter_in ? &sorter_d : nullptr;
  const std::string op = "hetnn.searchsorted";
  if (!x1.valid() || !x2.valid()) throw ValueError(op + ": x1 and x2 must be arrays");
  if (x1.ndim() != 1) throw ValueError(op + ": x1 must be 1-D (sorted), got shape " + shape_str(x1.shape()));
  if (side != "left" && side != "right")
    throw ValueError(op + ": side must be 'left' or 'right', got '" + side + "'");
  if (x1.device() != x2.device())
    throw ValueError(op + ": x1 is on " + x1.device()->id() + " but x2 is on " + x2.device()->id() +
                     "; move one with .to(device)");
  if (x1.dtype() != x2.dtype())
    throw TypeError(op + ": x1 is " + dtype_name(x1.dtype()) + " but x2 is " + dtype_name(x2.dtype()) +
                    "; convert one with .astype()");
  Array sorted_x1 = x1;
  if (sorter) {
    if (sorter->device() != x1.device())
      throw ValueError(op + ": sorter is on " + sorter->device()->id() + " but x1 is on " + x1.device()->id());
    if (sorter->dtype() != DType::i64 || sorter->shape() != x1.shape())
      throw ValueError(op + ": sorter must be int64 positions of x1's shape " + shape_str(x1.shape()) +
                       " (argsort's), got " + dtype_name(sorter->dtype()) + " " + shape_str(sorter->shape()));
    sorted_x1 = take(x1, *sorter, 0);  // checks every position is inside x1
  }
  SearchDesc d;
  d.dtype = x1.dtype();
  d.n = x1.size();
  d.m = x2.size();
  d.right = side == "right";
  Array out = Array::empty(x2.device(), x2.shape(), DType::i64);
  if (d.m == 0) return out;
  x2.device()->backend().searchsorted(d, *sorted_x1.buffer(), *x2.buffer(), *out.buffer());
  return out;
}

std::vector<Array> nonzero(const Array& x_in) {
  const Array x = x_in.dense();  // views read as dense copies
  const std::string op = "hetnn.nonzero";
  if (!x.valid()) throw ValueError(op + ": x is not an array");
  const int nd = x.ndim();
  if (nd == 0) throw ValueError(op + ": x is 0-d; the Array API asks for at least one dimension (reshape to (1,))");
  const std::int64_t n = x.size();
  const Shape& shape = x.shape();
  std::int64_t k = 0;
  Array order;
  if (n > 0) {
    const Array flat = x.reshape({n});
    EwScalar zero;
    const Array is_zero = x.dtype() == DType::b8 ? elementwise(EwOp::logical_not, flat, nullptr, nullptr)
                                                 : elementwise(EwOp::equal, flat, zero, false, nullptr);
    std::int64_t zeros = 0;
    reduce(RedOp::sum, is_zero, Axes{}, false).to_host(&zeros);
    k = n - zeros;
    order = argsort(is_zero, 0, false, true);  // the non-zero positions first, in order (stable)
  }
  std::vector<Array> out(static_cast<std::size_t>(nd));
  if (k == 0) {
    for (auto& a : out) a = Array::empty(x.device(), {0}, DType::i64);
    return out;
  }
  IndexItem first;
  first.kind = IndexItem::Kind::slice;
  first.start = 0;
  first.stop = k;
  Array rest = getitem(order, Index{first});
  for (int d = nd - 1; d >= 0; --d) {
    EwScalar len;
    len.i = shape[static_cast<std::size_t>(d)];
    len.f = static_cast<double>(len.i);
    out[static_cast<std::size_t>(d)] = d == 0 ? rest : elementwise(EwOp::remainder, rest, len, false, nullptr);
    if (d > 0) rest = elementwise(EwOp::floor_divide, rest, len, false, nullptr);
  }
  return out;
}

UniqueParts unique(const Array& x_in, bool want_indices, bool want_inverse, bool want_counts) {
  const Array x = x_in.dense();  // views read as dense copies
  if (!x.valid()) throw ValueError("hetnn.unique: x is not an array");
  const std::int64_t n = x.size();
  const DevicePtr& dev = x.device();
  UniqueParts out;
  if (n == 0) {
    out.values = Array::empty(dev, {0}, x.dtype());
    if (want_indices) out.indices = Array::empty(dev, {0}, DType::i64);
    if (want_inverse) out.inverse = Array::empty(dev, x.shape(), DType::i64);
    if (want_counts) out.counts = Array::empty(dev, {0}, DType::i64);
    return out;
  }
  const Array flat = x.reshape({n});
  const Array order = argsort(flat, 0, false, true);  // stable: equal values keep their order of occurrence
  const Array sorted = take(flat, order, 0);
  const auto part = [](const Array& a, std::int64_t start, std::int64_t stop) {
    IndexItem s;
    s.kind = IndexItem::Kind::slice;
    s.start = start;
    s.stop = stop;
    return getitem(a, Index{s});
  };
  // a run starts where an element differs from the one before it (NaN differs from everything, itself included)
  const std::uint8_t one = 1;
  Array starts_mask = Array::from_host(dev, &one, {1}, DType::b8);
  if (n > 1) {
    const Array next = part(sorted, 1, n), prev = part(sorted, 0, n - 1);
    starts_mask = concat({starts_mask, elementwise(EwOp::not_equal, next, &prev, nullptr)}, 0);
  }
  const Array starts = nonzero(starts_mask)[0];
  out.values = take(sorted, starts, 0);
  if (want_indices) out.indices = take(order, starts, 0);
  if (want_counts) {
    const std::int64_t k = starts.size();
    const std::int64_t end = n;
    const Array ends = concat({part(starts, 1, k), Array::from_host(dev, &end, {1}, DType::i64)}, 0);
    out.counts = elementwise(EwOp::subtract, ends, &starts, nullptr);
  }
  if (want_inverse) {
    EwScalar one_i;
    one_i.i = 1;
    one_i.f = 1;
    // the run of each sorted position, then back to x's order through the inverse permutation of `order`
    const Array run = elementwise(EwOp::subtract, cumulative_sum(starts_mask, 0, std::nullopt, false), one_i, false,
                                  nullptr);
    out.inverse = take(run, argsort(order, 0, false, true), 0).reshape(x.shape());
  }
  return out;
}

}  // namespace hetnn
