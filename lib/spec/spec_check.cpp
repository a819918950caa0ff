// Checks across the parts of a spec: every case binds exactly the symbols the input shapes use, every input is
// used, multi-output ops end the graph, and each case's concrete shapes and dtypes fit along the graph.
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "spec/ops.h"
#include "spec/spec_parse_detail.h"
#include "util/suggest.h"

namespace kf::detail {
namespace {

struct symbol_use {
  std::string name;
  std::string input;  // the first input whose shape uses it
};

std::vector<symbol_use> shape_symbols(const workload_spec& s) {
  std::vector<symbol_use> out;
  for (auto& in : s.inputs)
    for (auto& d : in.shape) {
      if (!d.is_symbol()) continue;
      bool seen = false;
      for (auto& u : out) seen = seen || u.name == d.symbol;
      if (!seen) out.push_back({d.symbol, in.name});
    }
  return out;
}

// Returns whether case i binds exactly the shape symbols.
bool check_bindings(yaml_reader& r, const workload_spec& s, size_t i, const parse_locs& locs,
                    const std::vector<symbol_use>& symbols) {
  const case_spec& c = s.cases[i];
  std::string field = fmt::format("cases[{}]", locs.case_index.at(i));
  std::vector<std::string> names;
  for (auto& u : symbols) names.push_back(u.name);
  bool ok = true;
  for (auto& [k, v] : c.bindings) {
    bool known = false;
    for (auto& u : symbols) known = known || u.name == k;
    if (known) continue;
    ok = false;
    std::string hint = k.size() >= 3 ? did_you_mean(k, names) : "";  // one-letter names are all 'close'
    source_loc at = locs.case_keys.at(i).count(k) ? locs.case_keys.at(i).at(k) : c.loc;
    r.error(at, field + "." + k,
            hint.empty() ? fmt::format("`{}` is not used by any input shape (symbols: {})", k, names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")))
                         : fmt::format("`{}` is not used by any input shape; did you mean `{}`?", k, hint));
  }
  for (auto& u : symbols)
    if (!c.binding(u.name)) {
      ok = false;
      r.error(c.loc, field, fmt::format("case does not bind `{}` (used by the shape of input `{}`)", u.name, u.input));
    }
  return ok;
}

bool check_unused_inputs(yaml_reader& r, const workload_spec& s, const parse_locs& locs) {
  std::set<std::string> used;
  for (auto& call : s.graph)
    for (auto& n : tensor_arg_inputs(call)) used.insert(n);
  bool ok = true;
  for (auto& in : s.inputs)
    if (!used.count(in.name)) {
      ok = false;
      r.error(locs.inputs.count(in.name) ? locs.inputs.at(in.name) : in.loc, "inputs." + in.name,
              fmt::format("input `{}` is not used by the graph (expected every input to be read by an op)", in.name));
    }
  return ok;
}

bool check_multi_output_last(yaml_reader& r, const workload_spec& s) {
  bool ok = true;
  for (size_t i = 0; i + 1 < s.graph.size(); ++i) {
    const op_def* op = find_op(s.graph[i].op);
    if (op && op->must_be_last) {
      ok = false;
      r.error(s.graph[i].loc, fmt::format("graph[{}].{}", i, op->name),
              fmt::format("`{}` has {} outputs ({}) and must be the last op", op->name, op->output_names.size(),
                          fmt::join(op->output_names, ", ")));
    }
  }
  return ok;
}

}  // namespace

void check_spec(yaml_reader& r, const workload_spec& s, const parse_locs& locs) {
  auto symbols = shape_symbols(s);
  std::vector<bool> case_ok(s.cases.size(), false);
  if (locs.shapes_ok)
    for (size_t i = 0; i < s.cases.size(); ++i)
      case_ok[i] = locs.case_clean.at(i) && check_bindings(r, s, i, locs, symbols);
  if (!locs.inputs_ok || !locs.graph_ok || s.graph.empty()) return;
  bool graph_ok = check_unused_inputs(r, s, locs);
  graph_ok = check_multi_output_last(r, s) && graph_ok;
  if (!graph_ok) return;
  // Concrete shapes per case: report each (op, argument) problem once, naming the first case that shows it.
  std::set<std::pair<size_t, std::string>> reported;
  for (size_t i = 0; i < s.cases.size(); ++i) {
    if (!case_ok[i]) continue;
    graph_shapes g;
    graph_error e;
    if (try_infer_graph(s, s.cases[i], &g, &e)) continue;
    if (!reported.insert({e.op_index, e.arg}).second) continue;
    const auto& args = locs.op_args.at(e.op_index);
    source_loc at = args.count(e.arg) ? args.at(e.arg) : args.at("");
    std::string field = fmt::format("graph[{}].{}{}", e.op_index, s.graph[e.op_index].op, e.arg.empty() ? "" : "." + e.arg);
    const case_spec& c = s.cases[i];
    r.error(at, field, c.bindings.empty() ? e.message : fmt::format("{} (case {})", e.message, c.name));
  }
}

}  // namespace kf::detail
