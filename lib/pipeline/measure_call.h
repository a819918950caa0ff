// The typed client of the worker's `measure` command (docs/worker-protocol.md "measure in detail"): what
// `kforge run` and `kforge search` ask a worker to time and what comes back, built and read here only. Callers
// name implementations and cases and pick stopping rules; they never assemble or pick apart protocol JSON.
#pragma once
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/worker_client.h"
#include "measure/compare.h"
#include "spec/spec.h"

namespace kf::pipeline {

// How long each series runs (docs/statistics.md). Unset fields keep the worker's defaults.
struct stopping_rules {
  std::optional<int> min_samples;
  std::optional<double> max_noise, min_seconds, timeout_s, hot_below_us;
  std::string hot = "auto";     // "auto", "true" or "false"
  bool cold_follows_hot = false;
  measure::sequential_options sequential;
  nlohmann::json questions;     // the gate's ratio questions ([{a, b, threshold}]); null: none
  nlohmann::json race;          // {"<case>": {"us", "hot"}}; null: none
  nlohmann::json to_json() const;
  static stopping_rules from_json(const nlohmann::json& j);  // the search's settings arrive as JSON options
};

// One implementation to time: a protocol impl object ({"kind": "kernel", "name", "so"}, a baseline's object).
struct impl_request {
  nlohmann::json object;
  static impl_request kernel(const std::string& name, const std::string& so_path, double delay_us = 0);
  static impl_request of_kind(const std::string& kind) { return {{{"kind", kind}}}; }
};

struct measure_request {
  const workload_spec* spec = nullptr;
  std::vector<impl_request> impls;
  std::vector<std::string> cases;  // empty: every gated case
  stopping_rules stopping;
  nlohmann::json to_json() const;
};

// One series of samples as the worker reports it.
struct series {
  std::vector<double> samples_us;
  int discarded = 0;
  std::string stop;  // converged | timed_out | failed | follows_hot | lost_race | decided
  bool empty() const { return samples_us.empty(); }
};

// One implementation on one case.
struct timed {
  std::string impl, case_name;
  bool available = true;
  std::string not_available;  // when not available: why ("not available for this op: ...", "skipped: ...")
  std::string error;          // the implementation failed while timed (a result, not an infrastructure error)
  std::string description;
  nlohmann::json details;     // compile: mode, modes_median_us; vendor: steps
  series cold, hot;
  bool ok() const { return available && error.empty(); }
  bool lost_race() const { return cold.stop == "lost_race" || hot.stop == "lost_race"; }
};

struct measure_reply {
  bool ok = false;
  std::string error, error_kind;  // when !ok: the worker's error and its kind ("candidate" when the kernel failed)
  std::vector<timed> results;
  nlohmann::json floors = nlohmann::json::object();  // per case
  nlohmann::json env;                                // null when absent
  const timed* find(const std::string& impl, const std::string& case_name) const;
  // Whether a case is compared on hot samples: measure::compares_hot over what was timed on it.
  bool compares_hot(const std::string& case_name) const;
};
// Throws nothing: a reply that is not an object, or lacks results, reads as !ok with an error saying so.
measure_reply parse_measure_reply(const nlohmann::json& response);

// A request sent to a worker and what came back: the worker's fate (crash, timeout, ...) and the reply.
struct measure_call {
  worker_outcome outcome;
  measure_reply reply;
  bool not_the_kernel = false;  // a second try showed the kernel runs fine alone: the failure is not its doing
  bool ok() const { return outcome.ok() && reply.ok; }
  // The kernel itself failed: the worker died while timing (unless not_the_kernel), or said so (error kind
  // "candidate").
  bool kernel_failed() const;
  std::string failure() const;  // one sentence: why !ok
};
measure_call call_measure(worker_client& worker, const measure_request& request, std::chrono::milliseconds timeout);
// For callers that send through another channel (run_backend): the reply of an outcome.
measure_call read_measure_outcome(worker_outcome outcome);

}  // namespace kf::pipeline
