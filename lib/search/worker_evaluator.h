// The real evaluator: compiles through the compile service (a batch in parallel), verifies and times through one
// kforge-worker per device (docs/worker-protocol.md `verify`, `measure`).
// Fidelity: screen = verify on one gated case (1 seed) + a short measure of every gated case; full = verify on
// every case that runs on the device (3 seeds) + the full measure. On a GPU the batch's compiles overlap the
// worker's timing; on the cpu device they run first, because a compiler on the same cores would skew the timing.
#pragma once
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exec/compile.h"
#include "exec/device.h"
#include "exec/worker_client.h"
#include "pipeline/measure_call.h"
#include "search/evaluator.h"
#include "spec/spec.h"
#include "verify/check.h"

namespace kf {

struct worker_evaluator_options {
  device_id device;
  std::string gpu_key;
  std::filesystem::path cache_root = ".kforge/cache";
  int jobs = 0;                             // parallel compiles; 0: one per core
  std::vector<std::string> baselines;       // eager | compile | vendor (those the device has)
  int seeds = 3;
  std::chrono::seconds verify_timeout{600}, measure_timeout{900};
  // The search ranks candidates; it does not publish numbers (`kforge run` re-times the winner with the full
  // protocol), so both stages are bounded by wall time per case rather than by 0.5 s of GPU time, which a 3 us
  // kernel reaches only after ~150 000 cold samples.
  nlohmann::json screen_stopping = {{"min_samples", 10}, {"max_noise", 0.03}, {"min_seconds", 0.001}, {"timeout_s", 0.3}};
  nlohmann::json full_stopping = {{"min_samples", 20}, {"max_noise", 0.01}, {"min_seconds", 0.01}, {"timeout_s", 1.0}};
  // The full stage races each case against the fastest candidate measured so far: a candidate whose lower
  // quartile is 3 % slower after min_samples stops there (measure/timing.h); contenders still converge.
  bool race = true;
};

class worker_evaluator final : public evaluator {
 public:
  worker_evaluator(const workload_spec& spec, worker_evaluator_options options);
  ~worker_evaluator() override;

  nlohmann::json baselines() override;
  std::vector<eval_result> evaluate(const std::vector<candidate>& batch, double full_below_us,
                                    double stop_at_s) override;
  eval_result confirm(const candidate& c) override;
  // The winner (and the stored kernel) timed beside every baseline in one measurement that stops on the gate's
  // questions (gate/gate.h gate_questions), read through pipeline/ as `kforge run` reads its own.
  beside_baselines time_beside_baselines(const candidate& winner, const candidate* stored) override;
  nlohmann::json environment() override;

  // The key stored kernels and the export cache are filed under (the cpu key, or the GPU's from `env`).
  void set_gpu_key(std::string key) { m_options.gpu_key = std::move(key); }
  const std::string& gpu_key() const { return m_options.gpu_key; }

  // The gated cases that run on this device, and every case that does (what verify and measure are asked for).
  const std::vector<std::string>& gated_cases() const { return m_gated; }
  const std::vector<std::string>& all_cases() const { return m_all; }

  // Seconds of verification by step (inputs, launch, reference, compare), summed over this evaluator's verifies.
  const std::map<std::string, double>& verify_step_seconds() const { return m_verify_steps; }
  // Full measurements taken, and those stopped early on some case by the race (worker_evaluator_options::race).
  int full_measures() const { return m_full_measures; }
  int lost_races() const { return m_lost_races; }
  // Seconds the worker spent drawing verification's inputs while the first batch compiled (warm_inputs), 0 when
  // it did not.
  double warm_seconds() const { return m_warm_seconds; }

 private:
  std::vector<pipeline::impl_request> baseline_impls(std::vector<std::string>* names) const;
  // `r` holds the static scan's stage (passed): compile, then screen and full verify and measure.
  eval_result after_compile(eval_result r, const compile_result& cr, double full_below_us);
  // The static scan of the source (docs/design.md "Verify"); false with r set to verify_failed on a finding.
  bool scan(const candidate& c, eval_result& r);
  // What verify_in_worker is asked for: these cases and seeds, within the evaluator's verify timeout.
  check_options check_options_for(const std::vector<std::string>& cases, int seeds) const;
  // Runs verify; false (with the stage recorded and r set to verify_failed) when it does not pass.
  bool verify(const compile_result& cr, const std::vector<std::string>& cases, eval_result& r, const char* stage, int seeds);
  // Runs measure of the kernel on the gated cases; false when it could not be timed. `race`: against the
  // fastest times measured so far (m_fastest_us), which a full measurement updates.
  bool measure(const compile_result& cr, const nlohmann::json& stopping, eval_result& r, const char* stage,
               bool race = false);
  worker_outcome request(nlohmann::json req, std::chrono::seconds timeout);
  // Verifies LibTorch eager on every case and seed the full verification uses, for its side effect: the worker
  // draws those inputs into its host and device caches while the first batch compiles (the GPU is idle then),
  // so the first candidate does not wait on the draw. Its verdict is not used; a failure costs nothing more.
  void warm_inputs();
  // Whether case c is judged on hot samples (where there are any): unless the baselines said it is cold-only.
  bool judged_hot(const std::string& c) const;

  const workload_spec& m_spec;
  worker_evaluator_options m_options;
  compiler m_compiler;
  std::unique_ptr<worker_client> m_worker;
  std::map<std::string, bool> m_case_hot;  // per gated case: judged on hot samples (every baseline had them)
  std::vector<std::string> m_gated, m_all;
  nlohmann::json m_env;
  std::map<std::string, double> m_verify_steps;
  std::map<std::string, double> m_fastest_us;  // per gated case: the fastest full measurement of a candidate
  int m_full_measures = 0, m_lost_races = 0;
  bool m_warmed = false;
  double m_warm_seconds = 0;
};

}  // namespace kf
