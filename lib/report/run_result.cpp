#include "report/run_result.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "util/error.h"
#include "util/fs.h"

namespace kf {
using json = nlohmann::json;

std::string_view impl_status_name(impl_status s) {
  switch (s) {
    case impl_status::ok: return "ok";
    case impl_status::skipped: return "skipped";
    case impl_status::failed: return "failed";
  }
  return "?";
}

std::string_view check_outcome_name(check_outcome o) {
  switch (o) {
    case check_outcome::passed: return "passed";
    case check_outcome::failed: return "failed";
    case check_outcome::skipped: return "skipped";
    case check_outcome::error: return "error";
    case check_outcome::inconclusive: return "inconclusive";
  }
  return "?";
}

int outcome_severity(check_outcome o) {
  switch (o) {
    case check_outcome::passed: return 0;
    case check_outcome::skipped: return 1;
    case check_outcome::inconclusive: return 2;
    case check_outcome::error: return 3;
    case check_outcome::failed: return 4;
  }
  return 4;
}
check_outcome worse(check_outcome a, check_outcome b) { return outcome_severity(a) >= outcome_severity(b) ? a : b; }

namespace {


template <typename E>
E parse_enum(const json& j, std::string_view field, std::initializer_list<E> all, std::string_view (*name)(E)) {
  std::string s = j.get<std::string>();
  for (E e : all)
    if (name(e) == s) return e;
  throw user_error(fmt::format("field '{}': unknown value '{}'", field, s));
}

// Summaries only: raw samples made the seed suite's JSON 33 MB (#19); they go to the --samples side file.
json series_json(const sample_series& s) {
  return {{"discarded", s.discarded},
          {"count", s.stats.count},
          {"median_us", round_sig(s.stats.median_us)},
          {"iqr_us", round_sig(s.stats.iqr_us)},
          {"min_us", round_sig(s.stats.min_us)},
          {"noise", round_sig(s.stats.noise, 3)},
          {"q1_us", round_sig(s.stats.q1_us)},
          {"q3_us", round_sig(s.stats.q3_us)},
          {"ci_lo_us", round_sig(s.stats.ci_lo_us)},
          {"ci_hi_us", round_sig(s.stats.ci_hi_us)}};
}

sample_series series_from(const json& j) {
  sample_series s;
  if (j.is_null()) return s;
  s.samples_us = j.value("samples_us", std::vector<double>{});  // only in runs written before kforge.samples/1
  s.discarded = j.value("discarded", 0);
  s.stats.count = j.value("count", static_cast<int>(s.samples_us.size()));
  s.stats.median_us = j.value("median_us", 0.0);
  s.stats.iqr_us = j.value("iqr_us", 0.0);
  s.stats.min_us = j.value("min_us", 0.0);
  s.stats.noise = j.value("noise", 0.0);
  s.stats.q1_us = j.value("q1_us", 0.0);
  s.stats.q3_us = j.value("q3_us", 0.0);
  s.stats.ci_lo_us = j.value("ci_lo_us", 0.0);
  s.stats.ci_hi_us = j.value("ci_hi_us", 0.0);
  return s;
}

json impl_json(const impl_result& i) {
  json j = {{"impl", i.impl}, {"status", impl_status_name(i.status)}};
  if (!i.why.empty()) j["why"] = i.why;
  j["cold"] = series_json(i.cold);
  if (i.hot.measured()) j["hot"] = series_json(i.hot);
  if (!i.description.empty()) j["description"] = i.description;
  if (i.details.is_object() && !i.details.empty()) {
    j["details"] = i.details;
    round_numbers(j["details"]);
  }
  return j;
}

impl_result impl_from(const json& j) {
  impl_result i;
  i.impl = j.at("impl").get<std::string>();
  i.status = parse_enum(j.at("status"), "status", {impl_status::ok, impl_status::skipped, impl_status::failed},
                        impl_status_name);
  i.why = j.value("why", "");
  if (j.contains("cold")) i.cold = series_from(j.at("cold"));
  if (j.contains("hot")) i.hot = series_from(j.at("hot"));
  i.description = j.value("description", "");
  if (j.contains("details") && j["details"].is_object()) i.details = j["details"];
  return i;
}

json rounded(const std::map<std::string, double>& m) {
  json j = json::object();
  for (auto& [k, v] : m) j[k] = round_sig(v);
  return j;
}

json case_json(const case_result& c) {
  json impls = json::array();
  for (auto& i : c.impls) impls.push_back(impl_json(i));
  return {{"name", c.name},
          {"metric", c.metric},
          {"floor",
           {{"bytes", c.floor.bytes},
            {"bandwidth_floor_us", round_sig(c.floor.bandwidth_floor_us)},
            {"physical_floor_us", round_sig(c.floor.physical_floor_us)},
            {"launch_floor_us", round_sig(c.floor.launch_floor_us)},
            {"floor_us", round_sig(c.floor.floor_us)},
            {"fraction", round_sig(c.floor.fraction, 4)}}},
          {"impls", impls},
          {"speedups", rounded(c.speedups)}};
}

case_result case_from(const json& j) {
  case_result c;
  c.name = j.at("name").get<std::string>();
  c.metric = j.value("metric", "cold");
  if (j.contains("floor")) {
    const json& f = j.at("floor");
    c.floor.bytes = f.value("bytes", 0.0);
    c.floor.bandwidth_floor_us = f.value("bandwidth_floor_us", 0.0);
    c.floor.physical_floor_us = f.value("physical_floor_us", 0.0);
    c.floor.launch_floor_us = f.value("launch_floor_us", 0.0);
    c.floor.floor_us = f.value("floor_us", 0.0);
    c.floor.fraction = f.value("fraction", 0.0);
  }
  for (auto& i : j.value("impls", json::array())) c.impls.push_back(impl_from(i));
  c.speedups = j.value("speedups", std::map<std::string, double>{});
  return c;
}

json verification_json(const verification& v) {
  json checks = json::array();
  // Empty fields are left out: a seed run has a thousand checks, most of them passed static rules.
  for (auto& c : v.checks) {
    json k = {{"rule", c.rule}, {"passed", c.passed}};
    if (!c.case_name.empty()) k["case"] = c.case_name;
    if (c.seed != 0) k["seed"] = c.seed;
    if (!c.detail.empty()) k["detail"] = c.detail;
    if (c.numbers.is_object() && !c.numbers.empty()) k["numbers"] = c.numbers;
    checks.push_back(std::move(k));
  }
  round_numbers(checks);
  json j = {{"verdict", v.verdict}, {"checks", checks}};
  if (!v.why.empty()) j["why"] = v.why;
  return j;
}

verification verification_from(const json& j) {
  verification v;
  v.verdict = j.value("verdict", "not_run");
  v.why = j.value("why", "");
  for (auto& c : j.value("checks", json::array())) {
    verify_check k;
    k.rule = c.at("rule").get<std::string>();
    k.case_name = c.value("case", "");
    k.seed = c.value("seed", int64_t{0});
    k.passed = c.value("passed", false);
    k.detail = c.value("detail", "");
    k.numbers = c.value("numbers", json::object());
    v.checks.push_back(std::move(k));
  }
  return v;
}

json check_json(const gate_check& c) {
  json j = {{"kind", c.kind}, {"name", c.test_name()}, {"outcome", check_outcome_name(c.outcome)},
            {"sentence", c.sentence}, {"numbers", c.numbers}};
  if (!c.case_name.empty()) j["case"] = c.case_name;
  if (!c.against.empty()) j["against"] = c.against;
  if (c.advisory) j["advisory"] = true;
  round_numbers(j["numbers"]);
  return j;
}

gate_check check_from(const json& j) {
  gate_check c;
  c.kind = j.at("kind").get<std::string>();
  c.case_name = j.value("case", "");
  c.against = j.value("against", "");
  c.outcome = parse_enum(j.at("outcome"), "outcome",
                         {check_outcome::passed, check_outcome::failed, check_outcome::skipped, check_outcome::error,
                          check_outcome::inconclusive},
                         check_outcome_name);
  c.sentence = j.value("sentence", "");
  c.advisory = j.value("advisory", false);
  c.numbers = j.value("numbers", json::object());
  return c;
}

json tree_json(const search_tree& t) {
  json nodes = json::array();
  for (auto& n : t.nodes)
    nodes.push_back({{"id", n.id}, {"parent", n.parent}, {"label", n.label}, {"status", n.status},
                     {"time_us", n.time_us}, {"reward", n.reward}, {"source", n.source}});
  return {{"workload", t.workload}, {"gpu_key", t.gpu_key}, {"nodes", nodes}};
}

search_tree tree_from(const json& j) {
  search_tree t;
  t.workload = j.value("workload", "");
  t.gpu_key = j.value("gpu_key", "");
  for (auto& n : j.value("nodes", json::array())) {
    search_node s;
    s.id = n.at("id").get<int64_t>();
    s.parent = n.value("parent", int64_t{-1});
    s.label = n.value("label", "");
    s.status = n.value("status", "");
    s.time_us = n.value("time_us", 0.0);
    s.reward = n.value("reward", 0.0);
    s.source = n.value("source", "");
    t.nodes.push_back(std::move(s));
  }
  return t;
}

}  // namespace

std::string gate_check::test_name() const {
  std::string n = kind;
  if (kind == "beats" && !against.empty()) n += "[" + against + "]";
  if (!case_name.empty()) n += "[" + case_name + "]";
  return n;
}

const impl_result* case_result::find(std::string_view impl) const {
  for (auto& i : impls)
    if (i.impl == impl) return &i;
  return nullptr;
}
impl_result* case_result::find(std::string_view impl) {
  for (auto& i : impls)
    if (i.impl == impl) return &i;
  return nullptr;
}

const case_result* workload_result::find_case(std::string_view n) const {
  for (auto& c : cases)
    if (c.name == n) return &c;
  return nullptr;
}

check_outcome workload_result::outcome() const {
  check_outcome o = error.empty() ? check_outcome::passed : check_outcome::error;
  for (auto& c : checks)
    if (!c.advisory) o = worse(o, c.outcome);
  return o;
}

const workload_result* run_result::find_workload(std::string_view n) const {
  for (auto& w : workloads)
    if (w.name == n) return &w;
  return nullptr;
}

check_outcome run_result::outcome() const {
  check_outcome o = complete ? check_outcome::passed : check_outcome::error;
  for (auto& w : workloads) o = worse(o, w.outcome());
  return o;
}

int run_result::exit_code() const {
  switch (outcome()) {
    case check_outcome::failed: return exit_gate_failed;
    case check_outcome::error: return exit_usage;
    default: return exit_ok;
  }
}

json to_json(const run_env& e) {
  json j = {{"gpu_key", e.gpu_key},
            {"gpu_name", e.gpu_name},
            {"device", e.device},
            {"sm_count", e.sm_count},
            {"sm_clock_mhz", e.sm_clock_mhz},
            {"mem_clock_mhz", e.mem_clock_mhz},
            {"l2_bytes", e.l2_bytes},
            {"driver", e.driver},
            {"cuda_runtime", e.cuda_runtime},
            {"cudnn", e.cudnn},
            {"torch", e.torch},
            {"compiler", e.compiler},
            {"kforge_version", e.kforge_version},
            {"git_commit", e.git_commit},
            {"cpu_model", e.cpu_model},
            {"threads", e.threads},
            {"host", e.host},
            {"started_at", e.started_at},
            {"finished_at", e.finished_at},
            {"sandbox", e.sandbox}};
  if (!e.devices.empty()) {
    json devices = json::array();
    for (const auto& d : e.devices) {
      json one = {{"name", d.name}, {"workloads", d.workloads}};
      if (!d.lost.empty()) one["lost"] = d.lost;
      devices.push_back(one);
    }
    j["devices"] = devices;
  }
  return j;
}

run_env run_env_from_json(const json& j) {
  run_env e;
  e.gpu_key = j.value("gpu_key", "");
  e.gpu_name = j.value("gpu_name", "");
  e.device = j.value("device", "");
  e.sm_count = j.value("sm_count", 0);
  e.sm_clock_mhz = j.value("sm_clock_mhz", 0.0);
  e.mem_clock_mhz = j.value("mem_clock_mhz", 0.0);
  e.l2_bytes = j.value("l2_bytes", int64_t{0});
  e.driver = j.value("driver", "");
  e.cuda_runtime = j.value("cuda_runtime", "");
  e.cudnn = j.value("cudnn", "");
  e.torch = j.value("torch", "");
  e.compiler = j.value("compiler", "");
  e.kforge_version = j.value("kforge_version", "");
  e.git_commit = j.value("git_commit", "");
  e.cpu_model = j.value("cpu_model", "");
  e.threads = j.value("threads", 0);
  e.host = j.value("host", "");
  e.started_at = j.value("started_at", "");
  e.finished_at = j.value("finished_at", "");
  e.sandbox = j.value("sandbox", json::object());
  if (!e.sandbox.is_object()) e.sandbox = json::object();
  for (const auto& d : j.value("devices", json::array()))
    if (d.is_object()) e.devices.push_back({d.value("name", ""), d.value("lost", ""), d.value("workloads", 0)});
  return e;
}

json to_json(const workload_result& w) {
  json cases = json::array(), checks = json::array();
  for (auto& c : w.cases) cases.push_back(case_json(c));
  for (auto& c : w.checks) checks.push_back(check_json(c));
  json j = {{"name", w.name},
            {"spec_path", w.spec_path},
            {"kernel_path", w.kernel_path},
            {"kernel_key", w.kernel_key},
            {"kernel_note", w.kernel_note},
            {"verify", verification_json(w.verify)},
            {"cases", cases},
            {"checks", checks},
            {"outcome", check_outcome_name(w.outcome())},
            {"seconds", round_sig(w.seconds)}};
  if (!w.compile_log.empty()) j["compile_log"] = w.compile_log;
  if (!w.error.empty()) j["error"] = w.error;
  if (!w.device.empty()) j["device"] = w.device;
  return j;
}

workload_result workload_result_from_json(const json& j) {
  workload_result w;
  w.name = j.at("name").get<std::string>();
  w.spec_path = j.value("spec_path", "");
  w.kernel_path = j.value("kernel_path", "");
  w.kernel_key = j.value("kernel_key", "");
  w.kernel_note = j.value("kernel_note", "");
  w.compile_log = j.value("compile_log", "");
  if (j.contains("verify")) w.verify = verification_from(j.at("verify"));
  for (auto& c : j.value("cases", json::array())) w.cases.push_back(case_from(c));
  for (auto& c : j.value("checks", json::array())) w.checks.push_back(check_from(c));
  w.error = j.value("error", "");
  w.device = j.value("device", "");
  w.seconds = j.value("seconds", 0.0);
  return w;
}

json to_json(const run_result& r) {
  json workloads = json::array(), searches = json::array();
  for (auto& w : r.workloads) workloads.push_back(to_json(w));
  for (auto& t : r.searches) searches.push_back(tree_json(t));
  json j = {{"schema", k_run_schema},
            {"env", to_json(r.env)},
            {"baselines", r.baselines},
            {"options", r.options},
            {"complete", r.complete},
            {"outcome", check_outcome_name(r.outcome())},
            {"exit_code", r.exit_code()},
            {"workloads", workloads}};
  if (!r.base_ref.empty()) j["base"] = {{"ref", r.base_ref}, {"commit", r.base_commit}};
  if (!r.complete) j["incomplete_reason"] = r.incomplete_reason;
  if (!searches.empty()) j["searches"] = searches;
  return j;
}

// nlohmann's message without its "[json.exception.type_error.302] " prefix: "type must be string, but is number".
std::string json_reason(const json::exception& e) {
  std::string m = e.what();
  if (auto at = m.find("] "); m.starts_with("[json.exception.") && at != std::string::npos) m = m.substr(at + 2);
  return m;
}

run_result run_result_from_json(const json& j, const std::string& origin) {
  source_loc where{origin};
  if (!j.is_object()) throw user_error(where, "expected a kforge run result (a JSON object)");
  std::string schema = j.value("schema", "");
  if (schema.empty()) throw user_error(where, fmt::format("not a kforge run result: no \"schema\" field (expected \"{}\")", k_run_schema));
  if (schema != k_run_schema)
    throw user_error(where, fmt::format("schema \"{}\" is not supported by this kforge (it reads \"{}\")", schema, k_run_schema));
  try {
    run_result r;
    r.env = run_env_from_json(j.value("env", json::object()));
    r.baselines = j.value("baselines", std::vector<std::string>{});
    r.options = j.value("options", json::object());
    r.complete = j.value("complete", true);
    r.incomplete_reason = j.value("incomplete_reason", "");
    if (j.contains("base")) {
      r.base_ref = j["base"].value("ref", "");
      r.base_commit = j["base"].value("commit", "");
    }
    if (!j.contains("workloads")) throw user_error(where, "workloads: missing (expected a list of workload results)");
    if (!j["workloads"].is_array())
      throw user_error(where, fmt::format("workloads: expected a list of workload results, got a {}", j["workloads"].type_name()));
    const json& ws = j["workloads"];
    for (size_t i = 0; i < ws.size(); ++i) {
      if (!ws[i].is_object())
        throw user_error(where, fmt::format("workloads[{}]: expected an object, got a {}", i, ws[i].type_name()));
      try {
        r.workloads.push_back(workload_result_from_json(ws[i]));
      } catch (const json::exception& e) {
        throw user_error(where, fmt::format("workloads[{}] ({}): {}", i, ws[i].value("name", "?"), json_reason(e)));
      }
    }
    for (auto& t : j.value("searches", json::array())) r.searches.push_back(tree_from(t));
    return r;
  } catch (const json::exception& e) {
    throw user_error(where, fmt::format("malformed run result: {}", json_reason(e)));
  } catch (const user_error& e) {
    throw user_error(where, e.message());
  }
}

run_result load_run_result(const std::string& path) {
  std::string text = read_file(path);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw user_error(source_loc{path}, fmt::format("not valid JSON: {}", e.what()));
  }
  return run_result_from_json(j, path);
}

double round_sig(double x, int digits) {
  if (!std::isfinite(x) || x == 0) return x;
  return std::strtod(fmt::format("{:.{}g}", x, digits).c_str(), nullptr);
}

void round_numbers(json& j, int digits) {
  if (j.is_number_float()) j = round_sig(j.get<double>(), digits);
  else if (j.is_structured())
    for (auto& v : j) round_numbers(v, digits);
}

run_result merge_runs(const std::vector<run_result>& shards) {
  KF_ASSERT(!shards.empty(), "merge_runs needs at least one shard");
  run_result out = shards.front();
  out.workloads.clear();
  out.searches.clear();
  std::vector<std::string> reasons;
  for (auto& s : shards) {
    if (s.env.gpu_key != out.env.gpu_key)
      throw user_error(fmt::format("cannot merge results from different GPUs ({} and {}); render them separately",
                                   out.env.gpu_key, s.env.gpu_key));
    for (auto& w : s.workloads) {
      auto it = std::find_if(out.workloads.begin(), out.workloads.end(), [&](auto& x) { return x.name == w.name; });
      if (it != out.workloads.end()) *it = w;
      else out.workloads.push_back(w);
    }
    for (auto& b : s.baselines)
      if (std::find(out.baselines.begin(), out.baselines.end(), b) == out.baselines.end()) out.baselines.push_back(b);
    out.searches.insert(out.searches.end(), s.searches.begin(), s.searches.end());
    if (!s.complete) reasons.push_back(s.incomplete_reason.empty() ? "a shard stopped early" : s.incomplete_reason);
    if (!s.env.started_at.empty() && (out.env.started_at.empty() || s.env.started_at < out.env.started_at))
      out.env.started_at = s.env.started_at;
    if (s.env.finished_at > out.env.finished_at) out.env.finished_at = s.env.finished_at;
  }
  out.complete = reasons.empty();
  out.incomplete_reason.clear();
  for (auto& r : reasons) out.incomplete_reason += (out.incomplete_reason.empty() ? "" : "; ") + r;
  return out;
}

}  // namespace kf
