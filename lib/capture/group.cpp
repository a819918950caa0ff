// Grouping lifted ops into chains: see group.h.
#include "capture/group.h"

#include <algorithm>
#include <map>
#include <set>

#include "spec/ops.h"

namespace kf::capture {
namespace {

// The values a group's operators produced.
std::set<int64_t> produced(const trace& t, const group& g) {
  std::set<int64_t> v;
  for (size_t i : g.covers)
    for (int64_t o : t.ops[i].outputs) v.insert(o);
  return v;
}

bool has_reduction(const group& g) {
  return std::any_of(g.steps.begin(), g.steps.end(), [](const lifted_op& s) { return role_of(s.op) == op_role::reduction; });
}

// The group's last spec op (an alias changes no value).
const std::string& last_op(const group& g) {
  for (size_t i = g.steps.size(); i-- > 1;)
    if (g.steps[i].op != "alias") return g.steps[i].op;
  return g.steps.front().op;
}

// Can `l` (reading the group's last result as its input) continue `g`?
bool can_extend(const trace& t, const group& g, const lifted_op& l) {
  const std::string& last = last_op(g);
  if (last == "topk") return false;
  // A pooling starts its pattern (the head's pooling and flatten, apart from the block before it), and a flatten
  // continues only a pooling: after anything else it is the view in front of a matmul.
  if (is_window_pooling(l.op)) return false;
  if (l.op == "flatten" && !is_window_pooling(last)) return false;
  // One reduction per pattern, but for a router's top-k of its softmax.
  const bool router = l.op == "topk" && (last == "softmax" || last == "log_softmax");
  if (role_of(l.op) == op_role::reduction && has_reduction(g) && !router) return false;
  const std::set<int64_t> inside = produced(t, g);
  for (const auto& [name, v] : l.tensors)
    if (inside.count(v) || depends_on(t, v, g)) return false;
  return true;
}

void add_step(const trace& t, group* g, lifted_op l) {
  for (size_t i : l.covers) {
    g->time_us += t.ops[i].time_us;
    g->covers.insert(std::upper_bound(g->covers.begin(), g->covers.end(), i), i);
  }
  g->steps.push_back(std::move(l));
}

}  // namespace

bool depends_on(const trace& t, int64_t value, const group& g) {
  if (g.covers.empty()) return false;
  const size_t first = g.covers.front();
  const std::set<int64_t> inside = produced(t, g);
  std::set<size_t> seen;
  std::vector<int64_t> todo = {value};
  while (!todo.empty()) {
    int64_t v = todo.back();
    todo.pop_back();
    if (inside.count(v)) return true;
    auto p = t.producer(v);
    // An operator before the group's first cannot read what the group made.
    if (!p || *p < first || !seen.insert(*p).second) continue;
    for (int64_t in : t.ops[*p].inputs) todo.push_back(in);
  }
  return false;
}

grouping group_ops(const trace& t, const std::vector<lifted_op>& lifted) {
  grouping out;
  std::map<int64_t, size_t> tail;  // a chain's last result -> the chain
  for (const lifted_op& l : lifted) {
    // The chains it may continue: through its input, or through `other` when the op is commutative.
    struct option {
      size_t group;
      bool swap;
      size_t made_at;
    };
    std::vector<option> options;
    auto consider = [&](int64_t v, bool swap) {
      auto it = tail.find(v);
      if (it == tail.end()) return;
      lifted_op probe = l;
      if (swap) {
        for (auto& [name, tv] : probe.tensors)
          if (name == "other") std::swap(tv, probe.input);
      }
      if (can_extend(t, out.groups[it->second], probe)) options.push_back({it->second, swap, t.producer(v).value_or(0)});
    };
    consider(l.input, false);
    if (l.commutative)
      for (const auto& [name, v] : l.tensors)
        if (name == "other" && v != l.input) consider(v, true);
    if (options.empty()) {
      if (role_of(l.op) == op_role::view) continue;  // a lone flatten is a view, not a pattern
      group g;
      add_step(t, &g, l);
      tail[l.output()] = out.groups.size();
      out.groups.push_back(std::move(g));
      continue;
    }
    // Both operands end chains (a rotary embedding's two products): continue the one made last.
    const option& o = *std::max_element(options.begin(), options.end(),
                                        [](const option& a, const option& b) { return a.made_at < b.made_at; });
    lifted_op step = l;
    if (o.swap)
      for (auto& [name, tv] : step.tensors)
        if (name == "other") std::swap(tv, step.input);
    group& g = out.groups[o.group];
    tail.erase(g.steps.back().output());
    tail[step.output()] = o.group;
    add_step(t, &g, std::move(step));
  }
  std::vector<bool> covered(t.ops.size(), false);
  for (const auto& g : out.groups)
    for (size_t i : g.covers) covered[i] = true;
  for (size_t i = 0; i < t.ops.size(); ++i)
    if (!covered[i]) out.uncovered.push_back(i);
  return out;
}

}  // namespace kf::capture
