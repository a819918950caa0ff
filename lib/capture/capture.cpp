// kforge capture's analysis, start to end: see capture.h.
#include "capture/capture.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <fmt/format.h>

#include "capture/group.h"
#include "capture/lift.h"
#include "capture/pattern.h"

namespace kf::capture {
namespace {

// Short names of spec ops in workload names.
std::string short_name(const std::string& op) {
  static const std::map<std::string, std::string> names = {
      {"rms_norm", "rmsnorm"},     {"layer_norm", "layernorm"}, {"group_norm", "groupnorm"},
      {"log_softmax", "logsoftmax"}, {"add_mask", "mask"},      {"adaptive_avg_pool2d", "avgpool"},
      {"masked_fill", "fill"},     {"avg_pool2d", "avgpool2d"},
      {"max_pool2d", "maxpool"},
  };
  auto it = names.find(op);
  return it == names.end() ? op : it->second;
}

std::string workload_name(const std::string& prefix, const captured_workload& w) {
  std::string name = prefix;
  for (size_t i = 0; i < w.spec.graph.size() && i < 5; ++i) name += "-" + short_name(w.spec.graph[i].op);
  if (w.spec.graph.size() > 5) name += "-more";
  return name;
}

std::vector<uncovered_op> uncovered_ops(const trace& t, const std::vector<size_t>& indices) {
  std::vector<uncovered_op> out;
  std::map<std::string, size_t> at;
  std::map<std::string, std::vector<std::string>> where;
  for (size_t i : indices) {
    const traced_op& op = t.ops[i];
    auto [it, fresh] = at.emplace(op.name, out.size());
    if (fresh) out.push_back({op.name, 0, 0, {}});
    out[it->second].calls += 1;
    out[it->second].time_us += op.time_us;
    where[op.name].push_back(op.module.empty() ? "(model)" : op.module);
  }
  for (auto& u : out) u.where = fold_layers(where[u.op]);
  std::stable_sort(out.begin(), out.end(), [](const uncovered_op& a, const uncovered_op& b) { return a.time_us > b.time_us; });
  return out;
}

}  // namespace

std::string model_slug(const std::string& model) {
  std::string file = model.substr(0, model.rfind(':'));
  if (auto slash = file.find_last_of('/'); slash != std::string::npos) file = file.substr(slash + 1);
  if (file.size() > 3 && file.ends_with(".py")) file.resize(file.size() - 3);
  std::string s;
  for (char c : file) {
    if (std::isalnum(static_cast<unsigned char>(c))) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!s.empty() && s.back() != '-') s += '-';
  }
  while (!s.empty() && s.back() == '-') s.pop_back();
  return s.empty() ? "model" : s;
}

capture_result analyze(const trace& t) {
  capture_result r;
  r.model = t.model;
  r.device = t.device;
  r.torch_version = t.torch_version;
  r.operators = t.ops.size();
  r.total_us = t.total_us();

  const grouping g = group_ops(t, lift(t));
  std::vector<pattern_call> calls;
  for (const auto& grp : g.groups) calls.push_back(make_pattern(t, grp));
  r.workloads = merge_patterns(calls, {.device = t.device});
  std::stable_sort(r.workloads.begin(), r.workloads.end(),
                   [](const captured_workload& a, const captured_workload& b) { return a.time_us > b.time_us; });
  r.uncovered = uncovered_ops(t, g.uncovered);

  const std::string prefix = model_slug(t.model);
  std::map<std::string, int> seen;
  std::string file = t.model.substr(0, t.model.rfind(':'));
  if (auto slash = file.find_last_of('/'); slash != std::string::npos) file = file.substr(slash + 1);
  const std::string function = t.model.find(':') == std::string::npos ? "" : t.model.substr(t.model.rfind(':'));
  for (auto& w : r.workloads) {
    std::string name = workload_name(prefix, w);
    if (int n = ++seen[name]; n > 1) name += fmt::format("-{}", n);
    w.spec.name = name;
    const std::string where = w.where.size() > 1 ? fmt::format("{} and {} more", w.where[0], w.where.size() - 1) : w.where.at(0);
    w.spec.model = fmt::format("{}{}, {}: {} ({:.1f}% of the traced time)", file, function, where, w.pattern,
                               100 * r.share(w.time_us));
    // Each case's share and calls as data, for kforge e2e's Amdahl prediction (the comments say the same), the share
    // to three significant digits (below 1: a spec's fractions are in [0, 1)).
    for (size_t k = 0; k < w.spec.cases.size() && k < w.stats.size(); ++k) {
      double share = r.share(w.stats[k].time_us);
      if (share > 0) share = std::stod(fmt::format("{:.3g}", share));
      w.spec.cases[k].share = std::min(share, 0.999);
      w.spec.cases[k].calls = std::max<int64_t>(1, static_cast<int64_t>(w.stats[k].calls));
    }
  }
  return r;
}

}  // namespace kf::capture
