// Statistics over timing samples: order statistics, noise, the noise-based stopping rule of the measuring loop
// (the search's, and `kforge run --precise`), and a Mann-Whitney U test. The gate's own tests are the paired
// ratio questions of ratio_test.h (docs/statistics.md).
#pragma once
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

namespace kf::stats {

// Quantile q in [0, 1] with linear interpolation between order statistics (numpy's default, "type 7").
// `sorted` must be sorted ascending and non-empty.
double quantile_sorted(std::span<const double> sorted, double q);
double quantile(std::span<const double> samples, double q);
double median(std::span<const double> samples);
double mean(std::span<const double> samples);
// Sample standard deviation (n - 1 in the denominator); 0 for fewer than two samples.
double stddev(std::span<const double> samples);
// stddev / mean: the relative noise nvbench's stdrel criterion uses. 0 for fewer than two samples.
double relative_noise(std::span<const double> samples);

// Everything a report shows about one set of samples. All fields 0 when there are no samples.
struct summary {
  std::size_t n = 0;
  double median = 0, q1 = 0, q3 = 0, min = 0, max = 0, mean = 0, stddev = 0, noise = 0;
  double iqr() const { return q3 - q1; }
};
summary summarize(std::span<const double> samples);

// Two-sided Mann-Whitney U test of "a and b come from the same distribution".
enum class mwu_method { automatic, exact, asymptotic };
struct mann_whitney_result {
  double u1 = 0;        // U statistic of `a`: the number of pairs (x in a, y in b) with x > y, ties count 1/2
  double z = 0;         // standardized statistic (asymptotic method; 0 for exact)
  double p_value = 1;   // two-sided
  bool exact = false;   // the exact null distribution was used
  bool ties = false;
};
// automatic: exact when either sample has at most 8 values and there are no ties (as scipy's
// mannwhitneyu), otherwise the normal approximation with tie correction and continuity correction.
// The exact distribution is only computed for n_a + n_b <= 400 (cost grows as n^2); above that, and
// for exact with ties, the normal approximation is used and `exact` is false.
// Both samples must be non-empty.
mann_whitney_result mann_whitney_u(std::span<const double> a, std::span<const double> b,
                                   mwu_method method = mwu_method::automatic);

// When to stop taking samples of one implementation (nvbench's stdrel criterion): at least min_samples, then
// relative noise <= max_noise with at least min_seconds of measured time; or the wall-clock timeout once
// min_samples are in (a hard cap of ten timeouts ends a run whose samples are all discarded).
struct stopping_options {
  int min_samples = 10;
  double max_noise = 0.005;   // fraction: 0.5 % -> 0.005
  double min_seconds = 0.5;   // of measured (GPU or CPU) time, summed over kept samples
  double timeout_s = 15;      // wall-clock seconds since the first sample, discarded ones included
  bool converge = true;       // false: only the timeout ends the series (the caller decides when to stop earlier)
};

enum class stop_state { running, converged, timed_out };
std::string_view stop_state_name(stop_state s);  // "running", "converged", "timed_out"

class stopping_criterion {
 public:
  explicit stopping_criterion(stopping_options options = {});

  // A kept sample, in seconds.
  void add(double sample_s);
  // Where the criterion stands after `elapsed_wall_s` seconds of measuring this implementation.
  stop_state check(double elapsed_wall_s) const;
  bool finished(double elapsed_wall_s) const { return check(elapsed_wall_s) != stop_state::running; }

  std::size_t samples() const { return m_n; }
  double total_seconds() const { return m_sum; }
  double noise() const;  // stddev / mean of the samples so far
  const stopping_options& options() const { return m_options; }

 private:
  stopping_options m_options;
  // Welford's running mean and sum of squared deviations: stable for many near-equal samples.
  std::size_t m_n = 0;
  double m_mean = 0, m_m2 = 0, m_sum = 0;
};

}  // namespace kf::stats
