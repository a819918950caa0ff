// Times several implementations of one case together (docs/design.md "Measure"): one sample of each per round,
// so drift hits all alike, each with its own stopping rule; cold samples always, hot samples for short ones.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/sampler.h"
#include "measure/stats.h"

namespace kf::measure {

enum class hot_mode { automatic, always, never };

// "Is a's time over b's above or below threshold?" — a and b name implementations timed together; a name also
// matches the variants of an implementation (`compile` matches `compile[default]` and `compile[max-autotune]`).
struct question {
  std::string a, b;
  double threshold = 1;
};

struct timing_options {
  stats::stopping_options stopping;   // per implementation and per kind (cold, hot); timeout is per case
  hot_mode hot = hot_mode::automatic;
  double hot_below_s = 50e-6;         // automatic: hot samples when the first cold sample is shorter
  double hot_target_s = 1e-3;         // one hot pass lasts about this long
  // The cold series stops once the hot one converged and it has min_samples (stop "follows_hot"): for callers
  // that compare hot samples only (the search, when every baseline of a case is hot).
  bool cold_follows_hot = false;
  // A race against the fastest time known for the case (per launch, in seconds; 0: no race): once the judged
  // series (hot samples when race_hot and there is a hot loop, else cold) has min_samples and its lower quartile is above
  // race_s x (1 + k_race_margin), the implementation cannot be the fastest, and its series stop (stop
  // "lost_race") instead of converging. For the search, which needs precise numbers only for contenders.
  double race_s = 0;
  bool race_hot = false;
  // The gate's questions (ratio_test.h): when any are given, every series stops as soon as all are decided on
  // the series a report compares (stop "decided"), or at the cap (timeout_s); the noise target does not apply.
  std::vector<question> questions;
  double alpha = 0.01;        // over all looks of one question
  double resolution = 0.01;   // an interval's relative half-width below which a question is decided "within"
  int first_look = 16;        // looks at first_look, 2x, 4x, ... pairs
};
inline constexpr double k_race_margin = 0.03;

// Reads the protocol's `stopping` object ({min_samples, max_noise, min_seconds, timeout_s, hot,
// cold_follows_hot, race, questions: [{a, b, threshold}], alpha, resolution, first_look}); absent fields keep their defaults; `hot` is true, false or "auto". `race` maps case
// names to {"us": fastest known, "hot": judged on hot samples}; the caller picks a case's with race_for.
// Throws std::invalid_argument on a bad field.
timing_options timing_options_from_json(const nlohmann::json& j);
// `options` with the race of case `case_name` from the stopping object `j` (unchanged when it names none).
timing_options race_for(timing_options options, const nlohmann::json& j, const std::string& case_name);

struct sample_set {
  std::vector<double> samples_us;  // kept samples, in order, per launch
  int discarded = 0;               // samples dropped for a low SM clock
  int launches_per_sample = 1;     // hot: launches in one timed pass
  std::string stop;                // converged | timed_out | failed | follows_hot | lost_race | decided
  double sm_clock_min_mhz = 0, sm_clock_max_mhz = 0;  // over all samples (0: unknown)
  stats::summary summary() const { return stats::summarize(samples_us); }
};

struct impl_timing {
  std::string impl;
  sample_set cold;
  std::optional<sample_set> hot;
  std::string hot_skipped;  // why there are no hot samples
  std::string error;        // non-empty: the implementation failed while being timed (a result)
};

// Seconds on a monotonic clock; tests pass a fake.
using clock_fn = std::function<double()>;
double steady_seconds();

std::vector<impl_timing> time_interleaved(sampler& s, const std::vector<timed_impl>& impls,
                                          const timing_options& options, const clock_fn& now = steady_seconds);

// Which series is compared for implementations timed together (measure/compare.h compares_hot): hot only when
// every one that did not fail has hot samples, else cold. The median of that series, 0 when it is empty.
bool compares_hot(const std::vector<impl_timing>& timed_together);
double compared_median(const impl_timing& t, bool hot);

nlohmann::json to_json(const sample_set& s);
nlohmann::json to_json(const impl_timing& t);  // {impl, cold, hot?, hot_skipped?, error?}
sample_set sample_set_from_json(const nlohmann::json& j);
impl_timing impl_timing_from_json(const nlohmann::json& j);

}  // namespace kf::measure
