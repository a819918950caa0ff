#include "search/template_proposer.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace kf {
namespace {

struct change {
  std::string knob, from, to;
};
using move = std::vector<change>;

std::string describe(const move& m) {
  std::string s = "template:";
  for (auto& c : m) s += fmt::format(" {} {}->{}", c.knob, c.from, c.to);
  return s;
}

}  // namespace

std::vector<candidate> template_proposer::propose(const proposer_context& ctx) {
  const node& n = ctx.tree.at(ctx.node_id);
  if (n.cand.family.empty()) return {};
  const family* f = find_family(n.cand.family, ctx.device);
  if (!f) return {};
  // Knobs a stored winner does not name (an older version of the family) start from the default.
  knob_values base = f->default_variant(ctx.spec);
  for (auto& [k, v] : n.cand.knobs)
    if (base.count(k)) base[k] = v;
  auto ks = f->knobs();
  std::vector<move> near, far;
  for (size_t i = 0; i < ks.size(); ++i) {
    auto& vals = ks[i].values;
    auto at = std::find(vals.begin(), vals.end(), base[ks[i].name]);
    int pos = at == vals.end() ? -1 : static_cast<int>(at - vals.begin());
    for (int j = 0; j < static_cast<int>(vals.size()); ++j) {
      if (j == pos) continue;
      move m{{ks[i].name, base[ks[i].name], vals[j]}};
      (pos < 0 || std::abs(j - pos) == 1 ? near : far).push_back(m);
    }
  }
  // Trades (family::trades): one knob of a pair a value up, the other a value down.
  std::vector<move> trades;
  auto neighbour = [&](const std::string& name, int d) -> std::string {
    for (auto& k : ks) {
      if (k.name != name) continue;
      auto at = std::find(k.values.begin(), k.values.end(), base[name]);
      if (at == k.values.end()) return "";
      const auto i = (at - k.values.begin()) + d;
      return i >= 0 && i < static_cast<long>(k.values.size()) ? k.values[i] : "";
    }
    return "";
  };
  for (auto& [a, b] : f->trades())
    for (int d : {1, -1}) {
      const std::string to_a = neighbour(a, d), to_b = neighbour(b, -d);
      if (!to_a.empty() && !to_b.empty()) trades.push_back({{a, base[a], to_a}, {b, base[b], to_b}});
    }
  // Two knobs, each to a neighbouring value.
  std::vector<move> pairs;
  for (size_t a = 0; a < near.size(); ++a)
    for (size_t b = a + 1; b < near.size(); ++b)
      if (near[a][0].knob != near[b][0].knob) pairs.push_back({near[a][0], near[b][0]});
  std::shuffle(near.begin(), near.end(), m_rng);
  std::shuffle(pairs.begin(), pairs.end(), m_rng);
  std::shuffle(far.begin(), far.end(), m_rng);
  std::shuffle(trades.begin(), trades.end(), m_rng);
  // The near single moves with the trades between them: a trade is as near as a single move.
  std::vector<move> order;
  for (size_t i = 0; i < std::max(near.size(), trades.size()); ++i) {
    if (i < near.size()) order.push_back(near[i]);
    if (i < trades.size()) order.push_back(trades[i]);
  }
  // Interleave pairs and far single moves so both kinds get tried once the near ones are used up.
  for (size_t i = 0; i < std::max(pairs.size(), far.size()); ++i) {
    if (i < pairs.size()) order.push_back(pairs[i]);
    if (i < far.size()) order.push_back(far[i]);
  }
  // A move of a knob the variant does not read emits a source already in the tree (families emit such knobs
  // at fixed values): it would cost an evaluation and could only tie, so it is skipped.
  std::set<std::string> sources;
  for (auto& t : ctx.tree.nodes()) sources.insert(t.cand.source_hash);
  std::vector<candidate> out;
  std::set<std::string> taken;
  for (auto& m : order) {
    if (static_cast<int>(out.size()) >= ctx.max_children) break;
    knob_values v = base;
    for (auto& c : m) v[c.knob] = c.to;
    if (!f->valid(v, ctx.spec, nullptr)) continue;
    candidate c;
    c.family = f->name();
    c.knobs = v;
    auto key = candidate_key(c);
    if (ctx.tree.contains(key) || !taken.insert(key).second) continue;
    auto cand = family_candidate(*f, ctx.spec, v, describe(m));
    if (!sources.insert(cand.source_hash).second) continue;
    out.push_back(std::move(cand));
  }
  return out;
}

}  // namespace kf
