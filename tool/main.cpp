// kforge: dispatches to the subcommand named by the first argument (table below).
#include <cstdio>
#include <cstring>
#include <exception>

#include <fmt/format.h>

#include "commands.h"
#include "register.h"  // baselines/
#include "util/error.h"
#include "util/suggest.h"
#include "util/term.h"

namespace kf {

const std::vector<command>& commands() {
  static const std::vector<command> table = {
      {"validate", "check workload specs (a file or a folder) and report every error", validate_help, validate_run},
      {"check", "compile a kernel and verify it against a workload on every case", check_help, check_run},
      {"run", "verify the stored kernels, time them against the baselines, gate and report", run_help, run_run},
      {"search", "search for a faster kernel (MCTS over kernel variants)", search_help, search_run},
      {"retune", "re-run the search where a kernel regressed or is missing for this GPU", retune_help, retune_run},
      {"reemit", "re-emit stored winners from their family and knobs after the family's code changed", reemit_help,
       reemit_run},
      {"capture", "find a model's operators a spec expresses, rank them by time share and write their specs",
       capture_help, capture_run},
      {"e2e", "time a model's forward eager, with kforge's operators and under torch.compile; predict and check the gain",
       e2e_help, e2e_run},
      {"report", "render or merge reports (merge shards, markdown, html)", report_help, report_run},
      {"calibrate", "measure the gate's false alarms and missed slowdowns on this machine", calibrate_help, calibrate_run},
      {"doctor", "show the environment as kforge sees it, and what is missing", doctor_help, doctor_run},
  };
  return table;
}

static void print_usage() {
  std::string s = fmt::format("kforge {} — keeps a model's hot GPU kernels fast, and proves it.\n\n", KFORGE_VERSION);
  s += "usage: kforge <command> [options]   (kforge <command> --help for its options)\n\ncommands:\n";
  for (auto& c : commands()) s += fmt::format("  {:<10} {}\n", c.name, c.summary);
  s += "\nexit codes: 0 passed, 1 gate or verification failed, 2 usage, config or infrastructure error\n";
  std::fputs(s.c_str(), stdout);
}

}  // namespace kf

int main(int argc, char** argv) {
  using namespace kf;
  register_baselines();  // what specs may name, the gate compares with and the reports show
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    print_usage();
    return argc < 2 ? exit_usage : exit_ok;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("kforge %s\n", KFORGE_VERSION);
    return exit_ok;
  }
  std::vector<std::string> names;
  for (auto& c : commands()) names.emplace_back(c.name);
  for (auto& c : commands()) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    std::vector<std::string> rest(argv + 2, argv + argc);
    for (auto& a : rest)
      if (a == "--help" || a == "-h") {
        std::fputs(c.help().c_str(), stdout);
        return exit_ok;
      }
    try {
      return c.run(rest);
    } catch (const user_error& e) {
      term::say("{} {}", term::red("error:"), e.what());
      return exit_usage;
    } catch (const infra_error& e) {
      term::say("{} {}", term::red("infrastructure error:"), e.what());
      return exit_usage;
    } catch (const std::exception& e) {
      term::say("{} {}", term::red("error:"), e.what());
      return exit_usage;
    }
  }
  std::string hint = did_you_mean(argv[1], names);
  term::say("{} unknown command '{}'{}; see kforge --help", term::red("error:"), argv[1],
            hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint));
  return exit_usage;
}
