// A proposer turns a node of the search tree into candidate children. It never compiles or times anything
// (docs/design.md "Search": template | llm). Proposers are entries in a table keyed by name.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "search/mcts.h"
#include "spec/spec.h"

namespace kf {

struct proposer_context {
  const workload_spec& spec;
  device_kind device;
  const mcts_tree& tree;
  int64_t node_id;      // the node to expand (for repair: the node that failed)
  int max_children = 1; // how many to return at most
};

// Why a candidate failed, in words a model can act on (search_driver.h failure_of): what happened and the
// evidence, the compiler's output (trimmed) or the verifier's rule, case and first wrong element.
struct failure_report {
  std::string what;     // "did not compile", "failed verification", "was rejected by the static scan", ...
  std::string message;
};

// What a proposer is made with: its seed, and for the llm proposer where its answers come from and go.
struct proposer_options {
  uint64_t seed = 1;
  std::string llm_record;       // --record-llm: write every request and answer here (JSON lines)
  bool llm_record_append = false;
  std::string llm_replay;       // --replay-llm: answer from this file instead of an endpoint
  bool llm_replay_follow = true;  // ... and expand the nodes the recorded search expanded (not when resuming)
};

class proposer {
 public:
  virtual ~proposer() = default;
  virtual std::string name() const = 0;
  // New children for ctx.node_id: each with its source and source_hash set, none whose candidate_key is already
  // in the tree. Empty when the node has nothing more to offer.
  virtual std::vector<candidate> propose(const proposer_context& ctx) = 0;
  // A proposer that replays a recorded search names the node that search expanded next (its tree id), so that
  // the replay makes the same choices whatever times it measures; nullopt: the tree policy chooses (mcts select).
  virtual std::optional<int64_t> next_node(const mcts_tree& tree) {
    (void)tree;
    return std::nullopt;
  }
  // How many repairs a failed candidate of this proposer gets before it counts as failed (0: none, the default).
  virtual int max_repairs() const { return 0; }
  // A fix for the failed node ctx.node_id, told why it failed: its `number`-th repair (1..max_repairs()), which
  // the driver adds as its child. nullopt when there is none (the failure then stands).
  virtual std::optional<candidate> repair(const proposer_context& ctx, const failure_report& why, int number) {
    (void)ctx, (void)why, (void)number;
    return std::nullopt;
  }
};

struct proposer_entry {
  const char* name;
  const char* summary;
  std::function<std::unique_ptr<proposer>(const proposer_options&)> make;
};
// The proposer table (template is the offline default). Throws user_error for an unknown name, or for options the
// proposer cannot use (llm: no endpoint and no replay file, an unreadable replay file).
const std::vector<proposer_entry>& proposers();
std::unique_ptr<proposer> make_proposer(const std::string& name, const proposer_options& options);
std::unique_ptr<proposer> make_proposer(const std::string& name, uint64_t seed);

// The candidate a family emits for knobs (source and hash filled in).
candidate family_candidate(const family& f, const workload_spec& spec, const knob_values& v, std::string origin);

}  // namespace kf
