// Evaluating candidates for the search: compile, verify, time. The search sees only this interface, so its
// logic is tested with a deterministic fake; worker_evaluator.{h,cpp} is the real one.
// Multi-fidelity: a quick screen (one gated case verified and timed briefly) for every candidate, then the
// full protocol (every case, >= 3 seeds, full measure) only for those whose screen time could win.
#pragma once
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/run_result.h"
#include "search/mcts.h"
#include "search/search_db.h"

namespace kf {

// Steady-clock seconds: the clock of evaluate()'s stop_at_s.
inline double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Whether evaluate() leaves out the i-th candidate of its batch for `stop_at_s` (see there): every one but the
// first, once the time has come.
inline bool left_out(size_t i, double stop_at_s) { return i > 0 && stop_at_s > 0 && steady_seconds() >= stop_at_s; }

struct eval_result {
  // compile_failed | verify_failed | screened | measured; pending: not evaluated (the batch ran out of time)
  node_status status = node_status::pending;
  std::map<std::string, double> case_us;       // median time per gated case (screened or measured)
  std::string detail;                          // why it failed, or a summary
  std::vector<evaluation_row> stages;          // what was done (for the search db)
  nlohmann::json results = nlohmann::json::object();  // per-case numbers, verify summary, resources
};

class evaluator {
 public:
  virtual ~evaluator() = default;
  // The baselines' times: {"eager": {"<case>": us}, ...} over the gated cases; {} when none could be timed.
  virtual nlohmann::json baselines() = 0;
  // Evaluates a batch (compiled in parallel). `full_below_us`: a candidate whose screened time (geometric
  // mean over gated cases) is below this goes through the full protocol; +inf sends every one. `stop_at_s`
  // (steady_seconds(); 0: none): a candidate after the first not started by then is left out, its result
  // `pending`, so that a time limit costs at most the one candidate in progress rather than the rest of a batch.
  virtual std::vector<eval_result> evaluate(const std::vector<candidate>& batch, double full_below_us,
                                            double stop_at_s) = 0;
  // The full protocol for one candidate (a screened winner is confirmed before it is written).
  virtual eval_result confirm(const candidate& c) = 0;
  // The environment to store with a winner (device, versions).
  virtual nlohmann::json environment() = 0;
  // The winner timed as `kforge run` times a stored kernel: beside the baselines (and beside `stored`, this GPU
  // key's stored kernel, when given) in one interleaved measurement that stops on the gate's questions, one
  // case_result per gated case with the winner named "kernel" and the stored kernel "stored". The search's
  // verdict on its winner is then the gate's own beats rule on these (search_driver.cpp). `cases` empty when
  // this evaluator cannot (the tests' fakes) or the measurement failed; `why` says which.
  struct beside_baselines {
    std::vector<case_result> cases;
    std::string why;
  };
  virtual beside_baselines time_beside_baselines(const candidate& winner, const candidate* stored) {
    (void)winner, (void)stored;
    return {{}, "this evaluator does not time candidates beside the baselines"};
  }
};

// The geometric mean of per-case times (the tree's single number per node).
double geomean_us(const std::map<std::string, double>& case_us);

// log(t_best_baseline / t) averaged over the gated cases that have both; with no baseline time at all,
// log(1 us / t) (still orders candidates, and is stated as such in the summary).
double reward_of(const std::map<std::string, double>& case_us, const nlohmann::json& baselines);

// The fastest baseline per case: {"<case>": {"name": "compile", "us": 81.9}}.
nlohmann::json best_baselines(const nlohmann::json& baselines);

}  // namespace kf
