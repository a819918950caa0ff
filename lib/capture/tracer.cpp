// Running lib/capture/trace.py: see tracer.h.
#include "capture/tracer.h"

#include <fmt/format.h>

#include "util/error.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace kf::capture {

std::filesystem::path default_tracer_script() {
  return std::filesystem::path(KFORGE_SOURCE_DIR) / "lib/capture/trace.py";
}

trace run_tracer(const tracer_options& o, const std::filesystem::path& out) {
  const std::filesystem::path script = o.script.empty() ? default_tracer_script() : o.script;
  if (!std::filesystem::exists(script)) throw infra_error(fmt::format("the tracer {} is missing", script.string()));
  std::optional<std::string> py =
      o.python.find('/') == std::string::npos ? find_program(o.python) : std::optional<std::string>(o.python);
  if (!py) throw infra_error(fmt::format("no python interpreter `{}` on PATH (kforge capture runs the model with torch)", o.python));
  std::vector<std::string> argv = {*py, script.string(), "--model", o.model, "--device", o.device, "--out", out.string(),
                                   "--warmup", std::to_string(o.warmup), "--iters", std::to_string(o.iters)};
  if (!o.model_args.empty()) argv.insert(argv.end(), {"--model-args", o.model_args});
  process_options po;
  po.timeout = o.timeout;
  po.merge_stderr = true;
  process_result r = run_process(argv, po);
  if (!r.started) throw infra_error(fmt::format("cannot run {}", *py));
  const std::string log = tail_text(r.out, 3000);
  // trace.py exits 2 on the user's mistakes (no such file or function, a bad result), which it names.
  if (r.exit_code == 2 && r.out.find("trace.py: error:") != std::string::npos)
    throw user_error(fmt::format("kforge capture --model {}: {}", o.model, log));
  if (r.ok() && !std::filesystem::exists(out)) throw infra_error(fmt::format("the tracer wrote no trace to {}:\n{}", out.string(), log));
  if (!r.ok()) {
    if (r.out.find("No module named 'torch'") != std::string::npos)
      throw infra_error(fmt::format("{} cannot import torch: kforge capture runs the model with it", *py));
    if (r.timed_out) throw infra_error(fmt::format("the model's trace {}:\n{}", r.describe(), log));
    // Anything else is the model's own failure (an exception in its forward or in FUNCTION).
    throw user_error(fmt::format("running {} failed ({}):\n{}", o.model, r.describe(), log));
  }
  return read_trace(out);
}

}  // namespace kf::capture
