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
      "sizeof", "static", "uchar", "ulong", "uint", "half", "bool", "kernel", "global", "local", "private",
      // the generated code's own variables (backend/*/user_kernel_*.cpp)
      "begin", "end", "contig", "nd", "sh", "st", "ptr", "fv", "iv", "r", "k", "q", "o", "p", "j", "j0", "j1", "c",
      "item", "parts", "n_red", "n_out", "knd", "ksh", "rnd", "rsh", "ks", "rs", "partials", "i0", "i1", "o0", "o1",
      "shape8", "ksh8", "rsh8", "scratch", "lid"};
  return r;
}

// Prefixes of the generated code's per-parameter variables.
bool generated_prefix(const std::string& s) {
  for (const char* p : {"o_", "k_", "p_", "v_", "s_", "st_", "ks_", "rs_", "hetnn_"})
    if (s.rfind(p, 0) == 0) return true;
  return false;
}

// `reduction`: a and b name the reduce expression's operands there.
std::vector<KernelParam> parse(const std::string& list, const char* which, bool reduction = false) {
  const std::string who = reduction ? "hetnn.ReductionKernel" : kWho;
  std::vector<KernelParam> out;
  const auto last = list.find_last_not_of(" \t\n");
  if (last != std::string::npos && list[last] == ',')
    throw ValueError(who + ": " + which + " has an empty entry: '" + list + "'");
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::stringstream words(item);
    std::string type, name, extra;
    words >> type >> name >> extra;
    if (type.empty() && name.empty()) {
      if (list.find_first_not_of(" \t\n") == std::string::npos) break;  // an empty list
      throw ValueError(who + ": " + which + " has an empty entry: '" + list + "'");
    }
    if (name.empty() || !extra.empty())
      throw ValueError(who + ": each entry of " + which + " is 'type name' (as 'float32 x' or 'T y'), got '" +
                       item + "'");
    if (!identifier(name) || reserved().count(name) || generated_prefix(name) ||
        (reduction && (name == "a" || name == "b")))
      throw ValueError(who + ": '" + name + "' in " + which + " cannot name a parameter: it must be an identifier, " +
                       "not one of " + (reduction ? "i, n, a, b, " : "i, n, ") + "the C / OpenCL C words or the " +
                       "generated code's names (o, p, r, k, ptr, ... and o_*, p_*, hetnn_*)");
    KernelParam p;
    p.name = name;
    try {
      p.type = dtype_from_name(type);
    } catch (const TypeError&) {
      if (!identifier(type))
        throw ValueError(who + ": '" + type + "' in " + which + " is neither a dtype nor a type placeholder");
      p.placeholder = type;
    }
    out.push_back(p);
  }
  return out;
}

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whether `code` holds `w` as a whole word.
bool has_word(const std::string& code, const std::string& w) {
  for (std::size_t at = code.find(w); at != std::string::npos; at = code.find(w, at + 1))
    if ((at == 0 || !word_char(code[at - 1])) && (at + w.size() >= code.size() || !word_char(code[at + w.size()])))
      return true;
  return false;
}

// Whether a given output's current elements must be loaded: the operation reads `name` (an occurrence as a whole
// word that is not the left side of a plain assignment: "z += ...", "z == ...", "f(z)" read it), or may leave it
// unassigned (control flow: "if (m) z = v" keeps the other elements). Conservative: unclear counts as a read.
bool reads(const std::string& code, const std::string& name) {
  for (const char* kw : {"if", "for", "while", "do", "switch", "goto", "return"})
    if (has_word(code, kw)) return true;
  auto word = word_char;
  for (std::size_t at = code.find(name); at != std::string::npos; at = code.find(name, at + 1)) {
    const std::size_t end = at + name.size();
    if ((at > 0 && word(code[at - 1])) || (end < code.size() && word(code[end]))) continue;
    std::size_t j = end;
    while (j < code.size() && std::isspace(static_cast<unsigned char>(code[j]))) ++j;
    const bool assigned = j < code.size() && code[j] == '=' && (j + 1 >= code.size() || code[j + 1] != '=');
    if (!assigned) return true;
  }
  return false;
}

// The placeholder types of one call: bound by the arrays (which must agree), else by numbers. float16 and bfloat16
// are stored in 16 bits and computed in float32.
struct Binder {
  std::string who;
  std::map<std::string, DType> bound;

  void bind(const KernelParam& p, DType t, const std::string& what) {
    if (p.type) {
      if (*p.type != t)
        throw TypeError(who + ": " + what + " must be " + dtype_name(*p.type) + ", got " + dtype_name(t));
      return;
    }
    auto [it, fresh] = bound.emplace(p.placeholder, t);
    if (!fresh && it->second != t)
      throw TypeError(who + ": " + p.placeholder + " is " + dtype_name(it->second) + " by an earlier argument and " +
                      dtype_name(t) + " by " + what);
  }
  void bind_number(const KernelParam& p, const EwScalar& s) {
    if (p.type || bound.count(p.placeholder)) return;
    bound[p.placeholder] = s.is_bool ? DType::b8 : s.is_float ? DType::f64 : DType::i64;
  }
  DType type_of(const KernelParam& p) const {
    if (p.type) return *p.type;
    auto it = bound.find(p.placeholder);
    if (it == bound.end())
      throw TypeError(who + ": the type " + p.placeholder + " of " + p.name + " is not set by any argument");
    return it->second;
  }
};

// The arrays' device and broadcast shape (inputs, then given outputs' device); TypeError when none is an array.
struct Operands {
  DevicePtr dev;
  Shape shape;
  bool any = false;
};
Operands operands(const std::string& who, const std::vector<KernelParam>& in_p,
                  const std::vector<ElementwiseKernel::Input>& in, const std::vector<KernelParam>& out_p,
                  const std::vector<Array>& out) {
  Operands o;
  auto same_device = [&](const Array& a, const std::string& what) {
    if (!a.valid()) throw ValueError(who + ": " + what + " is not a valid array");
    if (!o.dev) o.dev = a.device();
    else if (a.device() != o.dev)
      throw TypeError(who + ": the arrays are on different devices (" + o.dev->id() + " and " + a.device()->id() +
                      "); move them with .to(device) first");
  };
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (!in[k].array) continue;
    same_device(*in[k].array, in_p[k].name);
    o.shape = o.any ? broadcast(who, o.shape, in[k].array->shape()) : in[k].array->shape();
    o.any = true;
  }
  for (std::size_t k = 0; k < out.size(); ++k) same_device(out[k], out_p[k].name);
  return o;
}

// The number inputs' values as the kernel reads them (a float for an integer parameter is refused).
void numbers(const std::string& who, const std::vector<KernelParam>& in_p,
             const std::vector<ElementwiseKernel::Input>& in, const Binder& types, std::vector<bool>& scalar,
             std::vector<double>& fvalue, std::vector<std::int64_t>& ivalue) {
  for (std::size_t k = 0; k < in_p.size(); ++k) {
    const DType t = types.type_of(in_p[k]);
    const EwScalar& s = in[k].scalar;
    if (!in[k].array && s.is_float && !is_floating(t))
      throw TypeError(who + ": input " + in_p[k].name + " is " + dtype_name(t) + ", got the float " +
                      std::to_string(s.f));
    scalar.push_back(in[k].array == nullptr);
    fvalue.push_back(s.is_float ? s.f : static_cast<double>(s.i));
    ivalue.push_back(s.is_float ? static_cast<std::int64_t>(s.f) : s.i);
  }
}


using Inputs = std::vector<ElementwiseKernel::Input>;

// The number of inputs, and of outputs when given, against the kernel's parameters.
void check_arity(const std::string& who, const std::vector<KernelParam>& in_p, const Inputs& in,
                 const std::vector<KernelParam>& out_p, const std::vector<Array>& out) {
  if (in.size() != in_p.size())
    throw TypeError(who + ": takes " + std::to_string(in_p.size()) + " input" + (in_p.size() == 1 ? "" : "s") +
                    ", got " + std::to_string(in.size()));
  if (!out.empty() && out.size() != out_p.size())
    throw TypeError(who + ": takes " + std::to_string(out_p.size()) + " output" + (out_p.size() == 1 ? "" : "s") +
                    " when outputs are given, got " + std::to_string(out.size()));
}

// The placeholder types of one call: the arrays first (inputs, then given outputs), then the numbers.
Binder bind_types(const std::string& who, const std::vector<KernelParam>& in_p, const Inputs& in,
                  const std::vector<KernelParam>& out_p, const std::vector<Array>& out) {
  Binder types{who, {}};
  for (std::size_t k = 0; k < in.size(); ++k)
    if (in[k].array) types.bind(in_p[k], in[k].array->dtype(), "input " + in_p[k].name);
  for (std::size_t k = 0; k < out.size(); ++k) types.bind(out_p[k], out[k].dtype(), "output " + out_p[k].name);
  for (std::size_t k = 0; k < in.size(); ++k)
    if (!in[k].array) types.bind_number(in_p[k], in[k].scalar);
  return types;
}

// No two outputs may be one array (the second write would overwrite the first).
void check_distinct(const std::string& who, const std::vector<KernelParam>& out_p,
                    const std::vector<Array>& outputs) {
  for (std::size_t a = 0; a < outputs.size(); ++a)
    for (std::size_t b = a + 1; b < outputs.size(); ++b)
      if (outputs[a].same_memory(outputs[b]))
        throw ValueError(who + ": outputs " + out_p[a].name + " and " + out_p[b].name + " are the same array");
}


// A kernel's name and parameter lists: an identifier, at least one output, every name once, no placeholder that is
// also a parameter's name.
void check_signature(const std::string& who, const std::string& name, const std::vector<KernelParam>& in,
                     const std::vector<KernelParam>& out) {
  if (!identifier(name)) throw ValueError(who + ": name must be an identifier, got '" + name + "'");
  if (out.empty()) throw ValueError(who + ": out_params must name at least one output");
  std::set<std::string> seen;
  for (const auto* list : {&in, &out})
    for (const KernelParam& p : *list)
      if (!seen.insert(p.name).second) throw ValueError(who + ": parameter '" + p.name + "' is named twice");
  for (const auto* list : {&in, &out})
    for (const KernelParam& p : *list)
      if (!p.placeholder.empty() && seen.count(p.placeholder))
        throw ValueError(who + ": the type placeholder '" + p.placeholder + "' is also a parameter's name");
}

}  // namespace

ElementwiseKernel::ElementwiseKernel(const std::string& in_params, const std::string& out_params,
                                     std::string operation, std::string name, std::string preamble)
    : in_(parse(in_params, "in_params")), out_(parse(out_params, "out_params")), operation_(std::move(operation)),
      name_(std::move(name)), preamble_(std::move(preamble)) {
  check_signature(kWho, name_, in_, out_);
  if (operation_.find_first_not_of(" \t\n;") == std::string::npos)
    throw ValueError(kWho + ": the operation is empty");
  for (const KernelParam& p : out_) reads_.push_back(reads(operation_, p.name));
}

struct ElementwiseKernel::Plan {
  const Device* dev = nullptr;
  bool outs_given = false;
  std::vector<int> kinds;  // per input: -1 an array, else a number's kind (0 int, 1 float, 2 bool)
  std::vector<DType> dtypes;  // per input array and given output
  std::vector<Shape> shapes;  // per input array
  Shape shape;  // the broadcast shape (the outputs')
  std::vector<DType> out_types;
  UserEwDesc d;  // complete but for the numbers' values
};

namespace {

int number_kind(const EwScalar& s) { return s.is_bool ? 2 : s.is_float ? 1 : 0; }

// The device of a call's arrays (the plan has checked that there is one and that they agree).
DevicePtr device_of(const std::vector<ElementwiseKernel::Input>& in, const std::vector<Array>& out) {
  for (const ElementwiseKernel::Input& x : in)
    if (x.array) return x.array->device();
  return out.front().device();
}

}  // namespace

// The last call's plan when this call's operands match it (same device, dtypes, shapes, numbers' kinds, outputs
// given or not), else a new one, resolved and checked in full (and kept for the next call).
std::shared_ptr<const ElementwiseKernel::Plan> ElementwiseKernel::plan_for(const std::vector<Input>& in,
                                                                          const std::vector<Array>& out) const {
  std::shared_ptr<const Plan> last;
  {
    std::lock_guard<std::mutex> lock(plan_mu_);
    last = plan_;
  }
  if (last && last->outs_given == !out.empty() && in.size() == in_.size() &&
      (out.empty() || out.size() == out_.size())) {
    bool same = true;
    std::size_t a = 0;
    for (std::size_t k = 0; same && k < in.size(); ++k) {
      const Array* x = in[k].array;
      if (!x) {
        same = last->kinds[k] == number_kind(in[k].scalar);
        continue;
      }
      same = last->kinds[k] == -1 && x->valid() && x->device().get() == last->dev && x->dtype() == last->dtypes[a] &&
             x->shape() == last->shapes[a];
      ++a;
    }
    for (std::size_t k = 0; same && k < out.size(); ++k)
      same = out[k].valid() && out[k].device().get() == last->dev && out[k].dtype() == last->dtypes[a + k] &&
             out[k].shape() == last->shape;
    if (same) return last;
  }

  const std::string who = kWho + " '" + name_ + "'";
  check_arity(who, in_, in, out_, out);
  Operands ops = operands(who, in_, in, out_, out);
  if (!ops.any && out.empty())
    throw TypeError(who + ": needs at least one array argument (an input or an output) for its shape and device");
  auto plan = std::make_shared<Plan>();
  const DevicePtr& dev = ops.dev;
  plan->dev = dev.get();
  plan->outs_given = !out.empty();
  plan->shape = ops.any ? ops.shape : out[0].shape();
  const Shape& shape = plan->shape;
  for (std::size_t k = 0; k < out.size(); ++k)
    if (out[k].shape() != shape)
      throw ValueError(who + ": output " + out_[k].name + " has shape " + shape_str(out[k].shape()) +
                       ", the inputs broadcast to " + shape_str(shape));
  const Binder types = bind_types(who, in_, in, out_, out);
  UserEwDesc& d = plan->d;
  d.name = name_;
  d.operation = operation_;
  d.preamble = preamble_;
  d.n_in = static_cast<int>(in_.size());
  numbers(who, in_, in, types, d.scalar, d.fvalue, d.ivalue);
  for (std::size_t k = 0; k < in_.size(); ++k) {
    d.names.push_back(in_[k].name);
    d.types.push_back(types.type_of(in_[k]));
    dev->require(d.types.back(), "ElementwiseKernel");
    plan->kinds.push_back(in[k].array ? -1 : number_kind(in[k].scalar));
    if (in[k].array) {
      plan->dtypes.push_back(in[k].array->dtype());
      plan->shapes.push_back(in[k].array->shape());
    }
  }
  for (const Array& o : out) plan->dtypes.push_back(o.dtype());
  for (std::size_t k = 0; k < out_.size(); ++k) {
    const DType t = types.type_of(out_[k]);
    dev->require(t, "ElementwiseKernel");
    plan->out_types.push_back(t);
    d.names.push_back(out_[k].name);
    d.types.push_back(t);
    // outputs hetnn makes start at 0 (nothing to read); given ones keep the elements the operation does not assign
    d.reads_output.push_back(!out.empty() && reads_[k]);
    d.scalar.push_back(false);
    d.fvalue.push_back(0);
    d.ivalue.push_back(0);
  }
  for (const auto& [ph, t] : types.bound) d.typedefs.emplace_back(ph, t);
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
  d.key = user_signature(d.name, d.operation + '\x1e' + d.preamble, d.typedefs, d.types, d.scalar, d.reads_output);
  std::lock_guard<std::mutex> lock(plan_mu_);
  plan_ = plan;
  return plan;
}

namespace {

// User code indexes its arrays densely: views among the inputs are read as dense copies, and outputs given as
// views are computed in dense copies of them (holding their elements, which the operation may read) that are
// written back after the call.
struct DenseArgs {
  std::vector<Array> keep;
  std::vector<ElementwiseKernel::Input> in;
  std::vector<Array> out;
  bool any = false;
  DenseArgs(const std::vector<ElementwiseKernel::Input>& in_arg, const std::vector<Array>& out_arg) {
    keep.reserve(in_arg.size());
    for (ElementwiseKernel::Input x : in_arg) {
      if (x.array && x.array->valid() && !x.array->is_dense()) {
        keep.push_back(x.array->dense());
        x.array = &keep.back();
        any = true;
      }
      in.push_back(x);
    }
    for (const Array& o : out_arg) {
      const bool view = o.valid() && !o.is_dense();
      out.push_back(view ? o.dense() : o);
      any = any || view;
    }
  }
  // outputs: the given ones (their views written back) or the new ones
  std::vector<Array> finish(const std::vector<Array>& out_arg, std::vector<Array> made) const {
    if (out_arg.empty()) return made;
    std::vector<Array> res = out_arg;
    for (std::size_t k = 0; k < res.size(); ++k)
      if (!res[k].same_memory(out[k])) res[k].copy_from(out[k]);
    return res;
  }
};

}  // namespace

std::vector<Array> ElementwiseKernel::operator()(const std::vector<Input>& in, const std::vector<Array>& out) const {
  for (const Input& x : in)
    if (x.array && x.array->valid() && !x.array->is_dense()) return call_dense(in, out);
  for (const Array& o : out)
    if (o.valid() && !o.is_dense()) return call_dense(in, out);
  return call(in, out);
}

std::vector<Array> ElementwiseKernel::call_dense(const std::vector<Input>& in, const std::vector<Array>& out) const {
  const DenseArgs a(in, out);
  return a.finish(out, call(a.in, a.out));
}

std::vector<Array> ElementwiseKernel::call(const std::vector<Input>& in, const std::vector<Array>& out) const {
  const std::shared_ptr<const Plan> plan = plan_for(in, out);
  std::vector<Array> outputs = out;
  if (out.empty())
    for (const DType t : plan->out_types) outputs.push_back(Array::empty(device_of(in, out), plan->shape, t));
  if (outputs.size() > 1) check_distinct(kWho + " '" + name_ + "'", out_, outputs);
  if (plan->d.n == 0) return outputs;
  std::vector<Buffer*> args;
  args.reserve(in.size() + outputs.size());
  bool numbers_in = false;
  for (const Input& x : in) {
    args.push_back(x.array ? x.array->buffer().get() : nullptr);
    numbers_in = numbers_in || !x.array;
  }
  for (const Array& o : outputs) args.push_back(o.buffer().get());
  if (!numbers_in) {
    outputs.front().device()->backend().user_elementwise(plan->d, args);
    return outputs;
  }
  UserEwDesc d = plan->d;  // this call's numbers
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (in[k].array) continue;
    const EwScalar& s = in[k].scalar;
    d.fvalue[k] = s.is_float ? s.f : static_cast<double>(s.i);
    d.ivalue[k] = s.is_float ? static_cast<std::int64_t>(s.f) : s.i;
  }
  outputs.front().device()->backend().user_elementwise(d, args);
  return outputs;
}

ReductionKernel::ReductionKernel(const std::string& in_params, const std::string& out_params, std::string map_expr,
                                 std::string reduce_expr, std::string post_map_expr, std::string identity,
                                 std::string name, std::optional<std::string> reduce_type, std::string preamble)
    : in_(parse(in_params, "in_params", true)), out_(parse(out_params, "out_params", true)),
      map_(std::move(map_expr)), reduce_(std::move(reduce_expr)), post_(std::move(post_map_expr)),
      identity_(std::move(identity)), name_(std::move(name)), preamble_(std::move(preamble)) {
  const std::string who = "hetnn.ReductionKernel";
  check_signature(who, name_, in_, out_);
  auto blank = [](const std::string& e) { return e.find_first_not_of(" \t\n;") == std::string::npos; };
  for (const auto& [what, e] : {std::pair<const char*, const std::string*>{"map_expr", &map_},
                                {"reduce_expr", &reduce_}, {"post_map_expr", &post_}, {"identity", &identity_}})
    if (blank(*e)) throw ValueError(who + ": " + what + " is empty");
  if (reduce_type) {
    KernelParam p;
    p.name = "a";
    try {
      p.type = dtype_from_name(*reduce_type);
    } catch (const TypeError&) {
      if (!identifier(*reduce_type))
        throw ValueError(who + ": reduce_type '" + *reduce_type + "' is neither a dtype nor a type placeholder");
      p.placeholder = *reduce_type;
    }
    reduce_type_ = p;
  }
}

std::vector<Array> ReductionKernel::operator()(const std::vector<ElementwiseKernel::Input>& in_arg,
                                               const Axes& axes, bool keepdims,
                                               const std::vector<Array>& out_arg) const {
  const DenseArgs a(in_arg, out_arg);
  if (!a.any) return call(in_arg, axes, keepdims, out_arg);
  return a.finish(out_arg, call(a.in, axes, keepdims, a.out));
}

std::vector<Array> ReductionKernel::call(const std::vector<ElementwiseKernel::Input>& in, const Axes& axes,
                                         bool keepdims, const std::vector<Array>& out) const {
  const std::string who = "hetnn.ReductionKernel '" + name_ + "'";
  check_arity(who, in_, in, out_, out);
  Operands ops = operands(who, in_, in, out_, out);
  if (!ops.any) throw TypeError(who + ": needs at least one array input to reduce");
  const DevicePtr& dev = ops.dev;
  const Shape& shape = ops.shape;
  const int ndim = static_cast<int>(shape.size());
  std::vector<bool> red(static_cast<std::size_t>(ndim), axes.all);
  for (int a : axes.list) {
    if (a < -ndim || a >= ndim)
      throw AxisError(who + ": axis " + std::to_string(a) + " is out of bounds for the inputs' shape " +
                      shape_str(shape));
    const std::size_t k = static_cast<std::size_t>(a < 0 ? a + ndim : a);
    if (red[k]) throw ValueError(who + ": axis " + std::to_string(a) + " is given twice");
    red[k] = true;
  }
  Shape yshape;
  for (int k = 0; k < ndim; ++k)
    if (!red[static_cast<std::size_t>(k)] || keepdims) yshape.push_back(red[static_cast<std::size_t>(k)] ? 1 : shape[k]);
  for (std::size_t k = 0; k < out.size(); ++k)
    if (out[k].shape() != yshape)
      throw ValueError(who + ": output " + out_[k].name + " has shape " + shape_str(out[k].shape()) + ", the result " +
                       shape_str(yshape));
  const Binder types = bind_types(who, in_, in, out_, out);
  UserRedDesc d;
  d.name = name_;
  d.map_expr = map_;
  d.reduce_expr = reduce_;
  d.post_map_expr = post_;
  d.identity = identity_;
  d.preamble = preamble_;
  d.n_in = static_cast<int>(in_.size());
  numbers(who, in_, in, types, d.scalar, d.fvalue, d.ivalue);
  std::vector<Array> outputs = out;
  for (std::size_t k = 0; k < in_.size(); ++k) {
    d.names.push_back(in_[k].name);
    d.types.push_back(types.type_of(in_[k]));
    dev->require(d.types.back(), "ReductionKernel");
  }
  for (std::size_t k = 0; k < out_.size(); ++k) {
    const DType t = types.type_of(out_[k]);
    dev->require(t, "ReductionKernel");
    if (out.empty()) outputs.push_back(Array::empty(dev, yshape, t));
    d.names.push_back(out_[k].name);
    d.types.push_back(t);
  }
  d.reduce_type = reduce_type_ ? types.type_of(*reduce_type_) : d.types[in_.size()];
  if (d.reduce_type == DType::f16 || d.reduce_type == DType::bf16) d.reduce_type = DType::f32;  // computed in float32
  dev->require(d.reduce_type, "ReductionKernel");
  for (const auto& [ph, t] : types.bound) d.typedefs.emplace_back(ph, t);
  check_distinct(who, out_, outputs);
  // kept and reduced dimensions, each merged where every input steps through them as one
  std::vector<std::vector<std::int64_t>> full;
  for (std::size_t k = 0; k < in_.size(); ++k)
    full.push_back(in[k].array ? strides_in(in[k].array->shape(), shape) : std::vector<std::int64_t>(shape.size(), 0));
  const std::vector<std::int64_t> ycontig = strides_in(shape, shape);  // the kept dims' own strides merge alike
  d.ks.assign(in_.size(), {});
  d.rs.assign(in_.size(), {});
  std::vector<std::int64_t> kout;
  d.n_out = 1;
  d.n_red = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const bool r = red[i];
    (r ? d.n_red : d.n_out) *= shape[i];
    if (shape[i] == 1) continue;
    Shape& sh = r ? d.rshape : d.kshape;
    auto& st = r ? d.rs : d.ks;
    bool merge = !sh.empty();
    for (std::size_t k = 0; merge && k < full.size(); ++k) merge = st[k].back() == full[k][i] * shape[i];
    if (merge && !r) merge = kout.back() == ycontig[i] * shape[i];
    if (merge) {
      sh.back() *= shape[i];
      for (std::size_t k = 0; k < full.size(); ++k) st[k].back() = full[k][i];
      if (!r) kout.back() = ycontig[i];
      continue;
    }
    sh.push_back(shape[i]);
    for (std::size_t k = 0; k < full.size(); ++k) st[k].push_back(full[k][i]);
    if (!r) kout.push_back(ycontig[i]);
  }
  for (auto* sh : {&d.kshape, &d.rshape}) {
    if (sh->empty()) {
      *sh = {1};
      for (auto& st : (sh == &d.kshape ? d.ks : d.rs)) st = {0};
    }
    if (static_cast<int>(sh->size()) > kEwMaxDims)
      throw ValueError(who + ": the reduction needs " + std::to_string(sh->size()) +
                       " dimensions after merging, more than the " + std::to_string(kEwMaxDims) + " supported");
  }
  if (d.n_out == 0) return outputs;
  std::vector<Buffer*> args;
  for (std::size_t k = 0; k < in_.size(); ++k) args.push_back(in[k].array ? in[k].array->buffer().get() : nullptr);
  for (const Array& o : outputs) args.push_back(o.buffer().get());
  dev->backend().user_reduction(d, args);
  return outputs;
}

}  // namespace hetnn
