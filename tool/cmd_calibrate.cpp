// kforge calibrate: how often the gate's regression check raises a false alarm or misses a known slowdown on
// this machine (lib/gate/calibrate.h, docs/statistics.md).
#include <fmt/format.h>

#include "args.h"
#include "commands.h"
#include "pipeline/calibrate.h"
#include "pipeline/worker_backend.h"
#include "spec/spec_parse.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/term.h"

namespace kf {
namespace {

std::vector<flag_def> calibrate_flags() {
  std::vector<flag_def> defs = {
      {"device", true, "cpu, cuda, cuda:N or auto (default auto)", "D"},
      sandbox_flag(),
      {"runs", true, "A/A runs and slowed runs per case, each (default 20)", "N"},
      {"slowdown", true, "the injected slowdown, relative to the kernel's median (default 5%)", "X"},
      {"threshold", true, "the gate.max_regression the runs are judged with (default 2%)", "X"},
      {"cases", true, "at most N gated cases per workload (default: all)", "N"},
      {"alpha", true, "the gate's error rate per question (default 0.01)", "X"},
      {"resolution", true, "as kforge run's (default 1%)", "X"},
      {"timeout", true, "the cap per run, seconds (default 15)", "S"},
      {"cache", true, "compile cache folder (default .kforge/cache)", "DIR"},
      {"json", true, "the results as JSON (schema kforge.calibration/1)", "FILE"},
      {"markdown", true, "the table as Markdown", "FILE"},
  };
  for (auto& f : workloads_flags()) defs.push_back(f);
  return defs;
}

}  // namespace

std::string calibrate_help() {
  return "usage: kforge calibrate [WORKLOADS...] [options]\n\n"
         "Measures the gate's error rates on this machine: for each stored kernel and gated case, times the kernel\n"
         "against itself (A/A, nothing changed) and against itself slowed by a known amount (a spin after every\n"
         "launch), runs alternating, each judged as `kforge run --base` judges a regression. Prints the false\n"
         "alarms and the detections.\n\n"
         "options:\n" + flags_help(calibrate_flags()) +
         "\nexit codes: 0 no false alarm and at least 95% of the slowdowns detected, 1 otherwise, 2 usage or\n"
         "            infrastructure error\n";
}

int calibrate_run(const std::vector<std::string>& argv) {
  args a(argv, calibrate_flags());
  apply_sandbox_flag(a);
  calibrate_options o;
  o.runs = a.get_int("runs", 20);
  if (o.runs < 1) throw user_error("--runs must be at least 1");
  o.slowdown = a.get_double_in("slowdown", 0.05, 0, 10, "a relative slowdown");
  o.threshold = a.get_double_in("threshold", 0.02, 0, 10, "a relative threshold");
  o.max_cases = a.get_int("cases", 0);
  o.gate.alpha = a.get_double_in("alpha", 0.01, 1e-9, 0.5, "a probability");
  o.gate.resolution = a.get_double_in("resolution", 0.01, 0, 1, "a relative half-width");
  o.stopping.timeout_s = a.get_double_in("timeout", 15, 0.001, 86400, "seconds");
  o.progress = [](const std::string& line) { term::step(line); };

  std::string dir = workloads_folder(a);
  std::vector<workload_spec> specs = load_specs(workload_names(a.positional(), dir), dir);

  device_choice dev = choose_device(a.get_or("device", "auto"));
  term::say("{}", dev.why);
  compile_options co;  // its cache root holds the baselines' products too (compile's packages)
  if (auto c = a.get("cache")) co.cache_root = *c;
  worker_backend backend(dev.id, co, check_options{});
  calibration cal = calibrate(specs, backend, o);
  term::end_progress();

  std::string md = to_markdown(cal);
  std::fputs(md.c_str(), stdout);
  if (auto p = a.get("json")) write_file_atomic(*p, to_json(cal).dump(1) + "\n");
  if (auto p = a.get("markdown")) write_file_atomic(*p, md);
  if (cal.aa_runs() == 0) throw infra_error("nothing was calibrated: no stored kernel for this machine or no gated case");
  bool good = cal.false_alarms() == 0 && cal.detections() >= 0.95 * cal.slow_runs();
  return good ? 0 : 1;
}

}  // namespace kf
