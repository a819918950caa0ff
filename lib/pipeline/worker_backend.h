// The real device side of `kforge run`: the compile service, one kforge-worker, verify's check_candidate for
// verification and the baselines' parent sides (spec/baseline_registry.h: compile's AOTInductor exports), which
// keep their products under the compile service's cache root.
#pragma once
#include <memory>

#include "exec/compile.h"
#include "exec/worker_client.h"
#include "pipeline/runner.h"
#include "verify/check.h"

namespace kf {

class worker_backend final : public run_backend {
 public:
  worker_backend(device_id device, compile_options compile, check_options check);
  std::string device_kind_name() const override;
  nlohmann::json env() override;
  candidate_check check(const workload_spec& spec, const std::string& source, const std::string& name) override;
  compile_result compile(const std::string& source, const std::string& name) override;
  worker_outcome measure(const nlohmann::json& request, std::chrono::milliseconds timeout) override;
  nlohmann::json baseline_impl(const std::string& name, const workload_spec& spec,
                               const std::vector<std::string>& cases, const std::string& gpu_key) override;
  void prepare_baseline(const std::string& name, const std::vector<baseline_work>& work,
                        const std::string& gpu_key) override;
  std::string compiler_identity() override;
  // Asks the worker for its environment again (starting a fresh one when the last died): "" when it answers.
  std::string probe() override;

 private:
  device_id m_device;
  compiler m_compiler;
  baseline_preparers m_baselines;
  check_options m_check;
  worker_client m_worker;
  nlohmann::json m_env;
};

}  // namespace kf
