// Training ops on OpenCL devices (core/nn.h): kernels/nn.cl, one program per dtype (float32 / float64).
#include "backend/opencl/cl_args.h"
#include "backend/opencl/cl_backend.h"
#include "core/errors.h"

namespace hetnn::opencl {

namespace {
// Work-group size of the one-dimensional kernels: a GPU warp multiple; on CPU devices PoCL vectorises across it.
constexpr std::size_t kLocal = 64;
std::size_t grid(std::int64_t n) { return round_up(static_cast<std::size_t>(n), kLocal); }
}  // namespace

void ClBackend::activation(Activation act, DType t, std::int64_t n, const Buffer& x, Buffer& out) {
  std::lock_guard<std::mutex> lock(mu_);
  cl_kernel k = kernel("nn.cl", "act_fwd", common_options(t));
  ArgSetter a{k, "act_fwd"};
  a(cl_long{n})(static_cast<cl_int>(act))(mem(x))(mem(out));
  const std::size_t g[1] = {grid(n)}, l[1] = {kLocal};
  enqueue("activation", k, 1, g, l);
}

void ClBackend::activation_backward(Activation act, DType t, std::int64_t n, const Buffer& dy, const Buffer& y,
                                    Buffer& dx) {
  std::lock_guard<std::mutex> lock(mu_);
  cl_kernel k = kernel("nn.cl", "act_bwd", common_options(t));
  ArgSetter a{k, "act_bwd"};
  a(cl_long{n})(static_cast<cl_int>(act))(mem(dy))(mem(y))(mem(dx));
  const std::size_t g[1] = {grid(n)}, l[1] = {kLocal};
  enqueue("activation_backward", k, 1, g, l);
}

void ClBackend::softmax(DType t, std::int64_t rows, std::int64_t cols, const Buffer& x, Buffer& y) {
  std::lock_guard<std::mutex> lock(mu_);
  cl_kernel k = kernel("nn.cl", "softmax_rows", common_options(t));
  ArgSetter a{k, "softmax_rows"};
  a(static_cast<cl_int>(rows))(static_cast<cl_int>(cols))(mem(x))(mem(y));
  const std::size_t g[1] = {grid(rows)}, l[1] = {kLocal};
  enqueue("softmax", k, 1, g, l);
}

void ClBackend::loss(const LossDesc& d, const Buffer& pred, const Buffer& target, Buffer& acc, Buffer* grad) {
  std::lock_guard<std::mutex> lock(mu_);
  cl_mem rows_val = scratch(5, static_cast<std::size_t>(d.rows) * sizeof(float));
  cl_kernel k = kernel("nn.cl", "loss_rows", common_options(d.dtype));
  ArgSetter a{k, "loss_rows"};
  const cl_int has_grad = grad != nullptr;
  cl_mem g = grad ? mem(*grad) : mem(pred);  // not written without a gradient, but must be a valid buffer
  a(static_cast<cl_int>(d.kind))(static_cast<cl_int>(d.rows))(static_cast<cl_int>(d.cols));
  a.real(d.grad_scale, d.dtype)(has_grad)(mem(pred))(mem(target))(mem(target))(g)(rows_val);
  const std::size_t gs[1] = {grid(d.rows)}, l[1] = {kLocal};
  enqueue("loss", k, 1, gs, l);
  cl_kernel ks = kernel("nn.cl", "add_sum", common_options(d.dtype));
  ArgSetter as{ks, "add_sum"};
  as(static_cast<cl_int>(d.rows))(static_cast<float>(d.loss_scale))(rows_val)(mem(acc));
  const std::size_t one[1] = {1};
  enqueue("loss:sum", ks, 1, one, one);
}

void ClBackend::metric(const MetricDesc& d, const Buffer& pred, const Buffer& target, Buffer& acc) {
  std::lock_guard<std::mutex> lock(mu_);
  cl_mem rows_val = scratch(5, static_cast<std::size_t>(d.rows) * sizeof(float));
  cl_kernel k = kernel("nn.cl", "metric_rows", common_options(d.dtype));
  ArgSetter a{k, "metric_rows"};
  a(static_cast<cl_int>(d.kind))(static_cast<cl_int>(d.rows))(static_cast<cl_int>(d.cols));
  a(mem(pred))(mem(target))(mem(target))(rows_val);
  const std::size_t gs[1] = {grid(d.rows)}, l[1] = {kLocal};
  enqueue("metric", k, 1, gs, l);
  cl_kernel ks = kernel("nn.cl", "add_sum", common_options(d.dtype));
  ArgSetter as{ks, "add_sum"};
  as(static_cast<cl_int>(d.rows))(1.0f)(rows_val)(mem(acc));
  const std::size_t one[1] = {1};
  enqueue("metric:sum", ks, 1, one, one);
}

void ClBackend::sgd_update(const SgdDesc& d, Buffer& param, const Buffer& grad, Buffer* velocity) {
  std::lock_guard<std::mutex> lock(mu_);
  cl_kernel k = kernel("nn.cl", "sgd", common_options(d.dtype));
  ArgSetter a{k, "sgd"};
  const cl_int nesterov = d.nesterov, has_v = velocity != nullptr;
  a(cl_long{d.n}).real(d.lr, d.dtype).real(d.momentum, d.dtype).real(d.weight_decay, d.dtype);
  a(nesterov)(has_v)(mem(param))(mem(grad))(velocity ? mem(*velocity) : mem(param));
  const std::size_t g[1] = {grid(d.n)}, l[1] = {kLocal};
  enqueue("sgd_update", k, 1, g, l);
}

void ClBackend::adam_update(const AdamDesc& d, Buffer& param, const Buffer& grad, Buffer& m, Buffer& v,
                            Buffer* vmax) {
  std::lock_guard<std::mutex> lock(mu_);
  cl_kernel k = kernel("nn.cl", "adam", common_options(d.dtype));
  ArgSetter a{k, "adam"};
  a(cl_long{d.n}).real(d.beta1, d.dtype).real(d.beta2, d.dtype).real(d.eps, d.dtype).real(d.step_size, d.dtype);
  a.real(1.0 / d.bias2_sqrt, d.dtype).real(d.decay, d.dtype).real(d.shrink, d.dtype)(cl_int{vmax != nullptr});
  a(mem(param))(mem(grad))(mem(m))(mem(v))(vmax ? mem(*vmax) : mem(v));
  const std::size_t g[1] = {grid(d.n)}, l[1] = {kLocal};
  enqueue("adam_update", k, 1, g, l);
}

void ClBackend::dropout(const DropoutDesc& d, const Buffer& x, Buffer& out) {
  std::lock_guard<std::mutex> lock(mu_);
  cl_kernel k = kernel("nn.cl", "dropout", common_options(d.dtype));
  ArgSetter a{k, "dropout"};
  a(cl_long{d.n})(cl_ulong{d.seed})(cl_uint{d.threshold}).real(d.scale, d.dtype)(mem(x))(mem(out));
  const std::size_t g[1] = {grid(d.n)}, l[1] = {kLocal};
  enqueue("dropout", k, 1, g, l);
}

void ClBackend::sum_rows(DType t, std::int64_t rows, std::int64_t cols, const Buffer& x, Buffer& out, double beta) {
  std::lock_guard<std::mutex> lock(mu_);
  cl_kernel k = kernel("nn.cl", "sum_rows", common_options(t));
  ArgSetter a{k, "sum_rows"};
  a(static_cast<cl_int>(rows))(static_cast<cl_int>(cols)).real(beta, t)(mem(x))(mem(out));
  const std::size_t g[1] = {grid(cols)}, l[1] = {kLocal};
  enqueue("sum_rows", k, 1, g, l);
}

void ClBackend::take_rows(std::size_t row_bytes, std::int64_t src_rows, const Buffer& src, const Buffer& idx,
                          std::int64_t offset, std::int64_t n, Buffer& out) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool words = row_bytes % 4 == 0;
  const char* name = words ? "take_rows_words" : "take_rows_bytes";
  cl_kernel k = kernel("nn.cl", name, common_options(DType::f32));
  ArgSetter a{k, name};
  const cl_long per_row = static_cast<cl_long>(words ? row_bytes / 4 : row_bytes);
  a(per_row)(cl_long{src_rows})(cl_long{offset})(mem(src))(mem(idx))(mem(out));
  const std::size_t l[2] = {kLocal, 1};
  const std::size_t g[2] = {grid(per_row), static_cast<std::size_t>(n)};
  enqueue("take_rows", k, 2, g, l);
}

}  // namespace hetnn::opencl
