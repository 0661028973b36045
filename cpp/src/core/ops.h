// Every op, declared once: what a backend receives (the descriptors), the list of ops each backend implements
// (HETNN_BACKEND_OPS) and the public fronts (core/<op>.cpp: they validate once, then dispatch). The training ops'
// fronts are in core/nn.h. docs/adding-an-op.md is the recipe for a new op.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/dtype.h"
#include "core/precision.h"

namespace hetnn {

class Array;
using Shape = std::vector<std::int64_t>;

// Activation applied by fused epilogues (matmul, dense layers).
enum class Activation : std::uint8_t { none = 0, relu = 1, sigmoid = 2, tanh = 3 };
const char* activation_name(Activation a);

// C[b] = act(alpha * op(A[b]) @ op(B[b]) + beta * C[b] + bias), all operands contiguous row-major; bias has N
// elements and is broadcast over rows (optional).
// A is stored (M, K), or (K, M) when trans_a; B is stored (K, N), or (N, K) when trans_b; C is (M, N).
// batch_a / batch_b are either `batch` or 1 (broadcast). K may be 0 (then C = beta * C); M, N, batch are > 0.
struct MatmulDesc {
  std::int64_t batch = 1, M = 0, N = 0, K = 0;
  std::int64_t batch_a = 1, batch_b = 1;
  bool trans_a = false, trans_b = false;
  DType dtype = DType::f32;
  double alpha = 1.0, beta = 0.0;
  bool has_bias = false;
  Activation act = Activation::none;
  // float32 only: the precision in force is "high" (core/precision.h), so a device with TF32 matrix units may use
  // them; every other device, and every other dtype, ignores it
  bool allow_tf32 = false;
  // float16 / bfloat16 operands with a float32 result: C (read by beta, written) and bias are float32, the
  // float32 accumulation stored without rounding to 16 bits
  bool out_f32 = false;
};
// The dtype of C and bias.
inline DType matmul_out_dtype(const MatmulDesc& d) { return d.out_f32 ? DType::f32 : d.dtype; }

// 2-D max pooling over NCHW planes (PyTorch semantics; see core/max_pool.h). Window (oh, ow) covers rows
// oh*sh - ph + i*dh (i < kh) and columns ow*sw - pw + j*dw (j < kw); positions outside the input are skipped (-inf).
struct Pool2dDesc {
  std::int64_t N = 0, C = 0, H = 0, W = 0, OH = 0, OW = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  bool ceil_mode = false;
  // Max pooling only: the padding holds zeros (a tap on rows [-ph, 0) or [H, H + ph), or on the matching columns,
  // reads 0 at index -1) instead of never winning. Set only with padding.
  bool zero_pad = false;
  DType dtype = DType::f32;
};

// 2-D average pooling (PyTorch's avg_pool2d; dilation is 1). Window (oh, ow) spans rows [oh*sh - ph, + kh) and
// columns [ow*sw - pw, + kw), clipped to the padded input; its sum over the input positions inside it is divided by
// divisor_override when non-zero, else by the clipped window's area with count_include_pad, else by the number of
// input positions it holds.
struct AvgPool2dDesc : Pool2dDesc {
  bool count_include_pad = true;
  int divisor_override = 0;
};

// 2-D convolution (PyTorch's conv2d, a cross-correlation) of x (N, C, H, W) with w (O, C/groups, kh, kw):
// y[n, o, oh, ow] = act(bias[o] + sum over the channels c of o's group, i < kh, j < kw of
// x[n, c, oh*sh - ph + i*dh, ow*sw - pw + j*dw] * w[o, c - (o's group) * C/groups, i, j]); positions outside the
// input count as 0. ph / pw pad the top and left; OH / OW say how far the windows go, so a bottom or right padding
// one larger ("same" with an even kernel) needs nothing more. pr / pw_r are those bottom and right paddings.
struct Conv2dDesc {
  std::int64_t N = 0, C = 0, H = 0, W = 0, O = 0, OH = 0, OW = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, pr = 0, pw_r = 0, dh = 1, dw = 1, groups = 1;
  DType dtype = DType::f32;
  bool has_bias = false;
  Activation act = Activation::none;
  bool allow_tf32 = false;  // as MatmulDesc's
};
// A 1x1, stride-1, unpadded convolution: a matrix product per image, on the arrays as they are (both backends).
inline bool conv_is_pointwise(const Conv2dDesc& d) {
  return d.kh == 1 && d.kw == 1 && d.sh == 1 && d.sw == 1 && !d.ph && !d.pw && !d.pr && !d.pw_r;
}

// Training ops (core/nn.h validates their operands). Losses and metrics add into a one-element float32
// accumulator on the device, so a training loop reads it back only when it reports.
enum class LossKind : std::uint8_t {
  cross_entropy_labels,  // softmax cross-entropy, target: int64 class per row
  cross_entropy_probs,   // softmax cross-entropy, target: (rows, cols) probabilities (one-hot or soft)
  mse,                   // squared error, target: (rows, cols)
};
// acc[0] += loss_scale * sum over rows of the row's loss (cross-entropy: -sum_c t_c log softmax(x)_c; mse: sum_c
// (x - t)^2); grad (optional, (rows, cols)) = grad_scale * d(sum of row losses)/dx.
struct LossDesc {
  LossKind kind = LossKind::mse;
  DType dtype = DType::f32;
  std::int64_t rows = 0, cols = 0;
  double loss_scale = 1.0, grad_scale = 1.0;
};
enum class MetricKind : std::uint8_t {
  correct_argmax,     // rows whose first maximum is at the int64 label
  correct_threshold,  // elements where (x > 0.5) == (t > 0.5) (one output per row: binary accuracy)
  abs_error,          // sum of |x - t|
};
struct MetricDesc {
  MetricKind kind = MetricKind::abs_error;
  DType dtype = DType::f32;
  std::int64_t rows = 0, cols = 0;
};
// PyTorch's SGD over n elements: g = grad + weight_decay * p; with momentum v = momentum * v + g and g = v (or
// g + momentum * v when nesterov); p -= lr * g. velocity is null without momentum.
struct SgdDesc {
  DType dtype = DType::f32;
  std::int64_t n = 0;
  double lr = 0.01, momentum = 0.0, weight_decay = 0.0;
  bool nesterov = false;
};
// PyTorch's Adam / AdamW over n elements, one step (the front folds the step count into the scalars):
//   AdamW: p *= 1 - lr * weight_decay      Adam: g = grad + weight_decay * p
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2;  amsgrad: vmax = max(vmax, v), v' = vmax
//   p -= step_size * m / (sqrt(v') / bias2_sqrt + eps)
// with step_size = lr / (1 - beta1^t) and bias2_sqrt = sqrt(1 - beta2^t). vmax is null without amsgrad.
struct AdamDesc {
  DType dtype = DType::f32;
  std::int64_t n = 0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double step_size = 1e-3, bias2_sqrt = 1.0;
  double decay = 0.0;        // Adam: weight_decay (added to the gradient)
  double shrink = 1.0;       // AdamW: 1 - lr * weight_decay (applied to p first)
};
// Inverted dropout over n elements: out[i] = keep(seed, i) ? x[i] * scale : 0, where keep(seed, i) compares 24
// bits of a 64-bit hash of (seed, i) with `threshold` (= round(p * 2^24)), the same integers on every device, so
// a mask is a function of (seed, i) alone: the backward pass applies the same op to the gradient.
// SplitMix64's output for counter k of the stream `seed` (its state after k + 1 steps, mixed).
inline std::uint64_t splitmix64(std::uint64_t seed, std::uint64_t k) {
  std::uint64_t z = seed + (k + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// The draw: 24 bits of SplitMix64's output for element i (kernels/nn.cl has the same function).
inline std::uint32_t dropout_draw(std::uint64_t seed, std::uint64_t i) {
  return static_cast<std::uint32_t>(splitmix64(seed, i) >> 40);
}
// Random numbers (core/random.h): element i of the output is a function of (seed, offset + i) alone, SplitMix64
// above over the counter, so a stream is the same on every device and any part of it can be drawn without the rest.
//   uniform   low + (high - low) u, u in [0, 1) from the top bits of the draw: 53 for float64, 24 for float32, 11
//             for float16, 8 for bfloat16 (every u exact in the type, so [0, 1) stays below 1).
//   normal    loc + scale z, z = sqrt(-2 ln u1) cos(2 pi u2) (Box-Muller), u1 in (0, 1] and u2 in [0, 1) from the
//             draws of counters 2i and 2i + 1 (53-bit in float64, 24-bit in float otherwise).
//   integers  low + floor(draw * span / 2^64): the integers [low, low + span) (span 0: all of int64).
enum class RandDist : std::uint8_t { uniform, normal, integers };
struct RandomDesc {
  RandDist dist = RandDist::uniform;
  DType out = DType::f32;
  std::int64_t n = 0;
  std::uint64_t seed = 0, offset = 0;
  double a = 0, b = 1;  // uniform: low, high; normal: loc, scale
  std::int64_t low = 0;
  std::uint64_t span = 0;
};
// u in [0, 1) from a 64-bit draw with `bits` bits of precision; the same expression in kernels/random.cl.
inline double unit_from_bits(std::uint64_t draw, int bits) {
  return static_cast<double>(draw >> (64 - bits)) * (1.0 / static_cast<double>(std::uint64_t{1} << bits));
}

struct DropoutDesc {
  DType dtype = DType::f32;
  std::int64_t n = 0;
  std::uint64_t seed = 0;
  std::uint32_t threshold = 0;  // elements whose 24-bit draw is below it are dropped
  double scale = 1.0;           // 1 / (1 - p), 0 when p = 1
};

// Element-wise ops (the front and the type rules: core/elementwise.h): X(name, arity, kind). Kinds: arith (numeric
// in, same type out), real (floating in and out; integers are first cast to the device's default real type),
// compare (any in, bool out), logical (any in, read as != 0; bool out), bitwise (integer or bool in, same out),
// rounding (floating; integers unchanged), test (any in, bool out), cast (any to any: astype).
#define HETNN_EW_OPS(X)                                                                                           \
  X(add, 2, arith) X(subtract, 2, arith) X(multiply, 2, arith) X(floor_divide, 2, arith) X(remainder, 2, arith)    \
  X(pow, 2, arith) X(maximum, 2, arith) X(minimum, 2, arith)                                                    \
  X(divide, 2, real) X(atan2, 2, real) X(hypot, 2, real) X(copysign, 2, real) X(logaddexp, 2, real)             \
  X(equal, 2, compare) X(not_equal, 2, compare) X(less, 2, compare) X(less_equal, 2, compare)                   \
  X(greater, 2, compare) X(greater_equal, 2, compare)                                                           \
  X(logical_and, 2, logical) X(logical_or, 2, logical) X(logical_xor, 2, logical)                               \
  X(bitwise_and, 2, bitwise) X(bitwise_or, 2, bitwise) X(bitwise_xor, 2, bitwise)                               \
  X(bitwise_left_shift, 2, bitwise) X(bitwise_right_shift, 2, bitwise)                                          \
  X(negative, 1, arith) X(positive, 1, arith) X(abs, 1, arith) X(square, 1, arith) X(sign, 1, arith)            \
  X(exp, 1, real) X(expm1, 1, real) X(log, 1, real) X(log1p, 1, real) X(log2, 1, real) X(log10, 1, real)        \
  X(sqrt, 1, real) X(sin, 1, real) X(cos, 1, real) X(tan, 1, real) X(asin, 1, real) X(acos, 1, real)            \
  X(atan, 1, real) X(sinh, 1, real) X(cosh, 1, real) X(tanh, 1, real) X(asinh, 1, real) X(acosh, 1, real)       \
  X(atanh, 1, real) X(reciprocal, 1, real)                                                                      \
  X(floor, 1, rounding) X(ceil, 1, rounding) X(round, 1, rounding) X(trunc, 1, rounding)                        \
  X(isnan, 1, test) X(isinf, 1, test) X(isfinite, 1, test) X(signbit, 1, test)                                  \
  X(logical_not, 1, logical) X(bitwise_invert, 1, bitwise) X(cast, 1, cast)

enum class EwOp : std::uint8_t {
#define HETNN_EW_ENUM(name, arity, kind) name,
  HETNN_EW_OPS(HETNN_EW_ENUM)
#undef HETNN_EW_ENUM
};

inline const char* ew_name(EwOp op) {
#define HETNN_EW_NAME(name, arity, kind) #name,
  static constexpr const char* names[] = {HETNN_EW_OPS(HETNN_EW_NAME)};
#undef HETNN_EW_NAME
  return names[static_cast<int>(op)];
}
inline int ew_arity(EwOp op) {
#define HETNN_EW_ARITY(name, arity, kind) arity,
  static constexpr int arities[] = {HETNN_EW_OPS(HETNN_EW_ARITY)};
#undef HETNN_EW_ARITY
  return arities[static_cast<int>(op)];
}

constexpr int kEwMaxDims = 8;

// What a backend computes: out[i] = op(a[i], b[i]) over the elements of `shape` (row-major), a and b read at
// the element strides sa / sb (0 along a broadcast dimension) from elements oa / ob of their buffers (views), the
// output dense from its buffer's start. `in` is the type of both
// inputs (for cast: the source type), `out` the result's. With scalar != 0 there is no b: the scalar (fscalar in
// floating ops, iscalar in integer ones, within type `in`) is the second operand (scalar 1) or the first (scalar 2).
// `contiguous`: one dimension read at stride 1, so element i sits at offset + i in every operand.
struct ElementwiseDesc {
  EwOp op = EwOp::add;
  DType in = DType::f32, out = DType::f32;
  Shape shape;
  std::vector<std::int64_t> sa, sb;
  std::vector<std::int64_t> sc;  // where: the condition's strides (empty otherwise)
  std::int64_t oa = 0, ob = 0, oc = 0;  // where's condition: oc
  std::int64_t n = 0;
  int scalar = 0;
  double fscalar = 0;
  std::int64_t iscalar = 0;
  bool contiguous = true;
};

// What copy_strided moves: out[oo + sum(idx * so)] = src[os + sum(idx * ss)] for every index idx of `shape`
// (row-major, at most kEwMaxDims dimensions after the front's merging), elements of `elem` bytes (1, 2, 4 or 8)
// moved as raw bits. Strides and offsets are in elements and may be negative (flip); the front checks that every
// element read and written lies inside its buffer and that src and out do not share memory.
struct CopyDesc {
  std::size_t elem = 4;
  Shape shape;
  std::vector<std::int64_t> ss, so;
  std::int64_t os = 0, oo = 0, n = 0;
};

// A user's element-wise kernel (core/user_kernel.h; hetnn.ElementwiseKernel): the parameters (inputs first, then
// outputs), each an array read at its strides (outputs: at i) or, for inputs, a number (fvalue / ivalue), the
// placeholder types in force for this call, and the user's code. Each backend generates its own source from it
// (OpenCL C; C99 for the CPU device) in which every parameter is a local variable of its C type, `i` the flat
// output index and `n` their number; an output's variable starts as the output's current element where the
// operation may read it or leave it unassigned (reads_output: given outputs only), else as 0, and is stored after
// the operation.
struct UserEwDesc {
  std::string name, operation, preamble;
  std::vector<std::pair<std::string, DType>> typedefs;
  std::vector<std::string> names;
  std::vector<DType> types;
  int n_in = 0;
  std::vector<bool> scalar;
  std::vector<double> fvalue;
  std::vector<std::int64_t> ivalue;
  std::vector<bool> reads_output;  // per output
  Shape shape;
  std::vector<std::vector<std::int64_t>> strides;
  std::int64_t n = 0;
  bool contiguous = true;
  std::string key;  // user_signature of the above, set by the front (the backends look compiled code up by it)
};

// What the generated code of a user kernel depends on, as a short key (the backends look compiled code up by it
// before generating any source): the code, the types, which inputs are numbers and which outputs are read.
inline std::string user_signature(const std::string& name, const std::string& code,
                                  const std::vector<std::pair<std::string, DType>>& typedefs,
                                  const std::vector<DType>& types, const std::vector<bool>& scalar,
                                  const std::vector<bool>& flags) {
  std::string k = name;
  k += '\x1f';
  k += code;
  k += '\x1f';
  for (const auto& [ph, t] : typedefs) (k += ph) += static_cast<char>('a' + static_cast<int>(t));
  k += '\x1f';
  for (std::size_t i = 0; i < types.size(); ++i) {
    k += static_cast<char>('a' + static_cast<int>(types[i]));
    k += i < scalar.size() && scalar[i] ? 's' : 'a';
  }
  for (bool f : flags) k += f ? '1' : '0';
  return k;
}

// A user's reduction kernel (core/user_kernel.h; hetnn.ReductionKernel): inputs as UserEwDesc's, read at
// sum(kidx * ks) + sum(ridx * rs) over the kept dimensions kshape (the outputs' elements, row-major) and the reduced
// ones rshape (coalesced, at least {1} each); `parts` partial reductions per output over consecutive slices of the
// reduced elements (reduce_expr combines them), then post_map_expr stores the outputs. Generated code: the inputs
// are local variables in map_expr, `a` and `b` (of reduce_type) in reduce_expr, `a` and the outputs in
// post_map_expr.
struct UserRedDesc {
  std::string name, map_expr, reduce_expr, post_map_expr, identity, preamble;
  DType reduce_type = DType::f32;
  std::vector<std::pair<std::string, DType>> typedefs;
  std::vector<std::string> names;
  std::vector<DType> types;
  int n_in = 0;
  std::vector<bool> scalar;
  std::vector<double> fvalue;
  std::vector<std::int64_t> ivalue;
  Shape kshape, rshape;
  std::vector<std::vector<std::int64_t>> ks, rs;  // per input
  std::int64_t n_out = 0, n_red = 0;
};

// Reductions (the front and the type rules: core/reduction.h). sumsq: the sum of squares (var and std).
#define HETNN_RED_OPS(X) X(sum) X(prod) X(max) X(min) X(argmax) X(argmin) X(all) X(any) X(sumsq)

enum class RedOp : std::uint8_t {
#define HETNN_RED_ENUM(name) name,
  HETNN_RED_OPS(HETNN_RED_ENUM)
#undef HETNN_RED_ENUM
};

inline const char* red_name(RedOp op) {
#define HETNN_RED_NAME(name) #name,
  static constexpr const char* names[] = {HETNN_RED_OPS(HETNN_RED_NAME)};
#undef HETNN_RED_NAME
  return names[static_cast<int>(op)];
}

// What a backend computes: out[o] = op over the reduced elements of x, o running over the kept dimensions kshape
// in row-major order (the output's elements), the reduced ones over rshape in row-major order; element (o, r)
// sits at the offset sum(kidx * ks) + sum(ridx * rs) of x. Both sets are coalesced by the front (at most
// kEwMaxDims each; kshape {1} and rshape {1} when there is none). argmax / argmin give the flat row-major index
// over rshape of the first maximum / minimum (NaN counts as the largest and the smallest: the first NaN wins, as
// in NumPy). sum and sumsq are multiplied by `scale` (mean, var) after the reduction, in the accumulator's type.
// n_red 0 gives the identity (sum 0, prod 1, all true, any false; times scale).
struct ReduceDesc {
  RedOp op = RedOp::sum;
  DType in = DType::f32, out = DType::f32;
  Shape kshape, rshape;
  std::vector<std::int64_t> ks, rs;
  std::int64_t off = 0;  // x's first element (a view)
  std::int64_t n_out = 0, n_red = 0;
  double scale = 1.0;
};

// out (outer, len + include_initial, inner) = the running sums (products with `prod`) of x (outer, len, inner)
// along the middle axis, starting from 0 (1) (a leading 0 (1) with include_initial), in the accumulator type.
struct ScanDesc {
  DType in = DType::f32, out = DType::f32;
  std::int64_t outer = 0, len = 0, inner = 0;
  bool include_initial = false;
  bool prod = false;
};

// Lines (outer, len, inner) of one dtype sorted along the middle axis, stably: values (d.dtype) and/or indices
// (int64 positions along the axis) written in the same layout. NaN is the largest value (last ascending, first
// descending); -0.0 and 0.0 are equal.
struct SortDesc {
  DType dtype = DType::f32;
  std::int64_t outer = 0, len = 0, inner = 0;
  bool descending = false;
};

// out[j] (int64, m of them) = the insertion point of v[j] in the sorted 1-D `sorted` (n elements, both of dtype
// d.dtype, ascending with NaN last as SortDesc orders): the first position whose element does not go before v[j]
// (left), or the first whose element goes after it (right).
struct SearchDesc {
  DType dtype = DType::f32;
  std::int64_t n = 0, m = 0;
  bool right = false;
};

// The ops every backend implements, listed once: X(name, (parameters)). Backend declares each pure virtual; a
// backend class declares its overrides with HETNN_BACKEND_OPS(HETNN_OP_OVERRIDE), so a new op is one line here
// plus its implementation in each backend's <op>_cpu.cpp / <op>_cl.cpp.
//   matmul               c = act(alpha op(a) op(b) + beta c + bias), as the MatmulDesc says.
//   max_pool2d           y (N, C, OH, OW) = window maxima of x (N, C, H, W); NaN wins, else the first maximum in
//                        row-major window order. indices (int64, optional): flat h*W + w of each maximum in its plane.
//                        With d.zero_pad, the padding's taps count as 0 in that order, at index -1.
//   max_pool2d_backward  gx (N, C, H, W) = sum of gy over the windows whose index points at each position; throws
//                        ValueError when an index does not point inside its own window (corrupt or foreign indices);
//                        with d.zero_pad, -1 (the padding won) is accepted in windows that reach the padding.
//   avg_pool2d           y (N, C, OH, OW) = window averages of x (N, C, H, W), as the AvgPool2dDesc says.
//   avg_pool2d_backward  gx (N, C, H, W) = sum over the windows holding each input position of gy / the window's
//                        divisor (the AvgPool2dDesc's); positions in no window get 0.
//   conv2d               y (N, O, OH, OW) = act(x (*) w + bias), as the Conv2dDesc says; bias is null without one.
//   conv2d_backward_data     gx (N, C, H, W) = d(sum gy . y_pre)/dx: gy convolved back through w (no activation).
//   conv2d_backward_weights  gw (O, C/groups, kh, kw) = d(sum gy . y_pre)/dw over the batch; gb (O) = sum of gy
//                            over n, oh, ow when non-null.
//   Training ops (core/nn.h):
//   activation           out = act(x) over n elements.
//   activation_backward  dx = dy * act'(.) from the activation's output y (relu: y > 0, sigmoid: y (1 - y), tanh:
//                        1 - y^2).
//   softmax              y = softmax of each row of x (rows, cols), computed stably (max subtracted).
//   loss, metric, sgd_update   as their descriptors say (LossDesc, MetricDesc, SgdDesc).
//   adam_update          as AdamDesc says (m, v, vmax: param's shape and dtype; vmax null without amsgrad).
//   dropout              as DropoutDesc says (out may be x).
//   sum_rows             out (cols) = beta * out + sum over the rows of x (rows, cols): the bias gradient.
//   take_rows            row r of out = row idx[offset + r] of src (rows of row_bytes; n rows): minibatches gathered
//                        on the device. Indices are clamped to [0, src_rows) (the front checks them where it can).
//   elementwise          as ElementwiseDesc says (core/elementwise.h); b null for unary ops and scalar operands.
//   where                out[i] = cond[i] ? a[i] : b[i] (cond bool, read at d.sc; a and b of type d.in = d.out).
//   reduce               as ReduceDesc says (core/reduction.h).
//   cumulative_sum       as ScanDesc says.
//   sort                 as SortDesc says (values and indices: either may be null, not both).
//   searchsorted         as SearchDesc says.
//   copy_strided         as CopyDesc says (core/manipulation.h: indexing, permute_dims, flip, concat, stack, ...).
//   random               out (n elements of d.out) = the draws RandomDesc describes.
//   user_elementwise     a user's kernel as UserEwDesc says; args: one per parameter (null for number inputs).
//   user_reduction       a user's reduction as UserRedDesc says; args as user_elementwise's.
#define HETNN_BACKEND_OPS(X)                                                                                      \
  X(matmul, (const MatmulDesc& d, const Buffer& a, const Buffer& b, Buffer& c, const Buffer* bias))              \
  X(max_pool2d, (const Pool2dDesc& d, const Buffer& x, Buffer& y, Buffer* indices))                              \
  X(max_pool2d_backward, (const Pool2dDesc& d, const Buffer& gy, const Buffer& indices, Buffer& gx))             \
  X(avg_pool2d, (const AvgPool2dDesc& d, const Buffer& x, Buffer& y))                                         \
  X(avg_pool2d_backward, (const AvgPool2dDesc& d, const Buffer& gy, Buffer& gx))                              \
  X(conv2d, (const Conv2dDesc& d, const Buffer& x, const Buffer& w, const Buffer* bias, Buffer& y))             \
  X(conv2d_backward_data, (const Conv2dDesc& d, const Buffer& gy, const Buffer& w, Buffer& gx))                  \
  X(conv2d_backward_weights, (const Conv2dDesc& d, const Buffer& gy, const Buffer& x, Buffer& gw, Buffer* gb))   \
  X(activation, (Activation act, DType t, std::int64_t n, const Buffer& x, Buffer& out))                         \
  X(activation_backward, (Activation act, DType t, std::int64_t n, const Buffer& dy, const Buffer& y, Buffer& dx)) \
  X(softmax, (DType t, std::int64_t rows, std::int64_t cols, const Buffer& x, Buffer& y))                        \
  X(loss, (const LossDesc& d, const Buffer& pred, const Buffer& target, Buffer& acc, Buffer* grad))              \
  X(metric, (const MetricDesc& d, const Buffer& pred, const Buffer& target, Buffer& acc))                        \
  X(sgd_update, (const SgdDesc& d, Buffer& param, const Buffer& grad, Buffer* velocity))                         \
  X(adam_update, (const AdamDesc& d, Buffer& param, const Buffer& grad, Buffer& m, Buffer& v, Buffer* vmax))   \
  X(dropout, (const DropoutDesc& d, const Buffer& x, Buffer& out))                                              \
  X(sum_rows, (DType t, std::int64_t rows, std::int64_t cols, const Buffer& x, Buffer& out, double beta))        \
  X(take_rows, (std::size_t row_bytes, std::int64_t src_rows, const Buffer& src, const Buffer& idx,              \
                std::int64_t offset, std::int64_t n, Buffer& out))                                             \
  X(elementwise, (const ElementwiseDesc& d, const Buffer& a, const Buffer* b, Buffer& out))                   \
  X(where, (const ElementwiseDesc& d, const Buffer& cond, const Buffer& a, const Buffer& b, Buffer& out))       \
  X(reduce, (const ReduceDesc& d, const Buffer& x, Buffer& out))                                                \
  X(cumulative_sum, (const ScanDesc& d, const Buffer& x, Buffer& out))                                          \
  X(sort, (const SortDesc& d, const Buffer& x, Buffer* values, Buffer* indices))                                 \
  X(searchsorted, (const SearchDesc& d, const Buffer& sorted, const Buffer& v, Buffer& out))                    \
  X(copy_strided, (const CopyDesc& d, const Buffer& src, Buffer& out))                                         \
  X(random, (const RandomDesc& d, Buffer& out))                                                                 \
  X(user_elementwise, (const UserEwDesc& d, const std::vector<Buffer*>& args))                                  \
  X(user_reduction, (const UserRedDesc& d, const std::vector<Buffer*>& args))

// Public fronts (arguments as the user gives them; Python converts types and applies the placement rule).

struct MatmulArgs {
  bool trans_a = false, trans_b = false;
  double alpha = 1.0, beta = 0.0;
  const Array* bias = nullptr;  // (N,), same device and dtype
  Activation act = Activation::none;
  std::optional<Precision> precision;  // the call's own (precision=); else the one in force
  std::optional<DType> out_dtype;      // the result's (out_dtype=): the operands', or float32 for 16-bit ones
};

// out = act(alpha * op(a) @ op(b) + beta * out + bias). 2-D (M,K)@(K,N) or batched 3-D with batch broadcasting of 1 or 2-D.
// Returns `out` when given, else a new Array on the operands' device.
Array matmul(const Array& a, const Array& b, const Array* out, const MatmulArgs& args);

struct Pool2dArgs {
  std::array<int, 2> kernel{1, 1}, stride{1, 1}, padding{0, 0}, dilation{1, 1};  // (h, w)
  bool ceil_mode = false;
  bool zero_padding = false;  // max pooling's padding_mode="zeros" (any padding then; PyTorch's -inf: <= kernel/2)
};

// y = max over each window; indices (int64, flat h*W + w in each input plane) when `indices` is non-null.
// `out` / an already valid *indices are written in place (same device, right shape and dtype), else new Arrays on
// x's device are made. Returns y.
Array max_pool2d(const Array& x, const Pool2dArgs& args, const Array* out, Array* indices);

// grad_input: grad_output scattered to the argmax positions given by `indices`; overlapping windows accumulate.
// input_shape: the forward input's shape (N, C, H, W). `out`: optional grad_input to write.
Array max_pool2d_backward(const Array& grad_output, const Array& indices, const Shape& input_shape,
                          const Pool2dArgs& args, const Array* out);

// y = average over each window (4-D NCHW, or 3-D CHW as N = 1); PyTorch's avg_pool2d (args.dilation must be 1).
// divisor_override: set -> divide every window's sum by it (not 0). `out`: optional y to write.
Array avg_pool2d(const Array& x, const Pool2dArgs& args, bool count_include_pad, std::optional<int> divisor_override,
                 const Array* out);

// grad_input of avg_pool2d: each window's gradient spread evenly over the input positions it averaged (divided by
// the same divisor as the forward). input_shape: the forward input's shape. `out`: optional grad_input to write.
Array avg_pool2d_backward(const Array& grad_output, const Shape& input_shape, const Pool2dArgs& args,
                          bool count_include_pad, std::optional<int> divisor_override, const Array* out);

struct Conv2dArgs {
  std::array<int, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1};  // (h, w)
  enum class Padding : std::uint8_t { given, same, valid } mode = Padding::given;  // "same"/"valid" strings
  int groups = 1;
  Activation act = Activation::none;
  std::optional<Precision> precision;  // as MatmulArgs'
};

// y = act(conv2d(x, weight) + bias) with PyTorch's conv2d semantics: x (N, C, H, W) or unbatched (C, H, W), weight
// (O, C/groups, kh, kw), bias (O,) or null; same device and dtype. `out`: optional y to write.
Array conv2d(const Array& x, const Array& weight, const Array* bias, const Conv2dArgs& args, const Array* out);

// The per-sample output shape (O, OH, OW) of conv2d on per-sample input (C, H, W) with weights of weight_shape; the
// same checks as conv2d (op names the caller in messages). Layers ask it for their output shapes.
Shape conv2d_output_shape(const Shape& sample, const Shape& weight_shape, const Conv2dArgs& args, const char* op);

// The gradients of y = conv2d(x, weight, bias) (before any activation) from grad_output = dL/dy: (input (x's shape),
// weight (weight's shape), bias ((O,))), each computed only when asked for (else an invalid Array).
// Where conv2d_backward writes each gradient asked for (null: a new array); each must have the gradient's shape,
// dtype and device and share no memory with the operands.
struct Conv2dGradOut {
  const Array* input = nullptr;
  const Array* weight = nullptr;
  const Array* bias = nullptr;
};
std::tuple<Array, Array, Array> conv2d_backward(const Array& grad_output, const Array& x, const Array& weight,
                                                const Conv2dArgs& args, bool input_grad, bool weight_grad,
                                                bool bias_grad, const Conv2dGradOut& out = {});

}  // namespace hetnn
