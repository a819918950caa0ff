// How a run reads at a glance: the counts and the one status word shared by the Markdown and HTML headlines and
// `kforge run`'s last console line. A run that verified no kernel reads "nothing verified", never "passed"; a
// regression check skipped only because there is no history is said once, not once per case (#19).
#pragma once
#include <string>
#include <vector>

#include "report/run_result.h"

namespace kf {

// A regression check skipped because there was no history to compare with (no note, no entry for the key or
// workload, no samples of the case in it).
bool is_missing_history(const gate_check& k);
// The worst non-advisory check of `w`, leaving out missing-history skips; error when `w.error` is set.
check_outcome headline_outcome(const workload_result& w);
// The same over the checks of one case and the workload-wide ones.
check_outcome headline_outcome(const workload_result& w, const std::string& case_name);
// The non-advisory checks of case `case_name` (and workload-wide ones) with outcome `o`, missing-history skips left out.
std::vector<const gate_check*> checks_with(const workload_result& w, const std::string& case_name, check_outcome o);

struct run_summary {
  int workloads = 0;
  // Workloads by headline_outcome; `no_kernel`: nothing stored for this GPU key (and not required), so not verified.
  int passed = 0, failed = 0, errors = 0, inconclusive = 0, skipped = 0, no_kernel = 0;
  int verified = 0;              // workloads whose kernel went through verification (passed or failed)
  int history_missing = 0;       // regression checks skipped for want of history
  std::string history_why;       // the reason most of them gave
  // "passed" | "failed" | "error" | "nothing verified" | "inconclusive" | "skipped checks"
  std::string status;
};
run_summary summarize_run(const run_result& r);

// `kforge run`'s console summary: a line per workload (its checks that did not pass, missing history left out),
// one line for missing history, and the last line "kforge run: <status> (...)". `exit_code` is what the run exits.
void print_run_summary(const run_result& r, int exit_code);

}  // namespace kf
