// Running lib/e2e/e2e.py on a user's model (FILE.py:FUNCTION) and reading its samples, the way kforge capture runs its
// tracer (capture/tracer.h): from the source tree, through run_process, never through a shell.
#pragma once
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "e2e/e2e_result.h"

namespace kf::e2e {

struct runner_options {
  std::string python = "python3";
  std::filesystem::path script;  // empty: lib/e2e/e2e.py of the source tree
  std::string model;             // FILE.py:FUNCTION
  std::string model_args;        // k=v,...
  std::string device = "cpu";    // cpu, cuda or cuda:N
  std::string workloads = "workloads";
  std::vector<std::string> names;     // only these workloads (empty: all)
  std::vector<std::string> variants;  // empty: all four
  int warmup = 3;
  int min_samples = 10;
  double max_noise = 0.005;
  double min_seconds = 0.5;
  double timeout_s = 15;  // per series kind (cold, hot), once min_samples are in
  int profile_passes = 5;
  std::optional<double> rtol, atol;
  std::chrono::seconds limit{3600};  // the whole run (torch.compile of a full-size model takes minutes)
};

std::filesystem::path default_runner_script();
// e2e.py's command line for `o`, writing to `out` (exposed for tests).
std::vector<std::string> runner_argv(const runner_options& o, const std::string& python,
                                     const std::filesystem::path& out);

// Runs e2e.py, writing its raw samples to `samples_out`, and summarizes them. A model that cannot be loaded, a bad
// FUNCTION or a forward of eager that raises is the user's (user_error with e2e.py's last lines); no python, no torch
// or a runner that crashes is the environment's (infra_error). A variant that fails is a result.
e2e_result run_e2e(const runner_options& o, const std::filesystem::path& samples_out);

}  // namespace kf::e2e
