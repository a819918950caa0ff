// `kforge calibrate`: how often the gate's regression check is wrong on this machine (docs/statistics.md). For
// each stored kernel and gated case it times the kernel against itself (A/A: nothing changed) and against itself
// with a known slowdown injected after every launch (a spin of `slowdown` x its median on the same stream), runs
// of each alternating, each run answered exactly as `kforge run --base` answers it: the sequential rule stops
// the timing, regression_check judges it. A false alarm is an A/A run that fails; a detection is a slowed run
// that fails.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/runner.h"

namespace kf {

struct calibrate_options {
  int runs = 20;               // of each kind, per case
  double slowdown = 0.05;      // injected, relative to the kernel's median
  double threshold = 0.02;     // the gate.max_regression the runs are judged with
  int max_cases = 0;           // per workload (0: every gated case)
  stats::stopping_options stopping;  // timeout_s is the cap per run
  gate_options gate;
  std::function<void(const std::string&)> progress;
};

struct calibration_case {
  std::string workload, case_name, metric;
  double kernel_us = 0, delay_us = 0;
  int aa_runs = 0, false_alarms = 0, aa_inconclusive = 0;
  int slow_runs = 0, detections = 0, slow_inconclusive = 0;
  std::vector<double> aa_ratios, slow_ratios;  // the measured head / base ratio of every run
  double seconds = 0;                          // wall time of all runs
  int pairs = 0;                               // samples per series, summed over runs
  std::string error;                           // the case could not be calibrated (a sentence)
};

struct calibration {
  std::string gpu_key, device;
  calibrate_options options;
  std::vector<calibration_case> cases;
  int false_alarms() const;
  int aa_runs() const;
  int detections() const;
  int slow_runs() const;
};

calibration calibrate(const std::vector<workload_spec>& specs, run_backend& backend, const calibrate_options& o);

nlohmann::json to_json(const calibration& c);
std::string to_markdown(const calibration& c);

}  // namespace kf
