// The verify deadline per case grows with the case's size, so a large cpu case is not mistaken for a hang.
#include <gtest/gtest.h>

#include "spec/spec_parse.h"
#include "verify/check.h"

namespace kf {
namespace {

const char* k_spec = R"(version: 1
name: sized
model: test
inputs:
  x: {shape: [R, C], dtype: bfloat16, init: {normal: {std: 1.0}}}
graph:
  - softmax: {input: x, dim: -1, dtype: float32}
cases:
  - {R: 4, C: 8, gate: true}
  - {R: 8192, C: 4096}
)";

TEST(verify_timeout, small_cases_keep_the_hang_detector_and_large_ones_get_time_per_element) {
  workload_spec spec;
  ASSERT_TRUE(parse_spec_text(k_spec, "sized.yaml", &spec).empty());
  check_options o;
  o.seeds = 3;
  auto small = verify_timeout(spec, "R=4,C=8", o);
  EXPECT_LT(small - o.timeout, std::chrono::milliseconds(10));  // 64 elements: the plain 30 s
  // 33.5 M elements in and out, 3 seeds, 1 s per million: about 200 s more.
  auto large = verify_timeout(spec, "R=8192,C=4096", o);
  EXPECT_NEAR(std::chrono::duration<double>(large - o.timeout).count(), 2 * 33.554432 * 3, 0.5);
  o.seconds_per_million_elements = 0;
  EXPECT_EQ(verify_timeout(spec, "R=8192,C=4096", o), o.timeout);
  EXPECT_EQ(verify_timeout(spec, "no-such-case", o), o.timeout);
}

}  // namespace
}  // namespace kf
