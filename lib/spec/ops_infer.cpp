// Graph-level inference: runs each op's inference in order for one case (concrete shapes), plus the
// broadcasting and type-promotion rules that several ops share.
#include <algorithm>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "spec/ops.h"

namespace kf {

int64_t tensor_desc::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string tensor_desc::str() const { return fmt::format("{}[{}]", dtype_name(type), fmt::join(shape, ", ")); }

int64_t wrap_dim(int64_t d, int64_t rank) {
  int64_t r = std::max<int64_t>(rank, 1);  // torch lets a 0-d tensor use dim 0 / -1
  if (d < -r || d >= r) return -1;
  return d < 0 ? d + r : d;
}

bool broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>* out) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> r(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1) return false;
    r[i] = x == 1 ? y : x;
  }
  *out = std::move(r);
  return true;
}

dtype promote_types(dtype a, dtype b) {
  if (a == b) return a;
  bool fa = is_floating(a), fb = is_floating(b);
  if (fa != fb) return fa ? a : b;  // a float tensor wins over an integer one
  if (fa) {
    if (a == dtype::float64 || b == dtype::float64) return dtype::float64;
    return dtype::float32;  // float32 with a half type, or float16 with bfloat16
  }
  return dtype_size(a) >= dtype_size(b) ? a : b;
}

bool is_number_operand(const op_call& call, const std::string& name) {
  auto it = call.args.find(name);
  return it != call.args.end() && it->is_number();
}

std::vector<std::string> tensor_arg_inputs(const op_call& call) {
  std::vector<std::string> names;
  if (auto it = call.args.find("input"); it != call.args.end() && it->is_string()) names.push_back(*it);
  if (const op_def* op = find_op(call.op))
    for (auto& a : op->args)
      if (a.kind == arg_kind::tensor)
        if (auto it = call.args.find(a.name); it != call.args.end() && it->is_string()) names.push_back(*it);
  return names;
}

std::string primary_input(const workload_spec& spec) {
  KF_ASSERT(!spec.graph.empty(), "spec {} has an empty graph", spec.name);
  return spec.graph.front().args.value("input", std::string());
}

std::vector<tensor_desc> input_descs(const workload_spec& spec, const case_spec& c) {
  std::vector<tensor_desc> v;
  for (auto& in : spec.inputs) v.push_back({concrete_shape(in, c), in.type});
  return v;
}

std::vector<output_ref> named_results(const workload_spec& spec) {
  if (spec.graph.empty()) return {};
  const size_t last = spec.graph.size() - 1;
  std::vector<output_ref> out;
  if (!spec.graph.back().as.empty()) {
    out.push_back({last, 0, spec.graph.back().as});
  } else {
    const op_def* op = find_op(spec.graph.back().op);
    KF_ASSERT(op, "unknown op {}", spec.graph.back().op);
    for (size_t k = 0; k < op->output_names.size(); ++k) out.push_back({last, k, op->output_names[k]});
  }
  for (size_t i = 0; i < last; ++i)
    if (!spec.graph[i].as.empty()) out.push_back({i, 0, spec.graph[i].as});
  return out;
}

std::vector<output_ref> output_refs(const workload_spec& spec) {
  std::vector<output_ref> named = named_results(spec);
  if (spec.outputs.empty()) {  // the last op's results
    std::erase_if(named, [&](const output_ref& r) { return r.step + 1 != spec.graph.size(); });
    return named;
  }
  std::vector<output_ref> out;
  for (const std::string& name : spec.outputs)
    for (auto& r : named)
      if (r.name == name) {
        out.push_back(r);
        break;
      }
  return out;
}

std::vector<std::string> output_names(const workload_spec& spec) {
  std::vector<std::string> v;
  for (auto& r : output_refs(spec)) v.push_back(r.name);
  return v;
}

bool has_extra_outputs(const workload_spec& spec) {
  const auto refs = output_refs(spec);
  for (size_t k = 0; k < refs.size(); ++k)
    if (refs[k].step + 1 != spec.graph.size() || refs[k].index != k) return true;
  return false;
}

bool try_infer_graph(const workload_spec& spec, const case_spec& c, graph_shapes* out, graph_error* err) {
  graph_shapes g;
  g.inputs = input_descs(spec, c);
  auto desc_of = [&](const std::string& name) -> const tensor_desc* {
    for (size_t i = 0; i < spec.inputs.size(); ++i)
      if (spec.inputs[i].name == name) return &g.inputs[i];
    return nullptr;
  };
  auto fail = [&](size_t i, std::string arg, std::string message) {
    *err = {i, std::move(arg), std::move(message)};
    return false;
  };
  tensor_desc current;
  for (size_t i = 0; i < spec.graph.size(); ++i) {
    const op_call& call = spec.graph[i];
    const op_def* op = find_op(call.op);
    if (!op) return fail(i, "", fmt::format("unknown op `{}`", call.op));
    if (i == 0) {
      const tensor_desc* in = desc_of(call.args.value("input", std::string()));
      if (!in) return fail(i, "input", "the first op must name one of the inputs in `input`");
      current = *in;
    } else if (g.steps.back().size() != 1) {
      return fail(i, "", fmt::format("`{}` has {} outputs and must be the last op", spec.graph[i - 1].op, g.steps.back().size()));
    }
    op_context ctx{*op, current, call.args, {}};
    for (auto& a : op->args) {
      if (a.kind != arg_kind::tensor || !ctx.has(a.name) || ctx.value(a.name).is_number()) continue;
      const tensor_desc* t = desc_of(ctx.value(a.name).get<std::string>());
      if (!t) return fail(i, a.name, fmt::format("`{}` is not an input", ctx.value(a.name).get<std::string>()));
      ctx.tensors[a.name] = *t;
    }
    try {
      g.steps.push_back(op->infer(ctx));
    } catch (const op_error& e) {
      return fail(i, e.arg, e.message);
    }
    current = g.steps.back().front();
  }
  if (g.steps.empty()) return fail(0, "", "the graph is empty");
  for (auto& r : output_refs(spec)) g.results.push_back(g.steps[r.step].at(r.index));
  *out = std::move(g);
  return true;
}

double rms_norm_default_eps(dtype input) {
  return input == dtype::float64 ? std::numeric_limits<double>::epsilon()
                                 : static_cast<double>(std::numeric_limits<float>::epsilon());
}

void fill_dtype_defaults(workload_spec& spec) {
  if (spec.cases.empty()) return;
  graph_shapes g;
  graph_error e;
  if (!try_infer_graph(spec, spec.cases.front(), &g, &e)) return;  // dtypes do not depend on the case
  for (size_t i = 0; i < spec.graph.size(); ++i) {
    op_call& call = spec.graph[i];
    if (call.op != "rms_norm" || (call.args.contains("eps") && !call.args["eps"].is_null())) continue;
    dtype in = dtype::float32;
    if (i > 0) {
      in = g.steps[i - 1].front().type;
    } else {
      for (size_t k = 0; k < spec.inputs.size(); ++k)
        if (spec.inputs[k].name == call.args.value("input", std::string())) in = g.inputs[k].type;
    }
    call.args["eps"] = rms_norm_default_eps(in);
  }
}

std::vector<tensor_desc> infer_outputs(const workload_spec& spec, const case_spec& c) {
  graph_shapes g;
  graph_error e;
  if (try_infer_graph(spec, c, &g, &e)) return g.outputs();
  source_loc loc = e.op_index < spec.graph.size() ? spec.graph[e.op_index].loc : source_loc{spec.path, 0, 0};
  std::string op = e.op_index < spec.graph.size() ? spec.graph[e.op_index].op : "?";
  std::string field = fmt::format("graph[{}].{}{}", e.op_index, op, e.arg.empty() ? "" : "." + e.arg);
  throw user_error(loc, fmt::format("{}: {} (case {})", field, e.message, c.name));
}

}  // namespace kf
