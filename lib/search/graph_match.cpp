#include "search/graph_match.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "search/families/elementwise_emit.h"
#include "search/family.h"
#include "spec/ops.h"

namespace kf {
namespace {

// A cursor over the graph: the ops in order, with the current value's type.
struct walker {
  const workload_spec& spec;
  std::string* why_not;
  size_t at = 0;
  dtype type = dtype::float32;

  bool done() const { return at >= spec.graph.size(); }
  const op_call* peek() const { return done() ? nullptr : &spec.graph[at]; }
  bool is(std::string_view op) const { return !done() && spec.graph[at].op == op; }
  bool fail(const std::string& msg) {
    if (why_not) *why_not = msg;
    return false;
  }
  std::string where() const { return done() ? "end of graph" : fmt::format("op {} ({})", at + 1, spec.graph[at].op); }
};

std::optional<double> number_arg(const nlohmann::json& args, const char* key) {
  if (!args.contains(key)) return std::nullopt;
  auto& v = args[key];
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    try {
      return std::stod(v.get<std::string>());
    } catch (...) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// The types the elementwise-fusing families (pointwise, row_norm) read and store, computing in float.
bool stored_in_float(dtype t) { return t == dtype::float32 || t == dtype::float16 || t == dtype::bfloat16; }

// Higher precision wins; float16 with bfloat16 gives float32 (torch's promotion for floats).
dtype promote(dtype a, dtype b) {
  if (a == b) return a;
  if (a == dtype::float64 || b == dtype::float64) return dtype::float64;
  return dtype::float32;
}

bool last_dim(const nlohmann::json& args, int rank) {
  auto d = number_arg(args, "dim");
  if (!d) return true;  // torch's topk default; softmax requires it (the spec validator says so)
  int v = static_cast<int>(*d);
  return v == -1 || v == rank - 1;
}

// The first op's input: a known input tensor.
bool start(walker& w, std::string* name, dtype* type, int* rank) {
  if (w.done()) return w.fail("the graph is empty");
  if (has_extra_outputs(w.spec))
    return w.fail(fmt::format("the spec returns intermediate results (outputs: {}); these kernels write the last op's only",
                              fmt::join(output_names(w.spec), ", ")));
  auto& args = w.peek()->args;
  if (!args.contains("input") || !args["input"].is_string()) return w.fail("op 1 names no input");
  *name = args["input"].get<std::string>();
  auto* in = w.spec.find_input(*name);
  if (!in) return w.fail(fmt::format("op 1 reads '{}', which is not an input", *name));
  *type = in->type;
  *rank = static_cast<int>(in->shape.size());
  w.type = in->type;
  return true;
}

// Trailing casts: each rounds the value to its type.
bool casts(walker& w, std::vector<dtype>* out) {
  while (w.is("cast")) {
    auto t = dtype_arg(w.peek()->args, "dtype");
    if (!t || !is_floating(*t)) return w.fail(fmt::format("{}: only casts to a floating type are fused", w.where()));
    out->push_back(*t);
    w.type = *t;
    ++w.at;
  }
  return true;
}

// Whether input `m` broadcasts into input `x` without growing it, in every case of the spec (what add_mask's shape
// rule asks of a mask; an add's `other` may broadcast either way).
bool broadcasts_into(const workload_spec& spec, const input_spec& m, const input_spec& x) {
  if (m.shape.size() > x.shape.size()) return false;
  for (const auto& c : spec.cases) {
    const auto ms = concrete_shape(m, c), xs = concrete_shape(x, c);
    for (size_t i = 1; i <= ms.size(); ++i)
      if (ms[ms.size() - i] != 1 && ms[ms.size() - i] != xs[xs.size() - i]) return false;
  }
  return true;
}

std::string casts_text(const std::vector<dtype>& c) {
  std::string s;
  for (auto t : c) s += fmt::format(" -> cast({})", dtype_name(t));
  return s;
}

}  // namespace

std::optional<dtype> dtype_arg(const nlohmann::json& args, const char* key) {
  if (!args.contains(key) || !args[key].is_string()) return std::nullopt;
  return parse_dtype(args[key].get<std::string>());
}

std::vector<std::string> softmax_graph::mask_inputs() const {
  std::vector<std::string> v;
  for (auto& s : prologue)
    if (s.what == elementwise_step::kind::add_mask || s.what == elementwise_step::kind::masked_fill) v.push_back(s.mask);
  return v;
}

std::string softmax_graph::describe() const {
  std::string s = fmt::format("{}[{}]", input, dtype_name(in_type));
  for (auto& p : prologue) {
    switch (p.what) {
      case elementwise_step::kind::scale: s += fmt::format(" -> scale({})", p.value); break;
      case elementwise_step::kind::softcap: s += fmt::format(" -> softcap({})", p.value); break;
      case elementwise_step::kind::add_mask: s += fmt::format(" -> add_mask({})", p.mask); break;
      case elementwise_step::kind::masked_fill:
        s += p.fill_where_false ? fmt::format(" -> where({}, x, {})", p.mask, p.value)
                                : fmt::format(" -> masked_fill({}, {})", p.mask, p.value);
        break;
      case elementwise_step::kind::cast: s += fmt::format(" -> cast({})", dtype_name(p.to)); break;
    }
  }
  if (op == row_op::sigmoid) s += fmt::format(" -> sigmoid({})", dtype_name(softmax_type));
  else if (op == row_op::identity) {}
  else if (dim != rank - 1) s += fmt::format(" -> {}(dim={}, {})", log ? "log_softmax" : "softmax", dim, dtype_name(softmax_type));
  else s += fmt::format(" -> {}({})", log ? "log_softmax" : "softmax", dtype_name(softmax_type));
  s += casts_text(epilogue_casts);
  if (topk) s += fmt::format(" -> topk({})", topk);
  return s;
}

namespace {

// The reduced dim of a softmax op (its `dim`, wrapped), or nullopt where it names none in range.
std::optional<int> reduced_dim(const nlohmann::json& args, int rank) {
  auto d = number_arg(args, "dim");
  if (!d) return rank - 1;
  const int v = static_cast<int>(*d);
  if (rank == 0) return v == 0 || v == -1 ? std::optional(-1) : std::nullopt;  // a scalar: its one "row"
  if (v < -rank || v >= rank) return std::nullopt;
  return v < 0 ? v + rank : v;
}

// The softmax or log_softmax at the walker, and the casts after it, into g (match_softmax_over's usual path).
bool softmax_op(walker& w, softmax_graph& g, bool last) {
  g.log = w.is("log_softmax");
  const auto dim = reduced_dim(w.peek()->args, g.rank);
  if (!dim) return w.fail(fmt::format("{}: dim is not a dim of x (rank {})", w.where(), g.rank));
  g.dim = *dim;
  if (last && g.dim != g.rank - 1)
    return w.fail(fmt::format("{}: only the last dim is reduced here (dim {} is col_softmax's)", w.where(), g.dim));
  if (!last && g.dim == g.rank - 1)
    return w.fail(fmt::format("{}: the last dim is reduced (row_softmax's); col_softmax reduces an earlier one", w.where()));
  if (!last && !g.mask_inputs().empty())
    return w.fail(fmt::format("{}: masks are fused only into a softmax over the last dim", w.where()));
  if (auto t = dtype_arg(w.peek()->args, "dtype")) w.type = *t;
  if (!is_floating(w.type)) return w.fail(fmt::format("{}: the softmax type must be floating", w.where()));
  g.softmax_type = w.type;
  ++w.at;
  return casts(w, &g.epilogue_casts);
}

// match_softmax (last = true) and match_col_softmax (last = false): one walk, two shapes of reduction.
std::optional<softmax_graph> match_softmax_over(const workload_spec& spec, std::string* why_not, bool last) {
  walker w{spec, why_not};
  softmax_graph g;
  if (!start(w, &g.input, &g.in_type, &g.rank)) return std::nullopt;
  // A mask (add_mask's, masked_fill's, where's) has at most x's dims.
  auto mask_fits = [&](const input_spec& m) {
    if (static_cast<int>(m.shape.size()) <= g.rank) return true;
    w.fail(fmt::format("{}: the mask has more dims than x", w.where()));
    return false;
  };
  // Where the prologue ends: a softmax; over the last dim also a sigmoid or a top-k (row_op).
  auto ends_prologue = [&] {
    return w.is("softmax") || w.is("log_softmax") || (last && (w.is("sigmoid") || w.is("topk")));
  };
  for (; !w.done() && !ends_prologue(); ++w.at) {
    auto& a = w.peek()->args;
    elementwise_step st;
    const std::string& op = w.peek()->op;
    if (op == "scale") {
      st.what = elementwise_step::kind::scale;
      auto f = number_arg(a, "factor");
      if (!f) { w.fail(fmt::format("{}: no numeric factor", w.where())); return std::nullopt; }
      st.value = *f;
    } else if (op == "softcap") {
      st.what = elementwise_step::kind::softcap;
      auto c = number_arg(a, "cap");
      if (!c || *c == 0) { w.fail(fmt::format("{}: no non-zero cap", w.where())); return std::nullopt; }
      st.value = *c;
    } else if (op == "add_mask" || op == "add") {
      // An add of an input that broadcasts into x without growing it is a mask too (x + other, as written by hand).
      st.what = elementwise_step::kind::add_mask;
      const char* field = op == "add" ? "other" : "mask";
      if (!a.contains(field) || !a[field].is_string() || !spec.find_input(a[field].get<std::string>())) {
        w.fail(fmt::format("{}: the {} must name an input", w.where(), op == "add" ? "added tensor" : "mask"));
        return std::nullopt;
      }
      st.mask = a[field].get<std::string>();
      auto* m = spec.find_input(st.mask);
      if (!is_floating(m->type)) { w.fail(fmt::format("{}: only floating masks are fused", w.where())); return std::nullopt; }
      if (!mask_fits(*m)) return std::nullopt;
      if (op == "add" && !broadcasts_into(spec, *m, *spec.find_input(g.input))) {
        w.fail(fmt::format("{}: {} does not broadcast into {} in every case: only an add of a mask that keeps x's "
                           "shape is fused", w.where(), st.mask, g.input));
        return std::nullopt;
      }
      w.type = promote(w.type, m->type);
    } else if (op == "masked_fill" || op == "where") {
      st.what = elementwise_step::kind::masked_fill;
      st.fill_where_false = op == "where";
      const char* field = op == "where" ? "condition" : "mask";
      const input_spec* m = a.contains(field) && a[field].is_string() ? spec.find_input(a[field].get<std::string>()) : nullptr;
      if (!m || m->type != dtype::boolean || !a.contains("value")) {
        w.fail(fmt::format("{}: {} needs a bool input as its {} and a value", w.where(), op, field));
        return std::nullopt;
      }
      if (!mask_fits(*m)) return std::nullopt;
      st.mask = m->name;
      st.value = number_value(a["value"]);
    } else if (op == "cast") {
      st.what = elementwise_step::kind::cast;
      auto t = dtype_arg(a, "dtype");
      if (!t || !is_floating(*t)) { w.fail(fmt::format("{}: only floating casts are fused", w.where())); return std::nullopt; }
      w.type = *t;
    } else {
      w.fail(fmt::format("{}: not a fusable softmax prologue op (scale, softcap, add_mask or an add of a mask, masked_fill, where, cast)", w.where()));
      return std::nullopt;
    }
    st.to = w.type;
    g.prologue.push_back(st);
  }
  if (w.done()) {
    w.fail(last ? "no softmax, log_softmax, or top-k (of the values or their sigmoid) in the graph"
                : "no softmax or log_softmax in the graph");
    return std::nullopt;
  }
  if (const input_spec* x = spec.find_input(g.input); x && x->memory_format != "contiguous") {
    w.fail(fmt::format("input {} is {}: the softmax kernels read x in its contiguous layout", x->name, x->memory_format));
    return std::nullopt;
  }
  if (w.is("sigmoid") || w.is("topk")) {
    // No softmax: the row's values (or their sigmoid, in the value's type) go to a top-k, which must follow.
    g.op = w.is("sigmoid") ? softmax_graph::row_op::sigmoid : softmax_graph::row_op::identity;
    g.dim = g.rank - 1;
    if (!is_floating(w.type)) { w.fail(fmt::format("{}: the values must be floating", w.where())); return std::nullopt; }
    g.softmax_type = w.type;
    if (g.op == softmax_graph::row_op::sigmoid) {
      ++w.at;
      if (!casts(w, &g.epilogue_casts)) return std::nullopt;
    }
    if (!w.is("topk")) {
      w.fail(w.done() ? "a sigmoid is fused here only before a top-k (alone it is elementwise: pointwise's)"
                      : fmt::format("{}: only casts and a top-k may follow the sigmoid", w.where()));
      return std::nullopt;
    }
  } else if (!softmax_op(w, g, last)) {
    return std::nullopt;
  }
  if (w.is("topk") && !last) { w.fail(fmt::format("{}: top-k is fused only after a softmax over the last dim", w.where())); return std::nullopt; }
  if (w.is("topk")) {
    auto& a = w.peek()->args;
    auto k = number_arg(a, "k");
    if (!k || *k < 1) { w.fail(fmt::format("{}: k must be a positive number", w.where())); return std::nullopt; }
    if (!last_dim(a, g.rank)) { w.fail(fmt::format("{}: only top-k over the last dim is fused", w.where())); return std::nullopt; }
    if (a.value("largest", true) != true || a.value("sorted", true) != true) {
      w.fail(fmt::format("{}: only largest, sorted top-k is fused", w.where()));
      return std::nullopt;
    }
    g.topk = static_cast<int64_t>(*k);
    ++w.at;
  }
  if (!w.done()) { w.fail(fmt::format("{}: nothing may follow the softmax epilogue", w.where())); return std::nullopt; }
  g.out_type = w.type;
  return g;
}

}  // namespace

std::optional<softmax_graph> match_softmax(const workload_spec& spec, std::string* why_not) {
  return match_softmax_over(spec, why_not, true);
}

std::optional<softmax_graph> match_col_softmax(const workload_spec& spec, std::string* why_not) {
  return match_softmax_over(spec, why_not, false);
}

std::string_view norm_kind_name(norm_graph::kind k) {
  switch (k) {
    case norm_graph::kind::group_norm: return "group_norm";
    case norm_graph::kind::layer_norm: return "layer_norm";
    case norm_graph::kind::rms_norm: return "rms_norm";
  }
  return "?";
}

std::string_view activation_name(norm_graph::activation a) {
  switch (a) {
    case norm_graph::activation::none: return "none";
    case norm_graph::activation::silu: return "silu";
    case norm_graph::activation::gelu: return "gelu";
    case norm_graph::activation::gelu_tanh: return "gelu_tanh";
  }
  return "?";
}

std::string norm_graph::describe() const {
  std::string s = fmt::format("{}[{}]", input, dtype_name(in_type)) + casts_text(prologue_casts);
  if (what == kind::group_norm)
    s += fmt::format(" -> group_norm(groups={}, eps={})", num_groups, eps);
  else
    s += fmt::format(" -> {}(dims={}, eps={})", norm_kind_name(what), normalized_dims, eps);
  if (act != activation::none) s += fmt::format(" -> {}", activation_name(act));
  return s + casts_text(epilogue_casts);
}

std::optional<norm_graph> match_norm(const workload_spec& spec, std::string* why_not) {
  walker w{spec, why_not};
  norm_graph g;
  if (!start(w, &g.input, &g.in_type, &g.rank)) return std::nullopt;
  if (!casts(w, &g.prologue_casts)) return std::nullopt;
  if (w.is("group_norm")) g.what = norm_graph::kind::group_norm;
  else if (w.is("layer_norm")) g.what = norm_graph::kind::layer_norm;
  else if (w.is("rms_norm")) g.what = norm_graph::kind::rms_norm;
  else { w.fail(fmt::format("{}: expected group_norm, layer_norm or rms_norm", w.where())); return std::nullopt; }
  auto& a = w.peek()->args;
  auto tensor = [&](const char* key, std::string* name, dtype* type) {
    if (!a.contains(key) || a[key].is_null()) return true;
    if (!a[key].is_string() || !spec.find_input(a[key].get<std::string>()))
      return w.fail(fmt::format("{}: {} must name an input", w.where(), key));
    *name = a[key].get<std::string>();
    *type = spec.find_input(*name)->type;
    return is_floating(*type) || w.fail(fmt::format("{}: {} must be floating", w.where(), key));
  };
  if (!tensor("weight", &g.weight, &g.weight_type) || !tensor("bias", &g.bias, &g.bias_type)) return std::nullopt;
  if (g.what == norm_graph::kind::rms_norm && !g.bias.empty()) { w.fail("rms_norm takes no bias"); return std::nullopt; }
  if (g.what == norm_graph::kind::group_norm) {
    auto ng = number_arg(a, "num_groups");
    if (!ng || *ng < 1) { w.fail(fmt::format("{}: num_groups must be positive", w.where())); return std::nullopt; }
    if (g.rank < 2) { w.fail("group_norm needs x of rank >= 2"); return std::nullopt; }
    g.num_groups = static_cast<int64_t>(*ng);
    g.eps = number_arg(a, "eps").value_or(1e-5);
  } else {
    auto ns = a.contains("normalized_shape") ? a["normalized_shape"] : nlohmann::json();
    g.normalized_dims = ns.is_array() ? static_cast<int>(ns.size()) : ns.is_number() ? 1 : 0;
    if (g.normalized_dims < 1 || g.normalized_dims > g.rank) {
      w.fail(fmt::format("{}: normalized_shape must name 1..{} trailing dims", w.where(), g.rank));
      return std::nullopt;
    }
    if (auto e = number_arg(a, "eps")) g.eps = *e;
    else if (g.what == norm_graph::kind::rms_norm)  // ATen: the epsilon of the op's compute type (specs fill it in)
      g.eps = rms_norm_default_eps(w.type);
  }
  g.norm_type = w.type;
  ++w.at;
  if (w.is("silu")) {
    g.act = norm_graph::activation::silu;
    ++w.at;
  } else if (w.is("gelu")) {
    auto approx = w.peek()->args.value("approximate", std::string("none"));
    if (approx != "none" && approx != "tanh") { w.fail(fmt::format("{}: approximate must be none or tanh", w.where())); return std::nullopt; }
    g.act = approx == "tanh" ? norm_graph::activation::gelu_tanh : norm_graph::activation::gelu;
    ++w.at;
  }
  if (!casts(w, &g.epilogue_casts)) return std::nullopt;
  if (!w.done()) { w.fail(fmt::format("{}: nothing may follow the norm epilogue", w.where())); return std::nullopt; }
  g.out_type = w.type;
  return g;
}

std::string pool_graph::describe() const {
  return fmt::format("{}[{}{}] -> {}{}{}", input, dtype_name(in_type), channels_last ? ", channels_last" : "", window.describe(),
                     flatten ? " -> flatten" : "", casts_text(epilogue_casts));
}

namespace {

// match_pool (global) and match_adaptive_pool (any other adaptive output size, or avg_pool2d's and max_pool2d's
// windows): one walk.
std::optional<pool_graph> match_pool_of(const workload_spec& spec, std::string* why_not, bool global) {
  walker w{spec, why_not};
  pool_graph g;
  if (!start(w, &g.input, &g.in_type, &g.rank)) return std::nullopt;
  if (g.rank != 3 && g.rank != 4) { w.fail("pooling needs x of rank 3 or 4"); return std::nullopt; }
  g.channels_last = spec.find_input(g.input)->memory_format == "channels_last";
  if (w.done() || !is_window_pooling(w.peek()->op)) {
    w.fail(fmt::format("{}: expected adaptive_avg_pool2d, avg_pool2d or max_pool2d", w.where()));
    return std::nullopt;
  }
  // [1] and [1, 1] (and a bare 1) all mean global pooling.
  g.window = pool_window_of(*w.peek());
  const bool one = g.window.global();
  if (global && !one) { w.fail(fmt::format("{}: only adaptive_avg_pool2d to 1 (global pooling) is pool's (adaptive_pool takes the others)", w.where())); return std::nullopt; }
  if (!global && one) { w.fail(fmt::format("{}: output_size 1 is global pooling (pool's)", w.where())); return std::nullopt; }
  ++w.at;
  if (w.is("flatten")) {  // a flatten keeps the element order of the contiguous [N, C, OH, OW] result
    g.flatten = true;
    ++w.at;
  }
  if (!casts(w, &g.epilogue_casts)) return std::nullopt;
  if (!w.done()) { w.fail(fmt::format("{}: nothing may follow the pooling epilogue", w.where())); return std::nullopt; }
  g.out_type = w.type;
  return g;
}

}  // namespace

std::optional<pool_graph> match_pool(const workload_spec& spec, std::string* why_not) {
  return match_pool_of(spec, why_not, true);
}

std::optional<pool_graph> match_adaptive_pool(const workload_spec& spec, std::string* why_not) {
  return match_pool_of(spec, why_not, false);
}

std::optional<pointwise_graph> match_pointwise(const workload_spec& spec, std::string* why_not) {
  auto fail = [&](std::string m) -> std::optional<pointwise_graph> {
    if (why_not) *why_not = std::move(m);
    return std::nullopt;
  };
  graph_shapes g;
  graph_error e;
  try {
    if (spec.cases.empty() || !try_infer_graph(spec, spec.cases.front(), &g, &e)) return fail("the graph does not infer");
  } catch (const std::exception&) {  // a spec built in code with arguments of the wrong kind
    return fail("the graph does not infer");
  }
  if (has_extra_outputs(spec)) return fail("the spec returns intermediate results; pointwise writes the last op's only");
  pointwise_graph c;
  auto operand = [&](const std::string& name) {
    c.inputs.push_back(input_index(spec, name));
    c.types.push_back(g.inputs[c.inputs.back()].type);
  };
  for (size_t i = 0; i < spec.graph.size(); ++i) {
    const op_call& call = spec.graph[i];
    if (!ew::is_elementwise(call.op)) return fail(fmt::format("op {} ({}) is not elementwise", i + 1, call.op));
    if (i == 0) operand(call.args.value("input", std::string()));
    if (const std::string arg = ew::operand_arg(call); !arg.empty()) operand(call.args.value(arg, std::string()));
    const dtype step = g.steps[i].front().type;
    c.step_types.push_back(step);
    if (!stored_in_float(step))
      return fail(fmt::format("op {} ({}) gives {}: pointwise computes in float32 and stores float16, bfloat16 or float32",
                              i + 1, call.op, dtype_name(step)));
    c.transcendental = c.transcendental || ew::calls_transcendental(call.op);
  }
  for (dtype t : c.types) {
    if (!stored_in_float(t)) return fail(fmt::format("an operand is {}: pointwise reads float16, bfloat16 or float32", dtype_name(t)));
    c.widest = std::max<size_t>(c.widest, dtype_size(t));
  }
  c.out = g.outputs().front().type;
  c.out_rank = static_cast<int>(g.outputs().front().shape.size());
  c.widest = std::max<size_t>(c.widest, dtype_size(c.out));
  return c;
}

std::string row_norm_graph::describe() const {
  return fmt::format("{} prologue op(s) -> {}(dims={}, eps={}){} -> {} epilogue op(s){}", norm_op, norm_kind_name(what),
                     normalized_dims, eps, weight.empty() ? "" : bias.empty() ? " * w" : " * w + b",
                     step_types.size() - norm_op - 1, returned_input());
}

std::string row_norm_graph::returned_input() const {
  if (!writes_input) return "";
  if (h_type == norm_in) return ", returns the norm's input too";
  return fmt::format(", returns the norm's input too (as {})", dtype_name(h_type));
}

namespace {

// Whether the steps after `step` up to (not including) `until` are casts that each hold their input exactly (to the
// same type, or float16 / bfloat16 to float32): the value at `until`'s input is then step's value, widened.
bool widened_exactly(const workload_spec& spec, const graph_shapes& g, size_t step, size_t until) {
  for (size_t i = step + 1; i < until; ++i) {
    const dtype from = g.steps[i - 1].front().type, to = g.steps[i].front().type;
    const bool exact = from == to || (to == dtype::float32 && (from == dtype::float16 || from == dtype::bfloat16));
    if (spec.graph[i].op != "cast" || !exact) return false;
  }
  return true;
}

}  // namespace

std::optional<row_norm_graph> match_row_norm(const workload_spec& spec, std::string* why_not) {
  auto fail = [&](std::string m) -> std::optional<row_norm_graph> {
    if (why_not) *why_not = std::move(m);
    return std::nullopt;
  };
  row_norm_graph r;
  size_t norms = 0;
  for (size_t i = 0; i < spec.graph.size(); ++i) {
    const op_call& call = spec.graph[i];
    if (call.op == "layer_norm" || call.op == "rms_norm") {
      r.norm_op = i;
      r.what = call.op == "layer_norm" ? norm_graph::kind::layer_norm : norm_graph::kind::rms_norm;
      ++norms;
    } else if (!ew::is_elementwise(call.op)) {
      return fail(fmt::format("op {} ({}) is neither elementwise nor layer_norm / rms_norm", i + 1, call.op));
    }
  }
  if (norms != 1) return fail("row_norm needs exactly one layer_norm or rms_norm");
  for (size_t i = 1; i < spec.graph.size(); ++i)
    if (spec.graph[i].args.contains("input"))
      return fail(fmt::format("op {} ({}) names its input: row_norm fuses a chain where each op reads the one before", i + 1,
                              spec.graph[i].op));
  // Every case's shapes: the first case's give the types; each case's operands must be full or a row.
  std::vector<graph_shapes> shapes;
  for (auto& c : spec.cases) {
    graph_shapes cg;
    graph_error e;
    try {
      if (!try_infer_graph(spec, c, &cg, &e)) return fail(fmt::format("case {}: the graph does not infer: {}", c.name, e.message));
    } catch (const std::exception& ex) {
      return fail(std::string("the graph does not infer: ") + ex.what());
    }
    shapes.push_back(std::move(cg));
  }
  if (shapes.empty()) return fail("the spec has no case");
  const graph_shapes& g = shapes.front();
  // What the kernel writes: the result, and perhaps the norm's input.
  const auto refs = output_refs(spec);
  const size_t last = spec.graph.size() - 1;
  size_t h_step = 0;
  for (size_t k = 0; k < refs.size(); ++k) {
    if (refs[k].step == last) continue;
    if (r.norm_op == 0 || refs[k].step >= r.norm_op || !widened_exactly(spec, g, refs[k].step, r.norm_op) ||
        r.writes_input)
      return fail(fmt::format("output '{}' is neither the result nor the norm's input (or a step only widening casts "
                              "separate from it)",
                              refs[k].name));
    r.writes_input = true;
    r.input_output = static_cast<int>(k);
    h_step = refs[k].step;
  }
  if (refs.size() != (r.writes_input ? 2u : 1u)) return fail("row_norm writes the result and at most the norm's input");

  const op_call& norm = spec.graph[r.norm_op];
  const auto& a = norm.args;
  auto tensor = [&](const char* key, std::string* name, dtype* type) {
    if (!a.contains(key) || a[key].is_null()) return true;
    if (!a[key].is_string() || !spec.find_input(a[key].get<std::string>())) return false;
    *name = a[key].get<std::string>();
    *type = spec.find_input(*name)->type;
    return stored_in_float(*type);
  };
  if (!tensor("weight", &r.weight, &r.weight_type) || !tensor("bias", &r.bias, &r.bias_type))
    return fail(fmt::format("op {} ({}): weight and bias must be float32, float16 or bfloat16 inputs", r.norm_op + 1, norm.op));
  const auto& value = r.norm_op == 0 ? g.inputs[input_index(spec, spec.graph[0].args.value("input", std::string()))]
                                     : g.steps[r.norm_op - 1].front();
  r.rank = static_cast<int>(value.shape.size());
  r.norm_in = value.type;
  r.h_type = r.writes_input ? g.steps[h_step].front().type : r.norm_in;
  auto ns = a.contains("normalized_shape") ? a["normalized_shape"] : nlohmann::json();
  r.normalized_dims = ns.is_array() ? static_cast<int>(ns.size()) : ns.is_number() ? 1 : 0;
  if (r.normalized_dims < 1 || r.normalized_dims > r.rank)
    return fail(fmt::format("op {} ({}): normalized_shape must name 1..{} trailing dims", r.norm_op + 1, norm.op, r.rank));
  if (auto eps = number_arg(a, "eps")) r.eps = *eps;
  else if (r.what == norm_graph::kind::rms_norm) r.eps = rms_norm_default_eps(r.norm_in);

  // The elementwise operands: full, or a row of the normalized dims; checked on every case's shapes.
  auto operand = [&](const std::string& name) {
    r.inputs.push_back(input_index(spec, name));
    r.types.push_back(g.inputs[r.inputs.back()].type);
  };
  operand(spec.graph[0].args.value("input", std::string()));
  for (size_t i = 0; i < spec.graph.size(); ++i) {
    const op_call& call = spec.graph[i];
    if (i == r.norm_op) r.prologue_operands = r.inputs.size();
    if (const std::string arg = ew::operand_arg(call); !arg.empty()) operand(call.args.value(arg, std::string()));
    r.step_types.push_back(g.steps[i].front().type);
    r.transcendental = r.transcendental || ew::calls_transcendental(call.op);
    if (!stored_in_float(r.step_types.back()))
      return fail(fmt::format("op {} ({}) gives {}: row_norm computes in float32 and stores float16, bfloat16 or float32",
                              i + 1, call.op, dtype_name(r.step_types.back())));
  }
  for (dtype t : r.types)
    if (!stored_in_float(t)) return fail(fmt::format("an operand is {}: row_norm reads float16, bfloat16 or float32", dtype_name(t)));
  r.out = r.step_types.back();
  for (size_t ci = 0; ci < spec.cases.size(); ++ci) {
    const auto& c = spec.cases[ci];
    const graph_shapes& cg = shapes[ci];
    const auto& full = r.norm_op == 0 ? cg.inputs[r.inputs[0]].shape : cg.steps[r.norm_op - 1].front().shape;
    if (cg.steps.back().front().shape != full) return fail(fmt::format("case {}: the result's shape is not the norm's", c.name));
    const size_t lead = full.size() - static_cast<size_t>(r.normalized_dims);
    for (size_t k = 0; k < r.inputs.size(); ++k) {
      const auto& s = cg.inputs[r.inputs[k]].shape;
      if (s == full) continue;
      // A row: right-aligned, every dim before the normalized ones is 1, the normalized ones match.
      bool row = k > 0 && s.size() <= full.size();
      for (size_t d = 0; row && d < s.size(); ++d) {
        const size_t fd = d + full.size() - s.size();
        row = fd < lead ? s[d] == 1 : s[d] == full[fd];
      }
      if (!row)
        return fail(fmt::format("case {}: operand '{}' is neither the value's shape nor a row of its normalized dims",
                                c.name, spec.inputs[r.inputs[k]].name));
    }
  }
  return r;
}

bool family_selected(const workload_spec& spec, const std::string& family_name) {
  if (spec.search.families.empty()) return true;
  for (auto& f : spec.search.families) {
    if (f == family_name) return true;
    if (family_name.size() > f.size() && family_name.compare(0, f.size(), f) == 0 && family_name[f.size()] == '_') {
      auto suffix = family_name.substr(f.size() + 1);
      if (suffix == "cpu" || suffix == "cuda") return true;
    }
  }
  return false;
}

}  // namespace kf
