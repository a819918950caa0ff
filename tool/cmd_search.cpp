// kforge search NAME: an MCTS search over kernel variants for one workload on one device; the winner is written
// to workloads/<name>/kernels/<gpu-key>.{cpp,cu} + .json. Ctrl-C stops after the evaluations in flight and keeps
// the tree (.kforge/search.db): `--resume` continues it.
#include <algorithm>

#include <fmt/format.h>

#include "args.h"
#include "commands.h"
#include "exec/device.h"
#include "pipeline/device_list.h"
#include "search/proposer.h"
#include "search/roots.h"
#include "search_session.h"
#include "spec/spec_parse.h"
#include "util/error.h"
#include "util/term.h"

namespace kf {
namespace {

const std::vector<flag_def>& search_flags() {
  static const std::vector<flag_def> defs = {
      {"device", true, "cpu, cuda, cuda:N or auto (default auto)", "D"},
      {"devices", true, "spread the candidates over several devices, one worker each: `all` (every GPU; cpu when "
                        "none) or a list such as cuda:0,cuda:1 of one GPU key (cpu,cpu: two workers on the cpu, for "
                        "testing the scheduling); times are put on the first device's scale by each device's baselines", "LIST"},
      sandbox_flag(),
      {"budget", true, "evaluations in the search, all runs together (default: the spec's search.budget)", "N"},
      {"time", true, "stop this run after this long (30m, 2h, 600s)", "T"},
      {"proposer", true, "template (offline, default) or llm (an OpenAI-compatible or Anthropic endpoint: KFORGE_LLM_URL, KFORGE_LLM_MODEL, the key in OPENAI_API_KEY or ANTHROPIC_API_KEY; it rewrites kernels and repairs its own that fail, up to 3 times)", "NAME"},
      {"record-llm", true, "with the llm proposer: write every request to the model and its answer to FILE (JSON lines; appended with --resume), for --replay-llm", "FILE"},
      {"replay-llm", true, "answer the llm proposer from FILE (written by --record-llm) instead of an endpoint, matching each request by its content; a request FILE has no answer for stops the search (exit 2, naming it). Implies --proposer llm", "FILE"},
      {"resume", false, "continue the stored search for this workload and GPU key"},
      {"fresh", false, "delete the stored search and start over"},
      {"db", true, "the search database (default .kforge/search.db)", "PATH"},
      {"workloads", true, "the folder holding NAME.yaml (default workloads)", "DIR"},
      {"baselines", true, "baselines to time, comma-separated (default: the spec's)", "LIST"},
      {"seed", true, "the proposer's random seed (default 1)", "N"},
      {"batch", true, "candidates proposed and compiled together (default: 16 on a GPU, whose compiles overlap the timing; 4 on the cpu; times the number of --devices)", "N"},
      {"no-write", false, "report the winner without writing it"},
      {"min-gain", true, "replace the stored kernel only when the winner is this much faster, both timed in this search (default 2%)", "PCT"},
      {"max-parts", true, "after the search, try a dispatch kernel of up to N of its candidates, each launched for the input sizes it was fastest at (default 3; 1: off)", "N"},
      {"tree", true, "also write the search tree as JSON for `kforge report render --search`", "FILE"},
      {"try", true, "seed the search with these variants too: \"knob=value knob=value\", several separated by ';', each "
                    "optionally FAMILY: first; knobs not named keep the family's default (a harness sweep's best, a "
                    "variant from another GPU)", "VARIANTS"},
  };
  return defs;
}

}  // namespace

std::string search_help() {
  return "usage: kforge search NAME [options]\n\n"
         "Searches for a faster kernel for the workload NAME (workloads/NAME.yaml or a path to a spec): an MCTS over\n"
         "kernel variants, seeded from the stored winners and each kernel family's default, with multi-fidelity\n"
         "evaluation (quick screen, then full verification and timing for candidates that could win). The tree\n"
         "lives in .kforge/search.db; Ctrl-C stops cleanly and --resume continues. The winner is written to\n"
         "workloads/NAME/kernels/<gpu-key>.{cpp,cu} with a .json of its results, lineage and environment.\n\n"
         "With --proposer llm a model rewrites the kernels (several answers per node) and gets each of its kernels\n"
         "that does not compile or fails verification back with the compiler's or the verifier's message, up to 3\n"
         "repairs, each a node of the tree (--tree shows the chains). --record-llm FILE keeps every request and\n"
         "answer; --replay-llm FILE answers from such a file, so the search runs again without the endpoint.\n\n"
         "options:\n" + flags_help(search_flags());
}

session_settings search_settings(const args& a, const workload_spec& spec) {
  session_settings st;
  if (auto list = a.get("devices")) {  // several devices (search/multi_evaluator.h); one is today's search
    if (a.has("device")) throw user_error("--device and --devices: give one (--devices LIST for several devices)");
    device_list devs = parse_device_list(*list);
    term::say("{}", devs.why);
    st.device = devs.ids.front();
    if (devs.ids.size() > 1) st.devices = devs.ids, st.device_names = devs.names;
  } else {
    auto choice = choose_device(a.get_or("device", "auto"));
    term::say("{}", choice.why);
    st.device = choice.id;
  }
  const int n_devices = std::max<int>(1, static_cast<int>(st.devices.size()));
  st.search.budget = a.get_int("budget", spec.search.evaluations);
  if (st.search.budget < 1) throw user_error(fmt::format("--budget {}: expected a positive number of evaluations", st.search.budget));
  st.search.time_s = a.get_double("time", spec.search.seconds);
  st.search.llm_record = a.get_or("record-llm", "");
  st.search.llm_replay = a.get_or("replay-llm", "");
  st.search.proposer = a.get_or("proposer", st.search.llm_replay.empty() ? "template" : "llm");
  if (!st.search.llm_record.empty() && !st.search.llm_replay.empty())
    throw user_error("--record-llm and --replay-llm: a replayed search asks no endpoint, so there is nothing new to "
                     "record; pick one");
  if ((!st.search.llm_record.empty() || !st.search.llm_replay.empty()) && st.search.proposer != "llm")
    throw user_error(fmt::format("--{}: the {} proposer asks no model; use --proposer llm",
                                 st.search.llm_record.empty() ? "replay-llm" : "record-llm", st.search.proposer));
  proposer_options check;  // an unknown name, no endpoint or an unreadable replay file fail here, before any work
  check.llm_replay = st.search.llm_replay;
  make_proposer(st.search.proposer, check);
  st.search.resume = a.has("resume");
  st.search.fresh = a.has("fresh");
  if (st.search.resume && st.search.fresh) throw user_error("--resume and --fresh contradict each other: pick one");
  st.search.seed = static_cast<uint64_t>(a.get_int("seed", 1));
  st.search.batch = std::max(1, a.get_int("batch", (st.device.kind == device_kind::cuda ? 16 : 4) * n_devices));
  st.db_path = a.get_or("db", ".kforge/search.db");
  st.baselines = a.get_list("baselines");
  st.write = !a.has("no-write");
  st.min_gain = min_gain_flag(a);
  st.tree_path = a.get_or("tree", "");
  st.search.dispatch.max_parts = a.get_int("max-parts", st.search.dispatch.max_parts);
  if (st.search.dispatch.max_parts < 1 || st.search.dispatch.max_parts > 8)
    throw user_error(fmt::format("--max-parts {}: expected 1 (no dispatch kernel) to 8", st.search.dispatch.max_parts));
  st.tried = tried_roots(spec, st.device.kind, a.get_or("try", ""));  // a bad --try fails here, before any work
  return st;
}

int search_run(const std::vector<std::string>& argv) {
  args a(argv, search_flags());
  apply_sandbox_flag(a);
  if (a.positional().size() != 1)
    throw user_error(fmt::format("kforge search takes one workload name, got {} (see kforge search --help)", a.positional().size()));
  auto spec = load_spec(a.positional()[0], a.get_or("workloads", "workloads"));
  auto st = search_settings(a, spec);
  install_search_interrupt();
  auto r = run_search_session(spec, st);
  if (r.outcome.stop_reason == "interrupted") return exit_ok;
  return r.outcome.winner ? exit_ok : exit_gate_failed;
}

}  // namespace kf
