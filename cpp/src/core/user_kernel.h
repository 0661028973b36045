// User element-wise kernels (hetnn.ElementwiseKernel, CuPy's design): typed parameters ("float32 x, T y"), an
// operation in the common subset of C99 and OpenCL C ("z = x * x + y"), compiled at first use for the device a
// call runs on and cached: OpenCL programs as every kernel's (program_cache), C for the CPU device with the system's
// C compiler into a cached shared library (backend/cpu/user_kernel_cpu.cpp). Parameter types are dtype names or
// placeholders (any other identifier, "T"), which take the dtype of the arrays bound to them in a call. float16 and
// bfloat16 parameters of element-wise kernels are stored in 16 bits and computed in float32 (their variables, and
// the placeholders bound to them, are float), as hetnn's own 16-bit ops on devices without 16-bit arithmetic.
#pragma once
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/array.h"
#include "core/elementwise.h"
#include "core/ops.h"
#include "core/reduction.h"

namespace hetnn {

struct KernelParam {
  std::string name;
  std::optional<DType> type;  // nullopt: a placeholder
  std::string placeholder;
};

class ElementwiseKernel {
 public:
  // Parses and checks the parameter lists (ValueError naming the problem); the operation is checked when compiled.
  ElementwiseKernel(const std::string& in_params, const std::string& out_params, std::string operation,
                    std::string name, std::string preamble);

  // One input per in_param: an Array or a number; outputs: given (same device, the broadcast shape, their dtype)
  // or made. Returns the outputs.
  struct Input {
    const Array* array = nullptr;
    EwScalar scalar;
  };
  std::vector<Array> operator()(const std::vector<Input>& in, const std::vector<Array>& out) const;

  const std::string& name() const { return name_; }
  const std::vector<KernelParam>& in_params() const { return in_; }
  const std::vector<KernelParam>& out_params() const { return out_; }

 private:
  std::vector<Array> call(const std::vector<Input>& in, const std::vector<Array>& out) const;  // dense arrays
  std::vector<Array> call_dense(const std::vector<Input>& in, const std::vector<Array>& out) const;
  // What a call resolved (types, strides, the compiled code's key) for its operands' device, dtypes and shapes:
  // the next call with the same ones skips the resolving (a small array's call is the front's time).
  struct Plan;
  std::shared_ptr<const Plan> plan_for(const std::vector<Input>& in, const std::vector<Array>& out) const;

  std::vector<KernelParam> in_, out_;
  std::string operation_, name_, preamble_;
  std::vector<bool> reads_;  // per output: whether the operation reads it (so a given output's elements are loaded)
  mutable std::mutex plan_mu_;
  mutable std::shared_ptr<const Plan> plan_;  // the last call's
};

// A user's reduction (hetnn.ReductionKernel, CuPy's design): map_expr maps the inputs' elements to values of
// reduce_type (default: the first output's type), reduce_expr combines two of them (`a`, `b`; it must be associative:
// the reduction is split into parts), identity starts each reduction, post_map_expr sets the outputs from the result
// `a`. Reduces over `axes` of the inputs' broadcast shape (all of them by default), keepdims as the reductions'.
class ReductionKernel {
 public:
  ReductionKernel(const std::string& in_params, const std::string& out_params, std::string map_expr,
                  std::string reduce_expr, std::string post_map_expr, std::string identity, std::string name,
                  std::optional<std::string> reduce_type, std::string preamble);
  std::vector<Array> operator()(const std::vector<ElementwiseKernel::Input>& in, const Axes& axes, bool keepdims,
                                const std::vector<Array>& out) const;
  const std::string& name() const { return name_; }
  std::size_t nin() const { return in_.size(); }
  std::size_t nout() const { return out_.size(); }

 private:
  std::vector<Array> call(const std::vector<ElementwiseKernel::Input>& in, const Axes& axes, bool keepdims,
                          const std::vector<Array>& out) const;  // dense arrays
  std::vector<KernelParam> in_, out_;
  std::string map_, reduce_, post_, identity_, name_, preamble_;
  std::optional<KernelParam> reduce_type_;
};

}  // namespace hetnn
