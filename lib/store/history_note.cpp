#include "store/history_note.h"

#include <algorithm>

#include <fmt/format.h>

#include "util/error.h"

namespace kf {
using json = nlohmann::json;

namespace {

json stats_array(const timing_stats& s) {
  return json::array({s.count, round_sig(s.median_us), round_sig(s.q1_us), round_sig(s.q3_us), round_sig(s.min_us),
                      round_sig(s.noise, 3), round_sig(s.ci_lo_us), round_sig(s.ci_hi_us)});
}

timing_stats stats_from(const json& a) {
  timing_stats s;
  if (!a.is_array() || a.size() < std::size(k_note_stats)) throw user_error("a stats array needs 8 numbers");
  s.count = a[0].get<int>();
  s.median_us = a[1].get<double>();
  s.q1_us = a[2].get<double>();
  s.q3_us = a[3].get<double>();
  s.min_us = a[4].get<double>();
  s.noise = a[5].get<double>();
  s.ci_lo_us = a[6].get<double>();
  s.ci_hi_us = a[7].get<double>();
  s.iqr_us = s.q3_us - s.q1_us;
  return s;
}

json env_entry(const run_env& e) {
  json j = {{"gpu_key", e.gpu_key}, {"gpu_name", e.gpu_name}, {"device", e.device}};
  for (auto& [k, v] : {std::pair<const char*, const std::string*>{"driver", &e.driver}, {"cuda_runtime", &e.cuda_runtime},
                       {"cudnn", &e.cudnn}, {"torch", &e.torch}, {"compiler", &e.compiler},
                       {"kforge_version", &e.kforge_version}, {"git_commit", &e.git_commit}, {"started_at", &e.started_at}})
    if (!v->empty()) j[k] = *v;
  return j;
}

json workload_entry(const workload_result& w) {
  json cases = json::array();
  for (auto& c : w.cases) {
    json impls = json::object();
    for (auto& i : c.impls) {
      const sample_series& s = i.series(c.metric);
      impls[i.impl] = i.status == impl_status::ok && s.measured() ? stats_array(s.stats) : json(impl_status_name(i.status));
    }
    cases.push_back({{"name", c.name}, {"metric", c.metric}, {"impls", impls}});
  }
  json j = {{"name", w.name}, {"outcome", check_outcome_name(w.outcome())}, {"seconds", round_sig(w.seconds, 4)}};
  if (!w.kernel_path.empty()) j["kernel"] = w.kernel_path;
  if (!w.kernel_key.empty()) j["kernel_key"] = w.kernel_key;
  if (!cases.empty()) j["cases"] = cases;
  return j;
}

workload_result workload_from(const json& j) {
  workload_result w;
  w.name = j.at("name").get<std::string>();
  w.kernel_path = j.value("kernel", "");
  w.kernel_key = j.value("kernel_key", "");
  w.seconds = j.value("seconds", 0.0);
  std::string outcome = j.value("outcome", "passed");
  if (outcome != "passed") {
    gate_check k;
    k.kind = "recorded";
    k.sentence = fmt::format("recorded as {} in the history note", outcome);
    for (auto o : {check_outcome::failed, check_outcome::skipped, check_outcome::error, check_outcome::inconclusive})
      if (check_outcome_name(o) == outcome) k.outcome = o;
    w.checks.push_back(k);
  }
  for (auto& cj : j.value("cases", json::array())) {
    case_result c;
    c.name = cj.at("name").get<std::string>();
    c.metric = cj.value("metric", "cold");
    const json impls = cj.value("impls", json::object());  // items() of a temporary would dangle
    for (auto& [name, v] : impls.items()) {
      impl_result i;
      i.impl = name;
      if (v.is_string()) {
        i.status = v.get<std::string>() == "failed" ? impl_status::failed : impl_status::skipped;
      } else {
        sample_series& s = c.metric == "hot" ? i.hot : i.cold;
        s.stats = stats_from(v);
      }
      c.impls.push_back(std::move(i));
    }
    w.cases.push_back(std::move(c));
  }
  return w;
}

}  // namespace

json note_entry(const run_result& r) {
  json workloads = json::array();
  for (auto& w : r.workloads) workloads.push_back(workload_entry(w));
  json j = {{"env", env_entry(r.env)}, {"complete", r.complete}, {"workloads", workloads}};
  if (!r.complete) j["incomplete_reason"] = r.incomplete_reason;
  return j;
}

run_result run_from_note_entry(const json& j, const std::string& origin) {
  source_loc where{origin};
  if (!j.is_object() || !j.contains("workloads") || !j["workloads"].is_array())
    throw user_error(where, "a history entry needs a \"workloads\" list");
  try {
    run_result r;
    r.env = run_env_from_json(j.value("env", json::object()));
    r.complete = j.value("complete", true);
    r.incomplete_reason = j.value("incomplete_reason", "");
    for (auto& w : j["workloads"]) r.workloads.push_back(workload_from(w));
    return r;
  } catch (const json::exception& e) {
    throw user_error(where, fmt::format("malformed history entry: {}", e.what()));
  } catch (const user_error& e) {
    throw user_error(where, fmt::format("malformed history entry: {}", e.message()));
  }
}

json merge_note_entries(const json& existing, const json& update) {
  json out = update;
  json workloads = existing.value("workloads", json::array());
  for (auto& w : update.value("workloads", json::array())) {
    auto it = std::find_if(workloads.begin(), workloads.end(), [&](const json& x) { return x.value("name", "") == w.value("name", ""); });
    if (it != workloads.end()) *it = w;
    else workloads.push_back(w);
  }
  out["workloads"] = workloads;
  bool complete = existing.value("complete", true) && update.value("complete", true);
  out["complete"] = complete;
  if (!complete) {
    std::string a = existing.value("incomplete_reason", ""), b = update.value("incomplete_reason", "");
    out["incomplete_reason"] = a.empty() ? b : b.empty() || a == b ? a : a + "; " + b;
  }
  return out;
}

}  // namespace kf
