// The plain record of one `kforge run`: what ran where, what was verified, what was timed, what the gate
// said. Measurement fills it; reporters (reporter.h) render it; the history note stores it. JSON schema:
// docs/json-schema.md ("kforge.run/1").
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kf {

inline constexpr const char* k_run_schema = "kforge.run/1";

// One device of the run (`kforge run --devices`): its name and, when it was taken out before the run ended, why.
struct run_device_record {
  std::string name;   // "cuda:1", "cpu#2" (the second worker on one device)
  std::string lost;   // empty: it worked to the end
  int workloads = 0;  // how many workloads it finished
};

// Where the run happened: the worker's `env` answer plus what the parent knows (compiler, git, times).
struct run_env {
  std::string gpu_key;         // "sm90-nvidia-h200", or "cpu" on the cpu device
  std::string gpu_name;
  std::string device;          // "cuda:0" | "cpu"
  int sm_count = 0;
  double sm_clock_mhz = 0;
  double mem_clock_mhz = 0;
  int64_t l2_bytes = 0;
  std::string driver, cuda_runtime, cudnn, torch;
  std::string compiler;        // the candidate compiler (nvcc or the host C++ compiler) and its version
  std::string kforge_version;
  std::string git_commit;      // HEAD of the repository that was run
  std::string cpu_model;
  int threads = 0;
  std::string host;
  std::string started_at, finished_at;  // ISO 8601 UTC
  nlohmann::json sandbox = nlohmann::json::object();  // the worker's protections ({"mode", "protections"})
  std::vector<run_device_record> devices;  // every device the run used, in the order given (one for --device)
};

// Summary statistics of one sample series (microseconds). `noise` is relative (stddev / mean, as the
// stopping rule in measure/stats.h).
struct timing_stats {
  int count = 0;
  double median_us = 0, iqr_us = 0, min_us = 0, noise = 0;
  double q1_us = 0, q3_us = 0;          // the quartiles
  double ci_lo_us = 0, ci_hi_us = 0;    // a distribution-free 99 % confidence interval of the median
};

// A series fresh from the worker holds its raw samples; one loaded from a report or a history note holds only
// `stats` (the run JSON and the note store summaries; raw samples live in the `--samples` side file).
struct sample_series {
  std::vector<double> samples_us;  // raw, in the order taken; empty when loaded from a summary
  int discarded = 0;               // taken below the clock threshold, dropped
  timing_stats stats;              // of samples_us (or as loaded)
  bool empty() const { return samples_us.empty(); }           // no raw samples in hand
  bool measured() const { return stats.count > 0 || !samples_us.empty(); }  // samples or their summary
};

enum class impl_status { ok, skipped, failed };
std::string_view impl_status_name(impl_status s);

// One implementation on one gated case: "kernel", "eager", "compile", "vendor", or "base" (the merge-base's
// version of the kernel, measured alongside when the change touched it).
struct impl_result {
  std::string impl;
  impl_status status = impl_status::ok;
  std::string why;      // for skipped / failed: a sentence
  sample_series cold;   // L2 flushed, one launch per sample
  sample_series hot;    // inside a CUDA graph of back-to-back launches (may be empty)
  std::string description;  // what was timed ("AOTInductor package, mode max-autotune", "cuDNN softmax", ...)
  nlohmann::json details = nlohmann::json::object();  // the worker's details (compile: each mode's median)
  const sample_series& series(std::string_view metric) const { return metric == "hot" ? hot : cold; }
};

// The lower bound on a case's time: the larger of bytes / copy bandwidth and an empty kernel's launch time.
struct floor_info {
  double bytes = 0;
  double bandwidth_floor_us = 0;
  double launch_floor_us = 0;
  double floor_us = 0;
  double fraction = 0;           // floor_us / kernel median: 1.0 is at the floor; 0 when unknown
  double physical_floor_us = 0;  // a median below it skips work (measure/floor.h); 0 when unknown
};

struct case_result {
  std::string name;                      // "B=1,H=8,S=2048"
  std::string metric = "cold";           // which series the comparisons use: "cold" | "hot"
  floor_info floor;
  std::vector<impl_result> impls;
  std::map<std::string, double> speedups;  // baseline -> baseline median / kernel median (> 1: kernel faster)
  const impl_result* find(std::string_view impl) const;
  impl_result* find(std::string_view impl);
};

// One verification check (docs/design.md "Verify") as the worker reported it.
struct verify_check {
  std::string rule;       // "matches_reference", "writes_every_output", ...
  std::string case_name;  // empty for checks that are not per case (the static scan)
  int64_t seed = 0;
  bool passed = true;
  std::string detail;     // a sentence with the numbers
  nlohmann::json numbers = nlohmann::json::object();
};

struct verification {
  std::string verdict = "not_run";  // "passed" | "failed" | "not_run"
  std::string why;                  // for not_run or a failure outside the checks (compile error, crash)
  std::vector<verify_check> checks;
};

// inconclusive: the data could not decide within the cap (too noisy); neither a pass nor a failure, shown apart.
enum class check_outcome { passed, failed, skipped, error, inconclusive };
std::string_view check_outcome_name(check_outcome o);
// passed < skipped < inconclusive < error < failed: the worse of two outcomes is the one a summary shows.
int outcome_severity(check_outcome o);
check_outcome worse(check_outcome a, check_outcome b);

// One gate decision, rendered as one JUnit testcase: kind "verify" | "beats" | "regression" | "kernel".
struct gate_check {
  std::string kind;
  std::string case_name;   // empty for workload-wide checks
  std::string against;     // the baseline for "beats"; "base" or "history" for "regression"
  check_outcome outcome = check_outcome::passed;
  std::string sentence;    // what a person reads: the verdict with its numbers
  bool advisory = false;   // informational (a baseline not in must_beat): never changes the verdict
  nlohmann::json numbers = nlohmann::json::object();
  std::string test_name() const;  // "verify[B=1]", "beats[eager][B=1]", "regression[B=1]", "kernel"
};

struct workload_result {
  std::string name;
  std::string spec_path;
  std::string kernel_path;      // the stored kernel used; empty when there is none
  std::string kernel_key;       // the GPU key the kernel was stored for
  std::string kernel_note;      // "no kernel for sm90-...", "fallback: kernel stored for sm90-h100"
  std::string compile_log;      // the compiler's output when it failed (trimmed)
  verification verify;
  std::vector<case_result> cases;
  std::vector<gate_check> checks;
  std::string error;            // an infrastructure failure that stopped this workload
  std::string device;           // the device that ran it (run_device_record::name); empty in older records
  double seconds = 0;
  const case_result* find_case(std::string_view name) const;
  check_outcome outcome() const;  // the worst of the non-advisory checks (error when `error` is set)
};

// A search tree for the HTML explorer (optional; filled by `kforge search` or `report render --search`).
struct search_node {
  int64_t id = 0;
  int64_t parent = -1;      // -1 for a root
  std::string label;        // family + knobs, or the proposer's summary
  std::string status;       // "ok" | "failed: ..." | "pending"
  double time_us = 0;       // 0 when not measured
  double reward = 0;
  std::string source;
};

struct search_tree {
  std::string workload;
  std::string gpu_key;
  std::vector<search_node> nodes;
};

struct run_result {
  std::string schema = k_run_schema;
  run_env env;
  std::vector<std::string> baselines;   // requested
  std::string base_ref, base_commit;    // the PR's merge-base, when given
  nlohmann::json options = nlohmann::json::object();  // stopping rules and flags used
  std::vector<workload_result> workloads;
  std::vector<search_tree> searches;
  bool complete = true;                 // false when the run stopped early; `incomplete_reason` says why
  std::string incomplete_reason;
  const workload_result* find_workload(std::string_view name) const;
  check_outcome outcome() const;        // the worst over workloads; error when incomplete
  int exit_code() const;                // 0 passed, 1 a check failed, 2 infrastructure/incomplete
};

// The run JSON holds summaries only (no `samples_us`), numbers rounded to 5 significant digits.
nlohmann::json to_json(const run_result& r);
// Throws user_error naming `origin` (a file) when the schema is missing, of another version, or a field has
// the wrong type.
run_result run_result_from_json(const nlohmann::json& j, const std::string& origin = "");
run_result load_run_result(const std::string& path);

nlohmann::json to_json(const run_env& e);
run_env run_env_from_json(const nlohmann::json& j);
nlohmann::json to_json(const workload_result& w);
workload_result workload_result_from_json(const nlohmann::json& j);

// Shards of one run (several machines or processes): workloads concatenated (a later shard replaces an
// earlier one's workload of the same name), environments must share the GPU key, incomplete if any is.
run_result merge_runs(const std::vector<run_result>& shards);

// `x` rounded to `digits` significant digits (a number still: 51.23456789 -> 51.235). Non-finite values and 0 as is.
double round_sig(double x, int digits = 5);
// Every floating-point number in `j` (recursively) rounded to `digits` significant digits; integers untouched.
void round_numbers(nlohmann::json& j, int digits = 5);

}  // namespace kf
