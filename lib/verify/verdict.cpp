#include "verify/verdict.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "util/error.h"

namespace kf {

std::string_view rule_stage_name(rule_stage s) {
  switch (s) {
    case rule_stage::compile: return "compile";
    case rule_stage::static_scan: return "static";
    case rule_stage::run: return "run";
    case rule_stage::dynamic: return "dynamic";
    case rule_stage::timing: return "timing";
  }
  return "?";
}

const std::vector<rule_info>& verify_rules() {
  static const std::vector<rule_info> table = {
      {"compiles", rule_stage::compile, "the source compiles and links against kf_abi.h alone"},
      {"static.stream_creation", rule_stage::static_scan, "creates no stream and uses no implicit stream"},
      {"static.thread_creation", rule_stage::static_scan, "creates no thread and registers no host callback"},
      {"static.device_sync", rule_stage::static_scan, "no device-wide synchronization or synchronous allocation/copy"},
      {"static.default_stream", rule_stage::static_scan, "every launch and async copy names the given stream"},
      {"static.host_io", rule_stage::static_scan, "no host or device I/O (printf, files, streams, environment)"},
      {"static.process", rule_stage::static_scan, "no process calls (system, fork, exec, exit, abort, signals)"},
      {"static.l2_persistence", rule_stage::static_scan, "sets no L2 persistence window or limit"},
      {"static.dynamic_loading", rule_stage::static_scan, "loads no code at run time (dlopen, module loading, NVRTC)"},
      {"static.library_call", rule_stage::static_scan, "calls no torch/ATen/cuDNN/cuBLAS unless the spec allows it"},
      {"static.load_time_code", rule_stage::static_scan, "runs no code when loaded (constructors, init sections)"},
      {"load", rule_stage::run, "the shared object loads and exports kf_launch"},
      {"crash", rule_stage::run, "the candidate does not crash its process"},
      {"hang", rule_stage::run, "the candidate finishes within the timeout"},
      {"exit", rule_stage::run, "the candidate does not end its process"},
      {"cuda_error", rule_stage::run, "no CUDA error, and the CUDA context stays usable"},
      {"handles_input", rule_stage::run, "kf_launch accepts every case (returns 0)"},
      {"match", rule_stage::dynamic, "outputs match the float64 reference within tolerance"},
      {"nan_inf", rule_stage::dynamic, "NaN and Inf appear exactly where the reference has them"},
      {"all_written", rule_stage::dynamic, "every output element is written (outputs are poisoned before each launch)"},
      {"inputs_unchanged", rule_stage::dynamic, "inputs are bitwise unchanged afterwards"},
      {"writes_outside_outputs", rule_stage::dynamic, "no write lands outside the outputs (guard bytes intact)"},
      {"reads_outside_inputs", rule_stage::dynamic, "results do not depend on memory beyond the inputs"},
      {"new_inputs", rule_stage::dynamic, "called again at the same addresses with new values, it gives the new answer"},
      {"deterministic", rule_stage::dynamic, "a rerun gives bitwise identical outputs"},
      {"stream", rule_stage::dynamic, "all work is done on the given stream (outputs final once it is synced)"},
      {"bandwidth_floor", rule_stage::timing, "its time is not below the bandwidth floor"},
  };
  return table;
}

const rule_info* find_rule(std::string_view name) {
  for (auto& r : verify_rules())
    if (r.name == name) return &r;
  return nullptr;
}

std::string_view check_status_name(check_status s) {
  switch (s) {
    case check_status::passed: return "passed";
    case check_status::skipped: return "skipped";
    case check_status::failed: return "failed";
  }
  return "?";
}

nlohmann::json check::to_json() const {
  nlohmann::json j = {{"rule", rule}, {"case", case_name}, {"seed", seed}, {"passed", passed()},
                      {"status", check_status_name(status)}, {"detail", detail}, {"numbers", numbers}};
  return j;
}

check check::from_json(const nlohmann::json& j) {
  check c;
  c.rule = j.value("rule", "");
  c.case_name = j.value("case", "");
  c.seed = j.value("seed", -1);
  std::string s = j.value("status", "");
  if (s == "skipped") c.status = check_status::skipped;
  else if (s == "failed" || (s.empty() && !j.value("passed", false))) c.status = check_status::failed;
  else c.status = check_status::passed;
  c.detail = j.value("detail", "");
  c.numbers = j.value("numbers", nlohmann::json::object());
  return c;
}

void verdict::add(check c) {
  KF_ASSERT(find_rule(c.rule), "check names unknown rule '{}'", c.rule);
  m_checks.push_back(std::move(c));
}

void verdict::pass(std::string rule, std::string case_name, int seed, std::string detail, nlohmann::json numbers) {
  add({std::move(rule), std::move(case_name), seed, check_status::passed, std::move(detail), std::move(numbers)});
}

void verdict::fail(std::string rule, std::string case_name, int seed, std::string detail, nlohmann::json numbers) {
  add({std::move(rule), std::move(case_name), seed, check_status::failed, std::move(detail), std::move(numbers)});
}

void verdict::merge(const verdict& other) {
  for (auto& c : other.m_checks) m_checks.push_back(c);
}

bool verdict::passed() const {
  return !m_checks.empty() && std::none_of(m_checks.begin(), m_checks.end(), [](auto& c) { return !c.passed(); });
}

std::vector<const check*> verdict::failures() const {
  std::vector<const check*> out;
  for (auto& c : m_checks)
    if (!c.passed()) out.push_back(&c);
  return out;
}

check_status verdict::status_of(std::string_view rule, std::string_view case_name) const {
  check_status worst = check_status::passed;
  for (auto& c : m_checks)
    if (c.rule == rule && (case_name.empty() || c.case_name == case_name)) worst = std::max(worst, c.status);
  return worst;
}

bool verdict::has(std::string_view rule) const {
  return std::any_of(m_checks.begin(), m_checks.end(), [&](auto& c) { return c.rule == rule; });
}

namespace {
std::string where(const check& c) {
  std::string s;
  if (!c.case_name.empty()) s += " on case " + c.case_name;
  if (c.seed >= 0) s += fmt::format(" seed {}", c.seed);
  return s;
}
}  // namespace

std::string verdict::first_failure() const {
  for (auto& c : m_checks)
    if (!c.passed()) return fmt::format("{}{}: {}", c.rule, where(c), c.detail);
  return {};
}

std::string verdict::text() const {
  // Group by (rule in table order, case in first-seen order); the worst status and its first detail win.
  struct row {
    check_status status = check_status::passed;
    int seeds = 0;
    std::string detail;
    int first_seen = 0;
  };
  std::map<std::pair<size_t, std::string>, row> rows;
  std::map<std::string, int> case_order;
  for (auto& c : m_checks) case_order.emplace(c.case_name, static_cast<int>(case_order.size()));
  for (auto& c : m_checks) {
    size_t rule_index = static_cast<size_t>(find_rule(c.rule) - verify_rules().data());
    auto& r = rows[{rule_index, c.case_name}];
    r.first_seen = case_order[c.case_name];
    ++r.seeds;
    std::string detail = c.detail;
    if (c.status == check_status::failed && c.seed >= 0) detail += fmt::format(" (seed {})", c.seed);
    if (r.seeds == 1 || c.status > r.status) {  // the first check with the worst status speaks for the row
      r.status = c.status;
      r.detail = detail;
    }
  }
  std::vector<std::pair<std::pair<size_t, std::string>, row>> ordered(rows.begin(), rows.end());
  std::stable_sort(ordered.begin(), ordered.end(), [](auto& a, auto& b) {
    return a.first.first != b.first.first ? a.first.first < b.first.first : a.second.first_seen < b.second.first_seen;
  });
  std::string out;
  for (auto& [key, r] : ordered) {
    std::string_view label = r.status == check_status::failed ? "FAIL" : r.status == check_status::skipped ? "skip" : "ok";
    std::string scope = key.second.empty() ? "" : key.second + (r.seeds > 1 ? fmt::format(" ({} checks)", r.seeds) : "");
    out += fmt::format("  {:<4}  {:<24} {:<28} {}\n", label, verify_rules()[key.first].name, scope, r.detail);
  }
  out += passed() ? "verdict: PASSED\n" : fmt::format("verdict: FAILED ({} failed check{})\n", failures().size(),
                                                      failures().size() == 1 ? "" : "s");
  return out;
}

nlohmann::json verdict::to_json() const {
  nlohmann::json checks = nlohmann::json::array();
  for (auto& c : m_checks) checks.push_back(c.to_json());
  return {{"passed", passed()}, {"checks", checks}};
}

verdict verdict::from_json(const nlohmann::json& j) {
  verdict v;
  for (auto& c : j.value("checks", nlohmann::json::array())) {
    check k = check::from_json(c);
    if (!find_rule(k.rule)) throw infra_error(fmt::format("verdict names unknown rule '{}'", k.rule));
    v.m_checks.push_back(std::move(k));
  }
  return v;
}

}  // namespace kf
