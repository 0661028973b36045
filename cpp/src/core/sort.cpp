// sort / argsort front (core/sort.h): validate once, then dispatch to the device's backend.
#include "core/sort.h"

#include <string>

#include "core/errors.h"
#include "core/ops.h"

namespace hetnn {

namespace {

Array sort_impl(const Array& x, int axis, bool want_values, const char* op, bool descending) {
  if (!x.valid()) throw ValueError(std::string("hetnn.") + op + ": x is not an array");
  const int nd = x.ndim();
  if (nd == 0)
    throw ValueError(std::string("hetnn.") + op + ": x is 0-d; sorting needs an axis (reshape it to (1,) first)");
  if (axis < -nd || axis >= nd)
    throw ValueError(std::string("hetnn.") + op + ": axis " + std::to_string(axis) +
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

}  // namespace hetnn
