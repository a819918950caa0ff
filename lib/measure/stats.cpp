// Statistics over timing samples: see stats.h.
#include "measure/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "util/error.h"

namespace kf::stats {

double quantile_sorted(std::span<const double> sorted, double q) {
  KF_ASSERT(!sorted.empty(), "quantile of no samples");
  KF_ASSERT(q >= 0 && q <= 1, "quantile {} outside [0, 1]", q);
  double pos = q * static_cast<double>(sorted.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(pos));
  std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double quantile(std::span<const double> samples, double q) {
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  return quantile_sorted(sorted, q);
}

double median(std::span<const double> samples) { return quantile(samples, 0.5); }

double mean(std::span<const double> samples) {
  KF_ASSERT(!samples.empty(), "mean of no samples");
  return std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
}

double stddev(std::span<const double> samples) {
  if (samples.size() < 2) return 0;
  double m = mean(samples);
  double ss = 0;
  for (double x : samples) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(samples.size() - 1));
}

double relative_noise(std::span<const double> samples) {
  if (samples.size() < 2) return 0;
  double m = mean(samples);
  return m == 0 ? 0 : stddev(samples) / m;
}

summary summarize(std::span<const double> samples) {
  summary s;
  if (samples.empty()) return s;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  s.n = sorted.size();
  s.median = quantile_sorted(sorted, 0.5);
  s.q1 = quantile_sorted(sorted, 0.25);
  s.q3 = quantile_sorted(sorted, 0.75);
  s.min = sorted.front();
  s.max = sorted.back();
  s.mean = mean(sorted);
  s.stddev = stddev(sorted);
  s.noise = s.mean == 0 ? 0 : s.stddev / s.mean;
  return s;
}

namespace {

constexpr std::size_t k_exact_max_total = 400;

// P(U <= u) under the null for sample sizes m and n without ties. Counts arrangements with the recurrence
// c(i, j, u) = c(i, j-1, u) + c(i-1, j, u-j): the largest of the i+j values belongs either to the second
// sample (adds nothing to U) or to the first (beats all j values of the second).
double exact_cdf(std::size_t m, std::size_t n, std::size_t u) {
  std::vector<std::vector<double>> c(m + 1, std::vector<double>(u + 1, 0.0));
  for (std::size_t i = 0; i <= m; ++i) c[i][0] = 1;  // j = 0: only U = 0 is possible
  for (std::size_t j = 1; j <= n; ++j)
    for (std::size_t i = 1; i <= m; ++i)
      for (std::size_t v = j; v <= u; ++v) c[i][v] += c[i - 1][v - j];
  double below = std::accumulate(c[m].begin(), c[m].end(), 0.0);
  // Total arrangements: C(m + n, m), computed as a product that stays exact in double for these sizes.
  double total = 1;
  for (std::size_t k = 1; k <= m; ++k) total = total * static_cast<double>(n + k) / static_cast<double>(k);
  return below / total;
}

double normal_sf(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

}  // namespace

mann_whitney_result mann_whitney_u(std::span<const double> a, std::span<const double> b, mwu_method method) {
  KF_ASSERT(!a.empty() && !b.empty(), "Mann-Whitney U needs two non-empty samples ({} and {})", a.size(),
            b.size());
  const std::size_t n1 = a.size(), n2 = b.size(), n = n1 + n2;
  std::vector<std::pair<double, bool>> all;  // value, from a
  all.reserve(n);
  for (double x : a) all.emplace_back(x, true);
  for (double x : b) all.emplace_back(x, false);
  std::sort(all.begin(), all.end(), [](auto& l, auto& r) { return l.first < r.first; });

  // Midranks; tie_term = sum over tie groups of t^3 - t.
  double r1 = 0, tie_term = 0;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && all[j].first == all[i].first) ++j;
    double t = static_cast<double>(j - i);
    double rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (std::size_t k = i; k < j; ++k)
      if (all[k].second) r1 += rank;
    tie_term += t * t * t - t;
    i = j;
  }
  mann_whitney_result r;
  r.ties = tie_term > 0;
  r.u1 = r1 - static_cast<double>(n1) * static_cast<double>(n1 + 1) / 2;
  const double nn = static_cast<double>(n1) * static_cast<double>(n2);
  const double u_max = std::max(r.u1, nn - r.u1);

  bool exact = method == mwu_method::exact ||
               (method == mwu_method::automatic && (n1 <= 8 || n2 <= 8));
  exact = exact && !r.ties && n <= k_exact_max_total;
  if (exact) {
    auto u_min = static_cast<std::size_t>(std::llround(nn - u_max));
    r.exact = true;
    r.p_value = std::min(1.0, 2 * exact_cdf(std::min(n1, n2), std::max(n1, n2), u_min));
    return r;
  }
  const double mu = nn / 2;
  const double dn = static_cast<double>(n);
  const double sigma = std::sqrt(nn / 12 * ((dn + 1) - tie_term / (dn * (dn - 1))));
  if (sigma == 0) {  // every value equal: no evidence of a difference
    r.p_value = 1;
    return r;
  }
  r.z = (u_max - mu - 0.5) / sigma;  // continuity correction, as scipy
  r.p_value = std::clamp(2 * normal_sf(r.z), 0.0, 1.0);
  return r;
}

std::string_view stop_state_name(stop_state s) {
  switch (s) {
    case stop_state::running: return "running";
    case stop_state::converged: return "converged";
    case stop_state::timed_out: return "timed_out";
  }
  return "?";
}

stopping_criterion::stopping_criterion(stopping_options options) : m_options(options) {
  KF_ASSERT(options.min_samples >= 1, "min_samples {} < 1", options.min_samples);
  KF_ASSERT(options.max_noise >= 0 && options.min_seconds >= 0 && options.timeout_s > 0,
            "bad stopping options (max_noise {}, min_seconds {}, timeout_s {})", options.max_noise,
            options.min_seconds, options.timeout_s);
}

void stopping_criterion::add(double sample_s) {
  ++m_n;
  m_sum += sample_s;
  double delta = sample_s - m_mean;
  m_mean += delta / static_cast<double>(m_n);
  m_m2 += delta * (sample_s - m_mean);
}

double stopping_criterion::noise() const {
  if (m_n < 2 || m_mean == 0) return 0;
  return std::sqrt(m_m2 / static_cast<double>(m_n - 1)) / m_mean;
}

stop_state stopping_criterion::check(double elapsed_wall_s) const {
  if (m_options.converge && m_n >= static_cast<std::size_t>(m_options.min_samples) && m_sum >= m_options.min_seconds &&
      noise() <= m_options.max_noise)
    return stop_state::converged;
  // The timeout never cuts a run short of min_samples (the gate's statistics need them), except past a hard
  // cap of ten timeouts, so that a run whose samples are all discarded (a throttled clock) still ends.
  bool enough = m_n >= static_cast<std::size_t>(m_options.min_samples);
  if ((enough && elapsed_wall_s >= m_options.timeout_s) || elapsed_wall_s >= 10 * m_options.timeout_s)
    return stop_state::timed_out;
  return stop_state::running;
}

}  // namespace kf::stats
