// Lifting aten operators to spec ops (capture/lift.h, rms_norm_match.h) on the fixture traces.
#include <tuple>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "capture/capture.h"
#include "capture/lift.h"
#include "capture_fixtures.h"

using namespace kf::capture;
using test::fixture;
using test::lifted_named;

TEST(capture_lift, recognises_rms_norm_written_by_hand_and_through_f_rms_norm) {
  const trace t = fixture("llama_block");
  const auto lifted = lift(t);
  // Each layer's input norm (by hand: upcast, pow, mean, add, rsqrt, mul, cast back, weight) and post-attention
  // norm (F.rms_norm: the weight before the cast back), and the final norm.
  const auto norms = lifted_named(lifted, "rms_norm");
  ASSERT_EQ(norms.size(), 5u);
  for (const auto& n : norms) {
    EXPECT_EQ(n.args["normalized_shape"], (nlohmann::json{16}));
    EXPECT_DOUBLE_EQ(n.args["eps"].get<double>(), norm_eps(1e-5));
    ASSERT_EQ(n.tensors.size(), 1u);
    EXPECT_EQ(n.tensors[0].first, "weight");
    // The bfloat16 input, before the upcast; the bfloat16 result, after the cast back.
    EXPECT_EQ(t.meta(n.input).dtype, "bfloat16");
    EXPECT_EQ(t.meta(n.output()).dtype, "bfloat16");
    EXPECT_EQ(n.covers.size(), 8u) << "the cast up, pow, mean, add, rsqrt, mul, the weight's mul and the cast back";
    for (size_t i : n.covers) EXPECT_NE(t.ops[i].module.find("norm"), std::string::npos) << t.ops[i].name;
  }
  // No stray mul, rsqrt or cast of a norm is lifted by itself.
  EXPECT_TRUE(lifted_named(lifted, "rsqrt").empty());
}

TEST(capture_lift, maps_the_operators_of_a_resnet_block) {
  const trace t = fixture("resnet_tail");
  const auto lifted = lift(t);
  EXPECT_EQ(lifted_named(lifted, "relu").size(), 5u);  // the stem's and two per block, in place
  const auto adds = lifted_named(lifted, "add");
  ASSERT_EQ(adds.size(), 2u);  // out += identity
  EXPECT_TRUE(adds[0].commutative);
  const auto pools = lifted_named(lifted, "adaptive_avg_pool2d");  // mean over H, W with keepdim
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_EQ(pools[0].args, (nlohmann::json{{"output_size", 1}}));
  const auto flattens = lifted_named(lifted, "flatten");
  ASSERT_EQ(flattens.size(), 1u);
  EXPECT_EQ(flattens[0].args, (nlohmann::json{{"start_dim", 1}}));
  EXPECT_EQ(lifted_named(lifted, "alias").size(), 1u);  // the pooled tensor's channels_last restride
  for (const auto& l : lifted)
    for (size_t i : l.covers) {
      EXPECT_NE(t.ops[i].name, "aten.convolution.default");
      EXPECT_NE(t.ops[i].name, "aten.native_batch_norm.default");
    }
}

// nn.AvgPool2d(2) (stride traced as [2, 2], the kernel's: left out), F.avg_pool2d(3, 1, 1, count_include_pad=False)
// and nn.MaxPool2d(3, 2, 1): the arguments that differ from the defaults, each its own workload (a pooling starts a
// pattern).
TEST(capture_lift, poolings_keep_the_arguments_that_differ_from_their_defaults_and_a_number_stays_an_operand) {
  const trace t = fixture("pool_branches");
  const auto pools = lifted_named(lift(t), "avg_pool2d");
  ASSERT_EQ(pools.size(), 2u);
  EXPECT_EQ(pools[0].args, (nlohmann::json{{"kernel_size", 2}}));
  EXPECT_EQ(pools[1].args, (nlohmann::json{{"kernel_size", 3}, {"stride", 1}, {"padding", 1}, {"count_include_pad", false}}));
  const capture_result r = analyze(t);
  int pooled = 0;
  for (const auto& w : r.workloads) pooled += w.spec.graph.front().op == "avg_pool2d";
  EXPECT_EQ(pooled, 2);
  // nn.MaxPool2d(3, 2, 1) traces as max_pool2d_with_indices, its indices unused: max_pool2d.
  const auto maxes = lifted_named(lift(t), "max_pool2d");
  ASSERT_EQ(maxes.size(), 1u);
  EXPECT_EQ(maxes[0].args, (nlohmann::json{{"kernel_size", 3}, {"stride", 2}, {"padding", 1}}));
  // x - 0.5 before the Inception branch's pooling: a sub with a number operand (no tensor to bind).
  const auto subs = lifted_named(lift(t), "sub");
  ASSERT_EQ(subs.size(), 1u);
  EXPECT_EQ(subs[0].args, (nlohmann::json{{"other", 0.5}}));
  EXPECT_TRUE(subs[0].tensors.empty());
}

TEST(capture_lift, numbers_become_scales_and_topk_keeps_both_results) {
  const trace t = fixture("router_softcap");
  const auto lifted = lift(t);
  const auto scales = lifted_named(lifted, "scale");
  ASSERT_EQ(scales.size(), 2u);  // scores / 30, then * 30
  EXPECT_DOUBLE_EQ(scales[0].args["factor"].get<double>(), 1.0 / 30.0);
  EXPECT_DOUBLE_EQ(scales[1].args["factor"].get<double>(), 30.0);
  const auto topk = lifted_named(lifted, "topk");
  ASSERT_EQ(topk.size(), 1u);
  EXPECT_EQ(topk[0].outputs.size(), 2u);
  EXPECT_EQ(topk[0].args, (nlohmann::json{{"k", 2}}));
  EXPECT_EQ(lifted_named(lifted, "softmax").size(), 2u);
}

TEST(capture_lift, a_norm_with_a_weight_of_another_dtype_is_not_lifted) {
  trace t = fixture("norm_two_sizes");
  for (auto& [v, m] : t.values)
    if (m.shape == std::vector<int64_t>{64} && t.origins.count(v) && t.origins.at(v).contains("param") &&
        t.origins.at(v)["param"] == "norm.weight")
      m.dtype = "float16";  // mixed-dtype LayerNorm: the spec's layer_norm takes the input's dtype
  EXPECT_TRUE(lifted_named(lift(t), "layer_norm").empty());
  EXPECT_EQ(lifted_named(lift(t), "gelu").size(), 3u);
}

namespace {

nlohmann::json tensor_json(int64_t v, std::vector<int64_t> shape, const char* dtype) {
  std::vector<int64_t> stride(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) stride[i] = stride[i + 1] * shape[i + 1];
  return nlohmann::json{{"value", v}, {"shape", shape}, {"dtype", dtype}, {"stride", stride}, {"device", "cpu"}};
}

// A trace of `ops` (name, args, output) on the model's inputs 0 (the scores) and 1 (a mask), ending in a softmax of
// the last op's output.
trace masked_trace(const std::vector<std::tuple<std::string, nlohmann::json, nlohmann::json>>& ops) {
  nlohmann::json j = {{"version", 1}, {"model", "t.py:attn"}, {"device", "cpu"}, {"torch", "2.11.0"},
                      {"iterations", 1}, {"forward_us", 0.0},
                      {"origins", {{"0", {{"input", 0}}}, {"1", {{"input", 1}}}}}};
  j["ops"] = nlohmann::json::array();
  int64_t last = 0;
  for (const auto& [name, args, out] : ops) {
    j["ops"].push_back({{"index", j["ops"].size()}, {"op", name}, {"module", "attn"}, {"args", args},
                        {"kwargs", nlohmann::json::object()}, {"outputs", {out}}, {"time_us", 1.0}});
    last = out["value"].get<int64_t>();
  }
  j["ops"].push_back({{"index", j["ops"].size()}, {"op", "aten._softmax.default"}, {"module", "attn"},
                      {"args", {tensor_json(last, {2, 4, 8, 8}, "float16"), -1, false}},
                      {"kwargs", nlohmann::json::object()}, {"outputs", {tensor_json(99, {2, 4, 8, 8}, "float16")}},
                      {"time_us", 1.0}});
  j["model_outputs"] = {99};
  return parse_trace(j, "t.json");
}

}  // namespace

// Hugging Face's eager attention masks scores with a bool mask: scores.masked_fill(mask, -inf) (or finfo.min), then
// softmax. The trace encodes -inf as {"float": "-inf"} (JSON has no infinity); the lifted op holds it as a spec does.
// A uint8 mask (not torch's bool) is not lifted: masked_fill refuses it in eager.
TEST(capture_lift, a_bool_masked_fill_is_lifted_with_its_infinite_value) {
  auto make = [&](const char* mask_dtype, nlohmann::json value) {
    return masked_trace({{"aten.masked_fill.Scalar",
                                      {tensor_json(0, {2, 4, 8, 8}, "float16"), tensor_json(1, {1, 1, 8, 8}, mask_dtype), value},
                                      tensor_json(2, {2, 4, 8, 8}, "float16")}});
  };
  auto fills = lifted_named(lift(make("bool", {{"float", "-inf"}})), "masked_fill");
  ASSERT_EQ(fills.size(), 1u);
  EXPECT_EQ(fills[0].args, (nlohmann::json{{"value", "-inf"}}));
  ASSERT_EQ(fills[0].tensors.size(), 1u);
  EXPECT_EQ(fills[0].tensors[0], (std::pair<std::string, int64_t>{"mask", 1}));
  fills = lifted_named(lift(make("bool", -65504.0)), "masked_fill");
  ASSERT_EQ(fills.size(), 1u);
  EXPECT_EQ(fills[0].args["value"], -65504.0);
  EXPECT_TRUE(lifted_named(lift(make("uint8", -65504.0)), "masked_fill").empty());
  EXPECT_TRUE(lifted_named(lift(make("bool", {{"float", "nan"}})), "masked_fill").empty());
}

// torch.where(causal, scores, finfo.min), as GPT-2's eager attention writes it: the number becomes a 0-d tensor
// (aten.scalar_tensor; torch.full([], v) in Hugging Face's code), read only by the where, which the lifted `where`
// covers. where(mask, value, x) is x.masked_fill(mask, value); where.ScalarOther takes the number directly.
TEST(capture_lift, torch_where_with_a_number_is_where_or_masked_fill) {
  const auto x = tensor_json(0, {2, 4, 8, 8}, "float16"), mask = tensor_json(1, {1, 1, 8, 8}, "bool");
  const auto scalar = tensor_json(5, {}, "float16"), out = tensor_json(2, {2, 4, 8, 8}, "float16");
  trace t = masked_trace({{"aten.scalar_tensor.default", nlohmann::json::array({-65504.0}), scalar},
                                  {"aten.where.self", {mask, x, scalar}, out}});
  auto lifted = lift(t);
  auto w = lifted_named(lifted, "where");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].args, (nlohmann::json{{"value", -65504.0}}));
  EXPECT_EQ(w[0].tensors[0], (std::pair<std::string, int64_t>{"condition", 1}));
  EXPECT_EQ(w[0].input, 0);
  EXPECT_EQ(w[0].covers, (std::vector<size_t>{0, 1}));  // the scalar_tensor is no operator left unexpressed
  t = masked_trace({{"aten.full.default", {nlohmann::json::array(), {{"float", "-inf"}}}, scalar},
                            {"aten.where.self", {mask, scalar, x}, out}});
  auto f = lifted_named(lift(t), "masked_fill");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].args, (nlohmann::json{{"value", "-inf"}}));
  EXPECT_EQ(f[0].tensors[0], (std::pair<std::string, int64_t>{"mask", 1}));
  t = masked_trace({{"aten.scalar_tensor.default", nlohmann::json::array({-1e4}), scalar},
                    {"aten.masked_fill.Tensor", {x, mask, scalar}, out}});
  f = lifted_named(lift(t), "masked_fill");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].args, (nlohmann::json{{"value", -1e4}}));
  EXPECT_EQ(f[0].covers, (std::vector<size_t>{0, 1}));
  t = masked_trace({{"aten.where.ScalarOther", {mask, x, -3.5}, out}});
  w = lifted_named(lift(t), "where");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].args, (nlohmann::json{{"value", -3.5}}));
  // A 0-d tensor that is not made from a number (a computed one) is not a fill value.
  t = masked_trace({{"aten.sum.default", nlohmann::json::array({x}), scalar}, {"aten.where.self", {mask, x, scalar}, out}});
  EXPECT_TRUE(lifted_named(lift(t), "where").empty());
}

// MobileNetV3's activations: nn.Hardswish and nn.Hardsigmoid lift as themselves, nn.ReLU6 (aten.hardtanh 0, 6) and a
// one-sided torch.clamp to clamp with their number bounds (an absent bound stays absent).
TEST(capture_lift, maps_hardswish_hardsigmoid_relu6_and_clamp) {
  const trace t = fixture("mobilenet_se");
  const auto lifted = lift(t);
  EXPECT_EQ(lifted_named(lifted, "hardswish").size(), 1u);
  EXPECT_EQ(lifted_named(lifted, "hardsigmoid").size(), 1u);
  const auto clamps = lifted_named(lifted, "clamp");
  ASSERT_EQ(clamps.size(), 2u);
  EXPECT_EQ(clamps[0].args, (nlohmann::json{{"min", 0.0}, {"max", 6.0}}));
  EXPECT_EQ(clamps[1].args, (nlohmann::json{{"max", 0.5}}));
}
