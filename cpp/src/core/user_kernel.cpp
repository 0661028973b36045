// The user-kernel front (core/user_kernel.h): parameter lists parsed, placeholder types resolved per call, operands
// broadcast and their strides merged; the backends generate, compile and run the code.
#include "core/user_kernel.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include "core/errors.h"

namespace hetnn {

namespace {

const std::string kWho = "hetnn.ElementwiseKernel";

bool identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// Names the generated code itself uses, and C / OpenCL C words a parameter cannot be.
const std::set<std::string>& reserved() {
  static const std::set<std::string> r = {
      "i", "n", "int", "long", "float", "double", "char", "short", "unsigned", "signed", "void", "const", "return",
      "if", "else", "for", "while", "do", "switch", "case", "break", "continue", "struct", "union", "typedef",
      "sizeof", "static", "uchar", "ulong", "uint", "half", "bool", "kernel", "global", "local", "private"};
  return r;
}

bool user_dtype(DType t) { return t != DType::f16 && t != DType::bf16; }

std::vector<KernelParam> parse(const std::string& list, const char* which) {
  std::vector<KernelParam> out;
  const auto last = list.find_last_not_of(" \t\n");
  if (last != std::string::npos && list[last] == ',')
    throw ValueError(kWho + ": " + which + " has an empty entry: '" + list + "'");
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::stringstream words(item);
    std::string type, name, extra;
    words >> type >> name >> extra;
    if (type.empty() && name.empty()) {
      if (list.find_first_not_of(" \t\n") == std::string::npos) break;  // an empty list
      throw ValueError(kWho + ": " + which + " has an empty entry: '" + list + "'");
    }
    if (name.empty() || !extra.empty())
      throw ValueError(kWho + ": each entry of " + which + " is 'type name' (as 'float32 x' or 'T y'), got '" +
                       item + "'");
    if (!identifier(name) || reserved().count(name))
      throw ValueError(kWho + ": '" + name + "' in " + which + " cannot name a parameter (an identifier other than " +
                       "i, n and the C / OpenCL C words)");
    KernelParam p;
    p.name = name;
    try {
      p.type = dtype_from_name(type);
    } catch (const TypeError&) {
      if (!identifier(type))
        throw ValueError(kWho + ": '" + type + "' in " + which + " is neither a dtype nor a type placeholder");
      p.placeholder = type;
    }
    if (p.type && !user_dtype(*p.type))
      throw TypeError(kWho + ": " + type + " parameters are not supported (user kernels take float32, float64, " +
                      "int8, uint8, int32, int64 and bool; convert with astype)");
    out.push_back(p);
  }
  return out;
}

// NumPy's broadcast of a and b, or ValueError.
Shape broadcast(const Shape& a, const Shape& b) {
  const std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const std::int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw ValueError(kWho + ": operands of shapes " + shape_str(a) + " and " + shape_str(b) +
                       " cannot be broadcast together");
    out[i] = da == 1 ? db : da;
  }
  return out;
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

}  // namespace

ElementwiseKernel::ElementwiseKernel(const std::string& in_params, const std::string& out_params,
                                     std::string operation, std::string name, std::string preamble)
    : in_(parse(in_params, "in_params")), out_(parse(out_params, "out_params")), operation_(std::move(operation)),
      name_(std::move(name)), preamble_(std::move(preamble)) {
  if (!identifier(name_)) throw ValueError(kWho + ": name must be an identifier, got '" + name_ + "'");
  if (out_.empty()) throw ValueError(kWho + ": out_params must name at least one output");
  std::set<std::string> seen;
  for (const auto* list : {&in_, &out_})
    for (const KernelParam& p : *list)
      if (!seen.insert(p.name).second) throw ValueError(kWho + ": parameter '" + p.name + "' is named twice");
  for (const auto* list : {&in_, &out_})
    for (const KernelParam& p : *list)
      if (!p.placeholder.empty() && seen.count(p.placeholder))
        throw ValueError(kWho + ": the type placeholder '" + p.placeholder + "' is also a parameter's name");
  if (operation_.find_first_not_of(" \t\n;") == std::string::npos)
    throw ValueError(kWho + ": the operation is empty");
}

std::vector<Array> ElementwiseKernel::operator()(const std::vector<Input>& in, const std::vector<Array>& out) const {
  const std::string who = kWho + " '" + name_ + "'";
  if (in.size() != in_.size())
    throw TypeError(who + ": takes " + std::to_string(in_.size()) + " input" + (in_.size() == 1 ? "" : "s") +
                    ", got " + std::to_string(in.size()));
  if (!out.empty() && out.size() != out_.size())
    throw TypeError(who + ": takes " + std::to_string(out_.size()) + " output" + (out_.size() == 1 ? "" : "s") +
                    " when outputs are given, got " + std::to_string(out.size()));
  // the device and the broadcast shape, from the arrays
  DevicePtr dev;
  Shape shape;
  bool any = false;
  auto same_device = [&](const Array& a, const std::string& what) {
    if (!a.valid()) throw ValueError(who + ": " + what + " is not a valid array");
    if (!dev) dev = a.device();
    else if (a.device() != dev)
      throw TypeError(who + ": the arrays are on different devices (" + dev->id() + " and " + a.device()->id() +
                      "); move them with .to(device) first");
  };
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (!in[k].array) continue;
    same_device(*in[k].array, in_[k].name);
    shape = any ? broadcast(shape, in[k].array->shape()) : in[k].array->shape();
    any = true;
  }
  for (std::size_t k = 0; k < out.size(); ++k) same_device(out[k], out_[k].name);
  if (!any && out.empty())
    throw TypeError(who + ": needs at least one array argument (an input or an output) for its shape and device");
  if (!any) shape = out[0].shape();
  for (std::size_t k = 0; k < out.size(); ++k)
    if (out[k].shape() != shape)
      throw ValueError(who + ": output " + out_[k].name + " has shape " + shape_str(out[k].shape()) +
                       ", the inputs broadcast to " + shape_str(shape));
  // placeholders: from the arrays bound to them, else from numbers (int64 / float64 / bool)
  std::map<std::string, DType> bound;
  auto bind = [&](const KernelParam& p, DType t, const std::string& what) {
    if (!user_dtype(t))
      throw TypeError(who + ": " + what + " is " + dtype_name(t) + "; user kernels take float32, float64, int8, " +
                      "uint8, int32, int64 and bool (convert with astype)");
    if (p.type) {
      if (*p.type != t)
        throw TypeError(who + ": " + what + " must be " + dtype_name(*p.type) + ", got " + dtype_name(t));
      return;
    }
    auto [it, fresh] = bound.emplace(p.placeholder, t);
    if (!fresh && it->second != t)
      throw TypeError(who + ": " + p.placeholder + " is " + dtype_name(it->second) + " by an earlier argument and " +
                      dtype_name(t) + " by " + what);
  };
  for (std::size_t k = 0; k < in.size(); ++k)
    if (in[k].array) bind(in_[k], in[k].array->dtype(), "input " + in_[k].name);
  for (std::size_t k = 0; k < out.size(); ++k) bind(out_[k], out[k].dtype(), "output " + out_[k].name);
  for (std::size_t k = 0; k < in.size(); ++k) {
    const KernelParam& p = in_[k];
    if (in[k].array || p.type || bound.count(p.placeholder)) continue;
    const EwScalar& s = in[k].scalar;
    bound[p.placeholder] = s.is_bool ? DType::b8 : s.is_float ? DType::f64 : DType::i64;
  }
  auto type_of = [&](const KernelParam& p) -> DType {
    if (p.type) return *p.type;
    auto it = bound.find(p.placeholder);
    if (it == bound.end())
      throw TypeError(who + ": the type " + p.placeholder + " of " + p.name + " is not set by any argument");
    return it->second;
  };
  UserEwDesc d;
  d.name = name_;
  d.operation = operation_;
  d.preamble = preamble_;
  for (const auto& [ph, t] : bound) d.typedefs.emplace_back(ph, t);
  d.n_in = static_cast<int>(in_.size());
  std::vector<Array> outputs = out;
  for (std::size_t k = 0; k < in_.size(); ++k) {
    const DType t = type_of(in_[k]);
    dev->require(t, "ElementwiseKernel");
    d.names.push_back(in_[k].name);
    d.types.push_back(t);
    d.scalar.push_back(in[k].array == nullptr);
    const EwScalar& s = in[k].scalar;
    if (!in[k].array && s.is_float && !is_floating(t))
      throw TypeError(who + ": input " + in_[k].name + " is " + dtype_name(t) + ", got the float " +
                      std::to_string(s.f));
    d.fvalue.push_back(s.is_float ? s.f : static_cast<double>(s.i));
    d.ivalue.push_back(s.is_float ? static_cast<std::int64_t>(s.f) : s.i);
  }
  for (std::size_t k = 0; k < out_.size(); ++k) {
    const DType t = type_of(out_[k]);
    dev->require(t, "ElementwiseKernel");
    if (out.empty()) outputs.push_back(Array::empty(dev, shape, t));
    d.names.push_back(out_[k].name);
    d.types.push_back(t);
    d.scalar.push_back(false);
    d.fvalue.push_back(0);
    d.ivalue.push_back(0);
  }
  for (std::size_t a = 0; a < outputs.size(); ++a)
    for (std::size_t b = a + 1; b < outputs.size(); ++b)
      if (outputs[a].same_memory(outputs[b]))
        throw ValueError(who + ": outputs " + out_[a].name + " and " + out_[b].name + " are the same array");
  // strides: inputs broadcast, outputs contiguous; dimensions of extent 1 dropped, neighbours merged where every
  // array steps through them as one
  std::vector<std::vector<std::int64_t>> full;
  for (std::size_t k = 0; k < in_.size(); ++k)
    full.push_back(in[k].array ? strides_in(in[k].array->shape(), shape) : std::vector<std::int64_t>(shape.size(), 0));
  for (std::size_t k = 0; k < out_.size(); ++k) full.push_back(strides_in(shape, shape));
  d.strides.assign(full.size(), {});
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    bool merge = !d.shape.empty();
    for (std::size_t k = 0; merge && k < full.size(); ++k) merge = d.strides[k].back() == full[k][i] * shape[i];
    if (merge) {
      d.shape.back() *= shape[i];
      for (std::size_t k = 0; k < full.size(); ++k) d.strides[k].back() = full[k][i];
      continue;
    }
    d.shape.push_back(shape[i]);
    for (std::size_t k = 0; k < full.size(); ++k) d.strides[k].push_back(full[k][i]);
  }
  if (d.shape.empty()) {
    d.shape = {1};
    for (auto& st : d.strides) st = {0};
  }
  if (static_cast<int>(d.shape.size()) > kEwMaxDims)
    throw ValueError(who + ": the operands' broadcast pattern needs " + std::to_string(d.shape.size()) +
                     " dimensions after merging, more than the " + std::to_string(kEwMaxDims) + " supported");
  d.n = shape_size(shape);
  d.contiguous = d.shape.size() == 1;
  for (std::size_t k = 0; k < full.size() && d.contiguous; ++k)
    d.contiguous = (k < in_.size() && !in[k].array) || d.strides[k][0] == 1;
  if (d.n == 0) return outputs;
  std::vector<Buffer*> args;
  for (std::size_t k = 0; k < in_.size(); ++k) args.push_back(in[k].array ? in[k].array->buffer().get() : nullptr);
  for (const Array& o : outputs) args.push_back(o.buffer().get());
  dev->backend().user_elementwise(d, args);
  return outputs;
}

}  // namespace hetnn
