// Merging a pattern's calls into one workload (capture/merge.h) and writing each call as a graph (pattern.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "capture/capture.h"
#include "capture/merge.h"
#include "capture_fixtures.h"

using namespace kf;
using namespace kf::capture;
using test::fixture;

namespace {

std::string shape_str(const std::vector<dim>& shape) {
  std::string s;
  for (const auto& d : shape) s += (s.empty() ? "" : ",") + (d.is_symbol() ? d.symbol : std::to_string(d.value));
  return s;
}

const captured_workload& named(const capture_result& r, const std::string& pattern) {
  for (const auto& w : r.workloads)
    if (w.pattern == pattern) return w;
  throw std::runtime_error("no workload " + pattern);
}

}  // namespace

TEST(capture_merge, a_pattern_at_two_sizes_is_one_workload_with_a_case_each_and_a_symbol) {
  const capture_result r = analyze(fixture("norm_two_sizes"));
  ASSERT_EQ(r.workloads.size(), 1u);
  const captured_workload& w = r.workloads[0];
  EXPECT_EQ(w.pattern, "layer_norm -> gelu");
  EXPECT_EQ(w.calls, 3);
  ASSERT_EQ(w.spec.inputs.size(), 3u);
  EXPECT_EQ(w.spec.inputs[0].name, "x");
  EXPECT_EQ(shape_str(w.spec.inputs[0].shape), "2,T,64");  // the token count varies; batch and width do not
  EXPECT_EQ(w.spec.inputs[1].name, "w");
  EXPECT_EQ(shape_str(w.spec.inputs[1].shape), "64");
  EXPECT_EQ(w.spec.inputs[1].init.kind, "normal");
  EXPECT_EQ(w.spec.inputs[1].init.params["mean"], 1.0);  // a norm's weight, near 1
  EXPECT_EQ(w.spec.inputs[2].name, "b");
  ASSERT_EQ(w.spec.cases.size(), 2u);
  // One call at T=32 moves more than the two at T=8 together (the fixture's times follow the elements): it is
  // first and the one gated.
  EXPECT_EQ(w.spec.cases[0].name, "T=32");
  EXPECT_TRUE(w.spec.cases[0].gate);
  EXPECT_EQ(w.stats[0].calls, 1);
  EXPECT_EQ(w.spec.cases[1].name, "T=8");
  EXPECT_FALSE(w.spec.cases[1].gate);
  EXPECT_EQ(w.stats[1].calls, 2);
  EXPECT_DOUBLE_EQ(w.time_us, w.stats[0].time_us + w.stats[1].time_us);
  EXPECT_EQ(w.spec.graph[0].args["eps"].get<double>(), norm_eps(1e-5));
  EXPECT_EQ(w.spec.baselines, (std::vector<std::string>{"eager", "compile"}));
  EXPECT_EQ(w.spec.gate.must_beat, (std::vector<std::string>{"eager"}));
}

TEST(capture_merge, a_result_read_outside_the_pattern_is_returned_with_as) {
  const capture_result r = analyze(fixture("llama_block"));
  // Four residual adds feed a norm; three of the sums are read again (the next residual), the last is not: one
  // workload that returns the sum.
  const captured_workload& w = named(r, "add -> rms_norm");
  EXPECT_EQ(w.calls, 4);
  ASSERT_EQ(w.spec.graph.size(), 2u);
  EXPECT_EQ(w.spec.graph[0].as, "h");
  EXPECT_EQ(w.spec.outputs, (std::vector<std::string>{"out", "h"}));
  EXPECT_EQ(w.spec.graph[1].args["weight"], "w");
  EXPECT_EQ(w.spec.graph[0].args["input"], "x");
  EXPECT_EQ(w.spec.graph[0].args["other"], "z");
  // The attention's softmax: the float32 upcast folded into softmax's dtype, the mask named and drawn causal.
  const captured_workload& a = named(r, "scale -> add_mask -> softmax(float32) -> cast(bfloat16)");
  EXPECT_EQ(a.spec.graph[1].args["mask"], "mask");
  EXPECT_EQ(a.spec.inputs[1].init.kind, "causal_mask");
  EXPECT_EQ(shape_str(a.spec.inputs[1].shape), "1,1,6,6");
  EXPECT_TRUE(a.spec.outputs.empty());
}

TEST(capture_merge, softcap_and_channels_last_are_kept) {
  const capture_result r = analyze(fixture("router_softcap"));
  const captured_workload& s = named(r, "softcap -> softmax");
  EXPECT_EQ(s.spec.graph[0].args["cap"], 30.0);
  const capture_result n = analyze(fixture("resnet_tail"));
  const captured_workload& a = named(n, "add -> relu");
  EXPECT_EQ(a.spec.inputs[0].memory_format, "channels_last");
  EXPECT_EQ(a.calls, 2);
  const captured_workload& p = named(n, "adaptive_avg_pool2d -> flatten");
  EXPECT_EQ(p.spec.graph[1].args, (nlohmann::json{{"start_dim", 1}}));
}

TEST(capture_merge, a_case_too_large_for_the_cpu_runs_on_cuda_only_when_captured_there) {
  pattern_call big;
  big.graph = {op_call{"silu", {{"input", "x"}}, {}, ""}};
  big.inputs = {pattern_input{"x", 0, {4096, 14336}, dtype::bfloat16, "contiguous", {}}};
  big.escapes = {false};
  big.signature = "silu";
  big.bytes = 4096ll * 14336 * 2 * 2;
  big.time_us = 100;
  pattern_call small = big;
  small.inputs[0].shape = {1, 14336};
  small.bytes = 14336 * 4;
  small.time_us = 1;
  auto on_cuda = merge_patterns({big, small}, {.device = "cuda"});
  ASSERT_EQ(on_cuda.size(), 1u);
  EXPECT_EQ(on_cuda[0].spec.cases[0].devices, (std::vector<std::string>{"cuda"}));
  EXPECT_TRUE(on_cuda[0].spec.cases[1].devices.empty());
  EXPECT_TRUE(merge_patterns({big, small}, {.device = "cpu"})[0].spec.cases[0].devices.empty());
}

TEST(capture_merge, layers_fold_into_a_star) {
  EXPECT_EQ(fold_layers({"layers.0.mlp", "layers.1.mlp", "norm"}), (std::vector<std::string>{"layers.*.mlp", "norm"}));
  EXPECT_EQ(fold_layers({"layers.0 + layers.1.input_layernorm", "layers.1 + norm"}),
            (std::vector<std::string>{"layers.0 + layers.1.input_layernorm", "layers.1 + norm"}));
  EXPECT_EQ(fold_layers({"up_blocks.0.resnets.2", "up_blocks.1.resnets.0", "up_blocks.1.resnets.0"}),
            (std::vector<std::string>{"up_blocks.*.resnets.*"}));
  EXPECT_EQ(fold_layers({"conv2d7.x"}), (std::vector<std::string>{"conv2d7.x"}));
}
