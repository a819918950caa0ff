#include "pipeline/measure_call.h"

#include <fmt/format.h>

#include "util/text.h"

namespace kf::pipeline {
using json = nlohmann::json;

namespace {

series series_from(const json& j) {
  series s;
  if (!j.is_object()) return s;
  if (j.contains("samples_us") && j["samples_us"].is_array())
    for (auto& x : j["samples_us"])
      if (x.is_number()) s.samples_us.push_back(x.get<double>());
  if (j.contains("discarded") && j["discarded"].is_number_integer()) s.discarded = j["discarded"].get<int>();
  if (j.contains("stop") && j["stop"].is_string()) s.stop = j["stop"].get<std::string>();
  return s;
}

std::string text_of(const json& j, const char* key) {
  if (!j.contains(key)) return "";
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

}  // namespace

json stopping_rules::to_json() const {
  json j = json::object();
  if (min_samples) j["min_samples"] = *min_samples;
  if (max_noise) j["max_noise"] = *max_noise;
  if (min_seconds) j["min_seconds"] = *min_seconds;
  if (timeout_s) j["timeout_s"] = *timeout_s;
  if (hot_below_us) j["hot_below_us"] = *hot_below_us;
  if (hot == "true" || hot == "false") j["hot"] = hot == "true";
  else j["hot"] = hot;
  if (cold_follows_hot) j["cold_follows_hot"] = true;
  j["alpha"] = sequential.alpha;
  j["resolution"] = sequential.resolution;
  j["first_look"] = sequential.first_look;
  if (!questions.is_null()) j["questions"] = questions;
  if (!race.is_null()) j["race"] = race;
  return j;
}

stopping_rules stopping_rules::from_json(const json& j) {
  stopping_rules s;
  if (!j.is_object()) return s;
  if (j.contains("min_samples")) s.min_samples = j["min_samples"].get<int>();
  if (j.contains("max_noise")) s.max_noise = j["max_noise"].get<double>();
  if (j.contains("min_seconds")) s.min_seconds = j["min_seconds"].get<double>();
  if (j.contains("timeout_s")) s.timeout_s = j["timeout_s"].get<double>();
  if (j.contains("hot_below_us")) s.hot_below_us = j["hot_below_us"].get<double>();
  if (j.contains("hot")) s.hot = j["hot"].is_boolean() ? (j["hot"].get<bool>() ? "true" : "false") : j["hot"].get<std::string>();
  s.cold_follows_hot = j.value("cold_follows_hot", false);
  s.sequential.alpha = j.value("alpha", s.sequential.alpha);
  s.sequential.resolution = j.value("resolution", s.sequential.resolution);
  s.sequential.first_look = j.value("first_look", s.sequential.first_look);
  if (j.contains("questions")) s.questions = j["questions"];
  if (j.contains("race")) s.race = j["race"];
  return s;
}

impl_request impl_request::kernel(const std::string& name, const std::string& so_path, double delay_us) {
  impl_request r{{{"kind", "kernel"}, {"name", name}, {"so", so_path}}};
  if (delay_us > 0) r.object["delay_us"] = delay_us;
  return r;
}

json measure_request::to_json() const {
  json impl_list = json::array();
  for (auto& i : impls) impl_list.push_back(i.object);
  return {{"cmd", "measure"}, {"spec", kf::to_json(*spec)}, {"impls", impl_list}, {"cases", cases},
          {"stopping", stopping.to_json()}};
}

const timed* measure_reply::find(const std::string& impl, const std::string& case_name) const {
  for (auto& r : results)
    if (r.impl == impl && r.case_name == case_name) return &r;
  return nullptr;
}

bool measure_reply::compares_hot(const std::string& case_name) const {
  std::vector<measure::timed_side> sides;
  for (auto& r : results)
    if (r.case_name == case_name) sides.push_back({r.ok(), !r.hot.empty()});
  return measure::compares_hot(sides);
}

measure_reply parse_measure_reply(const json& response) {
  measure_reply m;
  if (!response.is_object()) {
    m.error = "the worker's answer is not an object";
    return m;
  }
  m.ok = response.value("ok", false);
  if (!m.ok) {
    m.error = response.contains("error") ? text_of(response, "error") : "the worker answered ok: false without an error";
    m.error_kind = text_of(response, "kind");
    return m;
  }
  if (!response.contains("results") || !response["results"].is_array()) {
    m.ok = false;
    m.error = "the worker's measure answer has no results";
    return m;
  }
  for (auto& r : response["results"]) {
    if (!r.is_object()) continue;
    timed t;
    t.impl = text_of(r, "impl");
    t.case_name = text_of(r, "case");
    t.available = r.value("available", true);
    t.not_available = r.contains("not_available") ? text_of(r, "not_available") : "not available";
    t.error = text_of(r, "error");
    t.description = text_of(r, "description");
    if (r.contains("details") && r["details"].is_object()) t.details = r["details"];
    t.cold = series_from(r.value("cold", json()));
    t.hot = series_from(r.value("hot", json()));
    m.results.push_back(std::move(t));
  }
  if (response.contains("floor") && response["floor"].is_object()) m.floors = response["floor"];
  if (response.contains("env")) m.env = response["env"];
  return m;
}

bool measure_call::kernel_failed() const {
  if (not_the_kernel) return false;
  if (!outcome.ok()) return outcome.status != worker_status::start_failed;
  return !reply.ok && reply.error_kind == "candidate";
}

std::string measure_call::failure() const {
  if (!outcome.ok()) {
    std::string s = fmt::format("the worker {}", outcome.describe());
    if (!outcome.message.empty() && outcome.message != outcome.describe()) s += ": " + outcome.message;
    if (!outcome.stderr_tail.empty()) s += fmt::format(" (worker log: {})", tail_text(outcome.stderr_tail, 600));
    return s;
  }
  return reply.error;
}

measure_call read_measure_outcome(worker_outcome outcome) {
  measure_call c;
  if (outcome.ok()) c.reply = parse_measure_reply(outcome.response);
  c.outcome = std::move(outcome);
  return c;
}

measure_call call_measure(worker_client& worker, const measure_request& request, std::chrono::milliseconds timeout) {
  return read_measure_outcome(worker.request(request.to_json(), timeout));
}

}  // namespace kf::pipeline
