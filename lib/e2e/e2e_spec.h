// The e2e gate's spec (docs/workload-spec.md "End-to-end entries"): a YAML file with one `e2e:` mapping that says which
// model `kforge run E2E.yaml` times end to end, with which kforge operators, and what it must show: beat eager
// (and/or torch.compile) with the operators, not get slower than in the history, and reach a share of the speedup that
// the Amdahl profile predicts.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/error.h"

namespace kf::e2e {

// The four ways the forward is timed (lib/e2e/e2e.py's VARIANTS), in table order.
inline const std::vector<std::string> k_variants = {"eager", "kforge", "compile", "compile_kforge"};
// The baselines a model's kforge variant can be held to, each with the variant that must beat it.
inline const std::map<std::string, std::string> k_beats_variant = {{"eager", "kforge"}, {"compile", "compile_kforge"}};

struct e2e_spec {
  std::string path;   // the YAML file
  std::string name;   // the gate's name (default: the model file's stem); reports say "e2e:<name>"
  std::string model;  // FILE.py:FUNCTION, relative to the folder kforge runs in
  source_loc model_loc;
  std::string model_args;          // FUNCTION's keyword arguments as e2e.py reads them: k=v,...
  std::string workloads;           // where the stored kernels are (empty: the run's --workloads)
  std::vector<std::string> names;  // only these workloads are loaded (empty: every one)
  std::vector<std::string> variants = k_variants;
  std::vector<std::string> must_beat;            // of k_beats_variant's keys
  double min_speedup = 1.0;                      // the kforge variant's median speedup over eager must reach this
  std::optional<double> min_predicted_fraction;  // measured gain over eager / the Amdahl prediction's gain
  double max_regression = 0.05;                  // slower than the history by more than this fails
  std::optional<double> rtol, atol;              // the output check against eager (default: per dtype, lib/e2e/e2e.py)
};

// Does the file at `path` hold an e2e entry (a YAML mapping whose only key is `e2e`)? False for anything else, a file
// that is not YAML included (the workload spec parser then reports it).
bool is_e2e_file(const std::string& path);

// Reads and checks the file; throws user_error listing every problem with file:line:column.
e2e_spec load_e2e_spec(const std::string& path);
e2e_spec parse_e2e_spec_text(const std::string& text, const std::string& path);

}  // namespace kf::e2e
