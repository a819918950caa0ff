// What `kforge e2e` measured: e2e.py's raw samples (per variant, cold and hot, per round) summarized with kforge's
// statistics (report/summarize.h: medians, quartiles, the median's 99 % interval), the speedups, each variant's output
// check against eager, and two Amdahl predictions: from the capture's time shares (share_prediction.h, the one the
// gate holds the measured gain to where the replaced workloads' specs have shares) and, as a diagnostic, from the
// in-model profile (synchronized hooks: on cuda it measures launches and synchronizations more than GPU time).
// Rendered as a table, as JSON (schema "kforge.e2e/1", raw samples kept) and as Markdown.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e/share_prediction.h"
#include "report/run_result.h"

namespace kf::e2e {

inline constexpr int k_samples_version = 1;  // e2e.py's SAMPLES_VERSION
inline constexpr const char* k_e2e_schema = "kforge.e2e/1";

struct variant_result {
  std::string name;  // eager | kforge | compile | compile_kforge
  impl_status status = impl_status::ok;
  std::string why;                        // a failed variant: why (outputs differ from eager, the forward raised, ...)
  std::string note;                       // an ok variant made with less than asked (kforge: no graph rewrite, why;
                                          // compile_kforge: what kforge.compile's policy left to inductor)
  std::optional<double> max_error_ratio;  // the largest output error as a share of its limit (e2e.py's check)
  sample_series cold, hot;                // microseconds per forward
  int launches_per_sample = 1;            // hot: replays in one timed pass
  std::string hot_skipped;                // why there are no hot samples
  const sample_series& series(std::string_view metric) const { return metric == "hot" ? hot : cold; }
};

// One patched module (a run of an nn.Sequential counts as one), or module "(graph)": one workload whose matches the
// kforge variant's graph rewrite replaced; its time in the eager model (or graph) and with the operator.
struct pattern_time {
  std::string module;
  std::vector<std::string> workloads;
  double eager_us = 0, kforge_us = 0;  // medians over the profile's passes
  double share = 0;                    // eager_us / the eager forward
  double speedup = 0;                  // eager_us / kforge_us (0: unknown)
};

struct amdahl {
  bool profiled = false;
  std::string why;  // when not profiled
  int passes = 0;
  double forward_us = 0;  // the eager forward in the profile (hooks synchronize, so a little slower)
  std::vector<pattern_time> patterns;
  double share = 0;            // of the eager forward in the patched patterns
  double pattern_speedup = 0;  // their time eager / with kforge
  double predicted = 0;        // 1 / (1 - share + share / pattern_speedup)
  double measured = 0;         // eager / kforge, cold medians as the profile's single forwards (0: not measured)
  double fraction = 0;         // (measured - 1) / (predicted - 1): the share of the predicted gain realized
  bool fraction_known() const { return predicted > 1 && measured > 0; }
};

struct e2e_result {
  std::string model, device, torch;
  int threads = 0;
  std::string hot_skipped;  // for every variant (the cpu: no CUDA graph)
  std::string cold_stop, hot_stop;
  std::vector<variant_result> variants;
  nlohmann::json patched = nlohmann::json::array();  // [{module, workloads, how}]: how "graph" with count, variant
  share_prediction shares;  // from the capture's shares: the prediction the gate uses where it has shares
  amdahl profile;           // from the in-model profile: a diagnostic, and the gate's fallback
  const variant_result* find(std::string_view name) const;
  // The series the comparisons use: hot when every variant that ran has hot samples, else cold.
  std::string metric() const;
  // a's median over b's on the compared series (0 when either has none): > 1 means b is faster.
  double speedup(std::string_view b, std::string_view over_a) const;
  bool any_failed() const;
};

// From e2e.py's JSON; throws user_error naming `source` when it is not that.
e2e_result result_from_samples(const nlohmann::json& j, const std::string& source);

nlohmann::json to_json(const e2e_result& r);  // schema kforge.e2e/1
std::string table_text(const e2e_result& r);  // what `kforge e2e` prints
std::string markdown(const e2e_result& r);

}  // namespace kf::e2e
