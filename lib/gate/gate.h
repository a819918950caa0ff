// The gate (DESIGN.md "Gate"): turns a workload's verification and timings into checks with verdicts.
// correctness (verify[<case>]), must_beat (beats[<baseline>][<case>]), regression against the merge-base's
// kernel measured in the same run or the history note (regression[<case>]), and a missing kernel (kernel).
// Missing history or kernel is reported as a check, never passed in silence.
#pragma once
#include <string>

#include "report/run_result.h"
#include "spec/spec.h"

namespace kf {

struct gate_options {
  double alpha = 0.01;          // Mann-Whitney U p-value below which a difference is significant
  int min_samples = 10;         // per side, for a regression or must_beat call
  bool require_history = false; // no history to compare with fails the regression check (else: skipped)
  double floor_slack = 0.95;    // a kernel median below floor * slack is faster than physically possible
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

// The individual checks (exposed for tests and for `kforge check`).
// `against`: "base" (the merge-base's kernel, measured in this run) or "history" (a stored note).
gate_check regression_check(const case_result& current, const sample_series* before, std::string_view against,
                            std::string_view before_origin, double max_regression, const gate_options& options);
gate_check beats_check(const case_result& c, std::string_view baseline, bool required, const gate_options& options);

}  // namespace kf
