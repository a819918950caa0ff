// kforge retune: re-runs the search for every workload whose kernel regressed, was wrong or lost to a required
// baseline (in a run's JSON, --from) or that has no kernel for this device's GPU key, seeded from the kernels already
// stored (this and other GPU keys).
#include <fmt/format.h>

#include "args.h"
#include "commands.h"
#include "exec/device.h"
#include "pipeline/device_list.h"
#include "report/run_result.h"
#include "search_session.h"
#include "spec/spec_parse.h"
#include "store/winners.h"
#include "util/error.h"
#include "util/term.h"

namespace kf {
namespace {

const std::vector<flag_def>& retune_flags() {
  static const std::vector<flag_def> defs = {
      {"from", true, "a run's JSON (kforge run --json): workloads that regressed, failed verification or lost to a required baseline are retuned", "F"},
      {"device", true, "cpu, cuda, cuda:N or auto (default auto)", "D"},
      {"devices", true, "search over several devices of one GPU key, one worker each: `all` or a list such as "
                        "cuda:0,cuda:1 (as kforge search --devices)", "LIST"},
      sandbox_flag(),
      {"workloads", true, "the folder of workload specs (default workloads)", "DIR"},
      {"budget", true, "evaluations per workload (default: each spec's search.budget)", "N"},
      {"time", true, "wall time per workload (30m, 2h)", "T"},
      {"db", true, "the search database (default .kforge/search.db)", "PATH"},
      {"baselines", true, "baselines to time, comma-separated (default: each spec's)", "LIST"},
      {"min-gain", true, "replace a stored kernel only when the winner is this much faster, both timed in the search (default 2%)", "PCT"},
      {"dry-run", false, "list what would be retuned and why, and stop"},
  };
  return defs;
}

// Why a workload needs a new kernel on this GPU key, or "" when it does not.
std::string retune_reason(const workload_spec& spec, const std::string& key, const run_result* run) {
  if (run)
    if (auto* w = run->find_workload(spec.name))
      for (auto& c : w->checks) {
        if (c.outcome != check_outcome::failed) continue;
        if (c.kind == "regression") return fmt::format("regressed: {}", c.sentence);
        if (c.kind == "verify") return fmt::format("wrong on this GPU: {}", c.sentence);
        if (c.kind == "beats") return fmt::format("loses to a required baseline: {}", c.sentence);
      }
  auto found = find_winner(kernels_dir(spec.path, spec.name), key);
  if (!found.kernel) return "no kernel: " + found.why;
  if (found.kernel->fallback) return fmt::format("only a fallback kernel ({})", found.kernel->note);
  return "";
}

}  // namespace

std::string retune_help() {
  return "usage: kforge retune [options]\n\n"
         "For every workload whose kernel regressed, failed verification or lost to a required baseline (per --from\n"
         "RUN.json), or that has no kernel for this device's GPU\n"
         "key, runs `kforge search` seeded from the stored kernels (a fresh tree each time) and writes the winners.\n"
         "Exit code 0 when every retuned workload got a winner, 1 when some did not.\n\n"
         "options:\n" + flags_help(retune_flags());
}

int retune_run(const std::vector<std::string>& argv) {
  args a(argv, retune_flags());
  apply_sandbox_flag(a);
  if (!a.positional().empty()) throw user_error("kforge retune takes no positional arguments (see --help)");
  std::optional<run_result> run;
  if (auto f = a.get("from")) run = load_run_result(*f);
  device_choice choice;
  device_list devs;  // --devices: several (search/multi_evaluator.h)
  if (auto list = a.get("devices")) {
    if (a.has("device")) throw user_error("--device and --devices: give one (--devices LIST for several devices)");
    devs = parse_device_list(*list);
    choice = {devs.ids.front(), devs.why};
  } else {
    choice = choose_device(a.get_or("device", "auto"));
  }
  term::say("{}", choice.why);
  std::string dir = a.get_or("workloads", "workloads");
  std::string key;
  if (choice.id.kind == device_kind::cpu) key = cpu_key();
  else if (run) key = run->env.gpu_key;
  if (key.empty())
    throw user_error("kforge retune on a GPU needs the GPU key: pass --from with a run's JSON from this GPU");
  int failed = 0, done = 0;
  install_search_interrupt();
  for (auto& path : find_specs(dir)) {
    auto spec = load_spec(path, dir);
    auto why = retune_reason(spec, key, run ? &*run : nullptr);
    if (why.empty()) continue;
    term::say("{}: {}", spec.name, why);
    if (a.has("dry-run")) continue;
    session_settings st;
    st.device = choice.id;
    if (devs.ids.size() > 1) {
      st.devices = devs.ids, st.device_names = devs.names;
      st.search.batch *= static_cast<int>(devs.ids.size());  // enough candidates a round to keep every device busy
    }
    st.search.budget = a.get_int("budget", spec.search.evaluations);
    st.search.time_s = a.get_double("time", spec.search.seconds);
    st.search.fresh = true;  // retuning starts over from the stored kernels, not from an old tree
    st.db_path = a.get_or("db", ".kforge/search.db");
    st.baselines = a.get_list("baselines");
    st.min_gain = min_gain_flag(a);
    try {
      auto r = run_search_session(spec, st);
      ++done;
      if (!r.outcome.winner) ++failed;
    } catch (const user_error& e) {
      term::say("{}: {}", spec.name, term::red(e.message()));
      ++failed;
    }
    if (search_interrupted()) break;
  }
  term::say("retune: {} workload(s) searched, {} without a winner", done, failed);
  return failed ? exit_gate_failed : exit_ok;
}

}  // namespace kf
