// The gate's sequential ratio questions: see ratio_test.h.
#include "measure/ratio_test.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "util/error.h"

namespace kf::stats {

double binomial_half_sf(std::size_t n, std::size_t k) {
  if (k == 0) return 1;
  if (k > n) return 0;
  if (n > 2000) {  // normal approximation with continuity correction: exact enough where sums would be slow
    double mu = static_cast<double>(n) / 2, sd = std::sqrt(static_cast<double>(n)) / 2;
    return 0.5 * std::erfc((static_cast<double>(k) - 0.5 - mu) / sd / std::sqrt(2.0));
  }
  // Sum of C(n, i) / 2^n for i >= k in log space.
  const double ln2n = static_cast<double>(n) * std::log(2.0);
  const double lgn = std::lgamma(static_cast<double>(n) + 1);
  double total = 0;
  for (std::size_t i = k; i <= n; ++i)
    total += std::exp(lgn - std::lgamma(static_cast<double>(i) + 1) - std::lgamma(static_cast<double>(n - i) + 1) - ln2n);
  return std::min(1.0, total);
}

interval median_ci_sorted(std::span<const double> sorted, double alpha) {
  KF_ASSERT(!sorted.empty(), "confidence interval of no samples");
  const std::size_t n = sorted.size();
  // P(B < j) = P(B <= j - 1) = P(B >= n - j + 1) by symmetry.
  std::size_t j = 0;
  while (j + 1 <= n / 2 && binomial_half_sf(n, n - j) <= alpha / 2) ++j;  // j + 1 still covered
  if (j == 0) return {sorted.front(), sorted.back(), false};
  return {sorted[j - 1], sorted[n - j], true};
}

interval median_ci(std::span<const double> samples, double alpha) {
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  return median_ci_sorted(sorted, alpha);
}

ratio_estimate paired_ratio(std::span<const double> a, std::span<const double> b, double threshold, double alpha) {
  ratio_estimate r;
  r.n = std::min(a.size(), b.size());
  if (r.n == 0) return r;
  // Blocks of two rounds (a b, then b a): their mean log ratio cancels what a position in the round does.
  std::vector<double> d;
  for (std::size_t i = 0; i + 1 < r.n; i += 2)
    d.push_back((std::log(a[i] / b[i]) + std::log(a[i + 1] / b[i + 1])) / 2);
  if (d.empty()) d.push_back(std::log(a[0] / b[0]));
  std::sort(d.begin(), d.end());
  std::size_t mid = d.size() / 2;
  double med = d.size() % 2 ? d[mid] : (d[mid - 1] + d[mid]) / 2;
  r.ratio = std::exp(med);
  interval ci = median_ci_sorted(d, alpha);
  r.lo = std::exp(ci.lo);
  r.hi = std::exp(ci.hi);
  r.spread = (r.hi - r.lo) / 2 / r.ratio;
  const double lt = std::log(threshold);
  std::size_t above = 0, below = 0;
  for (double x : d) above += x > lt, below += x < lt;
  r.p_above = binomial_half_sf(above + below, above);
  r.p_below = binomial_half_sf(above + below, below);
  return r;
}

int look_index(std::size_t n, std::size_t first_look) {
  int k = 0;
  for (std::size_t at = std::max<std::size_t>(first_look, 1); at < n; at *= 2) ++k;
  return k;
}

double look_alpha(double alpha, std::size_t n, std::size_t first_look) {
  return alpha / std::ldexp(1.0, look_index(n, first_look) + 1);
}

std::string_view decision_name(decision d) {
  switch (d) {
    case decision::open: return "open";
    case decision::below: return "below";
    case decision::above: return "above";
    case decision::within: return "within";
  }
  return "?";
}

decision decide(const ratio_estimate& r, double threshold, double resolution) {
  if (r.n == 0) return decision::open;
  if (r.hi < threshold) return decision::below;
  if (r.lo > threshold) return decision::above;
  if (r.spread <= resolution) return decision::within;
  return decision::open;
}

std::vector<double> benjamini_hochberg(std::span<const double> p) {
  const std::size_t m = p.size();
  std::vector<std::size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return p[x] < p[y]; });
  std::vector<double> q(m);
  double running = 1;
  for (std::size_t i = m; i-- > 0;) {  // from the largest p down: q_(i) = min over j >= i of p_(j) m / j
    running = std::min(running, p[order[i]] * static_cast<double>(m) / static_cast<double>(i + 1));
    q[order[i]] = std::min(1.0, running);
  }
  return q;
}

}  // namespace kf::stats
