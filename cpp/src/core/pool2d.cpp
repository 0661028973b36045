// Pooling geometry (core/pool2d.h): PyTorch's output sizes and argument checks, the max-pool index checks.
#include "core/pool2d.h"

#include <algorithm>
#include <limits>

#include "core/errors.h"

namespace hetnn {

namespace {

std::string pair_str(const std::array<int, 2>& v) {
  return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ")";
}

}  // namespace

void pool_require_float(DType t, const Device& dev, const char* op, const char* what, bool integers) {
  if (t != DType::f32 && t != DType::f64 && t != DType::f16 && t != DType::bf16)
    throw TypeError(std::string(op) + ": " + what + " has dtype " + dtype_name(t) +
                    "; " + (std::string(op).rfind("avg", 0) == 0 ? "average" : "max") +
                    " pooling takes float32, float64, float16" +
                    (integers ? ", bfloat16, int8, uint8, int32 or int64" : " or bfloat16"));
  dev.require(t, op);
}

std::int64_t pool_output_size(std::int64_t in, int k, int s, int p, int d, bool ceil_mode) {
  const std::int64_t num = in + 2 * static_cast<std::int64_t>(p) - static_cast<std::int64_t>(d) * (k - 1) - 1 +
                           (ceil_mode ? s - 1 : 0);
  // floor division (num may be negative)
  std::int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  // With ceil_mode the last window must start inside the input or the left padding.
  if (ceil_mode && out > 0 && (out - 1) * s >= in + p) --out;
  return out;
}

Pool2dDesc pool2d_plan(const Shape& s, DType t, const Device& dev, const Pool2dArgs& a, const char* op,
                       bool integers) {
  Pool2dDesc d = pool2d_geometry(s, a, op);
  if (!integers || is_floating(t) || t == DType::b8)  // bool is no integer type here
    pool_require_float(t, dev, op, "input", integers);
  else
    dev.require(t, op);
  d.dtype = t;
  return d;
}

Pool2dDesc pool2d_geometry(const Shape& s, const Pool2dArgs& a, const char* op) {
  const std::string o = op;
  for (int i = 0; i < 2; ++i) {
    if (a.kernel[i] < 1)
      throw ValueError(o + ": kernel_size must be positive, got " + pair_str(a.kernel));
    if (a.stride[i] < 1) throw ValueError(o + ": stride must be positive, got " + pair_str(a.stride));
    if (a.padding[i] < 0) throw ValueError(o + ": padding must be non-negative, got " + pair_str(a.padding));
    if (a.dilation[i] < 1) throw ValueError(o + ": dilation must be positive, got " + pair_str(a.dilation));
    if (a.padding[i] > a.kernel[i] / 2 && !a.zero_padding)  // (zero padding: a window of padding alone is 0)
      throw ValueError(o + ": padding " + pair_str(a.padding) + " must be at most half of kernel_size " +
                       pair_str(a.kernel) + (std::string(op) == "max_pool2d" || std::string(op) ==
                       "max_pool2d_backward" ? " (or padding_mode='zeros', whose padding may be wider)" : ""));
  }
  if (s.size() != 4 && s.size() != 3)
    throw ValueError(o + ": input must be 4-D (N, C, H, W) or 3-D (C, H, W), got shape " + shape_str(s));
  const bool chw = s.size() == 3;  // a 3-D input is one image (N = 1)
  (void)shape_size(s, "input shape");  // non-negative, product within int64 (input_shape comes from the user)
  const Shape s4 = chw ? Shape{1, s[0], s[1], s[2]} : s;
  if (s4[1] == 0 || s4[2] == 0 || s4[3] == 0)
    throw ValueError(o + ": input " + shape_str(s) + " has an empty channel or spatial dimension (only the batch "
                     "dimension may be 0)");
  Pool2dDesc d;
  d.N = s4[0], d.C = s4[1], d.H = s4[2], d.W = s4[3];
  d.kh = a.kernel[0], d.kw = a.kernel[1], d.sh = a.stride[0], d.sw = a.stride[1];
  d.ph = a.padding[0], d.pw = a.padding[1], d.dh = a.dilation[0], d.dw = a.dilation[1];
  d.ceil_mode = a.ceil_mode;
  d.zero_pad = a.zero_padding && (d.ph > 0 || d.pw > 0);
  d.OH = pool_output_size(d.H, d.kh, d.sh, d.ph, d.dh, d.ceil_mode);
  d.OW = pool_output_size(d.W, d.kw, d.sw, d.pw, d.dw, d.ceil_mode);
  if (d.OH < 1 || d.OW < 1)
    throw ValueError(o + ": input " + shape_str(s) + " is too small for kernel_size " + pair_str(a.kernel) +
                     ", dilation " + pair_str(a.dilation) + " and padding " + pair_str(a.padding) +
                     ": the output would be " + std::to_string(d.OH) + "x" + std::to_string(d.OW));
  constexpr std::int64_t kMax = std::numeric_limits<int>::max();
  // factor by factor first: the products of huge sizes overflow (found by the fuzzer)
  if (d.H > kMax || d.W > kMax || d.N > kMax || d.C > kMax || d.H * d.W > kMax || d.N * d.C > kMax ||
      d.OH > kMax || d.OW > kMax || d.OH * d.OW > kMax)
    throw ValueError(o + ": planes of more than 2^31-1 elements, or more than 2^31-1 planes, are not supported");
  return d;
}

bool pool_index_inside(const Pool2dDesc& d, std::int64_t v, std::int64_t oh, std::int64_t ow) {
  if (v < 0 || v >= d.H * d.W) return false;
  const std::int64_t r = v / d.W, c = v % d.W;
  const std::int64_t dr = r - (oh * d.sh - d.ph), dc = c - (ow * d.sw - d.pw);
  return dr >= 0 && dc >= 0 && dr <= static_cast<std::int64_t>(d.kh - 1) * d.dh &&
         dc <= static_cast<std::int64_t>(d.kw - 1) * d.dw && dr % d.dh == 0 && dc % d.dw == 0;
}

bool pool_window_empty(const Pool2dDesc& d, std::int64_t oh, std::int64_t ow) {
  const std::int64_t hs = oh * d.sh - d.ph, ws = ow * d.sw - d.pw;
  const std::int64_t h0 = pool_first_inside(hs, d.dh), w0 = pool_first_inside(ws, d.dw);
  return h0 >= d.H || h0 > hs + static_cast<std::int64_t>(d.kh - 1) * d.dh || w0 >= d.W ||
         w0 > ws + static_cast<std::int64_t>(d.kw - 1) * d.dw;
}

bool pool_window_padded(const Pool2dDesc& d, std::int64_t oh, std::int64_t ow) {
  if (!d.zero_pad) return false;
  const std::int64_t hs = oh * d.sh - d.ph, ws = ow * d.sw - d.pw;
  bool row_in = false, row_pad = false, col_in = false, col_pad = false;  // some tap row / column of each kind
  for (std::int64_t i = 0; i < d.kh; ++i) {
    const std::int64_t r = hs + i * d.dh;
    row_in |= r >= 0 && r < d.H;
    row_pad |= (r < 0) || (r >= d.H && r < d.H + d.ph);
  }
  for (std::int64_t j = 0; j < d.kw; ++j) {
    const std::int64_t c = ws + j * d.dw;
    col_in |= c >= 0 && c < d.W;
    col_pad |= (c < 0) || (c >= d.W && c < d.W + d.pw);
  }
  // a padded tap: a padding row at a column inside the padded width, or the reverse
  return (row_pad && (col_in || col_pad)) || (col_pad && row_in);
}

bool pool_index_free(const Pool2dDesc& d, std::int64_t v, std::int64_t oh, std::int64_t ow) {
  return (v == -1 && pool_window_padded(d, oh, ow)) || pool_window_empty(d, oh, ow);
}

PoolPadBands pool_pad_bands(const Pool2dDesc& d) {
  PoolPadBands b{0, d.OH, 0, d.OW};
  if (!d.zero_pad) return b;
  // windows starting above / left of the input: oh * sh < ph
  const auto before = [](std::int64_t p, std::int64_t s, std::int64_t n) { return std::min(n, (p + s - 1) / s); };
  // the first window whose last tap reaches past the input's end: oh * s - p + (k - 1) * dil >= size
  const auto after = [](std::int64_t size, std::int64_t p, std::int64_t k, std::int64_t dil, std::int64_t s,
                        std::int64_t n, std::int64_t lo) {
    const std::int64_t num = size + p - (k - 1) * dil;
    const std::int64_t first = num <= 0 ? 0 : (num + s - 1) / s;
    return std::clamp(first, lo, n);
  };
  b.top = before(d.ph, d.sh, d.OH);
  b.bottom = after(d.H, d.ph, d.kh, d.dh, d.sh, d.OH, b.top);
  b.left = before(d.pw, d.sw, d.OW);
  b.right = after(d.W, d.pw, d.kw, d.dw, d.sw, d.OW, b.left);
  return b;
}

std::string pool_bad_index_message(const Pool2dDesc& d, std::int64_t plane, std::int64_t oh, std::int64_t ow,
                                   std::int64_t v) {
  const std::int64_t hs = oh * d.sh - d.ph, ws = ow * d.sw - d.pw;
  return "max_pool2d_backward: indices[" + std::to_string(plane / d.C) + ", " + std::to_string(plane % d.C) + ", " +
         std::to_string(oh) + ", " + std::to_string(ow) + "] = " + std::to_string(v) +
         " is not a position inside its pooling window (rows " + std::to_string(hs) + ".." +
         std::to_string(hs + (d.kh - 1) * static_cast<std::int64_t>(d.dh)) + ", columns " + std::to_string(ws) +
         ".." + std::to_string(ws + (d.kw - 1) * static_cast<std::int64_t>(d.dw)) + " of a " +
         std::to_string(d.H) + "x" + std::to_string(d.W) +
         " plane); pass the indices max_pool2d returned for this input and these parameters";
}

PoolScatterBlocks pool_scatter_blocks(const Pool2dDesc& d) {
  const std::int64_t extent = static_cast<std::int64_t>(d.kh - 1) * d.dh + 1;
  PoolScatterBlocks b;
  b.rows = std::max<std::int64_t>(1, (extent + d.sh - 1) / d.sh);
  b.count = (d.OH + b.rows - 1) / b.rows;
  b.disjoint = extent <= d.sh;
  return b;
}

std::pair<std::int64_t, std::int64_t> PoolScatterBlocks::owned_rows(const Pool2dDesc& d, std::int64_t b) const {
  const std::int64_t begin = b == 0 ? 0 : std::clamp<std::int64_t>(b * rows * d.sh - d.ph, 0, d.H);
  const std::int64_t end = b >= count - 1 ? d.H : std::clamp<std::int64_t>((b + 1) * rows * d.sh - d.ph, 0, d.H);
  return {begin, end};
}

std::int64_t pool_find_bad_index(const Pool2dDesc& d, const std::int64_t* ix) {
  const std::int64_t n = d.N * d.C * d.OH * d.OW;
  for (std::int64_t o = 0; o < n; ++o) {
    const std::int64_t ow = o % d.OW, oh = (o / d.OW) % d.OH;
    if (!pool_index_inside(d, ix[o], oh, ow) && !pool_index_free(d, ix[o], oh, ow)) return o;
  }
  return -1;
}


// "(N, C, H, W) k=(kh, kw) s=(sh, sw) p=(ph, pw) d=(dh, dw)": a pooling op's operands, for the profiler.
std::string pool_window_str(const Shape& input, const Pool2dDesc& d) {
  const auto pair = [](int a, int b) { return "(" + std::to_string(a) + ", " + std::to_string(b) + ")"; };
  return shape_str(input) + " k=" + pair(d.kh, d.kw) + " s=" + pair(d.sh, d.sw) + " p=" + pair(d.ph, d.pw) +
         " d=" + pair(d.dh, d.dw) + (d.ceil_mode ? " ceil" : "");
}

void pool_check_out(const Array& o, const Shape& shape, DType t, const Array& ref, const char* op, const char* what) {
  require_dense(o, op, what);
  if (o.device() != ref.device())
    throw ValueError(std::string(op) + ": " + what + " is on " + o.device()->id() + " but the input is on " +
                     ref.device()->id());
  if (o.shape() != shape)
    throw ValueError(std::string(op) + ": " + what + " has shape " + shape_str(o.shape()) + ", expected " +
                     shape_str(shape));
  if (o.dtype() != t)
    throw TypeError(std::string(op) + ": " + what + " is " + dtype_name(o.dtype()) + ", expected " + dtype_name(t));
  if (o.same_memory(ref))
    throw ValueError(std::string(op) + ": " + what + " must not share memory with the input");
}


Shape pool_output_shape(const Shape& input, const Pool2dDesc& d) {
  if (input.size() == 3) return {d.C, d.OH, d.OW};
  return {d.N, d.C, d.OH, d.OW};
}

void pool_check_input_shape(const Shape& input_shape, const char* op) {
  if (input_shape.size() != 4 && input_shape.size() != 3)
    throw ValueError(std::string(op) + ": input_shape must have 4 entries (N, C, H, W) or 3 (C, H, W), got " +
                     shape_str(input_shape));
  for (auto v : input_shape)
    if (v < 0) throw ValueError(std::string(op) + ": input_shape " + shape_str(input_shape) + " has a negative entry");
}

}  // namespace hetnn
