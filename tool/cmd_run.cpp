// kforge run: verify the stored kernels, time them against the baselines, gate against history, report.
#include <unistd.h>

#include <csignal>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "args.h"
#include "commands.h"
#include "e2e/e2e_gate.h"
#include "e2e/e2e_runner.h"
#include "e2e/e2e_spec.h"
#include "pipeline/device_list.h"
#include "pipeline/runner.h"
#include "pipeline/worker_backend.h"
#include "report/reporter.h"
#include "report/run_summary.h"
#include "spec/baseline_registry.h"
#include "spec/spec_parse.h"
#include "store/git_repo.h"
#include "store/history.h"
#include "store/shard.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/term.h"

namespace kf {
namespace {

std::vector<flag_def> run_flags() {
  std::vector<flag_def> defs = {
      {"device", true, "cpu, cuda, cuda:N or auto (default auto: cuda when present, and says so when not)", "D"},
      {"devices", true, "spread the workloads over several devices, one worker each: `all` (every GPU; cpu when "
                        "none) or a list such as cuda:0,cuda:1 (cpu,cpu: two workers on the cpu); one report", "LIST"},
      sandbox_flag(),
      {"baselines", true, "which baselines to time (default: each spec's list)", fmt::format("{}", fmt::join(baseline_names(), ","))},
      {"base", true, "compare with the merge-base of HEAD and REF (PR gate): its version of each kernel is timed "
                     "alongside, interleaved, changed or not", "REF"},
      {"record", false, "write the results as the git note of HEAD (refs/notes/kforge), for this GPU key"},
      {"require-history", false, "fail (not skip) the regression check when there is no history"},
      {"min-samples", true, "at least N samples per implementation (default 10)", "N"},
      {"alpha", true, "the gate's error rate per question, and the run's false discovery rate (default 0.01)", "X"},
      {"resolution", true, "a ratio known to +-X decides a question even on its line (default 1%)", "X"},
      {"timeout", true, "the cap per case: timing stops when the gate's questions are answered, at the latest "
                        "here; a question still open is inconclusive (default 15)", "S"},
      {"precise", false, "time every series to the noise target instead (--max-noise, --min-time): for tables"},
      {"max-noise", true, "with --precise: stop when the relative noise is at most X (default 0.5%)", "X"},
      {"min-time", true, "with --precise: and at least S seconds of measured time (default 0.5)", "S"},
      {"cache", true, "compile and export cache folder (default .kforge/cache)", "DIR"},
      {"python", true, "the Python interpreter with torch, for e2e entries (default python3)", "PY"},
      {"shard", true, "run only shard K of N (one per runner): workloads split by their recorded times; "
                      "`kforge report merge` joins the shards", "K/N"},
      {"prepare-only", false, "only prepare the baselines (export the torch.compile packages into --cache) and exit: "
                              "nothing verified or timed, no reports (a runner's cache step; it may run beside a "
                              "search, whose timings take turns with the exporter's on the GPU)"},
  };
  for (auto& r : reporters()) defs.push_back({std::string(r->format()), true, std::string(r->description()), "FILE"});
  for (auto& f : workloads_flags()) defs.push_back(f);
  return defs;
}

// --prepare-only: what each baseline's preparation took; exit 0 (an export that failed is said again, as
// "skipped", by the timed run that meets it).
int report_prepared(const run_result& r) {
  int prepared = 0;
  for (const auto& b : registered_baselines()) {
    const size_t cases = r.options.value(b.name + "_prepared_cases", size_t{0});
    if (!cases) continue;
    ++prepared;
    term::say("{} baseline prepared in {:.0f} s for {} case(s) on {} ({})", b.title_or_name(),
              r.options.value(b.name + "_prepare_seconds", 0.0), cases, r.env.gpu_key, r.env.device);
  }
  if (!prepared) term::say("no baseline to prepare: none of the given workloads times one with a preparation step");
  return 0;
}

// Each report path names a file in a writable folder, made when missing (a CI job's `out/`): checked before any
// work, so a bad path costs nothing (a run is minutes of device time).
void check_report_paths(const args& a) {
  namespace fs = std::filesystem;
  for (auto& rep : reporters()) {
    auto path = a.get(std::string(rep->format()));
    if (!path) continue;
    const std::string flag = "--" + std::string(rep->format());
    std::error_code ec;
    if (path->empty()) throw user_error(flag + ": expected a file path");
    if (fs::is_directory(*path, ec)) throw user_error(source_loc{*path}, flag + ": is a folder, expected a file path");
    fs::path dir = fs::path(*path).parent_path();
    if (dir.empty()) dir = ".";
    if (!fs::is_directory(dir, ec) && (fs::create_directories(dir, ec), ec || !fs::is_directory(dir)))
      throw user_error(source_loc{*path}, fmt::format("{}: cannot make the folder {}: {}", flag, dir.string(),
                                                      ec ? ec.message() : "a file is in the way"));
    if (::access(dir.c_str(), W_OK) != 0)
      throw user_error(source_loc{*path}, fmt::format("{}: the folder {} is not writable", flag, dir.string()));
  }
}

// Returns false when a report could not be written (the run then exits 2: its results are not where asked).
bool write_reports(const run_result& r, const args& a) {
  bool all = true;
  for (auto& rep : reporters()) {
    auto path = a.get(std::string(rep->format()));
    if (!path) continue;
    try {
      rep->write(r, *path);
    } catch (const std::exception& e) {
      term::say("{} cannot write {}: {}", term::red("error:"), *path, e.what());
      all = false;
    }
  }
  return all;
}

volatile std::sig_atomic_t g_interrupted = 0;

// The e2e entries of the run (files given whose YAML is an `e2e:` mapping), timed after the workloads and gated
// against the history note's entry of the same name (lib/e2e/e2e_gate.h). A model that cannot run is its entry's
// error (exit 2), the other entries still run.
void run_e2e_entries(const std::vector<e2e::e2e_spec>& entries, run_result& r, const run_options& o, git_repo* repo,
                     const device_choice& dev, const std::string& workloads_dir, const args& a) {
  if (entries.empty()) return;
  run_history h = load_run_history(repo, o.base_ref, r.env.gpu_key);
  for (size_t i = 0; i < entries.size(); ++i) {
    const e2e::e2e_spec& spec = entries[i];
    if (g_interrupted) {
      r.complete = false;
      r.incomplete_reason = fmt::format("interrupted before e2e:{}", spec.name);
      return;
    }
    term::step(fmt::format("[e2e {}/{}] {} ({})", i + 1, entries.size(), spec.name, spec.model));
    e2e::runner_options ro;
    ro.python = a.get_or("python", ro.python);
    ro.model = spec.model;
    ro.model_args = spec.model_args;
    ro.device = dev.id.kind == device_kind::cpu ? "cpu" : dev.id.str();
    ro.workloads = spec.workloads.empty() ? workloads_dir : spec.workloads;
    ro.names = spec.names;
    ro.variants = spec.variants;
    ro.min_samples = std::max(o.stopping.min_samples, o.gate.min_samples);
    ro.max_noise = o.stopping.max_noise;
    ro.min_seconds = o.stopping.min_seconds;
    ro.timeout_s = o.stopping.timeout_s;
    ro.rtol = spec.rtol;
    ro.atol = spec.atol;
    workload_result w;
    try {
      temp_dir tmp("kforge-e2e");
      e2e::e2e_result res = e2e::run_e2e(ro, tmp.path() / "samples.json");
      w = e2e::to_workload_result(res, spec, ro.workloads);
      e2e::apply_e2e_gate(w, res, spec, history_for(h, w.name), o.gate);
    } catch (const std::exception& e) {
      w = e2e::failed_entry(spec, e.what());
    }
    r.workloads.push_back(std::move(w));
  }
}

}  // namespace

std::string run_help() {
  return "usage: kforge run [WORKLOADS...] [E2E.yaml...] [options]\n\n"
         "For each workload (names or spec paths; default: every spec in workloads/): find the stored kernel for\n"
         "this GPU, compile and verify it on every case, time it against the baselines on the gated cases, compare\n"
         "with the history note of the merge-base (--base) or the parent commit, and write the reports.\n"
         "A file whose YAML is an `e2e:` entry (docs/workload-spec.md) times its model end to end (kforge e2e) and\n"
         "gates it as `e2e:<name>`: outputs match eager, beats e2e.must_beat, not slower than the history,\n"
         "e2e.min_predicted_fraction of the Amdahl prediction. Given only e2e entries, only they run.\n\n"
         "options:\n" + flags_help(run_flags()) +
         "\nexit codes: 0 passed, 1 a check failed (verify, must_beat, regression, required kernel),\n"
         "            2 usage, config or infrastructure error (reports are still written, marked incomplete)\n";
}

int run_run(const std::vector<std::string>& argv) {
  args a(argv, run_flags());
  apply_sandbox_flag(a);
  run_options o;
  if (a.has("baselines")) {
    o.baselines = a.get_list("baselines");
    if (o.baselines.empty())
      throw user_error(fmt::format("--baselines: expected at least one of {}", fmt::join(baseline_names(), ", ")));
    for (auto& name : o.baselines)
      if (std::find(baseline_names().begin(), baseline_names().end(), name) == baseline_names().end())
        throw user_error(fmt::format("--baselines: unknown baseline '{}' (expected some of {})", name, fmt::join(baseline_names(), ", ")));
  }
  o.stopping.min_samples = a.get_int("min-samples", 10);
  // Checked here, before any spec is verified (the worker would refuse them only at the first timing).
  o.stopping.max_noise = a.get_double_in("max-noise", 0.005, 0, 10, "a relative noise");
  o.stopping.min_seconds = a.get_double_in("min-time", 0.5, 0, 86400, "seconds");
  o.stopping.timeout_s = a.get_double_in("timeout", 15, 0.001, 86400, "seconds");
  if (o.stopping.min_samples < 1) throw user_error("--min-samples must be at least 1");
  o.gate.alpha = a.get_double_in("alpha", 0.01, 1e-9, 0.5, "a probability");
  o.gate.resolution = a.get_double_in("resolution", 0.01, 0, 1, "a relative half-width");
  o.decide = !a.has("precise");
  o.gate.require_history = a.has("require-history");
  o.base_ref = a.get_or("base", "");
  o.progress = [](const std::string& line) { term::step(line); };
  o.stop_requested = [] { return g_interrupted != 0; };

  o.prepare_only = a.has("prepare-only");
  if (o.prepare_only)
    for (const char* f : {"record", "base", "shard", "json", "junit", "markdown", "html", "gbench", "samples"})
      if (a.has(f)) throw user_error(fmt::format("--prepare-only times nothing: --{} has nothing to do with it", f));
  check_report_paths(a);
  std::optional<shard_id> shard;
  if (auto s = a.get("shard")) shard = parse_shard(*s);
  // Every spec is parsed and validated before any device time is spent.
  std::string dir = workloads_folder(a);
  std::vector<std::string> given, e2e_files;
  for (const auto& p : a.positional()) (e2e::is_e2e_file(p) ? e2e_files : given).push_back(p);
  std::vector<workload_spec> specs;
  std::vector<e2e::e2e_spec> entries;
  try {
    for (const auto& f : e2e_files) entries.push_back(e2e::load_e2e_spec(f));
    // Only e2e entries given: only they run (the worker still says where the run is, for the history's key).
    if (e2e_files.empty() || !given.empty()) specs = load_specs(workload_names(given, dir), dir);
  } catch (const user_error& e) {  // as the help says: the reports are still written, marked incomplete
    run_result none;
    none.complete = false;
    none.incomplete_reason = e.what();
    write_reports(none, a);
    throw;
  }
  if (!o.baselines.empty())  // a narrower list is for quick runs; its gate is weaker, and says so up front
    for (auto& s : specs) {
      std::vector<std::string> left_out;
      for (auto& b : s.gate.must_beat)
        if (std::find(o.baselines.begin(), o.baselines.end(), b) == o.baselines.end()) left_out.push_back(b);
      if (!left_out.empty())
        term::say("{} {}: --baselines leaves out {}, which its gate must beat: those checks are skipped, not passed",
                  term::yellow("note:"), s.name, fmt::join(left_out, ", "));
    }

  std::unique_ptr<git_repo> repo;
  try {
    repo = std::make_unique<git_repo>(".");
  } catch (const user_error& e) {
    if (a.has("record") || a.has("base")) throw;
    term::say("{} {}: running without history", term::yellow("note:"), e.message());
  }

  // One worker per device: --devices spreads the workloads over several (pipeline/run_devices.cpp).
  device_list devs;
  if (auto list = a.get("devices")) {
    if (a.has("device")) throw user_error("--device and --devices: give one (--devices LIST for several devices)");
    devs = parse_device_list(*list);
  } else {
    device_choice one = choose_device(a.get_or("device", "auto"));
    devs = {{one.id}, {one.id.str()}, one.why};
  }
  term::say("{}", devs.why);
  device_choice dev{devs.ids.front(), devs.why};  // e2e entries run on the first device
  compile_options co;  // its cache root holds the baselines' products too (compile's packages)
  if (auto c = a.get("cache")) co.cache_root = *c;
  std::vector<std::unique_ptr<worker_backend>> backends;
  std::vector<run_device> devices;
  for (size_t i = 0; i < devs.ids.size(); ++i) {
    backends.push_back(std::make_unique<worker_backend>(devs.ids[i], co, check_options{}));
    devices.push_back({devs.names[i], backends.back().get()});
  }
  worker_backend& backend = *backends.front();

  // The first Ctrl-C stops after the current workload and still writes the reports; a second one aborts.
  auto on_signal = [](int sig) {
    if (g_interrupted) {
      std::signal(sig, SIG_DFL);
      std::raise(sig);
    }
    g_interrupted = 1;
    const char msg[] = "\nkforge: stopping after this workload (again to abort)\n";
    (void)!::write(2, msg, sizeof msg - 1);
  };
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  run_result r;
  try {
    nlohmann::json shard_json;
    if (shard) {  // inside the try: a worker that cannot say its GPU key still leaves reports
      shard_json = keep_shard(*shard, specs, repo.get(), o.base_ref, backend.env());
      term::say("shard {}/{}: {} of {} workloads ({}), split by {}", shard->index, shard->count, specs.size(),
                shard_json["of"].size(), fmt::join(shard_json["workloads"].get<std::vector<std::string>>(), ", "),
                shard_json["weights_from"].get<std::string>());
    }
    r = run_workloads(specs, devices, repo.get(), o);
    if (o.prepare_only) {
      term::end_progress();
      return report_prepared(r);
    }
    if (shard) r.options["shard"] = shard_json;
    run_e2e_entries(entries, r, o, repo.get(), dev, dir, a);
  } catch (const std::exception& e) {
    // Nothing could run (no worker, no device): still leave reports saying so.
    r.complete = false;
    r.incomplete_reason = e.what();
    term::end_progress();
    write_reports(r, a);
    throw;
  }
  term::end_progress();
  const bool reports_written = write_reports(r, a);

  if (a.has("record")) {
    if (!repo) throw user_error("--record needs a git repository");
    record_history(*repo, r.env.git_commit, r);
    term::say("recorded results for {} as the {} note of {}", r.env.gpu_key, k_notes_ref, r.env.git_commit.substr(0, 12));
  }
  int code = r.exit_code();
  if (!reports_written) {
    term::say("{} a report could not be written (above): exit 2", term::red("error:"));
    code = 2;
  }
  for (const auto& d : r.env.devices)
    if (!d.lost.empty())
      term::say("{} {} was taken out of the run: {}", term::yellow("warning:"), d.name, d.lost);
  print_run_summary(r, code);  // a line per workload; "nothing verified" when no kernel was (#19)
  return code;
}

}  // namespace kf
