// The gate (docs/design.md "Gate"): turns a workload's verification and timings into checks with verdicts.
// correctness (verify[<case>]), must_beat (beats[<baseline>][<case>]), regression against the merge-base's
// kernel measured in the same run or the history note (regression[<case>]), and a missing kernel (kernel).
// Missing history or kernel is reported as a check, never passed in silence.
#pragma once
#include <string>

#include "report/run_result.h"
#include "spec/spec.h"

namespace kf {

// The gate's statistics (docs/statistics.md): every comparison is a ratio of two series timed interleaved in
// the same worker, answered from paired rounds with a sign-test interval (measure/ratio_test.h), alpha spent over
// the looks the sequential stopping rule took; regression checks of a run are held to a false discovery rate.
// A check with its fields filled (the gate's and the e2e gate's checks are made this way).
gate_check make_gate_check(std::string kind, std::string case_name, std::string against, check_outcome o,
                           std::string sentence, nlohmann::json numbers = nlohmann::json::object());

struct gate_options {
  double alpha = 0.01;          // per question over all its looks; the run's false discovery rate for regressions
  double resolution = 0.01;     // an interval tighter than +-1 % decides a question even when it straddles the line
  int first_look = 16;          // the sequential rule's first look (pairs), then 2x, 4x, ...
  int min_samples = 10;         // per side, for a regression or must_beat call
  bool require_history = false; // no history to compare with fails the regression check (else: skipped)
  double floor_slack = 0.95;    // a kernel median below floor * slack is faster than physically possible
  double floor_band = 0.05;     // must_beat: a tie (at most `resolution` slower, at 1 - alpha) with a baseline
                                // passes when both medians are within this fraction above the case's floor
};

// What the regression check compares against when the merge-base's kernel was not measured in this run.
struct history_context {
  const workload_result* previous = nullptr;  // this workload in the history note for this GPU key
  std::string origin;                         // "history note of 1a2b3c4 (merge-base of origin/main)"
  std::string missing_why;                    // when previous is null: why there is nothing to compare with
};

// Replaces w.checks with the gate's checks for this workload. `policy` is the spec's gate section.
void apply_gate(workload_result& w, const gate_spec& policy, const history_context& history,
                const gate_options& options = {});

// Benjamini-Hochberg over every regression check of the run that was measured against the base in this run:
// one that looked significant on its own fails only when it stays significant at the run's false discovery rate
// (otherwise it is inconclusive, saying why). Call once after every workload's apply_gate.
void apply_false_discovery_control(run_result& r, const gate_options& options = {});

// The `stopping` questions the gate will ask of one case's measurement: each baseline against the kernel
// (threshold 1) and, with a base kernel, the kernel against it (threshold 1 + max_regression).
nlohmann::json gate_questions(const std::vector<std::string>& baselines, bool with_base, double max_regression);

// The individual checks (exposed for tests and for `kforge check`).
// `against`: "base" (the merge-base's kernel, measured in this run) or "history" (a stored note).
gate_check regression_check(const case_result& current, const sample_series* before, std::string_view against,
                            std::string_view before_origin, double max_regression, const gate_options& options);
gate_check beats_check(const case_result& c, std::string_view baseline, bool required, const gate_options& options);

}  // namespace kf
