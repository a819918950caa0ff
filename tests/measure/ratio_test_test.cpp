// The gate's sequential ratio statistics (measure/ratio_test.h): binomial tails, the median's interval and its
// coverage, paired ratios and their decisions, alpha spending over looks, Benjamini-Hochberg.
#include "measure/ratio_test.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace kf::stats {
namespace {

TEST(ratio_test, binomial_tail_matches_known_values) {
  EXPECT_DOUBLE_EQ(binomial_half_sf(10, 0), 1.0);
  EXPECT_NEAR(binomial_half_sf(10, 10), 1.0 / 1024, 1e-15);
  EXPECT_NEAR(binomial_half_sf(10, 8), 56.0 / 1024, 1e-12);  // C(10,8)+C(10,9)+C(10,10) = 45+10+1
  EXPECT_DOUBLE_EQ(binomial_half_sf(10, 11), 0.0);
  EXPECT_NEAR(binomial_half_sf(5000, 2500), 0.5056, 1e-3);   // the normal approximation's range
}

TEST(ratio_test, median_interval_covers_the_median_at_its_confidence) {
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> dist(0.0, 0.3);  // skewed, like timings; median exp(0) = 1
  int covered = 0, trials = 2000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> x(40);
    for (auto& v : x) v = dist(rng);
    interval ci = median_ci(x, 0.05);
    ASSERT_TRUE(ci.covered);
    covered += ci.lo <= 1.0 && 1.0 <= ci.hi;
  }
  EXPECT_GE(covered, trials * 0.94);  // at least 95 % in expectation (order statistics are conservative)
  EXPECT_LE(covered, trials * 0.995);
}

TEST(ratio_test, too_few_values_for_the_confidence_say_so) {
  std::vector<double> x = {1, 2, 3};
  interval ci = median_ci(x, 0.01);
  EXPECT_FALSE(ci.covered);
  EXPECT_EQ(ci.lo, 1);
  EXPECT_EQ(ci.hi, 3);
}

TEST(ratio_test, paired_ratio_cancels_drift_common_to_both_series) {
  // Both series drift by 30 % over the run; a is 10 % slower in every round. Unpaired, the drift would swamp it.
  std::vector<double> a, b;
  std::mt19937_64 rng(1);
  std::normal_distribution<double> noise(0, 0.002);
  for (int i = 0; i < 64; ++i) {
    double drift = 1 + 0.3 * i / 64.0;
    b.push_back(100 * drift * (1 + noise(rng)));
    a.push_back(110 * drift * (1 + noise(rng)));
  }
  ratio_estimate r = paired_ratio(a, b, 1.05, 0.01);
  EXPECT_NEAR(r.ratio, 1.10, 0.005);
  EXPECT_GT(r.lo, 1.05);
  EXPECT_LT(r.p_above, 1e-6);
  EXPECT_EQ(decide(r, 1.05, 0.01), decision::above);
  EXPECT_EQ(decide(paired_ratio(a, b, 1.2, 0.01), 1.2, 0.01), decision::below);
}

TEST(ratio_test, a_tight_interval_on_the_line_is_decided_within) {
  std::vector<double> a, b;
  for (int i = 0; i < 40; ++i) {
    a.push_back(100 + (i % 3) * 0.1);
    b.push_back(100 + ((i + 1) % 3) * 0.1);
  }
  ratio_estimate r = paired_ratio(a, b, 1.0, 0.01);
  EXPECT_LE(r.lo, 1.0);
  EXPECT_GE(r.hi, 1.0);
  EXPECT_EQ(decide(r, 1.0, 0.01), decision::within);
  EXPECT_EQ(decide(r, 1.0, 0.0), decision::open);  // no resolution: more samples would be needed forever
}

TEST(ratio_test, noisy_series_stay_open) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(0, 0.2);
  std::vector<double> a, b;
  for (int i = 0; i < 20; ++i) {
    a.push_back(100 * (1 + std::abs(noise(rng))));
    b.push_back(102 * (1 + std::abs(noise(rng))));
  }
  EXPECT_EQ(decide(paired_ratio(a, b, 1.0, 0.01), 1.0, 0.01), decision::open);
}

TEST(ratio_test, alpha_is_spent_by_halves_over_doubling_looks) {
  EXPECT_EQ(look_index(16, 16), 0);
  EXPECT_EQ(look_index(17, 16), 1);
  EXPECT_EQ(look_index(32, 16), 1);
  EXPECT_EQ(look_index(1000, 16), 6);
  EXPECT_DOUBLE_EQ(look_alpha(0.01, 16, 16), 0.005);
  EXPECT_DOUBLE_EQ(look_alpha(0.01, 64, 16), 0.00125);
  double total = 0;
  for (std::size_t n = 16; n < (1u << 30); n *= 2) total += look_alpha(0.01, n, 16);
  EXPECT_LT(total, 0.01);
}

TEST(ratio_test, benjamini_hochberg_matches_the_textbook_adjustment) {
  // R: p.adjust(c(0.01, 0.04, 0.03, 0.005, 0.5), "BH") = 0.025 0.05 0.05 0.025 0.5
  std::vector<double> p = {0.01, 0.04, 0.03, 0.005, 0.5};
  std::vector<double> q = benjamini_hochberg(p);
  std::vector<double> want = {0.025, 0.05, 0.05, 0.025, 0.5};
  ASSERT_EQ(q.size(), want.size());
  for (std::size_t i = 0; i < q.size(); ++i) EXPECT_NEAR(q[i], want[i], 1e-12) << i;
  EXPECT_TRUE(benjamini_hochberg(std::vector<double>{}).empty());
}

}  // namespace
}  // namespace kf::stats
