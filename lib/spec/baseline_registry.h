// The baselines as the parent process knows them (docs/design.md "Baselines"): a registry that baselines/ fills
// at start (register_baselines() in baselines/register.h, called by each main), which spec parsing, the gate, the
// reporters, the runner and the search iterate instead of naming a baseline. The worker's side of a baseline (how
// it is timed) is an implementation kind in measure's registry (measure/impl_kind_torch.h).
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/spec.h"

namespace kf {

// Where a baseline's parent side works: the device kind the cases run on and the cache its products go to.
struct baseline_target {
  std::string device = "cpu";                          // "cuda" | "cpu"
  std::filesystem::path cache_root = ".kforge/cache";  // kforge's --cache
};

// Some gated cases of one workload that a baseline is timed on.
struct baseline_work {
  const workload_spec* spec = nullptr;
  std::vector<std::string> cases;
};

// A baseline's parent side for one run (made once per run, so it may keep state: compile's export cache): the
// work kforge does before the worker can time the baseline.
class baseline_preparer {
 public:
  virtual ~baseline_preparer() = default;
  // The protocol's impl object for `cases` of `spec` (docs/worker-protocol.md), or {"skipped": "<why>"} when the
  // baseline cannot be timed here (a result for the reports, never a zero time).
  virtual nlohmann::json impl(const workload_spec& spec, const std::vector<std::string>& cases,
                              const std::string& gpu_key) = 0;
  // Makes many workloads ready at once (compile: exports in parallel across workloads), so that impl() finds
  // them done. Default: nothing.
  virtual void prepare(const std::vector<baseline_work>& work, const std::string& gpu_key) {
    (void)work;
    (void)gpu_key;
  }
};

// One baseline: what a spec names, what the worker is sent, how the reports show it.
struct baseline {
  std::string name;                    // in `baselines`, `gate.must_beat`, --baselines, results and beats[<name>]
  std::string summary{};               // what is timed, in one line
  std::vector<std::string> devices{};  // device kinds it can run on (empty: all); the search times it only there
  bool by_default = true;              // timed when a spec has no `baselines`
  // The protocol's impl object when the baseline needs no parent side; null: {"kind": name}.
  nlohmann::json impl{};
  // Its parent side, when kforge has work to do before the worker can time it (compile: export packages).
  std::function<std::unique_ptr<baseline_preparer>(const baseline_target&)> make_preparer{};
  std::string title{};      // in prose: "torch.compile" (empty: the name)
  std::string preparing{};  // what its parent side does, for progress lines: "exporting"
  // Reports.
  std::string column{};  // the results table's column header (empty: the name)
  std::string color{};   // the speedup chart's color (empty: grey)
  // A line on one case's result details ("default 1.63 µs, max-autotune 1.71 µs"), "" for none; the Markdown
  // report lists them under `details_title`. Optional.
  std::function<std::string(const nlohmann::json& details)> details{};
  std::string details_title{};

  bool runs_on(std::string_view device_kind) const;
  const std::string& title_or_name() const { return title.empty() ? name : title; }
  const std::string& column_or_name() const { return column.empty() ? name : column; }
};

// The registered baselines, in registration order (the order reports and the gate list them).
const std::vector<baseline>& registered_baselines();
const baseline* find_baseline(std::string_view name);
// Their names (what `baselines`, `gate.must_beat` and --baselines accept); asks before any was registered assert.
const std::vector<std::string>& baseline_names();
// The names with by_default: a spec's `baselines` when it has none (workload_spec's default, spec.h).
std::vector<std::string> default_baseline_names();
// Adds one; a name registered twice asserts. Call at start, before specs are read (baselines/register.h).
void register_baseline(baseline b);
// Removes one (tests that registered a fake baseline); an unknown name asserts.
void unregister_baseline(std::string_view name);

// The parent sides of one run, made on first use and kept for the run (an export cache checks python once).
class baseline_preparers {
 public:
  explicit baseline_preparers(baseline_target target);
  ~baseline_preparers();
  // The protocol's impl object for baseline `name` on `cases` of `spec`, or {"skipped": "<why>"}: its parent
  // side's answer, else its registered impl object ({"kind": name} for a name the registry does not know).
  nlohmann::json impl(const std::string& name, const workload_spec& spec, const std::vector<std::string>& cases,
                      const std::string& gpu_key);
  // Its parent side's prepare(); nothing for a baseline without one.
  void prepare(const std::string& name, const std::vector<baseline_work>& work, const std::string& gpu_key);
  const baseline_target& target() const { return m_target; }

 private:
  baseline_preparer* preparer(const std::string& name);
  baseline_target m_target;
  std::map<std::string, std::unique_ptr<baseline_preparer>> m_made;
};

// Whether an impl object says the baseline cannot be timed ({"skipped": "<why>"}); *why gets the reason.
bool baseline_skipped(const nlohmann::json& impl, std::string* why = nullptr);

}  // namespace kf
