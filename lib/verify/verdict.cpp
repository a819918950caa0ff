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
      {"static.process", rule_stage::static_scan,
       "no process calls (system, fork, exec, exit, abort, signals, raw system calls)"},
      {"static.network", rule_stage::static_scan, "no sockets, host name lookups, io_uring or HTTP clients"},
      {"static.l2_persistence", rule_stage::static_scan, "sets no L2 persistence window or limit"},
      {"static.dynamic_loading", rule_stage::static_scan, "loads no code at run time (dlopen, module loading, NVRTC)"},
      {"static.library_call", rule_stage::static_scan, "calls no torch/ATen/cuDNN/cuBLAS unless the spec allows it"},
      {"static.load_time_code", rule_stage::static_scan, "runs no code when loaded (constructors, init sections)"},
      {"static.include_path", rule_stage::static_scan,
       "includes no file by its own path (absolute or outside its folder): the compile would read it into the log"},
      {"static.pdl_wait", rule_stage::static_scan,
       "a launch with programmatic dependent launch waits for the previous grid before reading"},
      {"load", rule_stage::run, "the shared object loads and exports kf_launch"},
      {"crash", rule_stage::run, "the candidate does not crash its process"},
      {"hang", rule_stage::run, "the candidate finishes within the timeout"},
      {"exit", rule_stage::run, "the candidate does not end its process"},
      {"cuda_error", rule_stage::run, "no CUDA error, and the CUDA context stays usable"},
      {"worker_state", rule_stage::run,
       "the worker's own steps still work after the candidate ran (its memory or threads not corrupted)"},
      {"handles_input", rule_stage::run, "kf_launch accepts every case (returns 0)"},
      {"sandbox.network", rule_stage::run, "opens no socket and no io_uring (docs/sandbox.md)"},
      {"sandbox.process", rule_stage::run, "starts no process and leaves its process group alone"},
      {"sandbox.exec", rule_stage::run, "runs no program"},
      {"sandbox.ptrace", rule_stage::run, "traces and reads no other process"},
      {"sandbox.signal", rule_stage::run, "signals no other process and keeps the sandbox's SIGSYS handler"},
      {"sandbox.file", rule_stage::run, "opens files for writing only in its scratch folder"},
      {"sandbox.system", rule_stage::run, "no namespaces, mounts, kernel modules, bpf or keyrings"},
      {"sandbox.library", rule_stage::run, "loads no library and maps no file as code while it runs"},
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
  // One line per rule that passed everywhere (with the worst number for `match`), one line per case where a rule
  // failed or was skipped (with the first such check's evidence). Rules in table order, cases in first-seen order.
  std::string out;
  for (auto& rule : verify_rules()) {
    std::vector<const check*> mine;
    for (auto& c : m_checks)
      if (c.rule == rule.name) mine.push_back(&c);
    if (mine.empty()) continue;
    std::vector<std::string> cases;
    for (auto* c : mine)
      if (std::find(cases.begin(), cases.end(), c->case_name) == cases.end()) cases.push_back(c->case_name);
    if (status_of(rule.name) == check_status::passed) {
      const check* shown = mine.front();
      for (auto* c : mine)  // the closest call: the largest error ratio, else the first words there are
        if (c->numbers.value("error_ratio", -1.0) > shown->numbers.value("error_ratio", -1.0) ||
            (shown->detail.empty() && !c->detail.empty()))
          shown = c;
      std::string scope = cases.size() == 1 && cases[0].empty()
                              ? ""
                              : fmt::format("{} case{}, {} checks", cases.size(), cases.size() == 1 ? "" : "s", mine.size());
      std::string detail = shown->detail;
      if (!detail.empty() && !shown->case_name.empty() && cases.size() > 1) detail = shown->case_name + ": " + detail;
      out += fmt::format("  {:<4}  {:<24} {:<22} {}\n", "ok", rule.name, scope, detail);
      continue;
    }
    for (auto& name : cases) {
      check_status worst = status_of(rule.name, name);
      if (worst == check_status::passed) continue;
      int n = 0, bad = 0;
      const check* first = nullptr;
      for (auto* c : mine) {
        if (c->case_name != name) continue;
        ++n;
        if (c->status == worst) {
          ++bad;
          if (!first) first = c;
        }
      }
      std::string scope = name.empty() ? "" : fmt::format("{} ({}/{})", name, bad, n);
      std::string detail = first->detail + (first->seed >= 0 ? fmt::format(" (seed {})", first->seed) : "");
      out += fmt::format("  {:<4}  {:<24} {:<22} {}\n", worst == check_status::failed ? "FAIL" : "skip", rule.name,
                         scope, detail);
    }
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
