// `kforge run` as a library: for each workload find the stored kernel, compile it, verify it, time it with the
// baselines, gate it against history and fill a run_result. The device side (compiler, worker, AOTInductor
// export) sits behind run_backend so the pipeline is tested with a fake and runs with worker_backend.h.
#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/compile.h"
#include "exec/worker_client.h"
#include "gate/gate.h"
#include "measure/stats.h"
#include "report/run_result.h"
#include "spec/baseline_registry.h"
#include "spec/spec.h"
#include "store/history.h"

namespace kf {

class git_repo;

// A candidate after the static scan, compile and the dynamic verify rules (verify's check_candidate, verify/check.h).
struct candidate_check {
  verification verify;      // "passed" or "failed" with every check (compile and static scan included)
  std::string so_path;      // the compiled object, when it compiled
  std::string compile_log;  // the compiler's output, when compiling failed
};

class run_backend {
 public:
  virtual ~run_backend() = default;
  virtual std::string device_kind_name() const = 0;  // "cuda" | "cpu": which spec cases run here
  // The worker's `env` answer (docs/worker-protocol.md). Throws infra_error when the worker cannot start.
  virtual nlohmann::json env() = 0;
  // Static scan, compile, verify on every case. A failing candidate is a verdict; throws infra_error only.
  virtual candidate_check check(const workload_spec& spec, const std::string& source, const std::string& name) = 0;
  // Compile only (the merge-base's version of a kernel, which passed its own gate).
  virtual compile_result compile(const std::string& source, const std::string& name) = 0;
  // Sends a `measure` request to the worker and returns what happened.
  virtual worker_outcome measure(const nlohmann::json& request, std::chrono::milliseconds timeout) = 0;
  // The protocol's impl object for baseline `name` on these cases (spec/baseline_registry.h: its parent side's,
  // e.g. {"kind": "compile", "pt2": ...}, else {"kind": name}), or {"skipped": "<why>"} when it cannot be timed.
  virtual nlohmann::json baseline_impl(const std::string& name, const workload_spec& spec,
                                       const std::vector<std::string>& cases, const std::string& gpu_key) = 0;
  // Makes baseline `name` ready for many workloads at once (compile: exports in parallel across workloads), so
  // the per-workload baseline_impl calls find it done. Called only for a baseline with a parent side; optional.
  virtual void prepare_baseline(const std::string& name, const std::vector<baseline_work>& work,
                                const std::string& gpu_key) {
    (void)name;
    (void)work;
    (void)gpu_key;
  }
  // The compiler's identity for the environment record ("nvcc 13.0 ...", "g++ 12.2").
  virtual std::string compiler_identity() = 0;
  // Asked after a workload ended in an infrastructure failure (an exception, timing that could not finish):
  // "" when the device still works (the failure stays the workload's), else why it does not (its worker cannot
  // start or answer `env`); the run then takes the device out (docs/design.md "Several devices"). Default: works.
  virtual std::string probe() { return ""; }
};

// One device of a run: a backend (a worker) and the name the reports give it: "cuda:1", or "cpu#2" for the
// second worker of a list that names one device twice (pipeline/device_list.h).
struct run_device {
  std::string name;  // empty: the backend env()'s "device"
  run_backend* backend = nullptr;
};

struct run_options {
  std::vector<std::string> baselines;  // empty: each spec's own list
  stats::stopping_options stopping;    // sent to the worker's measure
  gate_options gate;
  bool decide = true;                  // stop timing a case once the gate's questions are answered (else: noise)
  std::string base_ref;                // --base: compare with the merge-base of HEAD and this
  std::chrono::seconds measure_slack{120};  // added to the stopping timeouts for a measure request
  std::function<void(const std::string&)> progress;  // a line per step; may be empty
  std::function<bool()> stop_requested;              // asked between workloads (Ctrl-C); may be empty
  // Only prepare the baselines (torch.compile's exports into the cache) and return: nothing is verified or timed
  // (`kforge run --prepare-only`, a runner's cache step before the timed job).
  bool prepare_only = false;
};

// The history a run compares with: the merge-base's note with a base ref, else the first parent's (a run on main
// compares with the commit before it). `origin` names it for the checks' sentences; `base_commit` is the merge-base
// (empty without a base ref). With no repository, `entry.why` says so.
struct run_history {
  history_entry entry;
  std::string origin;
  std::string head, base_commit;
};
run_history load_run_history(git_repo* repo, const std::string& base_ref, const std::string& gpu_key);
// What the gate compares the entry `name` (a workload, or an e2e entry's e2e:<name>) with in that history.
history_context history_for(const run_history& rh, const std::string& name);

// Runs every spec (already parsed and validated) and returns the record. `repo` may be null (no history:
// reported as missing). Never throws for a workload's failure: that is in its result; throws for a broken
// environment before anything ran (the worker cannot start).
run_result run_workloads(const std::vector<workload_spec>& specs, run_backend& backend, git_repo* repo,
                         const run_options& options);

// The same over several devices (pipeline/run_devices.cpp): one thread per device takes workloads from a shared
// queue; a workload runs whole on one device (verified, and timed beside baselines timed on that device); the
// results come back in the specs' order, each saying which device ran it, so the reports, gate and exit code are
// a one-device run's. Throws user_error when the devices' GPU keys differ, infra_error when none can start. A
// device whose probe() fails after a workload's infrastructure failure is taken out and the workload goes back
// to the queue once; the record's env.devices says which device was lost and why; with every device lost the run
// is incomplete.
run_result run_workloads(const std::vector<workload_spec>& specs, const std::vector<run_device>& devices,
                         git_repo* repo, const run_options& options);

// One workload (exposed for tests): fills everything but the gate.
workload_result run_one(const workload_spec& spec, run_backend& backend, const std::string& gpu_key,
                        const std::string& base_commit, git_repo* repo, const run_options& options, run_env& env);

// The run's environment from the worker's env answer.
run_env env_from_worker(const nlohmann::json& env, const std::string& gpu_key);

// The GPU key of a worker's env answer (cuda workers report arch and name; the key is formed here).
std::string key_of_env(const nlohmann::json& env);

// The parts of run_workloads that the device threads share (exposed to run_devices.cpp).
namespace pipeline {
// The record before any workload ran: environment, options, history, and the baselines' parent sides made ready
// on `backend` (compile's exports). `history` receives the history the gate compares with.
run_result start_run(const std::vector<workload_spec>& specs, run_backend& backend, const nlohmann::json& worker_env,
                     git_repo* repo, const run_options& o, run_history& history);
// Gates a finished workload against the history (not one with an error).
void gate_workload(workload_result& w, const workload_spec& spec, const run_history& history, const run_options& o);
}  // namespace pipeline

}  // namespace kf
