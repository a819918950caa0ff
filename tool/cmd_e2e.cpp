// kforge e2e: times a model's forward pass four ways (eager, eager with kforge's operators, torch.compile, and
// torch.compile with the operators inside the graph), cold and hot (CUDA graph replay) on cuda, checks each variant's
// outputs against eager, and predicts the gain from the capture's shares (Amdahl). lib/e2e/e2e.py takes the samples;
// the statistics, the table and the reports are lib/e2e/. Exit 0 when every variant ran and matched eager, 1 when one
// failed (its outputs differ from eager, or it raised), 2 on a usage or environment error.
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "args.h"
#include "commands.h"
#include "e2e/e2e_result.h"
#include "e2e/e2e_runner.h"
#include "e2e/e2e_spec.h"
#include "exec/device.h"
#include "report/text_escape.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/term.h"

namespace kf {
namespace {

const std::vector<flag_def> k_flags = {
    {"model", true,
     "the model: FILE.py:FUNCTION, where FUNCTION returns (model, "
     "example_inputs)",
     "FILE.py:FUNCTION"},
    {"device", true, "cpu, cuda, cuda:N or auto (default auto: cuda when a GPU is present)", "D"},
    {"model-args", true,
     "keyword arguments for FUNCTION, k=v,... (Python literals: "
     "scale=0.05,layers=1)",
     "K=V,..."},
    {"workloads", true, "the stored kernels kforge.patch and the graph rewrites use (default workloads)", "DIR"},
    {"names", true, "load only these workloads (default: every one in DIR)", "A,B"},
    {"variants", true,
     "which to time, eager always (default "
     "eager,kforge,compile,compile_kforge)",
     "V,..."},
    {"json", true,
     "write the result (statistics, raw samples, the prediction) as JSON to "
     "FILE",
     "FILE"},
    {"markdown", true, "write the table as Markdown to FILE", "FILE"},
    {"samples", true, "keep e2e.py's raw samples at FILE", "FILE"},
    {"from-samples", true, "summarize samples kept with --samples instead of running the model", "FILE"},
    {"warmup", true, "forwards per variant before timing (default 3)", "N"},
    {"min-samples", true, "at least N samples per variant (default 10)", "N"},
    {"max-noise", true, "stop when every variant's relative noise is at most X (default 0.5%)", "X"},
    {"min-time", true, "and at least S seconds of measured time each (default 0.5)", "S"},
    {"timeout", true,
     "or after S seconds of timing once min-samples are in, per kind (default "
     "15)",
     "S"},
    {"profile-passes", true, "passes of the in-model profile (the prediction where no case has a share; default 5)", "N"},
    {"rtol", true,
     "check outputs elementwise instead, |got - eager| <= atol + rtol |eager| "
     "for every value (default: the norm rule below)",
     "X"},
    {"atol", true, "with --rtol", "X"},
    {"python", true, "the Python interpreter with torch (default python3)", "PY"},
};

// The table on stdout, the JSON and Markdown where asked; exit 1 when a variant failed.
int report(const e2e::e2e_result& r, const args& a) {
  std::fputs(e2e::table_text(r).c_str(), stdout);
  if (auto j = a.get("json")) write_file_atomic(*j, safe_dump(e2e::to_json(r), 2) + "\n");
  if (auto m = a.get("markdown")) write_file_atomic(*m, e2e::markdown(r));
  return r.any_failed() ? exit_gate_failed : exit_ok;
}

}  // namespace

std::string e2e_help() {
  return "usage: kforge e2e --model FILE.py:FUNCTION [--device cpu|cuda] "
         "[--model-args k=v,...] [--workloads DIR]\n"
         "                  [--json FILE] [--markdown FILE]\n\n"
         "Times the model's forward pass four ways: eager, eager with kforge's operators (kforge.patch, then\n"
         "kforge.rewrite_eager for the patterns written inline), torch.compile, and torch.compile with kforge's\n"
         "operators inside the compiled graph (kforge.compile, whose policy leaves to inductor the workloads that\n"
         "are elementwise only and the kernels recorded slower than torch.compile, naming them in the variant's\n"
         "note); cold (one forward per sample; on cuda the L2 flushed, CUDA events, synchronized) and hot (CUDA\n"
         "graph replay; not on the cpu). The variants run in rounds, one forward each, after a warm-up, with kforge\n"
         "run's stopping rule; medians and their 99% intervals are kforge's statistics.\n"
         "Each variant's outputs must match eager's, or it fails: per floating output, the relative error\n"
         "||got - eager|| / ||eager|| of the whole output, and the RMS error of its worst row (the last dim) over\n"
         "the output's RMS, each within a limit set by the lowest-precision floating dtype the model computes in\n"
         "(its parameters, buffers, inputs and outputs; float32 on cuda with TF32 allowed counts as float16):\n"
         "bfloat16 0.08 and 0.2, float16 0.02 and 0.05, float32 1e-3 and 5e-3, float64 1e-7 and 1e-6\n"
         "(lib/e2e/output_check.py). --rtol/--atol check every value instead.\n"
         "The prediction (Amdahl): 1 / (1 - S + sum s_i / k_i) over the cases the kforge variant's operators\n"
         "ran, s_i each case's share of the model's time as `kforge capture` recorded it (the spec case's share,\n"
         "scaled by the calls replaced) and k_i its stored winner's recorded speedup over eager; the table says\n"
         "what fraction of the predicted gain was measured. Where no replaced case has a share (specs written by\n"
         "hand), the in-model profile predicts instead: each patched module and replaced pattern timed eager and\n"
         "with its operator (host-synchronized: a diagnostic on cuda). `kforge run E2E.yaml` gates on it\n"
         "(docs/workload-spec.md).\n\noptions:\n" +
         flags_help(k_flags) +
         "\nexit codes: 0 every variant ran and matched eager, 1 a variant "
         "failed, 2 usage or environment error\n";
}

int e2e_run(const std::vector<std::string>& argv) {
  args a(argv, k_flags);
  if (!a.positional().empty())
    throw user_error(fmt::format("unexpected argument `{}` (see kforge e2e --help)", a.positional()[0]));
  if (auto kept = a.get("from-samples")) {
    if (a.has("model")) throw user_error("--from-samples reads kept samples: give it or --model, not both");
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(read_file(*kept));
    } catch (const nlohmann::json::exception& e) {
      throw user_error(source_loc{*kept}, fmt::format("not JSON: {}", e.what()));
    }
    return report(e2e::result_from_samples(j, *kept), a);
  }
  auto model = a.get("model");
  if (!model) throw user_error("kforge e2e needs --model FILE.py:FUNCTION (or --from-samples FILE)");
  e2e::runner_options o;
  o.model = *model;
  {
    auto colon = model->rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == model->size())
      throw user_error(fmt::format("--model {}: expected FILE.py:FUNCTION", *model));
    if (!std::filesystem::is_regular_file(model->substr(0, colon)))
      throw user_error(source_loc{model->substr(0, colon)}, fmt::format("--model {}: no such file", *model));
  }
  o.model_args = a.get_or("model-args", "");
  o.workloads = a.get_or("workloads", "workloads");
  if (!std::filesystem::is_directory(o.workloads))
    throw user_error(fmt::format("--workloads {}: not a folder", o.workloads));
  o.names = a.get_list("names");
  o.variants = a.get_list("variants");
  for (auto& v : o.variants)
    if (std::find(e2e::k_variants.begin(), e2e::k_variants.end(), v) == e2e::k_variants.end())
      throw user_error(
          fmt::format("--variants: unknown variant `{}` (expected some of "
                      "eager, kforge, compile, compile_kforge)",
                      v));
  o.python = a.get_or("python", o.python);
  o.warmup = a.get_int("warmup", 3);
  o.min_samples = a.get_int("min-samples", 10);
  if (o.warmup < 1 || o.min_samples < 1) throw user_error("--warmup and --min-samples must be at least 1");
  o.max_noise = a.get_double_in("max-noise", 0.005, 0, 10, "a relative noise");
  o.min_seconds = a.get_double_in("min-time", 0.5, 0, 86400, "seconds");
  o.timeout_s = a.get_double_in("timeout", 15, 0, 86400, "seconds");
  o.profile_passes = a.get_int("profile-passes", 5);
  if (o.profile_passes < 1) throw user_error("--profile-passes must be at least 1");
  if (a.has("rtol") != a.has("atol")) throw user_error("--rtol and --atol go together");
  if (a.has("rtol")) {
    o.rtol = a.get_double_in("rtol", 0, 0, 1e9, "a relative tolerance");
    o.atol = a.get_double_in("atol", 0, 0, 1e9, "an absolute tolerance");
  }
  device_choice dev = choose_device(a.get_or("device", "auto"));
  o.device = dev.id.kind == device_kind::cpu ? "cpu" : dev.id.str();
  term::say("{}", dev.why);
  term::step(fmt::format("timing {} on {}", o.model, o.device));
  e2e::e2e_result r;
  if (auto keep = a.get("samples")) {
    r = e2e::run_e2e(o, *keep);
  } else {
    temp_dir tmp("kforge-e2e");
    r = e2e::run_e2e(o, tmp.path() / "samples.json");
  }
  term::end_progress();
  return report(r, a);
}

}  // namespace kf
