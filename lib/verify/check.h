// Checking a candidate from the parent process: static scan, compile, then the dynamic rules in the worker one
// case at a time (so a hang or a crash is pinned to its case and the next case gets a fresh worker). Used by
// `kforge check`, and by `run` and `search` for every candidate they verify.
#pragma once
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/compile.h"
#include "exec/worker_client.h"
#include "spec/spec.h"
#include "verify/verdict.h"

namespace kf {

struct check_options {
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};  // per case, plus the size allowance below
  double seconds_per_million_elements = 1.0;  // per seed, over the case's inputs and outputs (a 33 M-element cpu
                                              // case verifies in ~50 s with 3 seeds)
  int seeds = 3;
  std::vector<std::string> cases;  // empty: every case that runs on the worker's device kind
  bool adversarial = true;
  bool static_scan = true;
  uint64_t base_seed = 1;
};

struct check_report {
  verdict result;
  compile_result compile;  // default (ok false, empty log) when the source was not compiled
  nlohmann::json env;      // the worker's env (cuda: used to pick the arch)
  double seconds = 0;
  nlohmann::json to_json() const;
};

// The nvcc arch for a GPU the worker reports ("sm_90" -> "sm_90a": the arch-specific features of Hopper and
// later; older GPUs keep the plain name).
std::string compile_arch(const nlohmann::json& env);

// Static scan + compile + verify_in_worker. A candidate that fails any stage is a verdict, never an exception;
// infrastructure failures (no compiler, a worker that will not start) throw infra_error.
check_report check_candidate(const workload_spec& spec, const std::string& source, const std::string& name,
                             compiler& cc, worker_client& worker, const check_options& options);

// The dynamic rules for an implementation the worker can load (`impl` as in docs/worker-protocol.md), case by
// case. A worker that hangs, crashes, exits or poisons its context fails `hang`, `crash`, `exit` or `cuda_error`
// on that case, and the next case runs on a fresh worker.
// The worker's deadline for verifying one case: options.timeout plus the size allowance.
std::chrono::milliseconds verify_timeout(const workload_spec& spec, const std::string& case_name,
                                         const check_options& options);

// `step_seconds`, when given, gains the worker's seconds by verification step (inputs, launch, reference, compare);
// `inputs_drawn`, the input tensors the worker generated (not found in its input cache).
verdict verify_in_worker(const workload_spec& spec, const nlohmann::json& impl, worker_client& worker,
                         const check_options& options, std::map<std::string, double>* step_seconds = nullptr,
                         int64_t* inputs_drawn = nullptr);

}  // namespace kf
