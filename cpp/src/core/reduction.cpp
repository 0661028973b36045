// The reduction front (core/reduction.h): axes, result types and the coalescing of the kept and reduced
// dimensions; mean, var and std are composed here from the backends' reduce and the element-wise ops.
#include "core/reduction.h"

#include <cmath>
#include <limits>
#include <string>

#include "core/elementwise.h"
#include "core/errors.h"

namespace hetnn {

namespace {

std::string where(const char* name) { return std::string("hetnn.") + name; }

// The reduced axes as flags per dimension of an array of ndim dimensions.
std::vector<bool> axis_flags(const char* name, const Axes& axes, int ndim) {
  std::vector<bool> red(static_cast<std::size_t>(ndim), axes.all);
  if (axes.all) return red;
  for (int a : axes.list) {
    if (a < -ndim || a >= ndim)
      throw AxisError(where(name) + ": axis " + std::to_string(a) + " is out of bounds for an array of " +
                      std::to_string(ndim) + " dimension" + (ndim == 1 ? "" : "s"));
    const int k = a < 0 ? a + ndim : a;
    if (red[static_cast<std::size_t>(k)])
      throw ValueError(where(name) + ": axis " + std::to_string(a) + " is given twice");
    red[static_cast<std::size_t>(k)] = true;
  }
  return red;
}

// Appends dimension (extent, stride) to a coalesced set: merged with the last one where that steps through both as
// one dimension; extent-1 dimensions dropped.
void push(Shape& shape, std::vector<std::int64_t>& st, std::int64_t extent, std::int64_t stride) {
  if (extent == 1) return;
  if (!shape.empty() && st.back() == stride * extent) {
    shape.back() *= extent;
    st.back() = stride;
    return;
  }
  shape.push_back(extent);
  st.push_back(stride);
}

void finish(const char* name, Shape& shape, std::vector<std::int64_t>& st) {
  if (shape.empty()) {
    shape = {1};
    st = {1};
  }
  if (static_cast<int>(shape.size()) > kEwMaxDims)
    throw ValueError(where(name) + ": the reduction needs " + std::to_string(shape.size()) +
                     " dimensions after merging, more than the " + std::to_string(kEwMaxDims) + " supported");
}

DType sum_type(DType t) { return is_floating(t) ? t : DType::i64; }

void check_x(const char* name, const Array& x) {
  if (!x.valid()) throw ValueError(where(name) + ": x is not a valid array");
  x.device()->require(x.dtype(), name);
}

// op over the flagged axes of x into a new array of type out (kept axes, or keepdims' shape).
Array run(const char* name, RedOp op, const Array& x, const std::vector<bool>& red, bool keepdims, DType out,
          double scale) {
  ReduceDesc d;
  d.op = op;
  d.in = x.dtype();
  d.out = out;
  d.scale = scale;
  const Shape& s = x.shape();
  Shape yshape;
  const std::vector<std::int64_t>& stride = x.strides();  // a view's own: no copy first
  d.off = x.offset();
  d.n_out = 1;
  d.n_red = 1;
  for (std::size_t k = 0; k < s.size(); ++k) {
    if (red[k]) {
      push(d.rshape, d.rs, s[k], stride[k]);
      d.n_red *= s[k];
      if (keepdims) yshape.push_back(1);
    } else {
      push(d.kshape, d.ks, s[k], stride[k]);
      d.n_out *= s[k];
      yshape.push_back(s[k]);
    }
  }
  finish(name, d.kshape, d.ks);
  finish(name, d.rshape, d.rs);
  x.device()->require(out, name);
  Array y = Array::empty(x.device(), yshape, out);
  if (d.n_out == 0) return y;
  if (d.n_red == 0 && (op == RedOp::max || op == RedOp::min || op == RedOp::argmax || op == RedOp::argmin))
    throw ValueError(where(name) + ": a zero-size reduction (x of shape " + shape_str(s) +
                     ") has no maximum or minimum");
  x.device()->backend().reduce(d, *x.storage(), *y.buffer());
  return y;
}

std::int64_t reduced_count(const Array& x, const std::vector<bool>& red) {
  std::int64_t n = 1;
  for (std::size_t k = 0; k < red.size(); ++k)
    if (red[k]) n *= x.shape()[k];
  return n;
}

}  // namespace

RedOp red_op_from_name(const std::string& name) {
  std::string known;
#define HETNN_RED_MATCH(n) \
  if (name == #n && std::string(#n) != "sumsq") return RedOp::n; \
  if (std::string(#n) != "sumsq") known += std::string(known.empty() ? "" : ", ") + #n;
  HETNN_RED_OPS(HETNN_RED_MATCH)
#undef HETNN_RED_MATCH
  throw ValueError("unknown reduction '" + name + "' (known: " + known + ")");
}

Array reduce(RedOp op, const Array& x, const Axes& axes, bool keepdims, std::optional<DType> dtype) {
  const char* name = red_name(op);
  check_x(name, x);
  const std::vector<bool> red = axis_flags(name, axes, x.ndim());
  DType out = x.dtype();
  switch (op) {
    case RedOp::sum:
    case RedOp::prod:
      out = dtype ? *dtype : sum_type(x.dtype());
      break;
    case RedOp::argmax:
    case RedOp::argmin:
      if (!axes.all && axes.list.size() > 1)
        throw ValueError(where(name) + ": takes one axis or none (all, giving a flat index), got " +
                         std::to_string(axes.list.size()) + " axes");
      out = DType::i64;
      break;
    case RedOp::all:
    case RedOp::any:
      out = DType::b8;
      break;
    case RedOp::sumsq:
      if (!is_floating(x.dtype())) throw TypeError(where(name) + ": needs a floating-point array");
      break;
    default:
      break;
  }
  if (dtype && op != RedOp::sum && op != RedOp::prod)
    throw TypeError(where(name) + ": takes no dtype (sum, prod and cumulative_sum do)");
  if (x.dtype() == DType::b8 && (op == RedOp::max || op == RedOp::min)) {
    // bool's maximum is any, its minimum all (NumPy's result, kept as bool)
    return reduce(op == RedOp::max ? RedOp::any : RedOp::all, x, axes, keepdims);
  }
  return run(name, op, x, red, keepdims, out, 1.0);
}

Array mean(const Array& x, const Axes& axes, bool keepdims) {
  check_x("mean", x);
  const std::vector<bool> red = axis_flags("mean", axes, x.ndim());
  const DType out = is_floating(x.dtype()) ? x.dtype() : default_real(x.device());
  const std::int64_t n = reduced_count(x, red);
  const double scale = n ? 1.0 / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
  return run("mean", RedOp::sum, x, red, keepdims, out, scale);
}

Array var(const Array& x, const Axes& axes, double correction, bool keepdims, bool take_sqrt) {
  const char* name = take_sqrt ? "std" : "var";
  check_x(name, x);
  if (!(correction >= 0) || !std::isfinite(correction))
    throw ValueError(where(name) + ": correction must be a finite number >= 0, got " + std::to_string(correction));
  const std::vector<bool> red = axis_flags(name, axes, x.ndim());
  const Array xf = is_floating(x.dtype()) ? x : astype(x, default_real(x.device()));
  const std::int64_t n = reduced_count(x, red);
  // two passes (the mean first, then the squared deviations from it): no cancellation as in E[x^2] - E[x]^2
  const Array m = mean(xf, axes, true);
  Array dev = elementwise(EwOp::subtract, xf, &m, nullptr);
  const double dof = static_cast<double>(n) - correction;
  const double scale = dof > 0 ? 1.0 / dof : std::numeric_limits<double>::quiet_NaN();
  Array v = run(name, RedOp::sumsq, dev, red, keepdims, xf.dtype(), scale);
  if (take_sqrt) elementwise(EwOp::sqrt, v, nullptr, &v);
  return v;
}

namespace {

Array scan(const char* name, bool prod, const Array& x, std::optional<int> axis, std::optional<DType> dtype,
           bool include_initial) {
  check_x(name, x);
  const int nd = x.ndim();
  if (!axis && nd > 1)
    throw ValueError(std::string("hetnn.") + name + ": axis is required for an array of " + std::to_string(nd) +
                     " dimensions");
  int a = 0;
  if (axis) {
    const int lo = nd ? -nd : -1, hi = nd ? nd : 1;
    if (*axis < lo || *axis >= hi)
      throw AxisError(std::string("hetnn.") + name + ": axis " + std::to_string(*axis) + " is out of bounds for an array of " +
                      std::to_string(nd) + " dimension" + (nd == 1 ? "" : "s"));
    a = *axis < 0 ? *axis + (nd ? nd : 1) : *axis;
  }
  ScanDesc d;
  d.in = x.dtype();
  d.out = dtype ? *dtype : sum_type(x.dtype());
  d.include_initial = include_initial;
  d.prod = prod;
  Shape shape = x.shape();
  if (shape.empty()) shape = {1};  // a 0-d array scans as one element
  d.outer = 1;
  d.inner = 1;
  for (int k = 0; k < static_cast<int>(shape.size()); ++k) {
    if (k < a) d.outer *= shape[static_cast<std::size_t>(k)];
    if (k > a) d.inner *= shape[static_cast<std::size_t>(k)];
  }
  d.len = shape[static_cast<std::size_t>(a)];
  shape[static_cast<std::size_t>(a)] += include_initial ? 1 : 0;
  x.device()->require(d.out, name);
  Array y = Array::empty(x.device(), shape, d.out);
  if (d.outer * d.inner * (d.len + (include_initial ? 1 : 0)) == 0) return y;
  x.device()->backend().cumulative_sum(d, *x.dense().buffer(), *y.buffer());
  return y;
}

}  // namespace

Array cumulative_sum(const Array& x, std::optional<int> axis, std::optional<DType> dtype, bool include_initial) {
  return scan("cumulative_sum", false, x, axis, dtype, include_initial);
}

Array cumulative_prod(const Array& x, std::optional<int> axis, std::optional<DType> dtype, bool include_initial) {
  return scan("cumulative_prod", true, x, axis, dtype, include_initial);
}

}  // namespace hetnn
