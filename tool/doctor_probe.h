// What `kforge doctor` looks at: compilers, python + torch, GPUs (through nvidia-smi: the parent never
// initializes CUDA), cuDNN, libgit2/SQLite, the LLM endpoint, the workloads folder. Each finding is a line
// `ok|missing|warn  what  detail  (what to do)`.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kf {

struct doctor_check {
  std::string status;       // "ok" | "missing" | "warn"
  std::string what;         // "c++ compiler", "gpu 0", ...
  std::string detail;       // versions, paths
  std::string fix;          // what to do (empty when ok)
  bool essential = false;   // needed for the cpu device (kforge run --device cpu)
};

struct doctor_report {
  std::vector<doctor_check> checks;
  bool cpu_ready() const;   // every essential check is ok
  nlohmann::json to_json() const;
  std::string to_text() const;
};

struct doctor_options {
  std::string workloads_dir = "workloads";
  std::string python = "python3";
  bool probe_torch = true;  // importing torch takes seconds
};

doctor_report probe_environment(const doctor_options& options);

// The worker's view, from its `env` answer (docs/worker-protocol.md): device, GPU name, SM count, clocks,
// CUDA runtime, cuDNN and torch as the worker sees them. The exec part calls this with the answer of a
// started worker; an empty or failed answer is reported as a warning.
void add_worker_env(doctor_report* report, const nlohmann::json& env);

}  // namespace kf
