// A proposer turns a node of the search tree into candidate children. It never compiles or times anything
// (docs/design.md "Search": template | llm). Proposers are entries in a table keyed by name.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "search/mcts.h"
#include "spec/spec.h"

namespace kf {

struct proposer_context {
  const workload_spec& spec;
  device_kind device;
  const mcts_tree& tree;
  int64_t node_id;      // the node to expand
  int max_children = 1; // how many to return at most
};

class proposer {
 public:
  virtual ~proposer() = default;
  virtual std::string name() const = 0;
  // New children for ctx.node_id: each with its source and source_hash set, none whose candidate_key is already
  // in the tree. Empty when the node has nothing more to offer.
  virtual std::vector<candidate> propose(const proposer_context& ctx) = 0;
};

struct proposer_entry {
  const char* name;
  const char* summary;
  std::function<std::unique_ptr<proposer>(uint64_t seed)> make;
};
// The proposer table (template is the offline default). Throws user_error for an unknown name.
const std::vector<proposer_entry>& proposers();
std::unique_ptr<proposer> make_proposer(const std::string& name, uint64_t seed);

// The candidate a family emits for knobs (source and hash filled in).
candidate family_candidate(const family& f, const workload_spec& spec, const knob_values& v, std::string origin);

}  // namespace kf
