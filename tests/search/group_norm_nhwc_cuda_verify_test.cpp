// group_norm_nhwc_cuda through the whole verifier on the GPU (skipped without one): channels_last GroupNorm with one-
// and two-pass statistics, groups of 4 to 80 channels (a thread's vector inside one group or across two), channels
// more than the threads' vectors (a thread owning several), a column a thread (channels not a whole number of
// vectors), tiles from one an image to many, with SiLU and GELU, in bfloat16, float16 and float32.
#include <gtest/gtest.h>

#include "../support/family_verify.h"
#include "search/family.h"
#include "search_test_specs.h"

namespace kf {
namespace {

using variants = test::family_variants;

void add_variants(variants& out, const workload_spec& s) {
  out.push_back({s, {}});
  out.push_back({s, {{"stats", "twopass"}, {"threads", "1024"}, {"blocks", "16"}}});
  out.push_back({s, {{"stats", "shifted"}, {"threads", "128"}, {"blocks", "1"}, {"pdl", "0"}}});
  out.push_back({s, {{"vec", "1"}, {"blocks", "2"}}});
  out.push_back({s, {{"vec", "2"}, {"threads", "512"}, {"blocks", "8"}}});
}

variants all_variants() {
  variants v;
  add_variants(v, test::group_norm_spec(true, dtype::bfloat16, "channels_last"));  // 32 channels, 8 groups, SiLU
  add_variants(v, test::group_norm_spec(false, dtype::float32, "channels_last"));
  add_variants(v, test::parse(R"(version: 1
name: unet-groupnorm-gelu-cl
inputs:
  x: {shape: [N, 320, H, W], dtype: float16, memory_format: channels_last, init: {normal: {std: 2.0, mean: 0.5}}}
  w: {shape: [320], dtype: float16}
  b: {shape: [320], dtype: float16}
graph:
  - group_norm: {input: x, num_groups: 32, weight: w, bias: b, eps: 1.0e-5}
  - gelu
cases: [{N: 2, H: 24, W: 20, gate: true}, {N: 1, H: 1, W: 3}]
)"));
  // 2560 channels of 80 a group: more channel vectors (320) than 256 threads, so a thread owns two.
  add_variants(v, test::parse(R"(version: 1
name: wide-groupnorm-cl
inputs:
  x: {shape: [N, 2560, H, W], dtype: bfloat16, memory_format: channels_last}
  w: {shape: [2560], dtype: bfloat16}
  b: {shape: [2560], dtype: bfloat16}
graph:
  - group_norm: {input: x, num_groups: 32, weight: w, bias: b, eps: 1.0e-6}
  - silu
cases: [{N: 1, H: 8, W: 8, gate: true}, {N: 2, H: 3, W: 5}]
)"));
  return v;
}

TEST(group_norm_nhwc_cuda_verify, every_path_on_every_graph_kind) {
  KF_REQUIRE_GPU();
  test::expect_all_pass("group_norm_nhwc_cuda", device_kind::cuda, all_variants(), 5);
}

// Without a GPU, the same variants are still valid and emit (what the GPU run compiles).
TEST(group_norm_nhwc_cuda_verify, every_variant_is_valid) {
  test::expect_all_valid("group_norm_nhwc_cuda", device_kind::cuda, all_variants());
}

}  // namespace
}  // namespace kf
