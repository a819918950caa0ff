#include <gtest/gtest.h>

#include "verify/tolerance.h"

using namespace kf;

TEST(tolerance, default_when_eager_is_accurate) {
  auto c = effective_tolerance(dtype::float32, {}, 0.1);
  EXPECT_DOUBLE_EQ(c.tol.rtol, default_tolerance(dtype::float32).rtol);
  EXPECT_FALSE(c.clipped);
}

TEST(tolerance, widened_to_four_times_eager_error) {
  auto c = effective_tolerance(dtype::bfloat16, {}, 2.0);
  EXPECT_DOUBLE_EQ(c.tol.rtol, default_tolerance(dtype::bfloat16).rtol * 8);
  EXPECT_NE(c.why.find("eager"), std::string::npos);
}

TEST(tolerance, spec_may_tighten_but_not_loosen_past_the_cap) {
  tolerance_spec tight{1e-7, 1e-9};
  auto t = effective_tolerance(dtype::float32, tight, 0.5);
  EXPECT_DOUBLE_EQ(t.tol.rtol, 1e-7);
  EXPECT_FALSE(t.clipped);
  tolerance_spec loose{0.5, 0.1};
  auto l = effective_tolerance(dtype::float32, loose, 0.5);
  EXPECT_TRUE(l.clipped);
  EXPECT_DOUBLE_EQ(l.tol.rtol, default_tolerance(dtype::float32).rtol * 2);
  EXPECT_NE(l.why.find("clipped"), std::string::npos);
}

TEST(tolerance, non_finite_eager_error_does_not_open_the_gate) {
  auto c = effective_tolerance(dtype::float16, {}, std::numeric_limits<double>::infinity());
  EXPECT_DOUBLE_EQ(c.tol.rtol, default_tolerance(dtype::float16).rtol);
  EXPECT_EQ(default_tolerance(dtype::int64).rtol, 0);
}
