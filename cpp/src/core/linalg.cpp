#include "core/linalg.h"

#include <algorithm>
#include <string>

#include "core/elementwise.h"
#include "core/errors.h"
#include "core/manipulation.h"
#include "core/ops.h"
#include "core/reduction.h"

namespace hetnn {

namespace {

const std::string kWho = "hetnn.tensordot";

// Elements of an integer product block at most: the broadcast product of a block of rows is this large.
constexpr std::int64_t kBlockElements = std::int64_t{1} << 24;

std::vector<int> normalized(const std::vector<int>& axes, int ndim, const char* which) {
  std::vector<int> out;
  std::vector<bool> seen(static_cast<std::size_t>(ndim), false);
  for (int a : axes) {
    if (a < -ndim || a >= ndim)
      throw ValueError(kWho + ": axis " + std::to_string(a) + " is out of bounds for " + which + " of " +
                       std::to_string(ndim) + " dimension" + (ndim == 1 ? "" : "s"));
    const int k = a < 0 ? a + ndim : a;
    if (seen[static_cast<std::size_t>(k)])
      throw ValueError(kWho + ": axis " + std::to_string(a) + " of " + which + " is given twice");
    seen[static_cast<std::size_t>(k)] = true;
    out.push_back(k);
  }
  return out;
}

std::vector<int> others(const std::vector<int>& summed, int ndim) {
  std::vector<int> out;
  for (int k = 0; k < ndim; ++k)
    if (std::find(summed.begin(), summed.end(), k) == summed.end()) out.push_back(k);
  return out;
}

}  // namespace

Array tensordot(const Array& a, const Array& b, const std::vector<int>& axes_a, const std::vector<int>& axes_b) {
  if (!a.valid()) throw ValueError(kWho + ": x1 is not a valid array");
  if (!b.valid()) throw ValueError(kWho + ": x2 is not a valid array");
  if (a.device() != b.device())
    throw TypeError(kWho + ": x1 is on " + a.device()->id() + ", x2 on " + b.device()->id() +
                    "; move one with .to(device) first");
  if (a.dtype() == DType::b8 || b.dtype() == DType::b8)
    throw TypeError(kWho + ": needs numeric arrays, got " + dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()));
  if (axes_a.size() != axes_b.size())
    throw ValueError(kWho + ": x1 and x2 need as many summed axes, got " + std::to_string(axes_a.size()) + " and " +
                     std::to_string(axes_b.size()));
  const std::vector<int> sa = normalized(axes_a, a.ndim(), "x1"), sb = normalized(axes_b, b.ndim(), "x2");
  std::int64_t k = 1;
  for (std::size_t i = 0; i < sa.size(); ++i) {
    const std::int64_t ea = a.shape()[static_cast<std::size_t>(sa[i])], eb = b.shape()[static_cast<std::size_t>(sb[i])];
    if (ea != eb)
      throw ValueError(kWho + ": the summed axes differ in extent: x1's axis " + std::to_string(sa[i]) + " has " +
                       std::to_string(ea) + ", x2's axis " + std::to_string(sb[i]) + " has " + std::to_string(eb) +
                       " (shapes " + shape_str(a.shape()) + " and " + shape_str(b.shape()) + ")");
    k *= ea;
  }
  const std::vector<int> fa = others(sa, a.ndim()), fb = others(sb, b.ndim());
  Shape shape;
  std::int64_t m = 1, n = 1;
  for (int i : fa) shape.push_back(a.shape()[static_cast<std::size_t>(i)]), m *= shape.back();
  for (int i : fb) shape.push_back(b.shape()[static_cast<std::size_t>(i)]), n *= shape.back();
  const DType t = result_type(a.dtype(), b.dtype());
  a.device()->require(t, "tensordot");
  if (m == 0 || n == 0) return Array::empty(a.device(), shape, t);
  if (k == 0) return Array::zeros(a.device(), shape, t);
  std::vector<int> pa = fa, pb = sb;
  pa.insert(pa.end(), sa.begin(), sa.end());
  pb.insert(pb.end(), fb.begin(), fb.end());
  const Array A = permute_dims(a.dtype() == t ? a : astype(a, t), pa).reshape({m, k});
  const Array B = permute_dims(b.dtype() == t ? b : astype(b, t), pb).reshape({k, n});
  if (is_floating(t)) return matmul(A, B, nullptr, MatmulArgs{}).reshape(shape);
  // integers: rows of A times B broadcast (rows, k, n), summed over k, a block of rows at a time
  const Array B3 = B.reshape({1, k, n});
  const std::int64_t rows = std::max<std::int64_t>(1, kBlockElements / std::max<std::int64_t>(1, k * n));
  std::vector<Array> parts;
  for (std::int64_t r0 = 0; r0 < m; r0 += rows) {
    IndexItem sel;
    sel.kind = IndexItem::Kind::slice;
    sel.start = r0;
    sel.stop = std::min(m, r0 + rows);
    const Array block = getitem(A, Index{sel});
    const Array prod = elementwise(EwOp::multiply, block.reshape({block.shape()[0], k, 1}), &B3, nullptr);
    Axes over;
    over.all = false;
    over.list = {1};
    parts.push_back(reduce(RedOp::sum, prod, over, false, t));
  }
  const Array y = parts.size() == 1 ? parts[0] : concat(parts, 0);
  return y.reshape(shape);
}

Array tensordot(const Array& a, const Array& b, int n) {
  if (!a.valid() || !b.valid()) throw ValueError(kWho + ": x1 and x2 must be valid arrays");
  if (n < 0 || n > std::min(a.ndim(), b.ndim()))
    throw ValueError(kWho + ": axes " + std::to_string(n) + " must be in [0, " +
                     std::to_string(std::min(a.ndim(), b.ndim())) + "] for shapes " + shape_str(a.shape()) +
                     " and " + shape_str(b.shape()));
  std::vector<int> axes_a, axes_b;
  for (int i = 0; i < n; ++i) {
    axes_a.push_back(a.ndim() - n + i);
    axes_b.push_back(i);
  }
  return tensordot(a, b, axes_a, axes_b);
}

}  // namespace hetnn
