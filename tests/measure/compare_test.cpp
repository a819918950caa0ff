// The comparison rules written once (measure/compare.h): which series is compared, and what a ratio says.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "measure/compare.h"

using namespace kf;
using namespace kf::measure;

TEST(compare, hot_only_when_every_timed_implementation_has_hot_samples) {
  const timed_side hot{true, true}, cold_only{true, false}, failed{false, false};
  EXPECT_TRUE(compares_hot(std::vector<timed_side>{hot, hot}));
  EXPECT_FALSE(compares_hot(std::vector<timed_side>{hot, cold_only}));
  EXPECT_TRUE(compares_hot(std::vector<timed_side>{hot, failed}));  // a failed one does not hold the rest back
  EXPECT_FALSE(compares_hot(std::vector<timed_side>{failed}));      // nothing timed: nothing to compare hot
  EXPECT_FALSE(compares_hot(std::vector<timed_side>{}));
}

TEST(compare, a_ratio_is_below_above_or_within_its_line) {
  std::vector<double> a, b, same;
  for (int i = 0; i < 256; ++i) {
    double jitter = 1.0 + 0.002 * std::sin(i * 1.7);
    a.push_back(90.0 * jitter);
    b.push_back(100.0 * (2.0 - jitter));
    same.push_back(100.0 * jitter);
  }
  const sequential_options o;
  auto faster = judge_ratio(a, b, 1.0, o);
  EXPECT_EQ(faster.decision, stats::decision::below);
  EXPECT_TRUE(beats(faster));
  EXPECT_NEAR(faster.ratio.ratio, 0.9, 0.01);
  auto slower = judge_ratio(b, a, 1.0, o);
  EXPECT_EQ(slower.decision, stats::decision::above);
  EXPECT_FALSE(beats(slower));
  // Indistinguishable within the 1 % resolution: decided "within", which does not beat.
  auto tie = judge_ratio(same, b, 1.0, o);
  EXPECT_NE(tie.decision, stats::decision::below);
}
