// kforge reemit [WORKLOAD...]: after a family's code changed (and its version went up), re-emits the stored winners
// from their recorded family and knobs at the family's current version, keeping what they measured and saying they
// were re-emitted (lib/search/stored_winner.h). `--check` only says which winners are not current.
#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "args.h"
#include "commands.h"
#include "report/text_escape.h"
#include "search/stored_winner.h"
#include "spec/spec_parse.h"
#include "store/winners.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/term.h"
#include "util/time.h"

namespace kf {
namespace {

const std::vector<flag_def> k_flags = {
    {"workloads", true, "the folder of workload specs (default workloads)", "DIR"},
    {"key", true, "only the winners stored for this GPU key (sm90-nvidia-h200, cpu-x86-64; default: every key)", "KEY"},
    {"check", false, "write nothing: list the winners that are not current and exit 1 if there are any"},
};

// Every stored winner of the workload (one per GPU key with a .json), in key order.
std::vector<stored_kernel> stored_winners(const workload_spec& spec, const std::string& only_key) {
  const auto dir = kernels_dir(spec.path, spec.name);
  std::vector<std::string> keys;
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec))
    for (auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.path().extension() == ".json" && (only_key.empty() || e.path().stem() == only_key))
        keys.push_back(e.path().stem().string());
  std::sort(keys.begin(), keys.end());
  std::vector<stored_kernel> out;
  for (auto& key : keys) {
    auto found = find_winner(dir, key);
    if (found.kernel && !found.kernel->fallback) out.push_back(*found.kernel);
  }
  return out;
}

}  // namespace

std::string reemit_help() {
  return "usage: kforge reemit [WORKLOAD...] [options]\n\n"
         "Re-emits the stored winners (workloads/W/kernels/<gpu-key>.{cu,cpp} + .json; default: every workload's)\n"
         "from the family and knobs their .json records, at the family's current version: run it after changing a\n"
         "family's code and bumping its version. The knobs, and so the code path, stay what was stored; a knob the\n"
         "family gained since takes the value whose code the family emitted before it had the knob. The header and\n"
         "the .json keep the winner's provenance (how it was found, its lineage, what it measured) and add a line\n"
         "saying it was re-emitted and from which version. The measured numbers are the earlier kernel's: time the\n"
         "re-emitted kernels with `kforge run` before publishing numbers for them.\n\noptions:\n" +
         flags_help(k_flags) +
         "\nexit codes: 0 every winner current (re-emitted where it was not), 1 --check found winners that are not\n"
         "current, 2 usage error or a winner that cannot be re-emitted\n";
}

int reemit_run(const std::vector<std::string>& argv) {
  args a(argv, k_flags);
  const std::string dir = a.get_or("workloads", "workloads");
  const bool check_only = a.has("check");
  const std::string only_key = a.get_or("key", "");
  const std::string date = utc_now();
  int current = 0, stale = 0, written = 0;
  for (auto& spec : load_specs(workload_names(a.positional(), dir), dir)) {
    for (auto& k : stored_winners(spec, only_key)) {
      const winner_check c = check_winner(spec, k);
      if (c.current) {
        ++current;
        term::say("{} {} {}: current", term::green("ok"), spec.name, k.gpu_key);
        continue;
      }
      ++stale;
      if (check_only) {
        term::say("{} {}", term::yellow("stale"), c.why);
        continue;
      }
      const reemitted_winner r = reemit_winner(spec, k, date);
      write_file_atomic(k.source, r.text);
      write_file_atomic(k.metadata, safe_dump(r.metadata, 2) + "\n");
      ++written;
      std::string filled;
      for (auto& [name, value] : r.filled) filled += fmt::format(" {}={}", name, value);
      term::say("{} {} {}: {} version {} -> {}{}", term::green("re-emitted"), spec.name, k.gpu_key, r.family,
                r.from_version, r.to_version, filled.empty() ? "" : "; filled" + filled);
    }
  }
  term::say("{} winner(s) current, {} {}", current, stale,
            check_only ? "not current" : fmt::format("re-emitted ({} written)", written));
  if (written > 0) term::say("time the re-emitted kernels with `kforge run` before publishing their numbers");
  return check_only && stale > 0 ? exit_gate_failed : exit_ok;
}

}  // namespace kf
