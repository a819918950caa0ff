// The op table: schema and shape/dtype inference of every graph op, under PyTorch eager semantics.
// To add an op, see CONTRIBUTING.md "Adding an op".
#include "spec/ops.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kf {
namespace {

using json = nlohmann::json;

arg_def arg(std::string name, arg_kind kind, json def = nullptr, std::string help = {}) {
  return {std::move(name), kind, false, std::move(def), {}, std::move(help)};
}
arg_def req(std::string name, arg_kind kind, std::string help = {}) {
  return {std::move(name), kind, true, nullptr, {}, std::move(help)};
}
// A required tensor argument that may be a number instead (a Python scalar operand).
arg_def operand_or_number(std::string name) {
  arg_def a{std::move(name), arg_kind::tensor, true, nullptr, {}, {}};
  a.number_ok = true;
  return a;
}
arg_def choice(std::string name, std::vector<std::string> choices, std::string def) {
  return {std::move(name), arg_kind::string, false, def, std::move(choices), {}};
}

void need_floating(const op_context& c, std::string_view what = "input") {
  if (!is_floating(c.input.type))
    c.fail("", fmt::format("{} needs a floating-point {}, got {}", c.op.name, what, dtype_name(c.input.type)));
}

// dim in range for the input, returned normalized.
int64_t need_dim(const op_context& c, const std::string& name) {
  int64_t rank = static_cast<int64_t>(c.input.shape.size());
  int64_t d = c.get_int(name);
  int64_t w = wrap_dim(d, rank);
  if (w < 0) c.fail(name, fmt::format("dim {} is out of range for a {}-d input (expected {} to {})", d, rank, rank ? -rank : -1, rank ? rank - 1 : 0));
  return w;
}

// A parameter tensor (weight/bias) must have `shape` and the input's dtype, as torch's fused kernels require.
void need_param(const op_context& c, const std::string& name, const std::vector<int64_t>& shape) {
  if (!c.has(name)) return;
  const tensor_desc& t = c.tensors.at(name);
  if (t.shape != shape)
    c.fail(name, fmt::format("expected shape [{}], got {}", fmt::join(shape, ", "), t.str()));
  if (t.type != c.input.type)
    c.fail(name, fmt::format("expected dtype {} (the op's input), got {}", dtype_name(c.input.type), dtype_name(t.type)));
}

std::vector<tensor_desc> same(const op_context& c) { return {c.input}; }

std::vector<tensor_desc> softmax_like(const op_context& c) {
  need_dim(c, "dim");
  tensor_desc out = c.input;
  if (c.has("dtype")) {
    out.type = *parse_dtype(c.get_string("dtype"));
    if (!is_floating(out.type)) c.fail("dtype", fmt::format("expected a floating-point dtype, got {}", dtype_name(out.type)));
  } else {
    need_floating(c);
  }
  return {out};
}

std::vector<tensor_desc> topk(const op_context& c) {
  int64_t d = need_dim(c, "dim");
  int64_t k = c.get_int("k");
  int64_t n = c.input.shape.empty() ? 1 : c.input.shape[d];
  if (k < 1 || k > n)
    c.fail("k", fmt::format("k = {} is out of range: expected 1 to the size of dim {} ({})", k, c.get_int("dim"), n));
  tensor_desc values = c.input;
  if (!values.shape.empty()) values.shape[d] = k;
  tensor_desc indices = values;
  indices.type = dtype::int64;
  return {values, indices};
}

std::vector<tensor_desc> group_norm(const op_context& c) {
  need_floating(c);
  if (c.input.shape.size() < 2) c.fail("", fmt::format("group_norm needs an input with at least 2 dims [N, C, ...], got {}", c.input.str()));
  int64_t groups = c.get_int("num_groups"), channels = c.input.shape[1];
  if (groups <= 0 || channels % groups != 0)
    c.fail("num_groups", fmt::format("expected a positive divisor of the {} channels, got {}", channels, groups));
  need_param(c, "weight", {channels});
  need_param(c, "bias", {channels});
  if (c.get_number("eps") < 0) c.fail("eps", "expected eps >= 0");
  return same(c);
}

// layer_norm / rms_norm: normalized_shape must be the input's trailing dims.
std::vector<tensor_desc> norm_over_last(const op_context& c) {
  need_floating(c);
  auto ns = c.get_int_list("normalized_shape");
  const auto& s = c.input.shape;
  bool ok = !ns.empty() && ns.size() <= s.size();
  for (size_t i = 0; ok && i < ns.size(); ++i) ok = ns[i] == s[s.size() - ns.size() + i];
  if (!ok) c.fail("normalized_shape", fmt::format("expected the input's trailing dims (input {}), got [{}]", c.input.str(), fmt::join(ns, ", ")));
  need_param(c, "weight", ns);
  need_param(c, "bias", ns);
  if (c.has("eps") && c.get_number("eps") < 0) c.fail("eps", "expected eps >= 0");
  return same(c);
}

std::vector<tensor_desc> elementwise_float(const op_context& c) {
  need_floating(c);
  return same(c);
}

// tanh(x / cap) * cap: a cap of 0 divides by zero (every value NaN or 0).
std::vector<tensor_desc> softcap(const op_context& c) {
  const double cap = c.get_number("cap");
  if (cap == 0 || !std::isfinite(cap)) c.fail("cap", fmt::format("expected a finite non-zero cap, got {}", cap));
  return elementwise_float(c);
}

// torch.clamp(x, min, max): torch refuses a clamp with neither bound.
std::vector<tensor_desc> clamp(const op_context& c) {
  if (!c.has("min") && !c.has("max")) c.fail("min", "expected min, max or both (torch.clamp needs a bound)");
  for (const char* b : {"min", "max"})
    if (c.has(b) && std::isnan(c.get_number(b))) c.fail(b, "expected a number, got nan");
  return elementwise_float(c);
}

// A mask (add_mask's, masked_fill's) broadcasts into x without growing it.
void need_mask_shape(const op_context& c, const tensor_desc& m, const std::string& arg = "mask") {
  std::vector<int64_t> shape;
  if (!broadcast_shapes(c.input.shape, m.shape, &shape))
    c.fail(arg, fmt::format("{} {} does not broadcast against the input {}", arg, m.str(), c.input.str()));
  if (shape != c.input.shape)
    c.fail(arg, fmt::format("{} {} would grow the input {} by broadcasting (expected it to broadcast to the input's shape)", arg, m.str(), c.input.str()));
}

std::vector<tensor_desc> add_mask(const op_context& c) {
  need_floating(c);
  const tensor_desc& m = c.tensors.at("mask");
  if (!is_floating(m.type)) c.fail("mask", fmt::format("expected a floating-point mask (0 / -inf), got {}", dtype_name(m.type)));
  need_mask_shape(c, m);
  return {tensor_desc{c.input.shape, promote_types(c.input.type, m.type)}};
}

// The largest finite value a floating type holds (float64's: infinity, no finite double overflows it).
double largest_finite(dtype t) {
  switch (t) {
    case dtype::float16: return 65504.0;
    case dtype::bfloat16: return 3.3895313892515355e38;
    case dtype::float32: return 3.4028234663852886e38;
    default: return INFINITY;
  }
}

// x.masked_fill(mask, value): value where the bool mask is true (a mask that broadcasts into x without growing it,
// as add_mask's), x elsewhere; and torch.where(condition, x, value), its mirror: x where true. x's type either way.
std::vector<tensor_desc> masked_fill(const op_context& c) {
  need_floating(c);
  const bool where = c.op.name == "where";
  const std::string arg = where ? "condition" : "mask";
  const tensor_desc& m = c.tensors.at(arg);
  if (m.type != dtype::boolean)
    c.fail(arg, fmt::format("expected a bool {} (true where {} goes), got {}", arg, where ? "x" : "the value", dtype_name(m.type)));
  need_mask_shape(c, m, arg);
  // torch refuses a finite value beyond x's type (-1e9 into float16); -inf and the type's lowest are what models use.
  const double v = c.get_number("value"), top = largest_finite(c.input.type);
  if (std::isfinite(v) && std::abs(v) > top)
    c.fail("value", fmt::format("{} does not fit the input's {} (largest {}): expected -inf, inf or a value within it", v, dtype_name(c.input.type), top));
  return same(c);
}

// add / sub / mul / div: x op other, with broadcasting and type promotion as torch does them. Both operands are
// tensors, so the result type is promote_types of the two; div of two integer tensors is true division (float32).
// kforge's kernels compute in floating point: a result that is not floating is rejected.
std::vector<tensor_desc> binary(const op_context& c) {
  if (c.value("other").is_number()) {
    // A Python scalar operand: torch keeps a floating x's dtype (an integer x would stay integer or become the
    // default dtype, neither of which kforge computes).
    if (!is_floating(c.input.type))
      c.fail("other", fmt::format("a number operand needs a floating-point input, got {} (cast it first)", dtype_name(c.input.type)));
    return {c.input};
  }
  const tensor_desc& o = c.tensors.at("other");
  tensor_desc out{{}, promote_types(c.input.type, o.type)};
  if (c.op.name == "div" && !is_floating(out.type)) out.type = dtype::float32;
  if (!is_floating(out.type))
    c.fail("other", fmt::format("{} of {} and {} gives an integer result; kforge's ops compute in floating point (cast one operand first)",
                                c.op.name, dtype_name(c.input.type), dtype_name(o.type)));
  if (!broadcast_shapes(c.input.shape, o.shape, &out.shape))
    c.fail("other", fmt::format("{} does not broadcast against the input {}: each trailing dim must be equal or 1", o.str(), c.input.str()));
  return {out};
}

std::vector<tensor_desc> adaptive_avg_pool2d(const op_context& c) {
  need_floating(c);
  size_t r = c.input.shape.size();
  if (r != 3 && r != 4) c.fail("", fmt::format("adaptive_avg_pool2d needs a 3-d or 4-d input, got {}", c.input.str()));
  auto os = pool_output_size(nlohmann::json(c.get_int_list("output_size")));
  if (os.size() != 2 || os[0] < 1 || os[1] < 1)
    c.fail("output_size", fmt::format("expected a positive size or [h, w], got [{}]", fmt::join(os, ", ")));
  tensor_desc out = c.input;
  out.shape[r - 2] = os[0];
  out.shape[r - 1] = os[1];
  return {out};
}

// F.avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override) and F.max_pool2d(x,
// kernel_size, stride, padding, ceil_mode) as torch checks them: sizes of one or two integers (stride: none or empty
// means kernel_size), padding at most half the kernel, an output of at least one window.
std::vector<tensor_desc> window_pool2d(const op_context& c) {
  need_floating(c);
  size_t r = c.input.shape.size();
  if (r != 3 && r != 4) c.fail("", fmt::format("{} needs a 3-d or 4-d input, got {}", c.op.name, c.input.str()));
  auto pair = [&](const std::string& name, int64_t least) {
    auto v = c.get_int_list(name);
    if (v.size() == 1) v.push_back(v[0]);
    if (v.size() != 2 || v[0] < least || v[1] < least)
      c.fail(name, fmt::format("expected an integer or [h, w] of integers >= {}, got [{}]", least, fmt::join(v, ", ")));
    return v;
  };
  const auto k = pair("kernel_size", 1);
  if (c.has("stride") && !c.get_int_list("stride").empty()) pair("stride", 1);
  const auto p = pair("padding", 0);
  if (p[0] > k[0] / 2 || p[1] > k[1] / 2)
    c.fail("padding", fmt::format("padding [{}] is more than half the kernel [{}] (torch refuses it)", fmt::join(p, ", "), fmt::join(k, ", ")));
  if (c.has("divisor_override") && c.get_int("divisor_override") == 0) c.fail("divisor_override", "expected a nonzero divisor (or none)");
  // Checked above, so pool_window_of reads the same values.
  op_call call;
  call.op = c.op.name;
  call.args = c.args;
  const pool_window win = pool_window_of(call);
  tensor_desc out = c.input;
  for (int d = 0; d < 2; ++d) {
    const int64_t len = c.input.shape[r - 2 + d], n = win.out_len(d, len);
    if (n < 1)
      c.fail("kernel_size", fmt::format("a window of {} (padding {}) does not fit the input's {} of {}: expected an output of at least 1",
                                        d ? win.kw : win.kh, d ? win.pw : win.ph, d ? "width" : "height", len));
    out.shape[r - 2 + d] = n;
  }
  return {out};
}

std::vector<tensor_desc> flatten(const op_context& c) {
  int64_t rank = static_cast<int64_t>(c.input.shape.size());
  if (rank == 0) return {{{1}, c.input.type}};
  int64_t s = need_dim(c, "start_dim"), e = need_dim(c, "end_dim");
  if (s > e) c.fail("start_dim", fmt::format("start_dim ({}) comes after end_dim ({})", c.get_int("start_dim"), c.get_int("end_dim")));
  tensor_desc out{{}, c.input.type};
  int64_t prod = 1;
  for (int64_t i = 0; i < rank; ++i) {
    if (i < s || i > e) out.shape.push_back(c.input.shape[i]);
    else prod *= c.input.shape[i];
    if (i == e) out.shape.push_back(prod);
  }
  return {out};
}

std::vector<tensor_desc> cast(const op_context& c) {
  return {{c.input.shape, *parse_dtype(c.get_string("dtype"))}};
}

std::vector<tensor_desc> linear(const op_context& c) {
  need_floating(c);
  const tensor_desc& w = c.tensors.at("weight");
  if (c.input.shape.empty()) c.fail("", "linear needs an input with at least 1 dim");
  if (w.shape.size() != 2 || w.shape[1] != c.input.shape.back())
    c.fail("weight", fmt::format("expected [out_features, {}] (the input's last dim), got {}", c.input.shape.back(), w.str()));
  if (w.type != c.input.type)
    c.fail("weight", fmt::format("expected dtype {} (the op's input), got {}", dtype_name(c.input.type), dtype_name(w.type)));
  need_param(c, "bias", {w.shape[0]});
  tensor_desc out = c.input;
  out.shape.back() = w.shape[0];
  return {out};
}

std::vector<tensor_desc> matmul(const op_context& c) {
  const tensor_desc& o = c.tensors.at("other");
  auto a = c.input.shape, b = o.shape;
  if (a.empty() || b.empty()) c.fail("other", "matmul needs operands with at least 1 dim");
  if (o.type != c.input.type)
    c.fail("other", fmt::format("expected dtype {} (the op's input), got {}", dtype_name(c.input.type), dtype_name(o.type)));
  bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), 1);
  if (b1) b.push_back(1);
  if (a.back() != b[b.size() - 2])
    c.fail("other", fmt::format("inner dims differ: input {} times other {}", c.input.str(), o.str()));
  std::vector<int64_t> batch;
  if (!broadcast_shapes({a.begin(), a.end() - 2}, {b.begin(), b.end() - 2}, &batch))
    c.fail("other", fmt::format("batch dims of {} and {} do not broadcast", c.input.str(), o.str()));
  tensor_desc out{batch, c.input.type};
  if (!a1) out.shape.push_back(a[a.size() - 2]);
  if (!b1) out.shape.push_back(b.back());
  return {out};
}

std::vector<op_def> make_table() {
  using k = arg_kind;
  std::vector<op_def> t = {
      {"softcap", "tanh(x / cap) * cap", {req("cap", k::number)}, false, {}, softcap},
      {"scale", "x * factor", {req("factor", k::number)}, false, {}, elementwise_float},
      {"add_mask", "x + mask", {req("mask", k::tensor)}, false, {}, add_mask},
      {"masked_fill", "x.masked_fill(mask, value)", {req("mask", k::tensor), req("value", k::fill)}, false, {}, masked_fill},
      {"where", "torch.where(condition, x, value)", {req("condition", k::tensor), req("value", k::fill)}, false, {}, masked_fill},
      {"softmax", "torch.softmax(x, dim, dtype)", {req("dim", k::integer), arg("dtype", k::dtype)}, false, {}, softmax_like},
      {"log_softmax", "torch.log_softmax(x, dim, dtype)", {req("dim", k::integer), arg("dtype", k::dtype)}, false, {}, softmax_like},
      {"topk", "torch.topk(x, k, dim, largest, sorted)",
       {req("k", k::integer), arg("dim", k::integer, -1), arg("largest", k::boolean, true), arg("sorted", k::boolean, true)},
       true, {"values", "indices"}, topk},
      {"group_norm", "F.group_norm(x, num_groups, weight, bias, eps)",
       {req("num_groups", k::integer), arg("weight", k::tensor), arg("bias", k::tensor), arg("eps", k::number, 1e-5)},
       false, {}, group_norm},
      {"layer_norm", "F.layer_norm(x, normalized_shape, weight, bias, eps)",
       {req("normalized_shape", k::int_list), arg("weight", k::tensor), arg("bias", k::tensor), arg("eps", k::number, 1e-5)},
       false, {}, norm_over_last},
      {"rms_norm", "F.rms_norm(x, normalized_shape, weight, eps)",
       {req("normalized_shape", k::int_list), arg("weight", k::tensor), arg("eps", k::number)}, false, {}, norm_over_last},
      {"silu", "F.silu(x)", {}, false, {}, elementwise_float},
      {"sigmoid", "torch.sigmoid(x)", {}, false, {}, elementwise_float},
      {"tanh", "torch.tanh(x)", {}, false, {}, elementwise_float},
      {"relu", "torch.relu(x)", {}, false, {}, elementwise_float},
      {"exp", "torch.exp(x)", {}, false, {}, elementwise_float},
      {"rsqrt", "torch.rsqrt(x)", {}, false, {}, elementwise_float},
      {"neg", "torch.neg(x)", {}, false, {}, elementwise_float},
      {"hardswish", "F.hardswish(x)", {}, false, {}, elementwise_float},
      {"hardsigmoid", "F.hardsigmoid(x)", {}, false, {}, elementwise_float},
      {"clamp", "torch.clamp(x, min, max)", {arg("min", k::number), arg("max", k::number)}, false, {}, clamp},
      {"add", "x + other", {operand_or_number("other")}, false, {}, binary},
      {"sub", "x - other", {operand_or_number("other")}, false, {}, binary},
      {"mul", "x * other", {operand_or_number("other")}, false, {}, binary},
      {"div", "x / other", {operand_or_number("other")}, false, {}, binary},
      {"gelu", "F.gelu(x, approximate)", {choice("approximate", {"none", "tanh"}, "none")}, false, {}, elementwise_float},
      {"adaptive_avg_pool2d", "F.adaptive_avg_pool2d(x, output_size)", {req("output_size", k::int_list)}, false, {}, adaptive_avg_pool2d},
      {"avg_pool2d", "F.avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)",
       {req("kernel_size", k::int_list), arg("stride", k::int_list), arg("padding", k::int_list, 0),
        arg("ceil_mode", k::boolean, false), arg("count_include_pad", k::boolean, true), arg("divisor_override", k::integer)},
       false, {}, window_pool2d},
      {"max_pool2d", "F.max_pool2d(x, kernel_size, stride, padding, ceil_mode)",
       {req("kernel_size", k::int_list), arg("stride", k::int_list), arg("padding", k::int_list, 0), arg("ceil_mode", k::boolean, false)},
       false, {}, window_pool2d},
      {"flatten", "torch.flatten(x, start_dim, end_dim)", {arg("start_dim", k::integer, 0), arg("end_dim", k::integer, -1)}, false, {}, flatten},
      {"cast", "x.to(dtype)", {req("dtype", k::dtype)}, false, {}, cast},
      {"linear", "F.linear(x, weight, bias)", {req("weight", k::tensor), arg("bias", k::tensor)}, false, {}, linear},
      {"matmul", "torch.matmul(x, other)", {req("other", k::tensor)}, false, {}, matmul},
  };
  for (auto& op : t)
    if (op.output_names.empty()) op.output_names = {"out"};
  return t;
}

}  // namespace

std::string_view arg_kind_name(arg_kind k) {
  switch (k) {
    case arg_kind::integer: return "an integer";
    case arg_kind::number: return "a number";
    case arg_kind::boolean: return "true or false";
    case arg_kind::string: return "a string";
    case arg_kind::dtype: return "a dtype";
    case arg_kind::tensor: return "the name of an input";
    case arg_kind::int_list: return "an integer or a list of integers";
    case arg_kind::fill: return "a number, -inf or inf";
  }
  return "?";
}

const arg_def* op_def::find_arg(std::string_view n) const {
  for (auto& a : args)
    if (a.name == n) return &a;
  return nullptr;
}

const std::vector<op_def>& op_table() {
  static const std::vector<op_def> table = make_table();
  return table;
}

const op_def* find_op(std::string_view name) {
  for (auto& op : op_table())
    if (op.name == name) return &op;
  return nullptr;
}

std::vector<std::string> op_names() {
  std::vector<std::string> v;
  for (auto& op : op_table()) v.push_back(op.name);
  return v;
}

double number_value(const json& v) {
  if (v.is_string()) {
    if (v == "inf") return INFINITY;
    if (v == "-inf") return -INFINITY;
    KF_ASSERT(false, "not a number argument: {}", v.dump());
  }
  return v.get<double>();
}

// ---- op_context ----

const nlohmann::json& op_context::value(const std::string& name) const {
  if (auto it = args.find(name); it != args.end() && !it->is_null()) return *it;
  if (const arg_def* a = op.find_arg(name)) return a->default_value;
  static const json k_null;
  return k_null;
}
bool op_context::has(const std::string& name) const { return !value(name).is_null(); }
int64_t op_context::get_int(const std::string& name) const { return value(name).get<int64_t>(); }
double op_context::get_number(const std::string& name) const { return number_value(value(name)); }
std::string op_context::get_string(const std::string& name) const { return value(name).get<std::string>(); }
std::vector<int64_t> op_context::get_int_list(const std::string& name) const {
  const json& v = value(name);
  if (v.is_array()) return v.get<std::vector<int64_t>>();
  return {v.get<int64_t>()};
}
void op_context::fail(const std::string& a, const std::string& message) const { throw op_error{a, message}; }

std::vector<int64_t> pool_output_size(const nlohmann::json& output_size) {
  std::vector<int64_t> out;
  if (output_size.is_number_integer()) out = {output_size.get<int64_t>()};
  if (output_size.is_array())
    for (const auto& e : output_size)
      if (e.is_number_integer()) out.push_back(e.get<int64_t>());
  if (out.size() == 1) out.push_back(out[0]);
  return out;
}

int64_t pool_window::out_len(int dim, int64_t len) const {
  if (adaptive) return dim ? out_w : out_h;
  const int64_t k = dim ? kw : kh, s = dim ? sw : sh, p = dim ? pw : ph;
  // torch's pooling_output_shape (dilation 1): rounded down (or up with ceil_mode, where the last window still starts
  // inside the input or its left padding).
  const int64_t num = len + 2 * p - k + (ceil_mode ? s - 1 : 0);
  int64_t n = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && n > 0 && (n - 1) * s >= len + p) --n;
  return n > 0 ? n : 0;
}

std::string pool_window::describe() const {
  if (adaptive) return out_h == out_w ? fmt::format("adaptive_avg_pool2d({})", out_h) : fmt::format("adaptive_avg_pool2d({}, {})", out_h, out_w);
  auto two = [](int64_t a, int64_t b) { return a == b ? fmt::format("{}", a) : fmt::format("[{}, {}]", a, b); };
  std::string s = fmt::format("{}({}", max ? "max_pool2d" : "avg_pool2d", two(kh, kw));
  if (sh != kh || sw != kw) s += fmt::format(", stride {}", two(sh, sw));
  if (ph || pw) s += fmt::format(", padding {}", two(ph, pw));
  if (ceil_mode) s += ", ceil_mode";
  if ((ph || pw) && !count_include_pad && !max) s += ", count_include_pad false";
  if (divisor) s += fmt::format(", divisor {}", divisor);
  return s + ")";
}

bool is_window_pooling(std::string_view op) {
  return op == "adaptive_avg_pool2d" || op == "avg_pool2d" || op == "max_pool2d";
}

pool_window pool_window_of(const op_call& call) {
  pool_window w;
  if (call.op == "adaptive_avg_pool2d") {
    const auto os = pool_output_size(call.args.value("output_size", json()));
    if (os.size() == 2) w.out_h = os[0], w.out_w = os[1];
    return w;
  }
  w.adaptive = false;
  w.max = call.op == "max_pool2d";
  auto pair = [&](const char* name, std::vector<int64_t> dflt) {
    const json v = call.args.value(name, json());
    std::vector<int64_t> out = v.is_null() ? std::vector<int64_t>{} : pool_output_size(v);
    return out.size() == 2 ? out : dflt;
  };
  const auto k = pair("kernel_size", {1, 1}), s = pair("stride", k), p = pair("padding", {0, 0});
  w.kh = k[0], w.kw = k[1], w.sh = s[0], w.sw = s[1], w.ph = p[0], w.pw = p[1];
  w.ceil_mode = call.args.value("ceil_mode", false);
  w.count_include_pad = !w.max && call.args.value("count_include_pad", true);
  const json d = call.args.value("divisor_override", json());
  w.divisor = !w.max && d.is_number_integer() ? d.get<int64_t>() : 0;
  return w;
}

}  // namespace kf
