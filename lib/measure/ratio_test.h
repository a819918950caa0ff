// The gate's sequential questions (docs/statistics.md): is implementation A faster than B, did the head's
// kernel get slower than the base's by more than a threshold. Both are questions about the ratio of A's time to
// B's, answered on samples taken interleaved (one of each per round, so drift hits both alike; rounds alternate
// their order, a b then b a) by pairing the rounds in blocks of two: d_k = mean of ln(a_r / b_r) over rounds 2k
// and 2k+1, which cancels whatever the position in a round does. Distribution-free: the median of d with a sign-test confidence interval, and the
// sign test's p-value against a threshold. Looks are taken as samples come in (n = first_look, 2x, 4x, ...);
// each look spends half of the alpha left, so the error rate over all looks stays below alpha.
#pragma once
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

namespace kf::stats {

// P(X >= k) for X ~ Binomial(n, 1/2).
double binomial_half_sf(std::size_t n, std::size_t k);

// A distribution-free (1 - alpha) confidence interval for the median from order statistics: [x_(j), x_(n+1-j)]
// with the largest j such that P(Binomial(n, 1/2) < j) <= alpha / 2. With too few values for that confidence
// the interval is [min, max] and `covered` is false. `sorted` ascending, non-empty.
struct interval {
  double lo = 0, hi = 0;
  bool covered = true;
};
interval median_ci_sorted(std::span<const double> sorted, double alpha);
interval median_ci(std::span<const double> samples, double alpha);

// The ratio A / B from paired rounds, and what it says about a threshold t (1.0: "is A faster than B";
// 1 + max_regression: "is A slower than B by more than allowed").
struct ratio_estimate {
  std::size_t n = 0;         // pairs of samples used (blocks of two of them are the test's observations)
  double ratio = 1;          // exp(median of d)
  double lo = 0, hi = 0;     // the (1 - alpha) interval of the ratio
  double p_above = 1;        // one-sided sign-test p-value of H0: ratio <= t (small: A / B is above t)
  double p_below = 1;        // one-sided p-value of H0: ratio >= t (small: A / B is below t)
  double spread = 0;         // half the interval's width relative to the ratio: the noise the data showed
};
ratio_estimate paired_ratio(std::span<const double> a, std::span<const double> b, double threshold, double alpha);

// Alpha spending over looks at n = first_look * 2^k: the look that n samples fall in gets alpha / 2^(k+1).
int look_index(std::size_t n, std::size_t first_look);
double look_alpha(double alpha, std::size_t n, std::size_t first_look);

// A question the sequential rule keeps sampling for, and its state.
enum class decision { open, below, above, within };  // within: the interval is tighter than the resolution
std::string_view decision_name(decision d);
// below: the interval is entirely below t; above: entirely above t; within: neither, but the interval's
// half-width is under `resolution` (relative), so more samples would not change what the gate says.
decision decide(const ratio_estimate& r, double threshold, double resolution);

// Benjamini-Hochberg: adjusted p-values (q-values) in the input's order; a hypothesis is rejected at FDR level
// alpha when its q-value is below alpha.
std::vector<double> benjamini_hochberg(std::span<const double> p_values);

}  // namespace kf::stats
