#include "report/run_summary.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "util/term.h"

namespace kf {
namespace {

bool counts(const gate_check& k, const std::string* case_name) {
  if (k.advisory || is_missing_history(k)) return false;
  return !case_name || k.case_name.empty() || k.case_name == *case_name;
}

check_outcome worst(const workload_result& w, const std::string* case_name) {
  check_outcome o = w.error.empty() ? check_outcome::passed : check_outcome::error;
  for (auto& k : w.checks)
    if (counts(k, case_name) && outcome_severity(k.outcome) > outcome_severity(o)) o = k.outcome;
  return o;
}

}  // namespace

bool is_missing_history(const gate_check& k) {
  return k.kind == "regression" && k.against == "history" && k.outcome == check_outcome::skipped;
}

check_outcome headline_outcome(const workload_result& w) { return worst(w, nullptr); }
check_outcome headline_outcome(const workload_result& w, const std::string& case_name) { return worst(w, &case_name); }

std::vector<const gate_check*> checks_with(const workload_result& w, const std::string& case_name, check_outcome o) {
  std::vector<const gate_check*> out;
  for (auto& k : w.checks)
    if (counts(k, &case_name) && k.outcome == o) out.push_back(&k);
  return out;
}

run_summary summarize_run(const run_result& r) {
  run_summary s;
  s.workloads = static_cast<int>(r.workloads.size());
  std::map<std::string, int> why;
  for (auto& w : r.workloads) {
    if (w.verify.verdict != "not_run") ++s.verified;
    for (auto& k : w.checks)
      if (is_missing_history(k)) {
        ++s.history_missing;
        ++why[k.sentence];
      }
    switch (headline_outcome(w)) {
      case check_outcome::passed: ++s.passed; break;
      case check_outcome::failed: ++s.failed; break;
      case check_outcome::error: ++s.errors; break;
      case check_outcome::inconclusive: ++s.inconclusive; break;
      case check_outcome::skipped: ++(w.kernel_path.empty() ? s.no_kernel : s.skipped); break;
    }
  }
  int most = 0;
  for (auto& [sentence, n] : why)
    if (n > most) most = n, s.history_why = sentence;
  s.status = s.failed               ? "failed"
             : s.errors || !r.complete ? "error"
             : s.verified == 0      ? "nothing verified"
             : s.inconclusive       ? "inconclusive"
             : s.skipped            ? "skipped checks"
                                    : "passed";
  return s;
}

void print_run_summary(const run_result& r, int exit_code) {
  for (auto& w : r.workloads) {
    check_outcome oc = headline_outcome(w);
    std::string mark = oc == check_outcome::passed         ? term::green("pass")
                       : oc == check_outcome::failed       ? term::red("FAIL")
                       : oc == check_outcome::error        ? term::red("ERROR")
                       : oc == check_outcome::inconclusive ? term::yellow("?")
                       : w.kernel_path.empty()             ? term::yellow("none")
                                                           : term::yellow("warn");
    term::say("{:<5} {}", mark, w.name);
    for (auto& c : w.checks)
      if (!c.advisory && c.outcome != check_outcome::passed && !is_missing_history(c))
        term::say("      {}: {}", c.test_name(), c.sentence);
    if (!w.error.empty()) term::say("      {}", w.error);
  }
  run_summary s = summarize_run(r);
  if (s.history_missing > 0)
    term::say("{} {} ({} regression check{} skipped)", term::yellow("no history:"), s.history_why, s.history_missing,
              s.history_missing == 1 ? "" : "s");
  std::string device = r.env.gpu_name.empty() ? r.env.gpu_key : r.env.gpu_name;
  std::string what = fmt::format("{} workload{} on {}", s.workloads, s.workloads == 1 ? "" : "s", device);
  if (s.no_kernel > 0) what += fmt::format("; {} without a kernel for {}, not verified", s.no_kernel, r.env.gpu_key);
  std::string status = s.status;
  if (exit_code == 2 && status != "failed") status = "error";  // a report that could not be written
  std::string word = status == "passed"                               ? term::green(status)
                     : status == "failed" || status == "error"        ? term::red(status)
                                                                      : term::yellow(status);
  term::say("kforge run: {} ({})", word, what);
}

}  // namespace kf
