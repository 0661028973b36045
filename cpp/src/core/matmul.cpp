#include "core/matmul.h"

#include <sstream>

#include <limits>

#include "core/errors.h"
#include "core/linalg.h"

namespace hetnn {

namespace {
std::string where(const Array& x) { return x.device()->id(); }
}  // namespace

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::relu: return "relu";
    case Activation::sigmoid: return "sigmoid";
    case Activation::tanh: return "tanh";
    default: return "none";
  }
}

std::vector<std::string> activation_names() {
  return {activation_name(Activation::relu), activation_name(Activation::sigmoid), activation_name(Activation::tanh)};
}

Activation activation_from_name(const std::string& name) {
  for (Activation a : {Activation::none, Activation::relu, Activation::sigmoid, Activation::tanh})
    if (name == activation_name(a)) return a;
  if (name.empty()) return Activation::none;
  throw ValueError("activation must be one of None, 'relu', 'sigmoid', 'tanh'; got '" + name + "'");
}

MatmulDesc matmul_plan(const Array& a, const Array& b, const Array* out, const MatmulArgs& args, Shape* out_shape) {
  if (a.device() != b.device())
    throw ValueError("matmul: a is on " + where(a) + " but b is on " + where(b) +
                     "; move one with .to(device) (hetnn never transfers silently)");
  if (out && out->device() != a.device())
    throw ValueError("matmul: out is on " + where(*out) + " but the operands are on " + where(a));
  for (const auto& [x, name] : {std::pair<const Array*, const char*>{&a, "a"}, {&b, "b"}}) {
    const DType xt = x->dtype();
    if (xt != DType::f32 && xt != DType::f64 && xt != DType::f16 && xt != DType::bf16)
      throw TypeError(std::string("matmul: ") + name + " has dtype " + dtype_name(xt) +
                      "; matmul supports float32, float64, float16 and bfloat16 (convert with .astype(np.float32))");
  }
  if (a.dtype() != b.dtype())
    throw TypeError(std::string("matmul: a is ") + dtype_name(a.dtype()) + " but b is " + dtype_name(b.dtype()) +
                    "; convert one so both have the same dtype");
  const DType t = a.dtype();
  a.device()->require(t, "matmul");
  if (a.ndim() < 2 || a.ndim() > 3)
    throw ValueError("matmul: a must be 2-D or 3-D (batched), got shape " + shape_str(a.shape()));
  if (b.ndim() < 2 || b.ndim() > 3)
    throw ValueError("matmul: b must be 2-D or 3-D (batched), got shape " + shape_str(b.shape()));

  const auto& as = a.shape();
  const auto& bs = b.shape();
  const int ao = a.ndim() - 2, bo = b.ndim() - 2;
  MatmulDesc d;
  d.trans_a = args.trans_a;
  d.trans_b = args.trans_b;
  d.alpha = args.alpha;
  d.beta = args.beta;
  d.dtype = t;
  d.M = args.trans_a ? as[ao + 1] : as[ao];
  const std::int64_t ka = args.trans_a ? as[ao] : as[ao + 1];
  const std::int64_t kb = args.trans_b ? bs[bo + 1] : bs[bo];
  d.N = args.trans_b ? bs[bo] : bs[bo + 1];
  if (ka != kb)
    throw ValueError("matmul: shapes " + shape_str(as) + (args.trans_a ? " (transposed)" : "") + " and " +
                     shape_str(bs) + (args.trans_b ? " (transposed)" : "") + " are not aligned: " +
                     std::to_string(ka) + " (a's inner dimension) != " + std::to_string(kb) +
                     " (b's inner dimension)");
  d.K = ka;
  d.batch_a = ao ? as[0] : 1;
  d.batch_b = bo ? bs[0] : 1;
  if (d.batch_a != d.batch_b && d.batch_a != 1 && d.batch_b != 1)
    throw ValueError("matmul: batch sizes of a " + shape_str(as) + " and b " + shape_str(bs) +
                     " differ and neither is 1");
  d.batch = d.batch_a == 1 ? d.batch_b : d.batch_a;  // NumPy broadcasting: 1 stretches to any size, 0 too
  const bool batched = ao || bo;
  if (d.batch == 0) d.batch_a = d.batch_b = 0;

  constexpr std::int64_t kMaxDim = std::numeric_limits<int>::max();
  for (std::int64_t v : {d.M, d.N, d.K, d.batch})
    if (v > kMaxDim) throw ValueError("matmul: dimensions above 2^31-1 are not supported");

  Shape rs = batched ? Shape{d.batch, d.M, d.N} : Shape{d.M, d.N};
  if (args.out_dtype && *args.out_dtype != t) {
    if (*args.out_dtype != DType::f32 || (t != DType::f16 && t != DType::bf16))
      throw TypeError(std::string("matmul: out_dtype ") + dtype_name(*args.out_dtype) + " with " + dtype_name(t) +
                      " operands; the result is the operands' dtype, or float32 for float16 and bfloat16 operands");
    d.out_f32 = true;
  }
  const DType rt = matmul_out_dtype(d);
  if (out) {
    if (out->shape() != rs)
      throw ValueError("matmul: out has shape " + shape_str(out->shape()) + " but the result has shape " +
                       shape_str(rs));
    if (out->dtype() != rt)
      throw TypeError(std::string("matmul: out is ") + dtype_name(out->dtype()) + " but the result is " +
                      dtype_name(rt) + (out->dtype() == DType::f32 && rt != DType::f32 && !args.out_dtype
                                            ? " (out_dtype='float32' gives a float32 result of 16-bit operands)"
                                            : ""));
    if (out->same_memory(a) || out->same_memory(b))
      throw ValueError("matmul: out must not share memory with a or b");
  } else if (args.beta != 0.0) {
    std::ostringstream beta;
    beta << args.beta;
    throw ValueError("matmul: beta=" + beta.str() + " needs out= (the matrix that beta scales)");
  }
  if (args.bias) {
    const Array& bias = *args.bias;
    if (bias.device() != a.device())
      throw ValueError("matmul: bias is on " + where(bias) + " but the operands are on " + where(a));
    if (bias.dtype() != rt)
      throw TypeError(std::string("matmul: bias is ") + dtype_name(bias.dtype()) + " but the " +
                      (rt == t ? "operands are " : "result is ") + dtype_name(rt));
    if (bias.shape() != Shape{d.N})
      throw ValueError("matmul: bias must have shape (" + std::to_string(d.N) + ",) (one value per output column), got " +
                       shape_str(bias.shape()));
    if (out && out->same_memory(bias)) throw ValueError("matmul: out must not share memory with bias");
  }
  d.has_bias = args.bias != nullptr;
  d.act = args.act;
  d.allow_tf32 = t == DType::f32 && precision_in_force(args.precision) == Precision::high;
  if (out_shape) *out_shape = rs;
  return d;
}

namespace {

// An operand as the kernels read it: dense as it is; a view whose last two axes swapped make a dense array (x.T,
// x.mT) as that array with its transpose flag flipped, without a copy; any other view as a dense copy.
Array operand(const Array& x, bool& trans) {
  if (!x.valid() || x.is_dense()) return x;
  if (x.ndim() >= 2) {
    Shape sh = x.shape();
    std::vector<std::int64_t> st = x.strides();
    std::swap(sh[sh.size() - 1], sh[sh.size() - 2]);
    std::swap(st[st.size() - 1], st[st.size() - 2]);
    const Array t = x.view(sh, st, x.offset());
    if (t.is_dense()) {
      trans = !trans;
      return t;
    }
  }
  return x.dense();
}

// The forms the kernels take: 2-D or 3-D operands of one floating dtype. Anything else is the Array API's matmul
// (matmul_stacked), which takes none of the options.
bool kernel_form(const Array& a, const Array& b) {
  const DType t = a.dtype();
  return a.ndim() >= 2 && a.ndim() <= 3 && b.ndim() >= 2 && b.ndim() <= 3 && b.dtype() == t &&
         (t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16);
}

std::string options_given(const Array* out, const MatmulArgs& args) {
  std::string s;
  const auto add = [&](const char* name) { s += (s.empty() ? "" : ", ") + std::string(name); };
  if (out) add("out");
  if (args.bias) add("bias");
  if (args.act != Activation::none) add("activation");
  if (args.alpha != 1.0) add("alpha");
  if (args.beta != 0.0) add("beta");
  if (args.trans_a) add("transpose_a");
  if (args.trans_b) add("transpose_b");
  if (args.out_dtype) add("out_dtype");
  return s;
}

}  // namespace

Array matmul(const Array& a_in, const Array& b_in, const Array* out, const MatmulArgs& args_in) {
  if (a_in.valid() && b_in.valid() && a_in.device() == b_in.device() && !kernel_form(a_in, b_in)) {
    const std::string opts = options_given(out, args_in);
    if (!opts.empty()) {
      const std::string msg = "matmul: " + opts + " need" + (opts.find(',') == std::string::npos ? "s" : "") +
                              " 2-D or 3-D operands of one floating dtype (float32, float64, float16 or bfloat16), "
                              "got shapes " + shape_str(a_in.shape()) + " and " + shape_str(b_in.shape()) +
                              ", dtypes " + dtype_name(a_in.dtype()) + " and " + dtype_name(b_in.dtype());
      const bool shapes_fit = a_in.ndim() >= 2 && a_in.ndim() <= 3 && b_in.ndim() >= 2 && b_in.ndim() <= 3;
      if (shapes_fit) throw TypeError(msg);  // the dtypes are what the kernels do not take
      throw ValueError(msg);
    }
    return matmul_stacked(a_in, b_in, args_in.precision);
  }
  MatmulArgs args = args_in;
  const Array a = operand(a_in, args.trans_a), b = operand(b_in, args.trans_b);
  const Array bias_d = args.bias ? args.bias->dense() : Array();
  if (args.bias) args.bias = &bias_d;
  Shape rs;
  const MatmulDesc d = matmul_plan(a, b, out, args, &rs);
  if (out && !out->is_dense()) {  // a view as out: computed in a dense copy of it (beta reads it), copied back
    Array tmp = out->dense();
    matmul(a, b, &tmp, args);
    Array target = *out;
    target.copy_from(tmp);
    return target;
  }
  Array c = out ? *out : Array::empty(a.device(), rs, matmul_out_dtype(d));
  if (d.batch == 0 || d.M == 0 || d.N == 0) return c;
  const OpDetail detail(a.device()->backend().capturing(), [&] {
    return shape_str(a.shape()) + (d.trans_a ? "^T" : "") + " @ " + shape_str(b.shape()) + (d.trans_b ? "^T" : "") +
           (args.bias ? " + bias" : "") + (d.act != Activation::none ? std::string(", ") + activation_name(d.act) : "");
  });
  a.device()->backend().matmul(d, *a.buffer(), *b.buffer(), *c.buffer(),
                               args.bias ? args.bias->buffer().get() : nullptr);
  return c;
}

}  // namespace hetnn
