#include "core/array.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "core/errors.h"
#include "core/ops.h"

namespace hetnn {

bool poison_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("HETNN_POISON");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << (s.size() == 1 ? ",)" : ")");
  return os.str();
}

std::int64_t shape_size(const Shape& s, const char* what) {
  std::int64_t n = 1;
  for (auto d : s) {
    if (d < 0) throw ValueError(std::string(what) + " " + shape_str(s) + " has a negative dimension");
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / 8 / d)
      throw ValueError(std::string(what) + " " + shape_str(s) + " is too large to address");
    n *= d;
  }
  return n;
}

Array::Array(DevicePtr device, std::shared_ptr<Buffer> buffer, Shape shape, DType dtype)
    : device_(std::move(device)), buffer_(std::move(buffer)), shape_(std::move(shape)), dtype_(dtype) {}

std::vector<std::int64_t> Array::strides() const { return dense_ ? dense_strides(shape_) : strides_; }

std::vector<std::int64_t> dense_strides(const Shape& shape) {
  std::vector<std::int64_t> st(shape.size());
  std::int64_t step = 1;
  for (std::size_t k = shape.size(); k-- > 0;) {
    st[k] = step;
    step *= std::max<std::int64_t>(shape[k], 1);
  }
  return st;
}

void Array::set_dense() {
  dense_ = true;
  if (size() == 0) return;
  if (offset_ != 0) {
    dense_ = false;
    return;
  }
  std::int64_t step = 1;
  for (std::size_t k = shape_.size(); k-- > 0;) {
    if (shape_[k] == 1) continue;
    if (strides_[k] != step) {
      dense_ = false;
      return;
    }
    step *= shape_[k];
  }
}

const std::shared_ptr<Buffer>& Array::buffer() const {
  if (!dense_)
    throw Error("internal error in hetnn: an op read a strided view of shape " + shape_str(shape_) +
                " as a dense array (please report this; x.copy() works around it)");
  return buffer_;
}

bool Array::same_layout(const Array& o) const {
  if (!same_memory(o) || o.shape_ != shape_) return false;
  if (size() == 0) return true;
  if (o.offset_ != offset_) return false;
  for (std::size_t k = 0; k < shape_.size(); ++k)
    if (shape_[k] != 1 && o.strides()[k] != strides()[k]) return false;
  return true;
}

Array Array::view(Shape shape, std::vector<std::int64_t> strides, std::int64_t offset) const {
  const std::int64_t n = shape_size(shape);
  if (strides.size() != shape.size()) throw Error("internal error in hetnn: a view's strides do not match its shape");
  if (n > 0) {
    std::int64_t lo = offset, hi = offset;
    for (std::size_t k = 0; k < shape.size(); ++k) {
      const std::int64_t span = (shape[k] - 1) * strides[k];
      (span < 0 ? lo : hi) += span;
    }
    const auto cap = static_cast<std::int64_t>(buffer_->nbytes / dtype_size(dtype_));
    if (lo < 0 || hi >= cap) throw Error("internal error in hetnn: a view reaching outside its array's memory");
  }
  Array v(device_, buffer_, std::move(shape), dtype_);
  v.strides_ = std::move(strides);
  v.offset_ = n > 0 ? offset : 0;
  v.set_dense();
  if (v.dense_) v.strides_.clear();  // a dense array's strides are its shape's (copies allocate less)
  return v;
}

Array Array::dense() const {
  if (dense_) return *this;
  Array out = empty(device_, shape_, dtype_);
  move_elements("copy", *this, strides_, offset_, out, shape_, out.strides(), 0);
  return out;
}

void require_dense(const Array& a, const std::string& op, const char* what) {
  if (a.valid() && !a.is_dense())
    throw ValueError(op + ": " + what + " is a view of another array's memory (from indexing, a transpose or a " +
                     "flip); this op writes dense arrays only: pass a new array and copy it into the view after");
}

void move_elements(const char* name, const Array& src, std::vector<std::int64_t> ss, std::int64_t os, Array& dst,
                   const Shape& shape, std::vector<std::int64_t> so, std::int64_t oo) {
  const std::int64_t n = shape_size(shape);
  if (n == 0) return;
  auto reach = [&](const std::vector<std::int64_t>& st, std::int64_t off) {
    std::int64_t lo = off, hi = off;
    for (std::size_t k = 0; k < shape.size(); ++k) {
      const std::int64_t span = (shape[k] - 1) * st[k];
      (span < 0 ? lo : hi) += span;
    }
    return std::make_pair(lo, hi);
  };
  const auto [slo, shi] = reach(ss, os);
  const auto [dlo, dhi] = reach(so, oo);
  const std::size_t e = dtype_size(src.dtype());
  const auto scap = static_cast<std::int64_t>(src.storage()->nbytes / e);
  const auto dcap = static_cast<std::int64_t>(dst.storage()->nbytes / e);
  if (slo < 0 || shi >= scap || dlo < 0 || dhi >= dcap)  // a defect of a front, never a user's input
    throw Error(std::string("hetnn.") + name + ": internal error: a strided copy outside its arrays");
  CopyDesc d;
  d.elem = e;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 1) continue;
    if (!d.shape.empty() && d.ss.back() == ss[k] * shape[k] && d.so.back() == so[k] * shape[k]) {
      d.shape.back() *= shape[k];
      d.ss.back() = ss[k];
      d.so.back() = so[k];
      continue;
    }
    d.shape.push_back(shape[k]);
    d.ss.push_back(ss[k]);
    d.so.push_back(so[k]);
  }
  if (d.shape.empty()) {
    d.shape = {1};
    d.ss = {1};
    d.so = {1};
  }
  if (static_cast<int>(d.shape.size()) > kEwMaxDims)
    throw ValueError(std::string("hetnn.") + name + ": the selection needs " + std::to_string(d.shape.size()) +
                     " dimensions after merging, more than the " + std::to_string(kEwMaxDims) + " supported");
  d.os = os;
  d.oo = oo;
  d.n = n;
  src.device()->backend().copy_strided(d, *src.storage(), *dst.storage());
}

std::int64_t Array::size() const {
  std::int64_t n = 1;
  for (auto d : shape_) n *= d;
  return n;
}

Array Array::empty(const DevicePtr& device, const Shape& shape, DType dtype) {
  device->require(dtype, "array");
  const std::int64_t n = shape_size(shape);
  const std::size_t bytes = static_cast<std::size_t>(n) * dtype_size(dtype);
  Array a(device, device->backend().alloc(bytes), shape, dtype);
  if (poison_enabled() && bytes) {  // NaN for float types; not part of any timing
    Recorder::Pause pause;
    device->backend().fill(*a.buffer_, 0, bytes, 0xFF);
  }
  return a;
}

Array Array::zeros(const DevicePtr& device, const Shape& shape, DType dtype) {
  Array a = empty(device, shape, dtype);
  if (a.nbytes()) device->backend().fill(*a.buffer_, 0, a.nbytes(), 0);
  return a;
}

Array Array::from_host(const DevicePtr& device, const void* data, const Shape& shape, DType dtype) {
  Array a = empty(device, shape, dtype);
  a.from_host_into(data);
  return a;
}

Array Array::wrap_host(const DevicePtr& device, void* data, const Shape& shape, DType dtype,
                       std::shared_ptr<void> owner) {
  device->require(dtype, "array");
  const std::size_t bytes = static_cast<std::size_t>(shape_size(shape)) * dtype_size(dtype);
  auto buf = device->backend().wrap_host(data, bytes, std::move(owner));
  if (!buf) return Array();
  return Array(device, std::move(buf), shape, dtype);
}

void Array::to_host(void* dst) const {
  if (!nbytes()) return;
  const Array d = dense();
  device_->backend().read(*d.buffer_, 0, dst, nbytes());
}

bool Array::to_host_async(void* dst) const {
  if (!nbytes()) return false;
  const Array d = dense();
  return device_->backend().read_async(*d.buffer_, 0, dst, nbytes());
}

bool Array::from_host_into_async(const void* src) {
  if (!nbytes()) return false;
  if (!dense_) {
    from_host_into(src);
    return false;
  }
  return device_->backend().write_async(*buffer_, 0, src, nbytes());
}

void Array::from_host_into(const void* src) {
  if (!nbytes()) return;
  if (dense_) {
    device_->backend().write(*buffer_, 0, src, nbytes());
    return;
  }
  Array tmp = from_host(device_, src, shape_, dtype_);  // then one strided pass into the view
  move_elements("copy", tmp, tmp.strides(), 0, *this, shape_, strides_, offset_);
}

void Array::copy_from(const Array& src) {
  if (src.device() != device_)
    throw ValueError("copy_from: the source is on " + src.device()->id() + " but this array is on " + device_->id() +
                     "; use .to(device) to move between devices");
  if (src.dtype() != dtype_ || src.size() != size())
    throw ValueError("copy_from: the source is " + std::string(dtype_name(src.dtype())) + " " + shape_str(src.shape()) +
                     ", this array " + dtype_name(dtype_) + " " + shape_str(shape_) + " (dtype and size must match)");
  if (!nbytes()) return;
  if (dense_ && src.dense_) {
    if (!same_memory(src)) device_->backend().copy(*src.buffer_, 0, *buffer_, 0, nbytes());
    return;
  }
  // views: element i of src (row-major) to element i of this array; overlapping memory is read in full first
  if (same_layout(src)) return;
  Array s = same_memory(src) ? src.to(device_) : src;
  if (s.shape_ != shape_) s = s.reshape(shape_);
  Array self = *this;
  move_elements("copy", s, s.strides(), s.offset_, self, shape_, strides(), offset_);
}

Array Array::reshape_view(const Shape& shape) const {
  const std::int64_t n = shape_size(shape);
  if (n != size())
    throw ValueError("cannot reshape an array of shape " + shape_str(shape_) + " (" + std::to_string(size()) +
                     " elements) into shape " + shape_str(shape) + " (" + std::to_string(n) + " elements)");
  if (dense_ || n == 0) return Array(device_, buffer_, shape, dtype_);
  // NumPy's no-copy reshape: the old axes (extent 1 dropped) and the new ones grouped into runs of equal size;
  // a run of old axes must be contiguous among itself, and its new axes take strides from its innermost one.
  Shape od;
  std::vector<std::int64_t> os;
  for (std::size_t k = 0; k < shape_.size(); ++k)
    if (shape_[k] != 1) od.push_back(shape_[k]), os.push_back(strides_[k]);
  std::vector<std::int64_t> ns(shape.size(), 0);
  std::size_t oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < shape.size() && oi < od.size()) {
    std::int64_t np = shape[ni], op = od[oi];
    while (np != op) {
      if (np < op) np *= shape[nj++];
      else op *= od[oj++];
    }
    for (std::size_t ok = oi; ok + 1 < oj; ++ok)
      if (os[ok] != od[ok + 1] * os[ok + 1]) return Array();
    ns[nj - 1] = os[oj - 1];
    for (std::size_t nk = nj - 1; nk > ni; --nk) ns[nk - 1] = ns[nk] * shape[nk];
    ni = nj++;
    oi = oj++;
  }
  return view(shape, ns, offset_);
}

Array Array::reshape(const Shape& shape) const {
  Array v = reshape_view(shape);
  return v.valid() ? v : dense().reshape_view(shape);
}

namespace {

// Bytes in one row of the leading axis; checks the row range.
std::size_t row_range(const Array& a, std::int64_t start, std::int64_t stop, const char* what) {
  if (a.ndim() == 0) throw ValueError(std::string(what) + ": a 0-d array has no rows");
  if (start < 0 || stop < start || stop > a.shape()[0])
    throw ValueError(std::string(what) + ": rows [" + std::to_string(start) + ", " + std::to_string(stop) +
                     ") are outside an array of shape " + shape_str(a.shape()));
  return a.shape()[0] ? a.nbytes() / static_cast<std::size_t>(a.shape()[0]) : 0;
}

}  // namespace

Array Array::rows(std::int64_t start, std::int64_t stop) const {
  const std::size_t row = row_range(*this, start, stop, "rows");
  Shape s = shape_;
  s[0] = stop - start;
  Array out = empty(device_, s, dtype_);
  if (!dense_) {
    out.copy_from(view(s, strides_, offset_ + start * strides_[0]));
    return out;
  }
  if (out.nbytes()) device_->backend().copy(*buffer_, row * start, *out.buffer_, 0, out.nbytes());
  return out;
}

void Array::set_rows(std::int64_t start, std::int64_t stop, const Array& src) {
  const std::size_t row = row_range(*this, start, stop, "set_rows");
  Shape s = shape_;
  s[0] = stop - start;
  if (src.device() != device_)
    throw ValueError("set_rows: the source is on " + src.device()->id() + " but this array is on " + device_->id() +
                     "; use .to(device) to move between devices");
  if (src.dtype() != dtype_ || src.shape() != s)
    throw ValueError("set_rows: the source is " + std::string(dtype_name(src.dtype())) + " " +
                     shape_str(src.shape()) + " but rows [" + std::to_string(start) + ", " + std::to_string(stop) +
                     ") are " + dtype_name(dtype_) + " " + shape_str(s));
  if (!src.nbytes()) return;
  if (!dense_ || !src.dense_ || same_memory(src)) {
    const std::vector<std::int64_t> st = strides();
    view(s, st, offset_ + start * st[0]).copy_from(src);
    return;
  }
  device_->backend().copy(*src.buffer_, 0, *buffer_, row * start, src.nbytes());
}

Array Array::to(const DevicePtr& device) const {
  if (device == device_) {
    if (!dense_) return dense();
    Array out = empty(device, shape_, dtype_);
    if (nbytes()) device->backend().copy(*buffer_, 0, *out.buffer_, 0, nbytes());
    return out;
  }
  // Across devices: through host memory (explicit, and recorded as d2h + h2d).
  std::vector<unsigned char> host(nbytes());
  to_host(host.data());
  return from_host(device, host.data(), shape_, dtype_);
}

}  // namespace hetnn
