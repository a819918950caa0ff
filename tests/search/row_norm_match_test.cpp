// match_row_norm (graph_match.h): what it takes (an elementwise prologue, one layer_norm or rms_norm over trailing
// dims, an elementwise epilogue, the norm's input returned too) and what it declines with a reason; and that the
// suite's LayerNorm / RMSNorm workloads go to row_norm on the cpu, not group_norm.
#include <filesystem>

#include <gtest/gtest.h>

#include "../support/family_verify.h"
#include "search/family.h"
#include "search/graph_match.h"
#include "spec/spec_parse.h"

namespace kf {
namespace {

namespace fs = std::filesystem;
using test::parse;

// x [T, 64] bfloat16, w [64] and whatever `extra_inputs` adds (r [T, 64] with `with_r`); the graph and outputs as
// given.
workload_spec spec_with(const std::string& graph, const std::string& outputs = "", const std::string& extra_inputs = "",
                        bool with_r = true) {
  return parse("version: 1\nname: rn-match\ninputs:\n  x: {shape: [T, 64], dtype: bfloat16}\n"
               "  w: {shape: [64], dtype: bfloat16}\n" +
               std::string(with_r ? "  r: {shape: [T, 64], dtype: bfloat16}\n" : "") + extra_inputs + "graph:\n" +
               graph + (outputs.empty() ? "" : "outputs: " + outputs + "\n") + "cases: [{T: 3, gate: true}, {T: 1}]\n");
}

std::string declined(const workload_spec& spec) {
  std::string why;
  EXPECT_FALSE(match_row_norm(spec, &why).has_value());
  return why;
}

TEST(row_norm_match, residual_add_returning_the_sum) {
  for (const char* outputs : {"[y, h]", "[h, y]"}) {
    SCOPED_TRACE(outputs);
    auto spec = spec_with(
        "  - add: {input: x, other: r, as: h}\n"
        "  - rms_norm: {normalized_shape: [64], weight: w, eps: 1.0e-6, as: y}\n",
        outputs);
    std::string why;
    auto g = match_row_norm(spec, &why);
    ASSERT_TRUE(g.has_value()) << why;
    EXPECT_EQ(g->what, norm_graph::kind::rms_norm);
    EXPECT_EQ(g->norm_op, 1u);
    EXPECT_EQ(g->inputs, (std::vector<int>{0, 2}));
    EXPECT_EQ(g->prologue_operands, 2u);
    EXPECT_TRUE(g->writes_input);
    EXPECT_EQ(g->input_output, std::string(outputs) == "[y, h]" ? 1 : 0);
    EXPECT_EQ(g->norm_in, dtype::bfloat16);
    EXPECT_EQ(g->weight, "w");
    EXPECT_TRUE(g->bias.empty());
    EXPECT_DOUBLE_EQ(g->eps, 1e-6);
  }
}

TEST(row_norm_match, layer_norm_with_an_epilogue_and_a_row_operand) {
  auto spec = spec_with(
      "  - mul: {input: x, other: s}\n"
      "  - layer_norm: {normalized_shape: [64], weight: w, bias: b}\n"
      "  - silu: {}\n"
      "  - mul: {other: r}\n"
      "  - cast: {dtype: float32}\n",
      "", "  s: {shape: [1, 64], dtype: bfloat16}\n  b: {shape: [64], dtype: bfloat16}\n");
  std::string why;
  auto g = match_row_norm(spec, &why);
  ASSERT_TRUE(g.has_value()) << why;
  EXPECT_EQ(g->what, norm_graph::kind::layer_norm);
  EXPECT_EQ(g->norm_op, 1u);
  EXPECT_EQ(g->inputs, (std::vector<int>{0, 3, 2}));  // x, s before the norm; r after it
  EXPECT_EQ(g->prologue_operands, 2u);
  EXPECT_EQ(g->norm_in, dtype::bfloat16);
  EXPECT_EQ(g->bias_type, dtype::bfloat16);
  EXPECT_EQ(g->step_types.size(), 5u);
  EXPECT_EQ(g->out, dtype::float32);
  EXPECT_FALSE(g->writes_input);
  EXPECT_DOUBLE_EQ(g->eps, 1e-5);
  EXPECT_TRUE(find_family("row_norm_cpu", device_kind::cpu)->covers(spec, nullptr));
}

TEST(row_norm_match, two_norms_are_declined) {
  auto spec = spec_with(
      "  - rms_norm: {input: x, normalized_shape: [64], weight: w}\n"
      "  - rms_norm: {normalized_shape: [64]}\n",
      "", "", false);
  EXPECT_NE(declined(spec).find("exactly one layer_norm or rms_norm"), std::string::npos) << declined(spec);
}

TEST(row_norm_match, a_softmax_is_declined) {
  auto spec = spec_with(
      "  - rms_norm: {input: x, normalized_shape: [64], weight: w}\n"
      "  - softmax: {dim: -1}\n",
      "", "", false);
  const std::string why = declined(spec);
  EXPECT_NE(why.find("op 2 (softmax) is neither elementwise nor layer_norm / rms_norm"), std::string::npos) << why;
  std::string fam_why;
  EXPECT_FALSE(find_family("row_norm_cpu", device_kind::cpu)->covers(spec, &fam_why));
  EXPECT_EQ(fam_why, why);
}

TEST(row_norm_match, an_operand_of_another_shape_is_declined) {
  // A column [T, 1] is neither the value's shape nor a row of the normalized dims.
  auto spec = spec_with(
      "  - mul: {input: x, other: c}\n"
      "  - rms_norm: {normalized_shape: [64], weight: w}\n",
      "", "  c: {shape: [T, 1], dtype: bfloat16}\n", false);
  const std::string why = declined(spec);
  EXPECT_NE(why.find("operand 'c' is neither the value's shape nor a row of its normalized dims"), std::string::npos)
      << why;
}

TEST(row_norm_match, an_extra_output_that_is_not_the_norms_input_is_declined) {
  // The norm's result, before the epilogue, is not something the kernel writes.
  auto spec = spec_with(
      "  - add: {input: x, other: r, as: h}\n"
      "  - rms_norm: {normalized_shape: [64], weight: w, as: n}\n"
      "  - silu: {as: y}\n",
      "[y, n]");
  const std::string why = declined(spec);
  EXPECT_NE(why.find("output 'n' is neither the result nor the norm's input"), std::string::npos) << why;
}

// HF's RMSNorm widens the residual sum to float32 inside the norm module: the sum (before the cast) is returned in
// its own type, which holds the norm's input exactly. A step that changes the value on the way (an op, a narrowing
// cast) is not returned.
TEST(row_norm_match, a_sum_returned_before_a_widening_cast) {
  // LlamaRMSNorm: y = w * rms_norm(h.float()).to(bfloat16).
  auto spec = spec_with(
      "  - add: {input: x, other: r, as: h}\n"
      "  - cast: {dtype: float32}\n"
      "  - rms_norm: {normalized_shape: [64]}\n"
      "  - cast: {dtype: bfloat16}\n"
      "  - mul: {other: w, as: y}\n",
      "[y, h]");
  std::string why;
  auto g = match_row_norm(spec, &why);
  ASSERT_TRUE(g.has_value()) << why;
  EXPECT_EQ(g->norm_op, 2u);
  EXPECT_TRUE(g->writes_input);
  EXPECT_EQ(g->input_output, 1);
  EXPECT_EQ(g->norm_in, dtype::float32);
  EXPECT_EQ(g->h_type, dtype::bfloat16);
  EXPECT_NE(g->describe().find("returns the norm's input too (as bfloat16)"), std::string::npos) << g->describe();

  const std::string scaled = declined(spec_with(
      "  - add: {input: x, other: r, as: h}\n"
      "  - scale: {factor: 2.0}\n"
      "  - rms_norm: {normalized_shape: [64], weight: w, as: y}\n",
      "[y, h]"));
  EXPECT_NE(scaled.find("output 'h' is neither the result nor the norm's input"), std::string::npos) << scaled;
  const std::string narrowed = declined(spec_with(
      "  - mul: {input: x, other: w}\n"
      "  - cast: {dtype: float32}\n"
      "  - add: {other: r, as: h}\n"
      "  - cast: {dtype: bfloat16}\n"
      "  - rms_norm: {normalized_shape: [64], as: y}\n",
      "[y, h]"));
  EXPECT_NE(narrowed.find("output 'h' is neither the result nor the norm's input"), std::string::npos) << narrowed;
}

// The suite's LayerNorm / RMSNorm workloads: on the cpu, row_norm_cpu covers them and group_norm_cpu declines them,
// saying whose they are.
TEST(row_norm_match, suite_norm_workloads_go_to_row_norm_on_the_cpu) {
  const fs::path dir = fs::path(KFORGE_SOURCE_DIR) / "workloads";
  for (const char* name : {"qwen3-32b-add-rmsnorm", "qwen25-7b-rmsnorm", "bert-base-layernorm"}) {
    SCOPED_TRACE(name);
    const workload_spec spec = load_spec(name, dir.string());
    std::vector<std::string> names;
    for (auto* f : covering_families(spec, device_kind::cpu)) names.push_back(f->name());
    EXPECT_EQ(names, std::vector<std::string>{"row_norm_cpu"});
    std::string why;
    EXPECT_FALSE(find_family("group_norm_cpu", device_kind::cpu)->covers(spec, &why));
    // (qwen3's returned sum is declined before: match_norm writes one output)
    if (spec.outputs.empty()) EXPECT_NE(why.find("row_norm_cpu's"), std::string::npos) << why;
  }
  // GroupNorm stays group_norm_cpu's.
  const workload_spec gn = load_spec("sd35-vae-groupnorm-silu", dir.string());
  std::vector<std::string> names;
  for (auto* f : covering_families(gn, device_kind::cpu)) names.push_back(f->name());
  EXPECT_EQ(names, std::vector<std::string>{"group_norm_cpu"});
}

}  // namespace
}  // namespace kf
