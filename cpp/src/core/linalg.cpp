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
      throw AxisError(kWho + ": axis " + std::to_string(a) + " is out of bounds for " + which + " of " +
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

IndexItem slice(std::int64_t start, std::int64_t stop) {
  IndexItem s;
  s.kind = IndexItem::Kind::slice;
  s.start = start;
  s.stop = stop;
  return s;
}

std::int64_t product(const Shape& s) {
  std::int64_t n = 1;
  for (std::int64_t e : s) n *= e;
  return n;
}

// Exact integer products of stacks A (ba, M, K) and B (bb, K, N), ba and bb each 1 or n: (n, M, N) in A's dtype,
// wrapping as NumPy's (tensordot's integers too). The broadcast products (batches, rows, K, N) are made a block at
// a time, within kBlockElements where one row allows it.
Array integer_stacks(const Array& A, const Array& B, std::int64_t n) {
  const std::int64_t M = A.shape()[1], K = A.shape()[2], N = B.shape()[2];
  const std::int64_t per_row = std::max<std::int64_t>(1, K * N);
  const std::int64_t rows = std::clamp<std::int64_t>(kBlockElements / per_row, 1, M);
  const std::int64_t batches = std::clamp<std::int64_t>(kBlockElements / (rows * per_row), 1, n);
  Axes over;
  over.all = false;
  over.list = {2};
  std::vector<Array> stacks;
  for (std::int64_t b0 = 0; b0 < n; b0 += batches) {
    const std::int64_t b1 = std::min(n, b0 + batches);
    const Array a_b = A.shape()[0] == 1 ? A : getitem(A, Index{slice(b0, b1)});
    const Array b_b = B.shape()[0] == 1 ? B : getitem(B, Index{slice(b0, b1)});
    const Array b4 = b_b.reshape({b_b.shape()[0], 1, K, N});
    std::vector<Array> parts;
    for (std::int64_t r0 = 0; r0 < M; r0 += rows) {
      const Array blk = getitem(a_b, Index{slice(0, a_b.shape()[0]), slice(r0, std::min(M, r0 + rows))});
      const Array prod =
          elementwise(EwOp::multiply, blk.reshape({blk.shape()[0], blk.shape()[1], K, 1}), &b4, nullptr);
      parts.push_back(reduce(RedOp::sum, prod, over, false, A.dtype()));
    }
    stacks.push_back(parts.size() == 1 ? parts[0] : concat(parts, 1));
  }
  return stacks.size() == 1 ? stacks[0] : concat(stacks, 0);
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
  if (sa.empty()) {  // an outer product: the products alone, as NumPy's (a sum from 0 would turn -0.0 into 0.0)
    const Array Bt = B.reshape({1, n});
    return elementwise(EwOp::multiply, A.reshape({m, 1}), &Bt, nullptr).reshape(shape);
  }
  if (is_floating(t)) return matmul(A, B, nullptr, MatmulArgs{}).reshape(shape);
  return integer_stacks(A.reshape({1, m, k}), B.reshape({1, k, n}), 1).reshape(shape);
}


Array matmul_stacked(const Array& a, const Array& b, std::optional<Precision> precision) {
  if (!a.valid()) throw ValueError("matmul: a is not a valid array");
  if (!b.valid()) throw ValueError("matmul: b is not a valid array");
  if (a.device() != b.device())
    throw ValueError("matmul: a is on " + a.device()->id() + " but b is on " + b.device()->id() +
                     "; move one with .to(device) (hetnn never transfers silently)");
  if (a.ndim() == 0 || b.ndim() == 0)
    throw ValueError(std::string("matmul: ") + (a.ndim() == 0 ? "a" : "b") +
                     " is 0-d; matmul needs vectors or matrices (multiply numbers with *)");
  if (a.dtype() == DType::b8 || b.dtype() == DType::b8)
    throw TypeError(std::string("matmul: needs numeric arrays, got ") + dtype_name(a.dtype()) + " and " +
                    dtype_name(b.dtype()));
  const DType t = result_type(a.dtype(), b.dtype());
  a.device()->require(t, "matmul");
  const Array a2 = a.ndim() == 1 ? a.reshape({1, a.shape()[0]}) : a;
  const Array b2 = b.ndim() == 1 ? b.reshape({b.shape()[0], 1}) : b;
  const Shape& as = a2.shape();
  const Shape& bs = b2.shape();
  const std::int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  if (K != bs[bs.size() - 2])
    throw ValueError("matmul: shapes " + shape_str(a.shape()) + " and " + shape_str(b.shape()) +
                     " are not aligned: " + std::to_string(K) + " (a's last dimension) != " +
                     std::to_string(bs[bs.size() - 2]) + " (b's " + (b.ndim() == 1 ? "only" : "second to last") +
                     " dimension)");
  const Shape sa(as.begin(), as.end() - 2), sb(bs.begin(), bs.end() - 2);
  const Shape stack = broadcast("matmul: the stacks of matrices", sa, sb);
  const std::int64_t n = product(stack);
  Shape rs = stack;
  if (a.ndim() > 1) rs.push_back(M);
  if (b.ndim() > 1) rs.push_back(N);
  if (n == 0 || M == 0 || N == 0) return Array::empty(a.device(), rs, t);
  if (K == 0) return Array::zeros(a.device(), rs, t);
  // each operand as (1 or n, rows, cols): one matrix is not copied per stack (the kernels broadcast it)
  const auto stacked = [&](const Array& x, const Shape& s, std::int64_t r, std::int64_t c) {
    Array y = x.dtype() == t ? x : astype(x, t);
    if (product(s) == 1) return y.reshape({1, r, c});
    if (s != stack) {
      Shape full = stack;
      full.push_back(r);
      full.push_back(c);
      y = broadcast_to(y, full);
    }
    return y.reshape({n, r, c});
  };
  const Array A = stacked(a2, sa, M, K), B = stacked(b2, sb, K, N);
  if (!is_floating(t)) return integer_stacks(A, B, n).reshape(rs);
  MatmulArgs args;
  args.precision = precision;
  return matmul(A.shape()[0] == 1 ? A.reshape({M, K}) : A, B.shape()[0] == 1 ? B.reshape({K, N}) : B, nullptr, args)
      .reshape(rs);
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
