// Merging a pattern's calls into one workload: see merge.h.
#include "capture/merge.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "capture/symbols.h"
#include "spec/ops.h"

namespace kf::capture {
namespace {

struct shape_entry {
  case_shapes shapes;
  case_stats stats;
};

// Names the escaping steps' results (h, h2, ...) and lists them after the last op's results in `outputs`.
void name_outputs(workload_spec* spec, const std::vector<bool>& escapes) {
  std::set<std::string> taken;
  for (const auto& in : spec->inputs) taken.insert(in.name);
  std::vector<std::string> extra;
  for (size_t i = 0; i + 1 < spec->graph.size(); ++i) {
    if (!escapes[i]) continue;
    std::string name = "h";
    for (int n = 2; taken.count(name); ++n) name = fmt::format("h{}", n);
    taken.insert(name);
    spec->graph[i].as = name;
    extra.push_back(name);
  }
  if (extra.empty()) return;
  spec->outputs = find_op(spec->graph.back().op)->output_names;
  spec->outputs.insert(spec->outputs.end(), extra.begin(), extra.end());
}

captured_workload merge_one(const std::vector<const pattern_call*>& calls, const merge_options& o) {
  const pattern_call& p0 = *calls.front();
  std::vector<shape_entry> shapes;
  std::vector<bool> escapes(p0.escapes.size(), false);
  std::vector<std::string> where;
  captured_workload w;
  for (const pattern_call* c : calls) {
    case_shapes key;
    for (const auto& in : c->inputs) key.push_back(in.shape);
    auto it = std::find_if(shapes.begin(), shapes.end(), [&](const shape_entry& e) { return e.shapes == key; });
    if (it == shapes.end()) it = shapes.insert(shapes.end(), {key, {0, 0, c->bytes}});
    it->stats.calls += 1;
    it->stats.time_us += c->time_us;
    for (size_t i = 0; i < escapes.size(); ++i) escapes[i] = escapes[i] || c->escapes[i];
    where.push_back(c->where);
    w.calls += 1;
    w.time_us += c->time_us;
  }
  std::stable_sort(shapes.begin(), shapes.end(),
                   [](const shape_entry& a, const shape_entry& b) { return a.stats.time_us > b.stats.time_us; });
  std::vector<case_shapes> keys;
  for (const auto& e : shapes) keys.push_back(e.shapes);
  const symbolized_shapes sym = infer_symbols(keys);

  workload_spec& s = w.spec;
  for (size_t i = 0; i < p0.inputs.size(); ++i) {
    const pattern_input& pi = p0.inputs[i];
    input_spec in;
    in.name = pi.name;
    in.shape = sym.inputs[i];
    in.type = pi.type;
    in.init = pi.init;
    in.memory_format = pi.memory_format;
    s.inputs.push_back(std::move(in));
  }
  s.graph = p0.graph;
  name_outputs(&s, escapes);
  for (size_t k = 0; k < shapes.size(); ++k) {
    case_spec c;
    c.bindings = sym.cases[k];
    for (const auto& [name, v] : c.bindings) c.name += fmt::format("{}{}={}", c.name.empty() ? "" : ",", name, v);
    if (c.name.empty()) c.name = "default";
    c.gate = k == 0;  // the shape that takes the largest share of the pattern's time
    if (o.device.rfind("cuda", 0) == 0 && shapes[k].stats.bytes > o.cpu_case_bytes) c.devices = {"cuda"};
    s.cases.push_back(std::move(c));
    w.stats.push_back(shapes[k].stats);
  }
  s.baselines = {"eager", "compile"};
  s.gate.max_regression = 0.05;
  s.gate.must_beat = {"eager"};
  s.gate.require_kernel = false;
  s.search.evaluations = 50;
  s.search.seconds = 180;
  w.pattern = pattern_text(s.graph);
  w.where = fold_layers(where);
  return w;
}

}  // namespace

std::vector<captured_workload> merge_patterns(const std::vector<pattern_call>& calls, const merge_options& o) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const pattern_call*>> by_signature;
  for (const auto& c : calls) {
    auto& v = by_signature[c.signature];
    if (v.empty()) order.push_back(c.signature);
    v.push_back(&c);
  }
  std::vector<captured_workload> out;
  for (const auto& sig : order) out.push_back(merge_one(by_signature[sig], o));
  return out;
}

std::vector<std::string> fold_layers(const std::vector<std::string>& paths) {
  static const std::regex k_index(R"((^|[.\s])\d+(?=[.\s]|$))");
  std::vector<std::string> folded_order;
  std::map<std::string, std::vector<std::string>> concrete;  // folded -> distinct paths
  for (const auto& p : paths) {
    std::string f = std::regex_replace(p, k_index, "$1*");
    auto& v = concrete[f];
    if (v.empty()) folded_order.push_back(f);
    if (std::find(v.begin(), v.end(), p) == v.end()) v.push_back(p);
  }
  std::vector<std::string> out;
  for (const auto& f : folded_order) out.push_back(concrete[f].size() > 1 ? f : concrete[f].front());
  return out;
}

}  // namespace kf::capture
