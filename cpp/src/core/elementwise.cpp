// The element-wise front (core/elementwise.h): op names, type rules, broadcasting and the coalescing of shapes
// and strides; every check is here, the backends (elementwise_cpu.cpp, elementwise_cl.cpp) only compute.
#include "core/elementwise.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/errors.h"
#include "core/ops.h"

namespace hetnn {

namespace {

constexpr EwInfo kInfo[] = {
#define HETNN_EW_INFO(name, arity, kind) {#name, arity, EwKind::kind},
    HETNN_EW_OPS(HETNN_EW_INFO)
#undef HETNN_EW_INFO
};

int int_rank(DType t) { return t == DType::i8 || t == DType::u8 ? 1 : t == DType::i32 ? 2 : 3; }
int float_rank(DType t) { return t == DType::f16 || t == DType::bf16 ? 1 : t == DType::f32 ? 2 : 3; }

std::string who(EwOp op) { return std::string("hetnn.") + ew_info(op).name; }

// The type both inputs are read as, and the result's, for op on inputs promoted to t.
struct Types {
  DType in, out;
};
Types op_types(EwOp op, DType t, const DevicePtr& dev) {
  const EwInfo& info = ew_info(op);
  const char* name = info.name;
  switch (info.kind) {
    case EwKind::arith:
      if (t == DType::b8)
        throw TypeError(who(op) + ": " + name + " is not defined for bool arrays (cast with astype first)");
      return {t, t};
    case EwKind::real: {
      const DType r = is_floating(t) ? t : default_real(dev);
      return {r, r};
    }
    case EwKind::compare:
    case EwKind::test:
      if (op == EwOp::signbit && !is_floating(t))
        throw TypeError(who(op) + ": signbit needs a floating-point array, got " + dtype_name(t));
      return {t, DType::b8};
    case EwKind::logical:
      return {t, DType::b8};
    case EwKind::bitwise:
      if (is_floating(t))
        throw TypeError(who(op) + ": " + name + " needs integer or bool arrays, got " + dtype_name(t));
      if (t == DType::b8 && (op == EwOp::bitwise_left_shift || op == EwOp::bitwise_right_shift))
        throw TypeError(who(op) + ": shifts need integer arrays, got bool");
      return {t, t};
    case EwKind::rounding:
      return {t, t};
    case EwKind::cast:
      break;
  }
  return {t, t};
}

// Fills d.shape / sa / sb: dimensions of extent 1 dropped and neighbours merged where every operand steps through
// them as through one dimension, so the common cases (same shapes, a scalar, a row or a column) reach the
// backends as one or two dimensions.
// With sc (where's condition), its strides are merged alike into d.sc.
void coalesce(ElementwiseDesc& d, const Shape& out, std::vector<std::int64_t> sa, std::vector<std::int64_t> sb,
              const std::vector<std::int64_t>* sc = nullptr) {
  d.shape.clear();
  d.sa.clear();
  d.sb.clear();
  d.sc.clear();
  std::vector<std::int64_t> c = sc ? *sc : std::vector<std::int64_t>(out.size(), 0);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 1) continue;
    if (!d.shape.empty() && d.sa.back() == sa[i] * out[i] && d.sb.back() == sb[i] * out[i] &&
        d.sc.back() == c[i] * out[i]) {
      d.shape.back() *= out[i];
      d.sa.back() = sa[i];
      d.sb.back() = sb[i];
      d.sc.back() = c[i];
      continue;
    }
    d.shape.push_back(out[i]);
    d.sa.push_back(sa[i]);
    d.sb.push_back(sb[i]);
    d.sc.push_back(c[i]);
  }
  if (d.shape.empty()) {
    d.shape = {1};
    d.sa = {1};
    d.sb = {1};
    d.sc = {1};
  }
  if (!sc) d.sc.clear();
  if (static_cast<int>(d.shape.size()) > kEwMaxDims)
    throw ValueError(who(d.op) + ": the operands' broadcast pattern needs " + std::to_string(d.shape.size()) +
                     " dimensions after merging, more than the " + std::to_string(kEwMaxDims) + " supported");
  d.n = shape_size(out);
  d.contiguous = d.shape.size() == 1 && d.sa[0] == 1 && d.sb[0] == 1 && (d.sc.empty() || d.sc[0] == 1);
}

// d as one dense walk of n elements: every operand read at i (the common call, without stride merging).
void flat_walk(ElementwiseDesc& d, std::int64_t n) {
  d.n = n;
  d.shape.assign(1, n);
  d.sa.assign(1, 1);
  d.sb.assign(1, 1);
  d.sc.clear();
  d.contiguous = true;
}

// name: "hetnn.<op>" (qualified: prefixed here, on an error only: a string built per call was 3 % of a small call)
void check_out(const char* name, bool qualify, const DevicePtr& dev, const Shape& shape, DType t, const Array* out) {
  const auto who = [&] { return (qualify ? std::string("hetnn.") : std::string()) + name; };
  if (!out->valid()) throw ValueError(who() + ": out is not a valid array");
  if (out->device() != dev)
    throw ValueError(who() + ": out is on " + out->device()->id() + ", the operands on " + dev->id());
  if (out->shape() != shape || out->dtype() != t)
    throw ValueError(who() + ": out must have shape " + shape_str(shape) + " and dtype " + dtype_name(t) +
                     ", got " + shape_str(out->shape()) + " " + dtype_name(out->dtype()));
}

void check_input(EwOp op, const Array& x, const char* name) {
  if (!x.valid()) throw ValueError(who(op) + ": " + name + " is not a valid array");
  x.device()->require(x.dtype(), ew_info(op).name);
}

// a scalar of the weak kind: an int with an integer array must fit the type (NumPy 2 raises the same).
void fit_int(const std::string& name, std::int64_t v, DType t) {
  std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
  if (t == DType::i8) lo = -128, hi = 127;
  if (t == DType::u8) lo = 0, hi = 255;
  if (t == DType::i32) lo = std::numeric_limits<std::int32_t>::min(), hi = std::numeric_limits<std::int32_t>::max();
  if (v < lo || v > hi)
    throw ValueError(name + ": the Python int " + std::to_string(v) + " is out of range for " + dtype_name(t) +
                     " (cast the array with astype first)");
}

// d's offsets set from a and b (views), y dense.
void run(ElementwiseDesc& d, const Array& a, const Array* b, Array& y) {
  if (d.n == 0) return;
  d.oa = a.offset();
  d.ob = b ? b->offset() : 0;
  d.oc = 0;
  a.device()->backend().elementwise(d, *a.storage(), b ? b->storage().get() : nullptr, *y.buffer());
}

// Where the result goes: out itself when it is dense and no input overlaps it other than element for element (so
// each element is read before it is written at the same position), else a new array copied into out afterwards.
bool direct_out(const Array& out, std::initializer_list<const Array*> ins) {
  if (!out.is_dense()) return false;
  for (const Array* x : ins)
    if (x && x->same_memory(out) && !x->same_layout(out)) return false;
  return true;
}

}  // namespace

// Output shape of broadcasting a and b (NumPy's rule), or ValueError naming both.
Shape broadcast(const std::string& name, const Shape& a, const Shape& b) {
  const std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const std::int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw ValueError(name + ": operands of shapes " + shape_str(a) + " and " + shape_str(b) +
                       " cannot be broadcast together");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Row-major element strides of `s` seen as broadcast to `out` (0 along broadcast dimensions).
std::vector<std::int64_t> view_strides(const Array& x, const Shape& out) {
  const Shape& s = x.shape();
  const std::vector<std::int64_t> xs = x.strides();
  std::vector<std::int64_t> st(out.size(), 0);
  for (std::size_t k = 0; k < s.size(); ++k) {
    const std::size_t i = s.size() - 1 - k, o = out.size() - 1 - k;
    st[o] = s[i] == 1 ? 0 : xs[i];
  }
  return st;
}

std::vector<std::int64_t> strides_in(const Shape& s, const Shape& out) {
  std::vector<std::int64_t> st(out.size(), 0);
  std::int64_t step = 1;
  for (std::size_t k = 0; k < s.size(); ++k) {
    const std::size_t i = s.size() - 1 - k, o = out.size() - 1 - k;
    st[o] = s[i] == 1 ? 0 : step;
    step *= s[i];
  }
  return st;
}

const EwInfo& ew_info(EwOp op) { return kInfo[static_cast<int>(op)]; }

std::vector<std::string> ew_op_names() {
  std::vector<std::string> out;
  for (const EwInfo& e : kInfo) out.emplace_back(e.name);
  return out;
}

EwOp ew_op_from_name(const std::string& name) {
  static const std::unordered_map<std::string, EwOp> by_name = [] {  // every Python call looks its op up
    std::unordered_map<std::string, EwOp> m;
    for (std::size_t i = 0; i < sizeof(kInfo) / sizeof(kInfo[0]); ++i) m.emplace(kInfo[i].name, static_cast<EwOp>(i));
    return m;
  }();
  const auto it = by_name.find(name);
  if (it != by_name.end()) return it->second;
  std::string known;
  for (const EwInfo& e : kInfo) known += std::string(known.empty() ? "" : ", ") + e.name;
  throw ValueError("unknown element-wise op '" + name + "' (known: " + known + ")");
}

DType result_type(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::b8) return b;
  if (b == DType::b8) return a;
  const bool fa = is_floating(a), fb = is_floating(b);
  if (fa && !fb) return a;
  if (fb && !fa) return b;
  if (fa) {  // both floating
    if ((a == DType::f16 && b == DType::bf16) || (a == DType::bf16 && b == DType::f16)) return DType::f32;
    return float_rank(a) >= float_rank(b) ? a : b;
  }
  // both integers: the smallest signed type holding both (int8 with uint8: int32, hetnn has no int16)
  if (int_rank(a) == 1 && int_rank(b) == 1) return DType::i32;
  if (int_rank(a) == int_rank(b)) return a;
  return int_rank(a) > int_rank(b) ? a : b;
}

DType default_real(const DevicePtr& device) { return device->supports(DType::f64) ? DType::f64 : DType::f32; }

Array astype(const Array& x, DType t, bool copy) {
  check_input(EwOp::cast, x, "x");
  x.device()->require(t, "astype");
  if (x.dtype() == t && !copy) return x;
  ElementwiseDesc d;
  d.op = EwOp::cast;
  d.in = x.dtype();
  d.out = t;
  coalesce(d, x.shape(), view_strides(x, x.shape()), view_strides(x, x.shape()));
  Array y = Array::empty(x.device(), x.shape(), t);
  if (x.dtype() == t) {
    if (d.n) y.copy_from(x);
    return y;
  }
  run(d, x, nullptr, y);
  return y;
}

Array& astype_into(const Array& x, Array& out) {
  check_input(EwOp::cast, x, "x");
  if (!out.is_dense() || out.shape() != x.shape() || out.device() != x.device())
    throw ValueError("astype_into: out must be a dense array of x's shape " + shape_str(x.shape()) + " on " +
                     x.device()->id() + ", got " + shape_str(out.shape()) + " on " + out.device()->id());
  if (out.same_memory(x)) throw ValueError("astype_into: out must not share memory with x");
  if (x.dtype() == out.dtype()) {
    out.copy_from(x);
    return out;
  }
  ElementwiseDesc d;
  d.op = EwOp::cast;
  d.in = x.dtype();
  d.out = out.dtype();
  coalesce(d, x.shape(), view_strides(x, x.shape()), view_strides(x, x.shape()));
  run(d, x, nullptr, out);
  return out;
}

Array elementwise(EwOp op, const Array& a, const Array* b, Array* out) {
  const EwInfo& info = ew_info(op);
  if (op == EwOp::cast) throw ValueError("hetnn.cast: use astype(x, dtype)");
  check_input(op, a, "x1");
  if ((info.arity == 2) != (b != nullptr))
    throw TypeError(who(op) + " takes " + std::to_string(info.arity) + " array argument" +
                    (info.arity == 2 ? "s" : ""));
  if (b) {
    check_input(op, *b, "x2");
    if (b->device() != a.device())
      throw TypeError(who(op) + ": the operands are on different devices (" + a.device()->id() + " and " +
                       b->device()->id() + "); move one with .to(device)");
  }
  const DType t = b ? result_type(a.dtype(), b->dtype()) : a.dtype();
  const Types ty = op_types(op, t, a.device());
  a.device()->require(ty.in, info.name);
  // operands of one shape (the common call) skip broadcasting and stride merging: the small arrays' call is
  // spent in the front, not in the loop
  const bool same = !b || b->shape() == a.shape();
  const bool flat = same && a.is_dense() && (!b || b->is_dense());  // element i at i in both
  Shape broadcast_shape;
  if (!same) broadcast_shape = broadcast(who(op), a.shape(), b->shape());
  const Shape& shape = same ? a.shape() : broadcast_shape;
  Array made;
  if (out) check_out(info.name, true, a.device(), shape, ty.out, out);
  if (!out || !direct_out(*out, {&a, b})) made = Array::empty(a.device(), shape, ty.out);
  Array& y = made.valid() ? made : *out;
  // an operand of another dtype is converted first (a new array: it cannot overlap out)
  std::optional<Array> ca, cb;
  if (a.dtype() != ty.in) ca = astype(a, ty.in);
  if (b && b->dtype() != ty.in) cb = astype(*b, ty.in);
  // one descriptor per thread, reused: its vectors keep their capacity (a call allocates none); the backends read
  // it during the call only
  thread_local ElementwiseDesc d;
  d.op = op;
  d.in = ty.in;
  d.out = ty.out;
  d.scalar = 0;
  d.fscalar = 0;
  d.iscalar = 0;
  if (flat) {
    flat_walk(d, shape_size(shape));
  } else {
    const Array& A = ca ? *ca : a;
    coalesce(d, shape, view_strides(A, shape), b ? view_strides(cb ? *cb : *b, shape) : view_strides(A, shape));
  }
  run(d, ca ? *ca : a, b ? (cb ? &*cb : b) : nullptr, y);
  if (!out) return made;
  if (made.valid()) out->copy_from(made);
  return Array();  // the result is in *out (a copy of it would cost more than a small array's op)
}

Array where(const Array& cond, const Array& a, const Array& b, Array* out) {
  const char* w = "hetnn.where";
  for (const auto& [x, name] : {std::pair<const Array*, const char*>{&cond, "condition"}, {&a, "x1"}, {&b, "x2"}}) {
    if (!x->valid()) throw ValueError(std::string(w) + ": " + name + " is not a valid array");
    x->device()->require(x->dtype(), "where");
  }
  if (a.device() != cond.device() || b.device() != cond.device())
    throw TypeError(std::string(w) + ": the operands are on different devices (" + cond.device()->id() + ", " +
                    a.device()->id() + " and " + b.device()->id() + "); move them with .to(device)");
  const DType t = result_type(a.dtype(), b.dtype());
  a.device()->require(t, "where");
  const Shape shape = broadcast(w, broadcast(w, cond.shape(), a.shape()), b.shape());
  if (out) check_out(w, false, a.device(), shape, t, out);
  const bool direct = out && direct_out(*out, {&cond, &a, &b});
  Array y = direct ? *out : Array::empty(a.device(), shape, t);
  const Array C = cond.dtype() == DType::b8 ? cond : astype(cond, DType::b8);
  const Array A = a.dtype() == t ? a : astype(a, t);
  const Array B = b.dtype() == t ? b : astype(b, t);
  ElementwiseDesc d;
  d.op = EwOp::cast;
  d.in = t;
  d.out = t;
  const std::vector<std::int64_t> sc = view_strides(C, shape);
  coalesce(d, shape, view_strides(A, shape), view_strides(B, shape), &sc);
  d.oa = A.offset();
  d.ob = B.offset();
  d.oc = C.offset();
  if (d.n) a.device()->backend().where(d, *C.storage(), *A.storage(), *B.storage(), *y.buffer());
  if (out && !direct) {
    out->copy_from(y);
    return *out;
  }
  return y;
}

Array scalar_array(const Array& like, const EwScalar& s) {
  // a weak scalar: the array's dtype, except a float with an integer or bool array (the default real type)
  DType t = like.dtype();
  if (s.is_float && !is_floating(t)) t = default_real(like.device());
  else if (!s.is_float && !s.is_bool && t == DType::b8) t = DType::i64;
  const DevicePtr& dev = like.device();
  if (is_floating(t)) {
    const double f = s.is_float ? s.f : static_cast<double>(s.i);
    if (t == DType::f64) return Array::from_host(dev, &f, {}, DType::f64);
    const float g = static_cast<float>(f);
    const Array v = Array::from_host(dev, &g, {}, DType::f32);
    return t == DType::f32 ? v : astype(v, t);
  }
  if (t != DType::b8) fit_int("hetnn.where", s.i, t);
  const Array v = Array::from_host(dev, &s.i, {}, DType::i64);
  return t == DType::i64 ? v : astype(v, t);
}

Array broadcast_to(const Array& x, const Shape& shape) {
  if (!x.valid()) throw ValueError("hetnn.broadcast_to: x is not a valid array");
  for (std::int64_t e : shape)
    if (e < 0) throw ValueError("hetnn.broadcast_to: shape " + shape_str(shape) + " has a negative extent");
  if (broadcast("hetnn.broadcast_to", x.shape(), shape) != shape || x.ndim() > static_cast<int>(shape.size()))
    throw ValueError("hetnn.broadcast_to: an array of shape " + shape_str(x.shape()) + " cannot be broadcast to " +
                     shape_str(shape));
  Array y = Array::empty(x.device(), shape, x.dtype());
  ElementwiseDesc d;
  d.op = EwOp::cast;  // a copy: cast to its own type, read at the broadcast strides
  d.in = d.out = x.dtype();
  coalesce(d, shape, view_strides(x, shape), strides_in(shape, shape));
  run(d, x, nullptr, y);
  return y;
}

Array full(const DevicePtr& dev, const Shape& shape, const EwScalar& s, const DType* t) {
  DType type = s.is_bool ? DType::b8 : s.is_float ? default_real(dev) : DType::i64;
  if (t) type = *t;
  dev->require(type, "full");
  if (!s.is_float && !s.is_bool && !is_floating(type) && type != DType::b8) fit_int("hetnn.full", s.i, type);
  if (s.is_float && !is_floating(type) && type != DType::b8 && !std::isfinite(s.f))
    throw ValueError("hetnn.full: " + std::to_string(s.f) + " cannot fill an array of " + dtype_name(type));
  Array v;
  if (s.is_float) {
    if (type == DType::f64) {
      v = Array::from_host(dev, &s.f, {}, DType::f64);
    } else {
      const float g = static_cast<float>(s.f);
      v = astype(Array::from_host(dev, &g, {}, DType::f32), type);
    }
  } else {
    v = astype(Array::from_host(dev, &s.i, {}, DType::i64), type);
  }
  return broadcast_to(v, shape);
}

Array elementwise(EwOp op, const Array& a, const EwScalar& s, bool scalar_first, Array* out) {
  const EwInfo& info = ew_info(op);
  check_input(op, a, scalar_first ? "x2" : "x1");
  if (info.arity != 2) throw TypeError(who(op) + " takes one argument");
  // the scalar is weak: it takes the array's type, except a float with an integer or bool array
  DType t = a.dtype();
  if (s.is_float && !is_floating(t)) t = default_real(a.device());
  else if (!s.is_float && !s.is_bool && t == DType::b8) t = DType::i64;
  const Types ty = op_types(op, t, a.device());
  a.device()->require(ty.in, info.name);
  Array made;
  if (out) check_out(info.name, true, a.device(), a.shape(), ty.out, out);
  if (!out || !direct_out(*out, {&a})) made = Array::empty(a.device(), a.shape(), ty.out);
  Array& y = made.valid() ? made : *out;
  std::optional<Array> ca;
  if (a.dtype() != ty.in) ca = astype(a, ty.in);
  thread_local ElementwiseDesc d;  // reused, as the two-array form's
  d.op = op;
  d.in = ty.in;
  d.out = ty.out;
  d.scalar = scalar_first ? 2 : 1;
  d.fscalar = 0;
  d.iscalar = 0;
  if (is_floating(ty.in)) {
    d.fscalar = s.is_float ? s.f : static_cast<double>(s.i);
  } else {
    if (s.is_float) throw TypeError(who(op) + ": a float scalar with " + std::string(dtype_name(ty.in)));
    fit_int(who(op), s.i, ty.in);
    d.iscalar = s.i;
  }
  // x ** 2 as square (any type: the same wrapping for integers) and a float x ** -1 as reciprocal, as NumPy's
  // operator does: the same results (each a correctly rounded x*x or 1/x), without pow's logarithm and exponential
  if (op == EwOp::pow && !scalar_first && ty.in == ty.out &&
      (is_floating(ty.in) ? (d.fscalar == 2.0 || d.fscalar == -1.0) : d.iscalar == 2)) {
    const double e = is_floating(ty.in) ? d.fscalar : static_cast<double>(d.iscalar);
    d.op = e == 2.0 ? EwOp::square : EwOp::reciprocal;
    d.scalar = 0;
  }
  const Array& A = ca ? *ca : a;
  if (A.is_dense()) {
    flat_walk(d, shape_size(a.shape()));
  } else {
    coalesce(d, a.shape(), view_strides(A, a.shape()), view_strides(A, a.shape()));
  }
  run(d, A, nullptr, y);
  if (!out) return made;
  if (made.valid()) out->copy_from(made);
  return Array();  // the result is in *out (a copy of it would cost more than a small array's op)
}

}  // namespace hetnn
