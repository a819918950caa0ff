// adaptive_pool_cuda through the whole verifier on the GPU (skipped without one): pooling to more than 1 x 1 over
// torch's windows (overlapping where the sizes do not divide), NCHW planes and channels_last with vectors of
// channels and without (odd channel counts fall back to one a thread), in float16, bfloat16 and float32, with a cast
// after. A contiguous x staged through shared memory: several whole planes a block (13 x 10 float16 planes: runs
// that start off a 16-byte boundary, ragged ends), bands of a plane's rows where a plane outgrows `stage_kb` (a
// 67 x 45 float32 plane in 4 KB: one output row a band), and the thread-an-output kernel where not even one output
// row's input rows fit (67 rows into 1) or stage_kb is 0. Without a GPU, every variant is valid and emits.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "../support/family_verify.h"
#include "search/family.h"
#include "search_test_specs.h"

namespace kf {
namespace {

test::family_variants all_variants() {
  test::family_variants v;
  for (auto s : {test::adaptive_pool_spec(), test::adaptive_pool_spec("channels_last", dtype::bfloat16, 7, 7),
                 test::adaptive_pool_spec("channels_last", dtype::float32, 2, 9),
                 test::adaptive_pool_spec("contiguous", dtype::float32, 13, 3)}) {
    v.push_back({s, {}});
    v.push_back({s, {{"threads", "128"}, {"waves", "1"}, {"pdl", "0"}}});
    v.push_back({s, {{"cvec", "2"}, {"threads", "512"}}});
    v.push_back({s, {{"stage_kb", "0"}}});
    v.push_back({s, {{"stage_kb", "32"}, {"threads", "128"}}});
  }
  for (const char* out : {"[6, 5]", "[1, 3]"}) {
    const workload_spec big = test::parse(fmt::format(R"(version: 1
name: big-plane-avgpool
inputs:
  x: {{shape: [N, C, 67, 45], dtype: float32}}
graph:
  - adaptive_avg_pool2d: {{input: x, output_size: {}}}
cases: [{{N: 2, C: 7, gate: true}}, {{N: 1, C: 1}}]
)",
                                                  out));
    v.push_back({big, {{"stage_kb", "4"}}});
    v.push_back({big, {{"stage_kb", "16"}, {"threads", "512"}}});
  }
  return v;
}

TEST(adaptive_pool_cuda_verify, every_layout_and_window) {
  KF_REQUIRE_GPU();
  test::expect_all_pass("adaptive_pool_cuda", device_kind::cuda, all_variants(), 3);
}

TEST(adaptive_pool_cuda_verify, every_variant_is_valid) {
  test::expect_all_valid("adaptive_pool_cuda", device_kind::cuda, all_variants());
}

}  // namespace
}  // namespace kf
