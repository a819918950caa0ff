// One search: the loop that ties the tree (mcts), a proposer, an evaluator and the search db together.
// Budget counts the search's evaluated nodes in total, so a resumed search goes on to the same budget.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gate/gate.h"
#include "search/dispatch.h"
#include "search/evaluator.h"
#include "search/mcts.h"
#include "search/proposer.h"
#include "search/search_db.h"

namespace kf {

struct search_options {
  int budget = 50;              // evaluated nodes in the search (all sessions); a repair is one too
  double time_s = 0;            // wall time of this session's search, from when its baselines are timed; 0: none
  std::string proposer = "template";
  std::string llm_record;       // --record-llm: the llm proposer writes every request and answer here
  std::string llm_replay;       // --replay-llm: ... and answers from this file instead of an endpoint
  bool resume = false;          // continue the stored search for this workload and GPU key
  bool fresh = false;           // delete the stored search and start over
  uint64_t seed = 1;
  int batch = 2;                // candidates proposed (and compiled in parallel) per round
  double full_margin = 0.10;    // screened within this fraction of the best time gets the full protocol
  mcts_options mcts;
  // After the search: a dispatch kernel of the candidates fastest on different sizes (search/dispatch.h),
  // evaluated with the full protocol as one more candidate; max_parts 1 turns it off.
  dispatch_options dispatch;
  std::function<bool()> stop_requested;  // polled between evaluations (SIGINT)
};

struct search_progress {
  int evaluations = 0, budget = 0, failures = 0;
  std::optional<double> best_us;
  nlohmann::json best_baselines;  // {"<case>": {"name", "us"}}
  nlohmann::json baselines;       // {"<baseline>": {"<case>": us}}
  std::optional<double> best_reward;
  double elapsed_s = 0, eta_s = -1;
};

struct search_outcome {
  int64_t search_id = 0;
  int evaluations = 0;          // evaluated nodes in the search
  int session_evaluations = 0;  // in this run
  std::string stop_reason;      // "budget", "time", "interrupted", "converged", "every candidate failed"
  int reopened = 0;             // times every subtree had stagnated and was opened again (time and budget left)
  std::optional<node_row> winner;           // confirmed (measured) best, if any
  // Whether the winner beat every `gate.must_beat` baseline the search timed, on every gated case. The winner
  // is the best such candidate when there is one, else the best overall (the gate will then fail). While the
  // search runs, candidates are ranked on medians timed apart from the baselines; the winner's answer is the
  // gate's: `verdict` holds its beats checks (gate/gate.h beats_check) on a measurement beside the baselines,
  // exactly as `kforge run` would judge it, and decides this flag (empty, with `verdict_why`, when that
  // measurement could not be taken: the flag then comes from the medians).
  bool winner_passes_gate = false;
  std::vector<gate_check> verdict;
  std::vector<case_result> verdict_cases;   // that measurement (winner "kernel", stored kernel "stored", baselines)
  std::string verdict_why;
  std::vector<node_row> lineage;            // roots -> winner
  std::optional<node_row> best_root;        // the best root (to compare the winner with)
  std::optional<node_row> stored_root;      // the root from this GPU key's stored kernel, when it was measured
  bool stored_root_passes_gate = false;     // by the same rule as the winner's, in the same measurement
  std::vector<double> trajectory;           // best time after each evaluation (us; NaN before the first)
  std::vector<std::string> failure_samples; // up to 3 distinct reasons candidates failed
  std::string dispatch_note;                // what the dispatch step planned and what its kernel measured
  nlohmann::json baselines;
  double baseline_seconds = 0;              // timing the baselines (a first torch.compile export: minutes), before --time runs
  nlohmann::json environment;
};

// Whether the search's winner should replace the kernel stored for this GPU key: it must be another candidate,
// faster than the stored one measured in the same search by more than `min_gain` (a fraction: 0.02 = 2 %), so
// noise does not churn the committed kernel, or pass the gate where the stored one does not. When not, `why`
// says why (with both times).
bool replaces_stored(const search_outcome& o, double min_gain, std::string* why);

// Why an evaluation failed, for the proposer that repairs it: what happened, and the evidence as the evaluator
// recorded it: the compiler's output (from its first error, trimmed to a few thousand characters), the static
// scan's findings, or the verifier's first failed check (rule, case, seed and the first wrong element it names)
// and the other checks that failed.
failure_report failure_of(const eval_result& r);

class search_driver {
 public:
  search_driver(const workload_spec& spec, device_kind device, std::string gpu_key, search_db& db, evaluator& ev,
                search_options options);
  // Runs the search from `roots` (used only when the search is new). Throws user_error when a stored search
  // exists and neither resume nor fresh was asked for, or when the spec changed under a resumed search.
  search_outcome run(const std::vector<candidate>& roots,
                     const std::function<void(const search_progress&)>& on_progress = {});

 private:
  void open_search(const std::vector<candidate>& roots);
  int64_t add_node(int64_t parent_tree_id, candidate c);
  void evaluate_batch(const std::vector<int64_t>& tree_ids);
  // Records results of a batch; a failed candidate the proposer can repair first gets its repair as a child
  // (while the budget has room for it), so that its failure is not backed up (mcts_tree::record).
  void settle(const std::vector<std::pair<int64_t, eval_result>>& results);
  void apply(int64_t tree_id, const eval_result& r);
  double full_threshold() const;
  search_progress progress() const;
  search_outcome finish(std::string reason);
  bool passes_gate(int64_t tree_id) const;
  // The winner's verdict (search_outcome::verdict), and the stored kernel's in the same measurement.
  void judge_winner(search_outcome& o, int64_t winner, std::optional<int64_t> stored);
  std::optional<int64_t> winner_node(bool measured_only) const;
  // Plans a dispatch kernel over the timed candidates and, when the plan gains, evaluates it (a child of the best
  // single candidate); says what it did in `note`.
  void try_dispatch(std::string* note);
  // With dispatch on and gated cases of two sizes or more, every fourth node to expand is the one fastest on a
  // single case (the cases in turn): the tree's geometric mean alone stays near the candidate that is best
  // overall, and a dispatch kernel needs each size's best too. nullopt on the other turns.
  std::optional<int64_t> case_best_node();
  // A node a dispatch kernel may take as a part: a timed candidate of a family of this device.
  bool dispatch_part(const node& n) const;
  // The bytes of the inputs of every case some candidate was timed on (dispatch.h input_bytes), by case name.
  std::map<std::string, int64_t> timed_case_bytes() const;

  const workload_spec& m_spec;
  device_kind m_device;
  std::string m_gpu_key;
  search_db& m_db;
  evaluator& m_ev;
  search_options m_options;
  std::unique_ptr<proposer> m_proposer;
  mcts_tree m_tree;
  search_row m_search;
  std::vector<int64_t> m_db_id;  // tree id -> db id
  std::vector<double> m_trajectory_best;
  std::map<int64_t, std::map<std::string, double>> m_case_us;  // tree id -> per-case times
  int m_evaluated = 0, m_session = 0, m_failures = 0, m_reopened = 0;
  int64_t m_case_turn = 0;  // case_best_node's count of expansions
  int m_next_dispatch = 0;  // the evaluation count at which a dispatch plan is next tried during the search
  std::string m_dispatch_note;  // what the last plan tried during the search did
  double m_started = 0;
  double m_baseline_s = 0;  // open_search: timing the baselines
};

}  // namespace kf
