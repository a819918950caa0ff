// The search tree and its policy (docs/design.md "Search"): UCT selection on the reward log(t_best_baseline / t),
// progressive widening, stagnation pruning. Pure logic: no timing, no compiling, no storage; the driver
// (search_driver) feeds it evaluation results and persists what it holds.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "search/family.h"

namespace kf {

enum class node_status { pending, compile_failed, verify_failed, screened, measured };
std::string_view node_status_name(node_status s);
std::optional<node_status> parse_node_status(std::string_view s);
inline bool is_failure(node_status s) { return s == node_status::compile_failed || s == node_status::verify_failed; }

// What a candidate is, as a proposer or a stored winner describes it.
struct candidate {
  std::string family;      // empty for a candidate with no family (an LLM rewrite, a stored kernel without knobs)
  knob_values knobs;
  std::string prompt;      // the LLM proposer's request, when it made this one
  std::string source;      // the translation unit
  std::string source_hash; // sha256 of source (dedup across the tree)
  std::string origin;      // "default", "stored:<gpu-key>", "template: vector_width 8->16", "llm:<model>",
                           // "llm-repair:<n>:<model>"
  std::string prompt_version;  // the LLM prompts that asked for it: "system:1 rewrite:1" (llm/prompt_files.h)
  std::string conversation;    // the LLM conversation that made it, as JSON: {"messages" (its answer last), "key",
                               // "temperature", "repair"}; a repair continues it
};

// The key that makes two candidates the same move: family + knobs, or the source hash without a family.
std::string candidate_key(const candidate& c);

struct node {
  int64_t id = 0;       // the tree's index (0 is the virtual root above the real roots)
  int64_t parent = 0;
  candidate cand;
  node_status status = node_status::pending;
  std::optional<double> time_us;  // its time (the gated cases' geometric mean) when screened or measured
  std::optional<double> reward;   // log(t_best_baseline / t); none for failures and pending nodes
  std::string detail;             // why it failed, in words
  std::vector<int64_t> children;
  // Backed-up statistics over the subtree (rebuilt by replaying results; never stored).
  int visits = 0;       // results in the subtree (failures included)
  int rewarded = 0;     // results with a reward
  double value_sum = 0; // sum of rewards
  double best = -1e300; // best reward in the subtree
  int since_improvement = 0;  // results in the subtree since `best` last improved
  bool closed = false;        // stagnated (no improvement in K results) or exhausted
  bool exhausted = false;     // the proposer had nothing new for it
};

struct mcts_options {
  // UCT: Q + exploration * sqrt(ln N_parent / N_child). Rewards are log speedups (their spread across a
  // family's variants is typically 0.05-1), so the constant is below the textbook sqrt(2).
  double exploration = 0.4;
  // Progressive widening: a node may have ceil(widening_c * max(visits, 1)^widening_alpha) children.
  double widening_c = 1.5;
  double widening_alpha = 0.5;
  // Stagnation pruning: a subtree with no better reward in this many results is closed.
  int stagnation_k = 10;
  // An improvement must beat the previous best by this much (log units: 0.005 = 0.5 %).
  double min_improvement = 0.005;
};

class mcts_tree {
 public:
  explicit mcts_tree(mcts_options options = {});

  // Adds a node below `parent` (0 for a root). Returns its id.
  int64_t add(int64_t parent, candidate c);
  // Records a node's result and backs it up. `reward` must be set exactly for screened/measured. A failure of a
  // node that has children (a repair of it is on its way) is not backed up: only the last attempt of a repair
  // chain counts, backed up through the failed attempts above it.
  void record(int64_t id, node_status status, std::optional<double> time_us, std::optional<double> reward,
              std::string detail = {});
  // The proposer had nothing new for this node: it will not be widened again.
  void mark_exhausted(int64_t id);
  // Opens every subtree stagnation closed again, each with a fresh count (the search calls it when nothing is left
  // to select but time and budget are: stagnation orders the search, it does not end it). Returns how many it
  // opened; 0 when every closed node is exhausted, and the tree is then converged.
  int reopen_stagnant();

  // The node to expand next: descend by UCT from the virtual root while the current node may not widen;
  // nullopt when every subtree is closed. Roots are chosen among the virtual root's children only. A failed node
  // is not expanded (the descent passes through one that has children, its repairs, to them), except a failed
  // root while nothing in the tree has passed (rescuing()).
  std::optional<int64_t> select() const;
  // Every candidate so far failed (none has a reward): the failed roots are the search's only leads, and each may
  // be expanded as a measured node would (a verification failure is often one knob's numerics or one strategy's
  // edge case, which a neighbouring variant does not share), until something passes.
  bool rescuing() const;
  // How many children a node may have now.
  int children_allowed(const node& n) const;
  double uct(const node& child, const node& parent) const;

  const node& at(int64_t id) const { return m_nodes.at(static_cast<size_t>(id)); }
  const std::vector<node>& nodes() const { return m_nodes; }
  size_t size() const { return m_nodes.size() - 1; }  // real nodes
  // Whether a candidate with this key is already in the tree (any status).
  bool contains(const std::string& key) const;
  std::optional<int64_t> find(const std::string& key) const;
  // The node with the best reward, if any has one.
  std::optional<int64_t> best() const;
  // Ids from a root down to `id`.
  std::vector<int64_t> lineage(int64_t id) const;
  const mcts_options& options() const { return m_options; }

 private:
  bool can_descend(const node& n, bool rescue) const;
  bool may_widen(const node& n, bool rescue) const;
  void close_if_stagnant(node& n);

  mcts_options m_options;
  std::vector<node> m_nodes;
};

}  // namespace kf
