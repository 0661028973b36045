// Extras only some backends have, found by asking the backend for them by name (as ggml's get_proc_address finds a
// backend's extra functions): callers hold no cast to a concrete backend, and the compute interface in backend.h
// carries no tuning, diagnostic or benchmark hooks. find_extension<T>(backend) is nullptr where T is not offered.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>
#include <utility>

#include "backend/backend.h"
#include "core/dtype.h"

namespace hetnn {

// What a GEMM computes, as its parameters are kept: a dtype, or "tf32", float32 data on TF32 matrix units (the
// precision "high", core/precision.h), which has parameters and a matrix-unit verdict of its own.
struct GemmType {
  DType dtype = DType::f32;
  bool tf32 = false;
  GemmType(DType t = DType::f32, bool tf = false) : dtype(t), tf32(tf && t == DType::f32) {}  // NOLINT: from DType
  static GemmType from_name(const std::string& name) {  // "tf32" or a dtype's name; TypeError otherwise
    return name == "tf32" ? GemmType(DType::f32, true) : GemmType(dtype_from_name(name));
  }
  std::string name() const { return tf32 ? "tf32" : dtype_name(dtype); }
  bool matrix_units_possible() const { return tf32 || dtype == DType::f16 || dtype == DType::bf16; }
  friend bool operator<(const GemmType& a, const GemmType& b) {
    return a.dtype != b.dtype ? a.dtype < b.dtype : a.tf32 < b.tf32;
  }
  friend bool operator==(const GemmType& a, const GemmType& b) { return a.dtype == b.dtype && a.tf32 == b.tf32; }
};

// GEMM kernel parameters of a device with a tunable GEMM family (OpenCL), as "family=... k=v ..." text.
struct GemmTuning {
  static constexpr const char* kName = "gemm_tuning";
  // Problems of at most this many multiply-adds (M*N*K) form the small size class, with parameters of their own in
  // the database and the tuner: a tile that fills the device at 1024^3 leaves it idle on small problems.
  static constexpr std::int64_t kSmallMacs = std::int64_t{1} << 28;
  virtual ~GemmTuning() = default;
  // (parameters, source) in force for a problem of `macs` multiply-adds (-1: the large-problem entry).
  virtual std::pair<std::string, std::string> params(GemmType t, std::int64_t macs) = 0;
  // An override for every size (validated against the device; "" params: back to the stored tuned entry, else the
  // database).
  virtual void set(GemmType t, const std::string& params, const std::string& source) = 0;
  // Test hook: the next n GEMMs that would run an override fail as a launch error would.
  virtual void inject_faults(int n) = 0;
  // How products of this type compute on the device (Device.float16_mode, Device.tf32_mode): "tensor cores (...)"
  // or "converted (...)" / "float32 (...)", with the reason the matrix units are not used.
  virtual std::string precision_mode(GemmType t) = 0;
};

// Diagnostics and measurements of a kernel-compiling device (OpenCL).
struct KernelTools {
  static constexpr const char* kName = "kernel_tools";
  virtual ~KernelTools() = default;
  virtual void build_source(const std::string& source, const std::string& options) = 0;  // not cached
  // FP32 FMA GFLOP/s and STREAM-triad GB/s (over three buffers of triad_bytes), best of `repeats`.
  virtual std::pair<double, double> measure_peak(std::size_t triad_bytes, int repeats) = 0;
  // Where a kernel family has CPU- and GPU-shaped variants: "" the device's own, "cpu" or "gpu" (tests).
  virtual void set_kernel_variant(const std::string& variant) = 0;
  // The forward convolution's algorithm where it applies: "" the device's choice, "benchmark" (per layer shape, the
  // fastest of the algorithms that apply, timed at its first call), "winograd" (F(2x2, 3x3): 3x3 stride 1),
  // "winograd4" (F(4x4, 3x3)), "implicit" (vtiled or mma GEMM parameters) or "im2col". ValueError otherwise.
  virtual void set_conv_algorithm(const std::string& algorithm) = 0;
  virtual std::string conv_algorithm() = 0;
  // What "benchmark" chose so far: per layer shape, the algorithm, each candidate's fastest call in milliseconds,
  // the calls each had, and flags ("" or why the choice may not be the fastest: made on a busy machine).
  struct ConvChoice {
    // "x (N, C, H, W), w (O, C/groups, kh, kw), stride (sh, sw), padding (top, bottom, left, right), dilation
    // (dh, dw), dtype[, bias][, tf32]", prefixed "weight gradient: " for that pass's choice
    std::string shape;
    std::string algorithm;
    std::vector<std::pair<std::string, double>> ms;
    int calls = 0;
    std::string flags;
  };
  virtual std::vector<ConvChoice> conv_choices() = 0;
};

// Activations in the layouts a device's float32 convolutions prefer, kept from layer to layer inside a network
// (core/trainer.cpp), so that a convolution does not reorder its input from NCHW and its output back on every call
// (measured: about 13 % of a Keras-style CNN step, 16 % of LeNet's oneDNN time). A layout is channel-blocked: the
// logical (N, C, H, W) tensor stored as (N, ceil(C/b), H, W, b), channels past C zero; b = 1 is NCHW, b = C NHWC
// (also oneDNN's nChw8c and nChw16c). Operands are validated by the caller (core/blocked.cpp).
struct ConvLayouts {
  static constexpr const char* kName = "conv_layouts";
  virtual ~ConvLayouts() = default;
  // The blocks the forward convolution d reads its input in and writes its output in fastest (1: NCHW).
  virtual int conv2d_input_block(const Conv2dDesc& d) = 0;
  virtual int conv2d_output_block(const Conv2dDesc& d) = 0;
  // conv2d / its backward (core/ops.h) with x in block xb and y (gy) in block yb.
  virtual void conv2d_blocked(const Conv2dDesc& d, int xb, const Buffer& x, const Buffer& w, const Buffer* bias,
                              int yb, Buffer& y) = 0;
  virtual void conv2d_backward_data_blocked(const Conv2dDesc& d, int yb, const Buffer& gy, const Buffer& w, int xb,
                                            Buffer& gx) = 0;
  virtual void conv2d_backward_weights_blocked(const Conv2dDesc& d, int yb, const Buffer& gy, int xb,
                                               const Buffer& x, Buffer& gw, Buffer* gb) = 0;
  // max_pool2d and its backward on x in block b (y, gy, idx in the same block); idx: int32, h * W + w of each
  // output's argmax in its input plane (NaN wins, else the first maximum, as max_pool2d).
  virtual void max_pool2d_blocked(const Pool2dDesc& d, int b, const Buffer& x, Buffer& y, Buffer& idx) = 0;
  virtual void max_pool2d_backward_blocked(const Pool2dDesc& d, int b, const Buffer& gy, const Buffer& idx,
                                           Buffer& gx) = 0;
  // y (block to) = x (block from), logical shape (N, C, H, W).
  virtual void reorder_blocked(const std::array<std::int64_t, 4>& shape, int from, const Buffer& x, int to,
                               Buffer& y) = 0;
};

template <class T>
T* find_extension(Backend& b) {
  return static_cast<T*>(b.extension(T::kName));  // a backend returns, for T::kName, an object that is a T
}

}  // namespace hetnn
