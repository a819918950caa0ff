// The lifting table: which aten operators compute which spec op, and with what arguments (lift.h).
#include "capture/lift.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "capture/rms_norm_match.h"
#include "spec/ops.h"

namespace kf::capture {
namespace {

using json = nlohmann::json;
using rule = std::function<std::optional<lifted_op>(const trace&, const traced_op&)>;

bool unused(const trace& t, int64_t value) { return t.consumers(value).empty() && !t.model_outputs.count(value); }

// A lifted op of `op` reading `input`, whose first result is the next step's input. Its other results are the
// spec op's too (topk's indices) or, by default, must be unused (a norm's mean and rstd, which no spec returns).
std::optional<lifted_op> start(const trace& t, const traced_op& op, std::string spec_op, const json& input,
                               bool all_results = false) {
  auto in = spec_tensor(t, input);
  if (!in || op.outputs.empty()) return std::nullopt;
  for (size_t i = 0; i < op.outputs.size(); ++i) {
    if (all_results || i == 0) {
      if (!t.meta(op.outputs[i]).spec_dtype()) return std::nullopt;
    } else if (!unused(t, op.outputs[i])) {
      return std::nullopt;
    }
  }
  lifted_op l;
  l.op = std::move(spec_op);
  l.input = *in;
  l.outputs = all_results ? op.outputs : std::vector<int64_t>{op.outputs[0]};
  l.covers = {op.index};
  return l;
}

// The spec's elementwise ops, norms, softmax without a dtype and pooling take a floating-point input.
std::optional<lifted_op> floating(const trace& t, std::optional<lifted_op> l) {
  if (l && !is_floating(*t.meta(l->input).spec_dtype())) return std::nullopt;
  return l;
}

// An optional tensor argument (a norm's weight or bias): absent is fine; present, it must have the input's dtype
// (spec ops take parameters in the input's dtype, as torch's fused kernels do).
bool add_param(const trace& t, lifted_op* l, const std::string& name, const json& arg) {
  if (arg.is_null()) return true;
  auto v = spec_tensor(t, arg);
  if (!v || t.meta(*v).dtype != t.meta(l->input).dtype) return false;
  l->tensors.emplace_back(name, *v);
  return true;
}

rule unary(std::string spec_op) {
  return [spec_op](const trace& t, const traced_op& op) { return floating(t, start(t, op, spec_op, op.arg(0, "self"))); };
}

std::optional<lifted_op> gelu(const trace& t, const traced_op& op) {
  auto l = floating(t, start(t, op, "gelu", op.arg(0, "self")));
  if (!l) return l;
  const json& a = op.arg(1, "approximate");
  if (a.is_string() && a != "none") {
    if (a != "tanh") return std::nullopt;
    l->args["approximate"] = "tanh";
  }
  return l;
}

// torch.clamp(x, min, max) and F.hardtanh(x, min_val, max_val) (F.relu6 is hardtanh(x, 0, 6)): number bounds only.
std::optional<lifted_op> clamp(const trace& t, const traced_op& op) {
  const bool hardtanh = op.name.rfind("aten.hardtanh", 0) == 0;
  auto l = floating(t, start(t, op, "clamp", op.arg(0, "self")));
  if (!l) return l;
  const json& lo = op.arg(1, hardtanh ? "min_val" : "min");
  const json& hi = op.arg(2, hardtanh ? "max_val" : "max");
  for (auto [name, arg, fallback] : {std::tuple{"min", &lo, -1.0}, std::tuple{"max", &hi, 1.0}}) {
    if (arg->is_null()) {
      if (hardtanh) l->args[name] = fallback;  // hardtanh's defaults
      continue;
    }
    auto v = number_arg(*arg);
    if (!v || std::isnan(*v)) return std::nullopt;  // a tensor bound
    l->args[name] = *v;
  }
  if (!l->args.contains("min") && !l->args.contains("max")) return std::nullopt;
  return l;
}

// add, sub, mul, div of two tensors; mul and div by a number are the spec's scale, add and sub of one a number
// operand (`add: {other: 1.0}`).
rule binary(std::string spec_op) {
  return [spec_op](const trace& t, const traced_op& op) -> std::optional<lifted_op> {
    const json& alpha = op.arg(2, "alpha");
    if (!alpha.is_null() && number_arg(alpha) != 1.0) return std::nullopt;
    const json& other = op.arg(1, "other");
    if (auto v = number_arg(other)) {
      if (!std::isfinite(*v)) return std::nullopt;
      if (spec_op == "add" || spec_op == "sub") {
        auto l = floating(t, start(t, op, spec_op, op.arg(0, "self")));
        if (l) l->args["other"] = *v;
        return l;
      }
      if (spec_op == "div" && *v == 0) return std::nullopt;
      auto l = floating(t, start(t, op, "scale", op.arg(0, "self")));
      if (l) l->args["factor"] = spec_op == "mul" ? *v : 1.0 / *v;
      return l;
    }
    auto l = start(t, op, spec_op, op.arg(0, "self"));
    auto o = spec_tensor(t, other);
    if (!l || !o || !is_floating(*t.meta(l->output()).spec_dtype())) return std::nullopt;
    l->tensors.emplace_back("other", *o);
    l->commutative = spec_op == "add" || spec_op == "mul";
    return l;
  };
}

std::optional<lifted_op> layer_norm(const trace& t, const traced_op& op) {
  auto l = floating(t, start(t, op, "layer_norm", op.arg(0, "input")));
  auto shape = int_list_arg(op.arg(1, "normalized_shape"));
  auto eps = number_arg(op.arg(4, "eps"));
  if (!l || !shape || !eps) return std::nullopt;
  l->args = {{"normalized_shape", *shape}, {"eps", norm_eps(*eps)}};
  if (!add_param(t, &*l, "weight", op.arg(2, "weight")) || !add_param(t, &*l, "bias", op.arg(3, "bias")))
    return std::nullopt;
  return l;
}

std::optional<lifted_op> group_norm(const trace& t, const traced_op& op) {
  // native_group_norm(input, weight, bias, N, C, HxW, group, eps)
  auto l = floating(t, start(t, op, "group_norm", op.arg(0, "input")));
  auto groups = int_arg(op.arg(6, "group"));
  auto eps = number_arg(op.arg(7, "eps"));
  if (!l || !groups || !eps) return std::nullopt;
  l->args = {{"num_groups", *groups}, {"eps", norm_eps(*eps)}};
  if (!add_param(t, &*l, "weight", op.arg(1, "weight")) || !add_param(t, &*l, "bias", op.arg(2, "bias")))
    return std::nullopt;
  return l;
}

// _fused_rms_norm(input, normalized_shape, weight, eps) (F.rms_norm on cuda), rms_norm with the same arguments.
std::optional<lifted_op> rms_norm(const trace& t, const traced_op& op) {
  auto l = floating(t, start(t, op, "rms_norm", op.arg(0, "input")));
  auto shape = int_list_arg(op.arg(1, "normalized_shape"));
  if (!l || !shape) return std::nullopt;
  l->args = {{"normalized_shape", *shape}};
  if (auto eps = number_arg(op.arg(3, "eps"))) l->args["eps"] = norm_eps(*eps);
  if (!add_param(t, &*l, "weight", op.arg(2, "weight"))) return std::nullopt;
  return l;
}

rule softmax(std::string spec_op) {
  return [spec_op](const trace& t, const traced_op& op) -> std::optional<lifted_op> {
    auto l = floating(t, start(t, op, spec_op, op.arg(0, "self")));  // _softmax's input: the dtype it computes in
    auto dim = int_arg(op.arg(1, "dim"));
    if (!l || !dim) return std::nullopt;
    l->args = {{"dim", *dim}};
    if (op.arg(2, "half_to_float") == true) l->args["dtype"] = "float32";
    return l;
  };
}

std::optional<lifted_op> cast(const trace& t, const traced_op& op) {
  auto to = cast_dtype(t, op);
  if (!to) return std::nullopt;
  auto l = start(t, op, "cast", op.arg(0, "self"));
  if (l) l->args = {{"dtype", *to}};
  return l;
}

// The dims `dims` name on a rank-`rank` tensor, normalized and sorted; empty when one is out of range.
std::vector<int64_t> normalized_dims(std::vector<int64_t> dims, int64_t rank) {
  for (auto& d : dims) {
    d = wrap_dim(d, rank);
    if (d < 0) return {};
  }
  std::sort(dims.begin(), dims.end());
  return dims;
}

// mean over the last two dims, keepdim: F.adaptive_avg_pool2d(x, 1) (which dispatches it so).
std::optional<lifted_op> pool_mean(const trace& t, const traced_op& op) {
  auto l = floating(t, start(t, op, "adaptive_avg_pool2d", op.arg(0, "self")));
  auto dims = int_list_arg(op.arg(1, "dim"));
  if (!l || !dims || op.arg(2, "keepdim") != true || !op.arg(3, "dtype").is_null()) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(t.meta(l->input).shape.size());
  if ((rank != 3 && rank != 4) || normalized_dims(*dims, rank) != std::vector<int64_t>{rank - 2, rank - 1})
    return std::nullopt;
  l->args = {{"output_size", 1}};
  return l;
}

std::optional<lifted_op> adaptive_pool(const trace& t, const traced_op& op) {
  auto l = floating(t, start(t, op, "adaptive_avg_pool2d", op.arg(0, "self")));
  auto size = int_list_arg(op.arg(1, "output_size"));
  if (!l || !size || size->size() != 2) return std::nullopt;
  l->args = {{"output_size", (*size)[0] == (*size)[1] ? json((*size)[0]) : json(*size)}};
  return l;
}

// avg_pool2d(self, kernel_size, stride=[], padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None)
std::optional<lifted_op> avg_pool(const trace& t, const traced_op& op) {
  auto l = floating(t, start(t, op, "avg_pool2d", op.arg(0, "self")));
  auto kernel = int_list_arg(op.arg(1, "kernel_size"));
  if (!l || !kernel) return std::nullopt;
  auto pair = [](const std::vector<int64_t>& v) { return v.size() == 2 && v[0] == v[1] ? json(v[0]) : json(v); };
  l->args = {{"kernel_size", pair(*kernel)}};
  const json stride = op.arg(2, "stride");
  if (auto s = int_list_arg(stride); s && !s->empty() && *s != *kernel) l->args["stride"] = pair(*s);
  if (auto p = int_list_arg(op.arg(3, "padding")); p && std::any_of(p->begin(), p->end(), [](int64_t v) { return v != 0; }))
    l->args["padding"] = pair(*p);
  if (op.arg(4, "ceil_mode") == true) l->args["ceil_mode"] = true;
  if (op.arg(5, "count_include_pad") == false) l->args["count_include_pad"] = false;
  if (auto d = int_arg(op.arg(6, "divisor_override"))) l->args["divisor_override"] = *d;
  return l;
}

// max_pool2d(self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False), and max_pool2d_with_indices (the
// same arguments; its indices unused): max_pool2d without dilation.
std::optional<lifted_op> max_pool(const trace& t, const traced_op& op) {
  auto l = floating(t, start(t, op, "max_pool2d", op.arg(0, "self")));
  auto kernel = int_list_arg(op.arg(1, "kernel_size"));
  if (!l || !kernel) return std::nullopt;
  if (auto d = int_list_arg(op.arg(4, "dilation")); d && std::any_of(d->begin(), d->end(), [](int64_t v) { return v != 1; }))
    return std::nullopt;
  auto pair = [](const std::vector<int64_t>& v) { return v.size() == 2 && v[0] == v[1] ? json(v[0]) : json(v); };
  l->args = {{"kernel_size", pair(*kernel)}};
  if (auto s = int_list_arg(op.arg(2, "stride")); s && !s->empty() && *s != *kernel) l->args["stride"] = pair(*s);
  if (auto p = int_list_arg(op.arg(3, "padding")); p && std::any_of(p->begin(), p->end(), [](int64_t v) { return v != 0; }))
    l->args["padding"] = pair(*p);
  if (op.arg(5, "ceil_mode") == true) l->args["ceil_mode"] = true;
  return l;
}

std::optional<lifted_op> topk(const trace& t, const traced_op& op) {
  auto l = start(t, op, "topk", op.arg(0, "self"), /*all_results=*/true);  // values and indices
  auto k = int_arg(op.arg(1, "k"));
  if (!l || !k || op.outputs.size() != 2) return std::nullopt;
  l->args = {{"k", *k}};
  if (auto dim = int_arg(op.arg(2, "dim")); dim && *dim != -1) l->args["dim"] = *dim;
  if (op.arg(3, "largest") == false) l->args["largest"] = false;
  if (op.arg(4, "sorted") == false) l->args["sorted"] = false;
  return l;
}

// A fill value as the spec holds it: a finite number, or "-inf" / "inf" (which arrive as {"float": "-inf"}, trace.py's
// encoding); nullopt for NaN or anything else.
std::optional<json> fill_value(const json& value) {
  if (auto v = number_arg(value)) return json(*v);
  if (value.is_object() && (value.value("float", "") == "-inf" || value.value("float", "") == "inf")) return value["float"];
  return std::nullopt;
}

// The number argument (as traced) a 0-d tensor was made from (torch.where's Python scalar becomes aten.scalar_tensor;
// Hugging Face's GPT-2 builds its mask value with torch.full([], value)), and the operator that made it.
std::optional<std::pair<json, size_t>> scalar_tensor_value(const trace& t, const json& arg) {
  if (!is_tensor(arg)) return std::nullopt;
  const int64_t v = arg["value"].get<int64_t>();
  const auto p = t.producer(v);
  if (!p || !t.meta(v).shape.empty()) return std::nullopt;
  const traced_op& maker = t.ops[*p];
  if (maker.name == "aten.scalar_tensor.default") return std::make_pair(maker.arg(0, "s"), *p);
  if (maker.name == "aten.full.default" && maker.arg(0, "size").is_array() && maker.arg(0, "size").empty())
    return std::make_pair(maker.arg(1, "fill_value"), *p);
  return std::nullopt;
}

// x.masked_fill(mask, value) with a bool mask, and the torch.where forms with a number on one side:
// where(c, x, value) is the spec's where, where(c, value, x) is x.masked_fill(c, value). The number is a Scalar
// argument (where.ScalarOther / ScalarSelf, masked_fill.Scalar) or a 0-d tensor made from one (where.self,
// masked_fill.Tensor), whose making the lifted op covers too.
std::optional<lifted_op> fill(const trace& t, const traced_op& op) {
  std::string spec_op = "masked_fill", mask_arg = "mask";
  json x = op.arg(0, "self"), value = op.arg(2, "value"), mask = op.arg(1, "mask");
  std::optional<size_t> maker;
  if (op.name.starts_with("aten.where.")) {
    mask = op.arg(0, "condition");
    const json &a = op.arg(1, "self"), &b = op.arg(2, "other");
    auto sa = scalar_tensor_value(t, a), sb = scalar_tensor_value(t, b);
    if (op.name == "aten.where.ScalarOther" || sb) {  // where(c, x, value)
      spec_op = "where", mask_arg = "condition", x = a, value = sb ? sb->first : b;
      if (sb) maker = sb->second;
    } else {  // where(c, value, x)
      x = b, value = sa ? sa->first : a;
      if (sa) maker = sa->second;
    }
  } else if (auto sv = scalar_tensor_value(t, value)) {  // masked_fill.Tensor: the value a 0-d tensor
    value = sv->first;
    maker = sv->second;
  }
  auto l = floating(t, start(t, op, spec_op, x));
  auto m = spec_tensor(t, mask);
  auto v = fill_value(value);
  if (!l || !m || !v || t.meta(*m).spec_dtype() != dtype::boolean) return std::nullopt;
  if (t.meta(l->output()).dtype != t.meta(l->input).dtype) return std::nullopt;  // a value that promoted x
  if (maker) {
    if (t.consumers(t.ops[*maker].outputs.at(0)).size() != 1) return std::nullopt;  // the 0-d tensor is read again
    l->covers.insert(l->covers.begin(), *maker);
  }
  l->args["value"] = *v;
  l->tensors.emplace_back(mask_arg, *m);
  return l;
}

// A view that merges one run of dims of a contiguous tensor into one: torch.flatten(x, start_dim, end_dim).
std::optional<lifted_op> flatten(const trace& t, const traced_op& op) {
  auto l = start(t, op, "flatten", op.arg(0, "self"));
  if (!l || !t.meta(l->input).contiguous()) return std::nullopt;
  const auto& in = t.meta(l->input).shape;
  const auto& out = t.meta(l->output()).shape;
  if (out.empty() || out.size() >= in.size()) return std::nullopt;
  const size_t merged = in.size() - out.size();
  for (size_t s = 0; s < out.size(); ++s) {
    std::vector<int64_t> expect(in.begin(), in.begin() + static_cast<long>(s));
    int64_t prod = 1;
    for (size_t i = s; i <= s + merged; ++i) prod *= in[i];
    expect.push_back(prod);
    expect.insert(expect.end(), in.begin() + static_cast<long>(s + merged + 1), in.end());
    if (expect != out) continue;
    l->args = {{"start_dim", s}};
    if (s + merged != in.size() - 1) l->args["end_dim"] = s + merged;
    return l;
  }
  return std::nullopt;
}

// An operator that changes no value: a restride that maps every element to where it was (the channels_last
// restride of a pooled [N, C, 1, 1] tensor), an alias, a detach.
std::optional<lifted_op> alias(const trace& t, const traced_op& op) {
  auto l = start(t, op, "alias", op.arg(0, "self"));
  if (!l || op.name.find("as_strided") == std::string::npos) return l;
  const tensor_meta& in = t.meta(l->input);
  auto size = int_list_arg(op.arg(1, "size"));
  auto stride = int_list_arg(op.arg(2, "stride"));
  if (!size || !stride || *size != in.shape || stride->size() != in.stride.size() || !op.arg(3, "storage_offset").is_null())
    return std::nullopt;
  for (size_t d = 0; d < in.shape.size(); ++d)
    if (in.shape[d] != 1 && (*stride)[d] != in.stride[d]) return std::nullopt;
  return l;
}

const std::map<std::string, rule>& lift_rules() {
  static const std::map<std::string, rule> table = [] {
    std::map<std::string, rule> m = {
        {"aten.native_layer_norm.default", layer_norm},
        {"aten.native_group_norm.default", group_norm},
        {"aten._fused_rms_norm.default", rms_norm},
        {"aten.rms_norm.default", rms_norm},
        {"aten._softmax.default", softmax("softmax")},
        {"aten._log_softmax.default", softmax("log_softmax")},
        {"aten._to_copy.default", cast},
        {"aten.gelu.default", gelu},
        {"aten.gelu_.default", gelu},
        {"aten.mean.dim", pool_mean},
        {"aten._adaptive_avg_pool2d.default", adaptive_pool},
        {"aten.avg_pool2d.default", avg_pool},
        {"aten.max_pool2d.default", max_pool},
        {"aten.max_pool2d_with_indices.default", max_pool},
        {"aten.topk.default", topk},
        {"aten.clamp.default", clamp},
        {"aten.clamp_.default", clamp},
        {"aten.hardtanh.default", clamp},
        {"aten.hardtanh_.default", clamp},
        {"aten.masked_fill.Scalar", fill},
        {"aten.masked_fill_.Scalar", fill},
        {"aten.masked_fill.Tensor", fill},
        {"aten.masked_fill_.Tensor", fill},
        {"aten.where.self", fill},
        {"aten.where.ScalarOther", fill},
        {"aten.where.ScalarSelf", fill},
        {"aten.view.default", flatten},
        {"aten._unsafe_view.default", flatten},
        {"aten.reshape.default", flatten},
        {"aten.as_strided_.default", alias},
        {"aten.alias.default", alias},
        {"aten.detach.default", alias},
    };
    for (const char* u : {"silu", "sigmoid", "tanh", "relu", "exp", "rsqrt", "neg", "hardswish", "hardsigmoid"}) {
      m[fmt::format("aten.{}.default", u)] = unary(u);
      m[fmt::format("aten.{}_.default", u)] = unary(u);
    }
    for (const char* b : {"add", "sub", "mul", "div"}) {
      m[fmt::format("aten.{}.Tensor", b)] = binary(b);
      m[fmt::format("aten.{}_.Tensor", b)] = binary(b);
      m[fmt::format("aten.{}.Scalar", b)] = binary(b);
      m[fmt::format("aten.{}_.Scalar", b)] = binary(b);
    }
    return m;
  }();
  return table;
}

}  // namespace

op_role role_of(const std::string& spec_op) {
  static const std::set<std::string> reductions = {"softmax", "log_softmax", "topk", "group_norm", "layer_norm",
                                                   "rms_norm"};
  if (spec_op == "flatten" || spec_op == "alias") return op_role::view;
  return reductions.count(spec_op) || is_window_pooling(spec_op) ? op_role::reduction : op_role::elementwise;
}

double norm_eps(double eps) { return static_cast<double>(static_cast<float>(eps)); }

std::optional<int64_t> spec_tensor(const trace& t, const json& arg) {
  if (!is_tensor(arg)) return std::nullopt;
  const tensor_meta& m = t.meta(arg["value"].get<int64_t>());
  if (!m.spec_dtype() || m.shape.empty() || m.shape.size() > 8 || m.numel() == 0) return std::nullopt;
  return m.value;
}

std::optional<size_t> only_consumer(const trace& t, int64_t value) {
  const auto& c = t.consumers(value);
  if (c.size() != 1 || t.model_outputs.count(value)) return std::nullopt;
  return c[0];
}

std::optional<std::string> cast_dtype(const trace& t, const traced_op& op) {
  if (op.name != "aten._to_copy.default") return std::nullopt;
  const json& self = op.arg(0, "self");
  auto in = spec_tensor(t, self);
  const json& dt = op.kwargs.value("dtype", json());
  if (!in || !dt.is_object() || !dt.contains("dtype")) return std::nullopt;
  std::string to = dt["dtype"].get<std::string>();
  tensor_meta probe;
  probe.dtype = to;
  if (!probe.spec_dtype()) return std::nullopt;
  for (const auto& [k, v] : op.kwargs.items()) {
    const std::string s = v.is_object() ? v.value("other", "") : "";
    if (k == "dtype" || k == "non_blocking" || k == "copy") continue;
    if (k == "layout" && (v.is_null() || s == "torch.strided")) continue;
    if (k == "device" && (v.is_null() || s.rfind(self.value("device", "cpu"), 0) == 0)) continue;
    if (k == "memory_format" && (v.is_null() || s == "torch.preserve_format")) continue;
    if (k == "pin_memory" && (v.is_null() || v == false)) continue;
    return std::nullopt;
  }
  return to;
}

std::vector<lifted_op> lift(const trace& t) {
  std::vector<bool> claimed(t.ops.size(), false);
  std::vector<lifted_op> out;
  auto claim = [&](lifted_op l) {
    for (size_t i : l.covers)
      if (claimed[i]) return;
    for (size_t i : l.covers) claimed[i] = true;
    out.push_back(std::move(l));
  };
  // Composites first: their operators (a mul, an add, a cast) would otherwise lift one by one.
  for (const auto& op : t.ops)
    if (auto l = match_rms_norm(t, op.index)) claim(std::move(*l));
  for (const auto& op : t.ops) {
    if (claimed[op.index]) continue;
    auto it = lift_rules().find(op.name);
    if (it == lift_rules().end()) continue;
    if (auto l = it->second(t, op)) claim(std::move(*l));
  }
  std::sort(out.begin(), out.end(), [](const lifted_op& a, const lifted_op& b) { return a.first() < b.first(); });
  return out;
}

}  // namespace kf::capture
