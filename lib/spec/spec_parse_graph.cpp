// The spec's `graph`: a list of ops, each `- op_name: {args}`, checked against the op registry's schema.
// Arguments are stored normalized (defaults filled in, dtypes by their canonical name, int lists as lists).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <regex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "spec/ops.h"
#include "spec/spec_parse_detail.h"
#include "util/suggest.h"

namespace kf::detail {
namespace {

using json = nlohmann::json;

std::vector<std::string> input_names(const workload_spec& s) {
  std::vector<std::string> v;
  for (auto& in : s.inputs) v.push_back(in.name);
  return v;
}

// A number written where a tensor argument that takes none names an input (`add_mask: {mask: -1e4}`): what the
// argument wants, and the ops that do take a number.
std::string number_operand_error(const std::string& text) {
  return fmt::format("`{}` is a number, and this argument names an input tensor (add, sub, mul and div take a number "
                     "as `other`: `add: {{other: {}}}` is x + {})",
                     text, text, text);
}

// Reads one argument by its kind; nullopt after reporting.
std::optional<json> read_arg(yaml_reader& r, const arg_def& a, const YAML::Node& n, const std::string& field,
                             const workload_spec& s) {
  switch (a.kind) {
    case arg_kind::integer:
      if (auto v = r.get_int(n, field)) return json(*v);
      return std::nullopt;
    case arg_kind::number:
      if (auto v = r.get_number(n, field)) return json(*v);
      return std::nullopt;
    case arg_kind::fill:
      if (auto v = r.get_fill(n, field)) return std::isinf(*v) ? json(*v > 0 ? "inf" : "-inf") : json(*v);
      return std::nullopt;
    case arg_kind::boolean:
      if (auto v = r.get_bool(n, field)) return json(*v);
      return std::nullopt;
    case arg_kind::string:
      if (auto v = a.choices.empty() ? r.get_string(n, field) : r.get_choice(n, field, a.choices, a.name)) return json(*v);
      return std::nullopt;
    case arg_kind::dtype:
      if (auto v = r.get_dtype(n, field)) return json(std::string(dtype_name(*v)));
      return std::nullopt;
    case arg_kind::int_list:
      if (auto v = r.get_int_list(n, field, true)) return json(*v);
      return std::nullopt;
    case arg_kind::tensor: {
      auto v = r.get_string(n, field);
      if (!v) return std::nullopt;
      if (s.find_input(*v)) return json(*v);
      char* end = nullptr;
      const double number = std::strtod(v->c_str(), &end);
      if (!v->empty() && end == v->c_str() + v->size()) {
        if (a.number_ok && std::isfinite(number)) return json(number);
        r.error(n, field, a.number_ok ? fmt::format("`{}` is not a finite number", *v) : number_operand_error(*v));
        return std::nullopt;
      }
      std::string hint = did_you_mean(*v, input_names(s));
      r.error(n, field, hint.empty() ? fmt::format("`{}` is not an input (expected the name of one of `inputs`)", *v)
                                     : fmt::format("`{}` is not an input; did you mean `{}`?", *v, hint));
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// `as: NAME` names the op's result for `outputs`: an identifier, unique among the inputs and the other ops' names,
// on an op with one result.
void read_as(yaml_reader& r, const YAML::Node& n, const std::string& field, const op_def& op, const workload_spec& s,
             op_call* call) {
  auto v = r.get_string(n, field);
  if (!v) return;
  static const std::regex k_ident("[A-Za-z_][A-Za-z0-9_]*");
  if (!std::regex_match(*v, k_ident)) {
    r.error(n, field, fmt::format("`{}` is not a name: expected letters, digits and underscores, not starting with a digit", *v));
    return;
  }
  if (op.output_names.size() != 1) {
    r.error(n, field, fmt::format("`{}` has {} results ({}): `as` names an op with one result; list them in `outputs` by those names",
                                  op.name, op.output_names.size(), fmt::join(op.output_names, ", ")));
    return;
  }
  if (s.find_input(*v)) {
    r.error(n, field, fmt::format("`{}` is already an input's name", *v));
    return;
  }
  for (auto& prev : s.graph)
    if (prev.as == *v) {
      r.error(n, field, fmt::format("`{}` already names the result of an earlier `{}` (line {})", *v, prev.op, prev.loc.line));
      return;
    }
  call->as = *v;
}

void parse_op(yaml_reader& r, size_t i, const YAML::Node& item, workload_spec* out, parse_locs* locs) {
  std::string field = fmt::format("graph[{}]", i);
  locs->op_args.emplace_back();
  YAML::Node name_node = item, args;
  if (item.IsMap()) {
    if (item.size() != 1) {
      r.error(item, field, fmt::format("expected one op per entry, like `- softmax: {{dim: -1}}`, got {} keys", item.size()));
      locs->graph_ok = false;
      return;
    }
    name_node.reset(item.begin()->first);  // reset: Node::operator= would write into the tree
    args.reset(item.begin()->second);
  } else if (!yaml_reader::is_plain_scalar(item) || item.IsNull()) {
    r.error(item, field, fmt::format("expected an op like `- softmax: {{dim: -1}}`, got {}", yaml_reader::describe(item)));
    locs->graph_ok = false;
    return;
  }
  std::string name = name_node.Scalar();
  const op_def* op = find_op(name);
  if (!op) {
    std::string hint = did_you_mean(name, op_names());
    r.error(name_node, field, hint.empty() ? fmt::format("unknown op `{}` (see `kforge validate --ops` for the list)", name)
                                           : fmt::format("unknown op `{}`; did you mean `{}`?", name, hint));
    locs->graph_ok = false;
    return;
  }
  field += "." + name;
  op_call call{name, json::object(), r.loc(name_node)};
  locs->op_args.back()[""] = call.loc;
  std::vector<std::string> allowed = {"input", "as"};  // `input` on a later op is reported below with the reason
  for (auto& a : op->args) allowed.push_back(a.name);
  bool has_args = args && !args.IsNull();
  size_t before = r.error_count();
  if (has_args && !args.IsMap()) {
    r.error(args, field, fmt::format("expected a mapping of arguments, got {}", yaml_reader::describe(args)));
    locs->graph_ok = false;
    return;
  }
  if (has_args) {
    r.check_map(args, field, allowed);
    if (i > 0 && args["input"])
      r.error(args["input"], field + ".input", "only the first op names its input; each later op takes the previous op's result");
  }
  if (i == 0) {
    if (!has_args || !args["input"]) {
      r.error(name_node, field, "missing required field `input` (the first op names the input it reads)");
    } else if (auto v = read_arg(r, arg_def{"input", arg_kind::tensor, true, nullptr, {}, {}}, args["input"], field + ".input", *out)) {
      call.args["input"] = *v;
      locs->op_args.back()["input"] = r.loc(args["input"]);
    }
  }
  for (auto& a : op->args) {
    YAML::Node v = has_args ? args[a.name] : YAML::Node();
    if (!v || v.IsNull()) {
      if (a.required) r.error(name_node, field, fmt::format("missing required field `{}` ({})", a.name, arg_kind_name(a.kind)));
      else if (!a.default_value.is_null()) call.args[a.name] = a.default_value;
      continue;
    }
    locs->op_args.back()[a.name] = r.loc(v);
    if (auto j = read_arg(r, a, v, field + "." + a.name, *out)) call.args[a.name] = *j;
  }
  if (has_args && args["as"]) read_as(r, args["as"], field + ".as", *op, *out, &call);
  if (r.error_count() != before) locs->graph_ok = false;
  out->graph.push_back(std::move(call));
}

}  // namespace

void parse_graph(yaml_reader& r, const YAML::Node& n, workload_spec* out, parse_locs* locs) {
  if (!r.check_list(n, "graph")) { locs->graph_ok = false; return; }
  if (n.size() == 0) {
    r.error(n, "graph", "expected at least one op");
    locs->graph_ok = false;
  }
  for (size_t i = 0; i < n.size(); ++i) parse_op(r, i, n[i], out, locs);
}

void parse_outputs(yaml_reader& r, const YAML::Node& n, workload_spec* out) {
  if (!r.check_list(n, "outputs")) return;
  if (n.size() == 0) {
    r.error(n, "outputs", "expected at least one result (leave `outputs` out to return the last op's results)");
    return;
  }
  if (out->graph.empty()) return;  // the graph's own errors say why
  // The names a result can be listed by: the last op's own (or its `as`), then each earlier op's `as`.
  std::vector<std::string> finals, names;
  for (const output_ref& r : named_results(*out)) {
    names.push_back(r.name);
    if (r.step + 1 == out->graph.size()) finals.push_back(r.name);
  }
  std::vector<std::string> listed;
  bool ok = true;
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string field = fmt::format("outputs[{}]", i);
    auto v = r.get_string(n[i], field);
    if (!v) { ok = false; continue; }
    if (std::find(names.begin(), names.end(), *v) == names.end()) {
      std::string hint = did_you_mean(*v, names);
      r.error(n[i], field, fmt::format("`{}` names no result{}: expected the last op's result ({}) or an op's `as` name{}",
                                       *v, hint.empty() ? "" : fmt::format(" (did you mean `{}`?)", hint),
                                       fmt::join(finals, ", "),
                                       names.size() > finals.size() ? fmt::format(" ({})", fmt::join(names.begin() + finals.size(), names.end(), ", ")) : " (give an op `as: NAME` to return its result)"));
      ok = false;
      continue;
    }
    if (std::find(listed.begin(), listed.end(), *v) != listed.end()) {
      r.error(n[i], field, fmt::format("`{}` is listed twice", *v));
      ok = false;
      continue;
    }
    listed.push_back(*v);
  }
  if (!ok) return;
  for (auto& f : finals)
    if (std::find(listed.begin(), listed.end(), f) == listed.end()) {
      r.error(n, "outputs", fmt::format("the last op's result `{}` is not listed (ops after the last listed result "
                                        "would compute nothing; list it, or end the graph there)", f));
      return;
    }
  out->outputs = listed;
}

}  // namespace kf::detail
