// Chaining lifted ops into patterns (capture/group.h) on the fixture traces.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "capture/group.h"
#include "capture_fixtures.h"

using namespace kf::capture;
using test::fixture;

namespace {

std::vector<std::string> ops_of(const group& g) {
  std::vector<std::string> v;
  for (const auto& s : g.steps) v.push_back(s.op);
  return v;
}

std::vector<std::vector<std::string>> patterns(const grouping& g) {
  std::vector<std::vector<std::string>> v;
  for (const auto& grp : g.groups) v.push_back(ops_of(grp));
  return v;
}

using ops = std::vector<std::string>;

}  // namespace

TEST(capture_group, a_residual_add_feeds_the_norm_after_it) {
  const trace t = fixture("llama_block");
  const grouping g = group_ops(t, lift(t));
  EXPECT_THAT(patterns(g), ::testing::ElementsAre(
      ops{"rms_norm"},                                  // layers.0.input_layernorm of the model's input
      ops{"scale", "add", "cast", "softmax", "cast"},   // scores * scale + mask, softmax in float32, back
      ops{"add", "rms_norm"},                           // h = x + attn; post_attention_layernorm(h)
      ops{"silu", "mul"},                               // the MLP's activation
      ops{"add", "rms_norm"},                           // the layer's output, into layers.1.input_layernorm
      ops{"scale", "add", "cast", "softmax", "cast"},
      ops{"add", "rms_norm"},
      ops{"silu", "mul"},
      ops{"add", "rms_norm"},                           // into the final norm
      ops{"cast", "log_softmax"}));                     // (fold.h folds the upcast into log_softmax's dtype)
  // The flatten-like views in front of the projections stay views: no pattern takes them.
  for (const auto& grp : g.groups)
    for (const auto& s : grp.steps) EXPECT_NE(s.op, "flatten");
}

TEST(capture_group, an_identity_add_does_not_continue_the_block_whose_output_it_adds) {
  const trace t = fixture("resnet_tail");
  const grouping g = group_ops(t, lift(t));
  // The second block adds its input (the first block's relu, a pattern's last result) to what its convolutions made
  // of that input: continuing the first block's pattern would make a kernel take its own result as an input.
  EXPECT_THAT(patterns(g), ::testing::ElementsAre(ops{"relu"}, ops{"relu"}, ops{"add", "relu"}, ops{"relu"},
                                                  ops{"add", "relu"}, ops{"adaptive_avg_pool2d", "alias", "flatten"}));
  const group& first_block = g.groups[2];
  const group& second_add = g.groups[4];
  // The add reads the second block's batch norm and, as `other`, the first block's result.
  const int64_t convolved = second_add.steps[0].input;
  ASSERT_TRUE(t.producer(convolved).has_value());
  EXPECT_EQ(t.ops[*t.producer(convolved)].name, "aten.native_batch_norm.default");
  ASSERT_EQ(second_add.steps[0].tensors.size(), 1u);
  EXPECT_EQ(second_add.steps[0].tensors[0].second, first_block.steps.back().output());
  EXPECT_TRUE(depends_on(t, convolved, first_block));
  EXPECT_FALSE(depends_on(t, first_block.steps[0].input, second_add));
}

TEST(capture_group, what_no_spec_expresses_is_left_uncovered) {
  const trace t = fixture("norm_two_sizes");
  const grouping g = group_ops(t, lift(t));
  EXPECT_THAT(patterns(g), ::testing::ElementsAre(ops{"layer_norm", "gelu"}, ops{"layer_norm", "gelu"}, ops{"layer_norm", "gelu"}));
  std::vector<std::string> left;
  for (size_t i : g.uncovered) left.push_back(t.ops[i].name);
  EXPECT_THAT(left, ::testing::Contains("aten.addmm.default"));
  EXPECT_THAT(left, ::testing::Not(::testing::Contains("aten.native_layer_norm.default")));
  double covered = 0;
  for (const auto& grp : g.groups) covered += grp.time_us;
  double rest = 0;
  for (size_t i : g.uncovered) rest += t.ops[i].time_us;
  EXPECT_NEAR(covered + rest, t.total_us(), 1e-9);
}

TEST(capture_group, a_router_takes_the_top_k_of_its_softmax) {
  const trace t = fixture("router_softcap");
  const grouping g = group_ops(t, lift(t));
  EXPECT_THAT(patterns(g), ::testing::ElementsAre(ops{"softmax", "topk"}, ops{"scale", "tanh", "scale", "softmax"}));
}
