#include "search/mcts.h"

#include <cmath>

#include "util/error.h"

namespace kf {

namespace {
constexpr std::pair<node_status, std::string_view> k_status_names[] = {
    {node_status::pending, "pending"},
    {node_status::compile_failed, "compile_failed"},
    {node_status::verify_failed, "verify_failed"},
    {node_status::screened, "screened"},
    {node_status::measured, "measured"},
};
}  // namespace

std::string_view node_status_name(node_status s) {
  for (auto& [k, v] : k_status_names)
    if (k == s) return v;
  return "?";
}

std::optional<node_status> parse_node_status(std::string_view s) {
  for (auto& [k, v] : k_status_names)
    if (v == s) return k;
  return std::nullopt;
}

std::string candidate_key(const candidate& c) {
  if (c.family.empty()) return "source:" + c.source_hash;
  std::string k = c.family + ":";
  for (auto& [name, value] : c.knobs) k += name + "=" + value + ",";
  return k;
}

mcts_tree::mcts_tree(mcts_options options) : m_options(options) {
  m_nodes.emplace_back();  // the virtual root
}

int64_t mcts_tree::add(int64_t parent, candidate c) {
  KF_ASSERT(parent >= 0 && parent < static_cast<int64_t>(m_nodes.size()), "no parent node {}", parent);
  node n;
  n.id = static_cast<int64_t>(m_nodes.size());
  n.parent = parent;
  n.cand = std::move(c);
  m_nodes.push_back(std::move(n));
  m_nodes[static_cast<size_t>(parent)].children.push_back(m_nodes.back().id);
  return m_nodes.back().id;
}

void mcts_tree::record(int64_t id, node_status status, std::optional<double> time_us, std::optional<double> reward,
                       std::string detail) {
  KF_ASSERT(id > 0 && id < static_cast<int64_t>(m_nodes.size()), "no node {}", id);
  bool rewarded = status == node_status::screened || status == node_status::measured;
  KF_ASSERT(rewarded == reward.has_value(), "node {}: a reward goes with screened/measured only", id);
  node& n = m_nodes[static_cast<size_t>(id)];
  // A verdict only gets worse: a failed node stays failed.
  if (is_failure(n.status)) return;
  bool first = n.status == node_status::pending;
  n.status = status;
  n.time_us = time_us;
  n.reward = reward;
  n.detail = std::move(detail);
  if (!first) return;  // a re-measure (screened -> measured) refines the values without a second back-up
  if (is_failure(status) && !n.children.empty()) return;  // repaired: its last repair's result counts instead
  for (int64_t a = id;; a = m_nodes[static_cast<size_t>(a)].parent) {
    node& x = m_nodes[static_cast<size_t>(a)];
    ++x.visits;
    if (reward) {
      ++x.rewarded;
      x.value_sum += *reward;
    }
    if (reward && (x.rewarded == 1 || *reward > x.best + m_options.min_improvement)) {
      x.best = std::max(x.best, *reward);
      x.since_improvement = 0;
    } else {
      if (reward) x.best = std::max(x.best, *reward);
      ++x.since_improvement;
      close_if_stagnant(x);
    }
    if (a == 0) break;
  }
}

void mcts_tree::close_if_stagnant(node& n) {
  if (n.id != 0 && n.since_improvement >= m_options.stagnation_k) n.closed = true;
}

void mcts_tree::mark_exhausted(int64_t id) { m_nodes.at(static_cast<size_t>(id)).exhausted = true; }

int mcts_tree::reopen_stagnant() {
  int opened = 0;
  for (auto& n : m_nodes) {
    if (!n.closed) continue;
    n.closed = false;
    n.since_improvement = 0;
    ++opened;
  }
  // A subtree with nothing left to grow stays shut in effect: can_descend sees every node below it exhausted.
  return select() ? opened : 0;
}

int mcts_tree::children_allowed(const node& n) const {
  double v = std::max(n.visits, 1);
  return static_cast<int>(std::ceil(m_options.widening_c * std::pow(v, m_options.widening_alpha)));
}

double mcts_tree::uct(const node& child, const node& parent) const {
  double q = child.rewarded ? child.value_sum / child.rewarded : 0.0;
  double np = std::max(parent.visits, 1), nc = std::max(child.visits, 1);
  return q + m_options.exploration * std::sqrt(std::log(np) / nc);
}

bool mcts_tree::rescuing() const {
  for (size_t i = 1; i < m_nodes.size(); ++i)
    if (m_nodes[i].reward) return false;
  return true;
}

// Whether the proposer may add children to this node: an open, unexhausted real node that passed, or a failed root
// while the tree is rescuing.
bool mcts_tree::may_widen(const node& n, bool rescue) const {
  if (n.id == 0 || n.exhausted || n.closed) return false;
  return !is_failure(n.status) || (rescue && n.parent == 0);
}

// A node the descent may enter: it has a reward (or is a failed root being rescued), is open, and can still grow
// (itself or below).
bool mcts_tree::can_descend(const node& n, bool rescue) const {
  if (n.closed) return false;
  if (!n.reward && !is_failure(n.status)) return false;  // pending: nothing to go by yet
  if (may_widen(n, rescue)) return true;
  for (auto c : n.children)  // a failed attempt: through to its repairs; a passed one: below it
    if (can_descend(at(c), rescue)) return true;
  return false;
}

std::optional<int64_t> mcts_tree::select() const {
  const bool rescue = rescuing();
  int64_t id = 0;
  for (;;) {
    const node& n = at(id);
    const bool widen = may_widen(n, rescue);
    if (widen && static_cast<int>(n.children.size()) < children_allowed(n)) return id;
    const node* pick = nullptr;
    double best = 0;
    for (auto c : n.children) {
      const node& ch = at(c);
      if (!can_descend(ch, rescue)) continue;
      // Rescuing, every root failed and none has a value: the one with the fewest children next, so that each
      // root's neighbours get tried in turn.
      double u = rescue && id == 0 ? -static_cast<double>(ch.children.size()) : uct(ch, n);
      if (!pick || u > best) {
        pick = &ch;
        best = u;
      }
    }
    if (!pick) {
      // Nothing below to enter (children pending or failed): widen beyond the limit rather than stall.
      if (widen) return id;
      return std::nullopt;
    }
    id = pick->id;
  }
}

bool mcts_tree::contains(const std::string& key) const { return find(key).has_value(); }

std::optional<int64_t> mcts_tree::find(const std::string& key) const {
  for (size_t i = 1; i < m_nodes.size(); ++i)
    if (candidate_key(m_nodes[i].cand) == key) return m_nodes[i].id;
  return std::nullopt;
}

std::optional<int64_t> mcts_tree::best() const {
  std::optional<int64_t> b;
  for (size_t i = 1; i < m_nodes.size(); ++i) {
    auto& n = m_nodes[i];
    if (!n.reward) continue;
    // a measured result outranks a screened one (its time comes from the full protocol)
    auto rank = [](const node& x) { return std::make_pair(x.status == node_status::measured, *x.reward); };
    if (!b || rank(n) > rank(at(*b))) b = n.id;
  }
  return b;
}

std::vector<int64_t> mcts_tree::lineage(int64_t id) const {
  std::vector<int64_t> out;
  for (int64_t a = id; a != 0; a = at(a).parent) out.insert(out.begin(), a);
  return out;
}

}  // namespace kf
