// Boolean-mask indexing, the Array API's "boolean array indexing": x[mask] and x[mask] = value, mask a bool array
// of x's leading shape. Built here from the core's ops (nonzero, take, cumulative_sum, where), so every device runs
// it; x[mask] reads back one number (the selection's size, inside nonzero), x[mask] = value none unless value has
// one row per selected element.
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/elementwise.h"
#include "core/errors.h"
#include "core/manipulation.h"
#include "core/reduction.h"
#include "core/sort.h"

namespace hetnn {

namespace {

// The mask checked against x: its element count (the leading axes of x flattened) and x's shape after them.
struct MaskShape {
  std::int64_t lead = 1;
  Shape rest;
};

MaskShape check_mask(const std::string& who, const Array& x, const Array& mask) {
  if (!x.valid()) throw ValueError(who + ": the array is not valid");
  if (!mask.valid()) throw ValueError(who + ": the mask is not a valid array");
  if (mask.device() != x.device())
    throw TypeError(who + ": the mask is on " + mask.device()->id() + ", the array on " + x.device()->id() +
                    "; move it with .to(device) first");
  if (mask.dtype() != DType::b8)
    throw IndexError(who + ": a mask must be a bool array, got " + std::string(dtype_name(mask.dtype())));
  if (mask.ndim() > x.ndim())
    throw IndexError(who + ": a mask of shape " + shape_str(mask.shape()) + " has more dimensions than the array (" +
                     shape_str(x.shape()) + ")");
  MaskShape m;
  for (int i = 0; i < mask.ndim(); ++i) {
    const std::int64_t mi = mask.shape()[static_cast<std::size_t>(i)], xi = x.shape()[static_cast<std::size_t>(i)];
    if (mi != xi && mi != 0)  // an axis of length 0 selects nothing, whatever x's length there (as NumPy)
      throw IndexError(who + ": the mask's shape " + shape_str(mask.shape()) + " does not match the array's " +
                       shape_str(x.shape()) + " along axis " + std::to_string(i) + " (" + std::to_string(mi) +
                       " against " + std::to_string(xi) + ")");
    m.lead *= mi;
  }
  m.rest.assign(x.shape().begin() + mask.ndim(), x.shape().end());
  return m;
}

Shape with_lead(std::int64_t lead, const Shape& rest) {
  Shape s{lead};
  s.insert(s.end(), rest.begin(), rest.end());
  return s;
}

}  // namespace

Array getitem_mask(const Array& x, const Array& mask) {
  const MaskShape m = check_mask("hetnn.Array.__getitem__", x, mask);
  if (m.lead == 0) return Array::empty(x.device(), with_lead(0, m.rest), x.dtype());
  const Array idx = nonzero(mask.reshape({m.lead}))[0];
  if (idx.size() == 0) return Array::empty(x.device(), with_lead(0, m.rest), x.dtype());
  return take(x.reshape(with_lead(m.lead, m.rest)), idx, 0);
}

void setitem_mask(Array& x, const Array& mask, const Array& value) {
  const std::string who = "hetnn.Array.__setitem__";
  const MaskShape m = check_mask(who, x, mask);
  if (!value.valid()) throw ValueError(who + ": the value is not a valid array");
  if (value.device() != x.device())
    throw TypeError(who + ": the value is on " + value.device()->id() + ", the array on " + x.device()->id() +
                    "; move it with .to(device) first");
  const std::size_t r = m.rest.size();
  const Shape& vs = value.shape();
  // value broadcasts to (selected count,) + rest: its trailing axes against rest, a leading one of 1 or the count
  const bool per_element = vs.size() == r + 1 && vs[0] != 1;
  bool fits = vs.size() <= r + 1;
  for (std::size_t k = 0; fits && k < std::min(vs.size(), r); ++k) {
    const std::int64_t a = vs[vs.size() - 1 - k], b = m.rest[r - 1 - k];
    fits = a == b || a == 1;
  }
  if (!fits)
    throw ValueError(who + ": a value of shape " + shape_str(vs) + " cannot be broadcast to the selection's shape " +
                     shape_str(with_lead(-1, m.rest)).replace(1, 2, "n") + " (n: the mask's true elements)");
  if (m.lead == 0) return;
  const Array v = value.dtype() == x.dtype() ? value : astype(value, x.dtype());
  Shape cond_shape = mask.shape();
  cond_shape.insert(cond_shape.end(), r, 1);
  const Array cond = mask.reshape(cond_shape);  // broadcasts against x
  if (!per_element) {
    where(cond, vs.size() == r + 1 ? v.reshape(m.rest) : v, x, &x);
    return;
  }
  std::int64_t count = 0;
  reduce(RedOp::sum, mask, Axes{}, false).to_host(&count);
  if (vs[0] != count)
    throw ValueError(who + ": the value has " + std::to_string(vs[0]) + " rows for the mask's " +
                     std::to_string(count) + " true elements (shape " + shape_str(vs) + ")");
  if (count == 0) return;
  // each true element's row of value: its rank among the true elements (the running count - 1; the false ones
  // read row 0 and are not written)
  EwScalar one, zero;
  one.i = 1;
  one.f = 1;
  const Array ranks = elementwise(
      EwOp::maximum,
      elementwise(EwOp::subtract, cumulative_sum(mask.reshape({m.lead}), 0, DType::i64, false), one, false, nullptr),
      zero, false, nullptr);
  Shape full = mask.shape();
  full.insert(full.end(), m.rest.begin(), m.rest.end());
  where(cond, take(v, ranks, 0).reshape(full), x, &x);
}

}  // namespace hetnn
