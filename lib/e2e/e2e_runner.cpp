// Running lib/e2e/e2e.py: see e2e_runner.h.
#include "e2e/e2e_runner.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/error.h"
#include "util/fs.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace kf::e2e {

std::filesystem::path default_runner_script() { return std::filesystem::path(KFORGE_SOURCE_DIR) / "lib/e2e/e2e.py"; }

std::vector<std::string> runner_argv(const runner_options& o, const std::string& python,
                                     const std::filesystem::path& out) {
  std::vector<std::string> argv = {python,
                                   (o.script.empty() ? default_runner_script() : o.script).string(),
                                   "--model",
                                   o.model,
                                   "--device",
                                   o.device,
                                   "--out",
                                   out.string(),
                                   "--workloads",
                                   o.workloads,
                                   "--warmup",
                                   std::to_string(o.warmup),
                                   "--min-samples",
                                   std::to_string(o.min_samples),
                                   "--max-noise",
                                   fmt::format("{}", o.max_noise),
                                   "--min-seconds",
                                   fmt::format("{}", o.min_seconds),
                                   "--timeout",
                                   fmt::format("{}", o.timeout_s),
                                   "--profile-passes",
                                   std::to_string(o.profile_passes)};
  if (!o.model_args.empty()) argv.insert(argv.end(), {"--model-args", o.model_args});
  if (!o.names.empty()) argv.insert(argv.end(), {"--names", fmt::format("{}", fmt::join(o.names, ","))});
  if (!o.variants.empty()) argv.insert(argv.end(), {"--variants", fmt::format("{}", fmt::join(o.variants, ","))});
  if (o.rtol) argv.insert(argv.end(), {"--rtol", fmt::format("{}", *o.rtol)});
  if (o.atol) argv.insert(argv.end(), {"--atol", fmt::format("{}", *o.atol)});
  return argv;
}

e2e_result run_e2e(const runner_options& o, const std::filesystem::path& samples_out) {
  const std::filesystem::path script = o.script.empty() ? default_runner_script() : o.script;
  if (!std::filesystem::exists(script)) throw infra_error(fmt::format("the e2e runner {} is missing", script.string()));
  std::optional<std::string> py =
      o.python.find('/') == std::string::npos ? find_program(o.python) : std::optional<std::string>(o.python);
  if (!py)
    throw infra_error(
        fmt::format("no python interpreter `{}` on PATH (kforge "
                    "e2e runs the model with torch)",
                    o.python));
  process_options po;
  po.timeout = o.limit;
  po.merge_stderr = true;
  std::error_code ec;
  std::filesystem::remove(samples_out,
                          ec);  // a stale file must not pass for this run's
  process_result r = run_process(runner_argv(o, *py, samples_out), po);
  if (!r.started) throw infra_error(fmt::format("cannot run {}", *py));
  const std::string log = tail_text(r.out, 3000);
  if (r.exit_code == 2 && r.out.find("e2e.py: error:") != std::string::npos)
    throw user_error(fmt::format("kforge e2e --model {}: {}", o.model, log));
  if (!r.ok()) {
    if (r.out.find("No module named 'torch'") != std::string::npos)
      throw infra_error(fmt::format("{} cannot import torch: kforge e2e runs the model with it", *py));
    if (r.timed_out) throw infra_error(fmt::format("the end-to-end run {}:\n{}", r.describe(), log));
    throw user_error(fmt::format("running {} failed ({}):\n{}", o.model, r.describe(), log));
  }
  if (!std::filesystem::exists(samples_out))
    throw infra_error(fmt::format("the e2e runner wrote no samples to {}:\n{}", samples_out.string(), log));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(samples_out));
  } catch (const nlohmann::json::exception& e) {
    throw infra_error(fmt::format("{}: not JSON: {}", samples_out.string(), e.what()));
  }
  return result_from_samples(j, samples_out.string());
}

}  // namespace kf::e2e
