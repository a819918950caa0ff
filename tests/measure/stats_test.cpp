// Statistics used by measure and the gate. Expected Mann-Whitney values come from scipy 1.17.1
// (scipy.stats.mannwhitneyu, two-sided, use_continuity=True), hard-coded here.
#include "measure/stats.h"

#include <vector>

#include <gtest/gtest.h>

namespace kf::stats {
namespace {

TEST(stats, quantiles_match_numpy_linear) {
  std::vector<double> x{10, 3, 1, 4, 2, 9, 6, 5, 8, 7};
  EXPECT_DOUBLE_EQ(median(x), 5.5);
  EXPECT_DOUBLE_EQ(quantile(x, 0.25), 3.25);
  EXPECT_DOUBLE_EQ(quantile(x, 0.75), 7.75);
  EXPECT_DOUBLE_EQ(quantile(x, 0.0), 1);
  EXPECT_DOUBLE_EQ(quantile(x, 1.0), 10);
  std::vector<double> odd{5, 1, 3};
  EXPECT_DOUBLE_EQ(median(odd), 3);
}

TEST(stats, summary_fields) {
  std::vector<double> x{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  summary s = summarize(x);
  EXPECT_EQ(s.n, 10u);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_NEAR(s.stddev, 3.0276503540974917, 1e-12);  // numpy std(ddof=1)
  EXPECT_NEAR(s.noise, 3.0276503540974917 / 5.5, 1e-12);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.iqr(), 4.5);
  EXPECT_EQ(summarize(std::vector<double>{}).n, 0u);
  EXPECT_DOUBLE_EQ(relative_noise(std::vector<double>{7}), 0);
  EXPECT_DOUBLE_EQ(stddev(std::vector<double>{2, 2, 2}), 0);
}

struct mwu_case {
  std::vector<double> a, b;
  mwu_method method;
  double u1, p;
  bool exact;
};

TEST(stats, mann_whitney_matches_scipy) {
  const std::vector<double> la{10.0, 13.239, 14.156, 12.566, 10.587, 10.695, 13.447, 16.971,
                               18.682, 17.665, 15.511, 14.857, 16.962, 20.546, 22.972};
  const std::vector<double> lb{14.0, 14.081, 13.168, 13.02, 14.693, 17.567,
                               19.92, 20.508, 19.709, 19.178, 20.322, 23.009};
  std::vector<double> hundred;
  for (int i = 0; i < 100; ++i) hundred.push_back(i);
  std::vector<double> shifted_a, shifted_b;
  for (int i = 30; i < 60; ++i) shifted_a.push_back(i);
  for (int i = 0; i < 40; ++i) shifted_b.push_back(i + 0.25);
  const std::vector<mwu_case> cases{
      {{1.1, 2.3, 3.5, 4.2, 5.0}, {6.1, 7.2, 8.3, 9.4}, mwu_method::automatic, 0, 0.015873015873015872, true},
      {{1.1, 2.3, 3.5, 4.2, 5.0}, {6.1, 7.2, 8.3, 9.4}, mwu_method::asymptotic, 0, 0.019964453305216043, false},
      {{3, 1, 4, 1.5, 5, 9, 2}, {6, 5.5, 3.5, 8, 9.5, 7}, mwu_method::automatic, 7, 0.05128205128205128, true},
      {{3, 1, 4, 1.5, 5, 9, 2}, {6, 5.5, 3.5, 8, 9.5, 7}, mwu_method::asymptotic, 7, 0.05378408886239828, false},
      {{1, 2, 2, 3, 3, 3, 4, 5, 9, 10}, {2, 3, 4, 4, 5, 6, 6, 7, 8, 8, 11}, mwu_method::automatic, 33,
       0.12740537338179253, false},
      {la, lb, mwu_method::automatic, 62, 0.17964055015107683, false},
      {la, lb, mwu_method::exact, 62, 0.18276136600271747, true},
      {{0.5, 10.5, 20.5, 30.5, 95.5}, hundred, mwu_method::automatic, 160, 0.18388236549287382, true},
      {{0.5, 10.5, 20.5, 30.5, 95.5}, hundred, mwu_method::asymptotic, 160, 0.17807201327833966, false},
      {shifted_a, shifted_b, mwu_method::automatic, 1145, 1.0331025441265366e-10, false},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const mwu_case& c = cases[i];
    mann_whitney_result r = mann_whitney_u(c.a, c.b, c.method);
    EXPECT_DOUBLE_EQ(r.u1, c.u1) << "case " << i;
    EXPECT_NEAR(r.p_value, c.p, c.p * 1e-9) << "case " << i;
    EXPECT_EQ(r.exact, c.exact) << "case " << i;
  }
}

TEST(stats, mann_whitney_edge_cases) {
  // All values equal: no evidence of a difference (scipy: p = 1).
  mann_whitney_result eq = mann_whitney_u(std::vector<double>{1, 1, 1}, std::vector<double>{1, 1, 1, 1});
  EXPECT_DOUBLE_EQ(eq.u1, 6);
  EXPECT_DOUBLE_EQ(eq.p_value, 1);
  EXPECT_TRUE(eq.ties);
  // Symmetric: swapping the samples keeps p and mirrors U.
  std::vector<double> a{1, 4, 6, 8, 12, 13, 20, 21, 22, 30}, b{2, 3, 5, 7, 9, 10, 11, 14};
  mann_whitney_result ab = mann_whitney_u(a, b), ba = mann_whitney_u(b, a);
  EXPECT_DOUBLE_EQ(ab.p_value, ba.p_value);
  EXPECT_DOUBLE_EQ(ab.u1 + ba.u1, 80);
  // Exact requested with ties falls back to the normal approximation.
  EXPECT_FALSE(mann_whitney_u(std::vector<double>{1, 2, 2}, std::vector<double>{2, 3}, mwu_method::exact).exact);
}

TEST(stats, stopping_needs_min_samples_then_low_noise_and_time) {
  stopping_criterion c({.min_samples = 10, .max_noise = 0.005, .min_seconds = 0.5, .timeout_s = 100});
  for (int i = 0; i < 9; ++i) c.add(0.1);
  EXPECT_EQ(c.check(1), stop_state::running);  // 9 samples, 0.9 s, noise 0: still short of min_samples
  c.add(0.1);
  EXPECT_EQ(c.check(1), stop_state::converged);
  EXPECT_EQ(c.samples(), 10u);
  EXPECT_NEAR(c.total_seconds(), 1.0, 1e-12);
}

TEST(stats, stopping_waits_for_min_seconds) {
  stopping_criterion c({.min_samples = 10, .max_noise = 0.005, .min_seconds = 0.5, .timeout_s = 100});
  for (int i = 0; i < 20; ++i) c.add(0.01);  // noise 0 but only 0.2 s measured
  EXPECT_EQ(c.check(5), stop_state::running);
  for (int i = 0; i < 30; ++i) c.add(0.01);
  EXPECT_EQ(c.check(5), stop_state::converged);
}

TEST(stats, timeout_waits_for_min_samples_up_to_a_hard_cap) {
  stopping_criterion c({.min_samples = 10, .max_noise = 0.005, .min_seconds = 0, .timeout_s = 1});
  for (int i = 0; i < 4; ++i) c.add(0.3);
  EXPECT_EQ(c.check(1.5), stop_state::running);    // past the timeout, but only 4 of 10 samples
  EXPECT_EQ(c.check(10.0), stop_state::timed_out);  // the hard cap: ten timeouts
}

TEST(stats, stopping_waits_for_noise_then_times_out) {
  stopping_criterion c({.min_samples = 10, .max_noise = 0.005, .min_seconds = 0.5, .timeout_s = 3});
  for (int i = 0; i < 100; ++i) c.add(i % 2 ? 0.1 : 0.2);  // noise ~33 %
  EXPECT_GT(c.noise(), 0.3);
  EXPECT_EQ(c.check(2.9), stop_state::running);
  EXPECT_EQ(c.check(3.0), stop_state::timed_out);
  EXPECT_EQ(stop_state_name(c.check(3.0)), "timed_out");
}

TEST(stats, stopping_noise_matches_batch_formula) {
  stopping_criterion c;
  std::vector<double> xs{3.1e-6, 3.3e-6, 3.2e-6, 3.25e-6, 3.15e-6};
  for (double x : xs) c.add(x);
  EXPECT_NEAR(c.noise(), relative_noise(xs), 1e-12);
}

}  // namespace
}  // namespace kf::stats

namespace kf::stats {
namespace {

// converge = false: identical samples (zero noise) never converge; only the timeout ends the series.
TEST(stats, stopping_without_convergence_ends_only_at_the_timeout) {
  stopping_criterion c({.min_samples = 3, .max_noise = 0.01, .min_seconds = 0, .timeout_s = 2, .converge = false});
  for (int i = 0; i < 10; ++i) c.add(1e-3);
  EXPECT_EQ(c.check(1.0), stop_state::running);
  EXPECT_EQ(c.check(2.0), stop_state::timed_out);
}

}  // namespace
}  // namespace kf::stats
