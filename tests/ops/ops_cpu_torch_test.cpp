// kforge_ops on the cpu device: the bundled workloads' cpu winners as operators match the float64 reference within
// the verifier's tolerance on the verifier's inputs, without falling back; the binding of a call's shapes to a spec.
#include <gtest/gtest.h>

#include "call_binding.h"
#include "ops_support.h"
#include "spec/adversarial.h"
#include "spec/ops.h"
#include "spec/reference_torch.h"
#include "spec/spec_parse.h"
#include "verify/compare_torch.h"

namespace kf {
namespace {

using test::call_kforge;
using test::k_ops_workloads;

// Workloads with a committed cpu winner: an activation, a two-input elementwise chain, the row norms (one with two
// outputs) and a group norm with its activation.
const std::vector<std::string> k_cpu_workloads = {"gpt2-gelu-tanh", "llama3-8b-swiglu", "qwen25-7b-rmsnorm",
                                                  "bert-base-layernorm", "qwen3-32b-add-rmsnorm",
                                                  "sd35-vae-groupnorm-silu"};

// The operator's outputs against the float64 reference, as the verifier compares a candidate's (compare_output:
// the dtype's tolerance, widened to 4x eager's own error, the spec's where it is tighter).
void expect_matches(const workload_spec& spec, const case_spec& c, const std::vector<at::Tensor>& inputs,
                    const std::string& what) {
  std::vector<at::Tensor> out = call_kforge(ops::op_name(spec.name), inputs);
  std::vector<at::Tensor> ref = run_graph_f64(spec, inputs);
  std::vector<at::Tensor> eager = run_graph(spec, inputs);
  std::vector<tensor_desc> descs = infer_outputs(spec, c);
  ASSERT_EQ(out.size(), descs.size()) << what;
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].sizes().vec(), descs[i].shape) << what;
    EXPECT_EQ(out[i].scalar_type(), eager[i].scalar_type()) << what;
    EXPECT_TRUE(out[i].is_contiguous()) << what;
    output_comparison cmp = compare_output(out[i], ref[i], eager[i], descs[i].type, spec.tolerance);
    EXPECT_TRUE(cmp.nan_inf_ok()) << what << ": " << cmp.first_nan_inf;
    EXPECT_TRUE(cmp.match()) << what << " output " << i << ": " << cmp.match_text();
  }
}

TEST(kforge_ops, cpu_winners_load_as_operators) {
  nlohmann::json report = test::load_ops(k_ops_workloads, "cpu", k_cpu_workloads);
  EXPECT_TRUE(report["skipped"].empty()) << report["skipped"].dump(2);
  for (const std::string& w : k_cpu_workloads) {
    nlohmann::json e = test::loaded_entry(report, ops::op_name(w));
    ASSERT_FALSE(e.is_null()) << w;
    EXPECT_TRUE(e["kernels"]["cpu"]["kernel"].get<bool>()) << w << ": " << e["kernels"]["cpu"].dump();
    EXPECT_EQ(e["kernels"]["cpu"]["key"], cpu_key()) << w;
    EXPECT_FALSE(e["kernels"]["cuda"]["kernel"].get<bool>()) << w;  // not asked for
  }
  nlohmann::json two = test::loaded_entry(report, "qwen3_32b_add_rmsnorm");
  EXPECT_EQ(two["schema"], "qwen3_32b_add_rmsnorm(Tensor x, Tensor r, Tensor w) -> (Tensor y, Tensor h)");
  EXPECT_EQ(test::loaded_entry(report, "gpt2_gelu_tanh")["schema"], "gpt2_gelu_tanh(Tensor x) -> Tensor");
}

TEST(kforge_ops, cpu_operators_match_the_reference_on_the_verifiers_inputs) {
  test::load_ops(k_ops_workloads, "cpu", k_cpu_workloads);
  test::warning_catcher warnings;
  for (const std::string& w : k_cpu_workloads) {
    workload_spec spec = test::ops_spec(w);
    for (const case_spec& c : spec.cases) {
      if (!c.runs_on("cpu")) continue;
      for (uint64_t seed : {0u, 1u})
        expect_matches(spec, c, make_inputs(spec, c, seed, c10::Device(c10::kCPU)),
                       fmt::format("{} {} seed {}", w, c.name, seed));
      for (const adversarial_kind& k : adversarial_kinds())
        if (adversarial_applies(spec, k.name))
          expect_matches(spec, c, make_adversarial_inputs(spec, c, k.name, 0, c10::Device(c10::kCPU)),
                         fmt::format("{} {} {}", w, c.name, k.name));
    }
  }
  EXPECT_TRUE(warnings.messages().empty()) << "an operator fell back to eager:\n" << warnings.all();
}

TEST(kforge_ops, shapes_between_the_cases_run_the_kernel) {
  // The kernels read shapes at run time: a size no case names is still the kernel's.
  test::load_ops(k_ops_workloads, "cpu", {"gpt2-gelu-tanh"});
  test::warning_catcher warnings;
  at::Tensor x = at::randn({5, 3072}).to(at::kHalf);
  at::Tensor y = call_kforge("gpt2_gelu_tanh", {x}).at(0);
  EXPECT_TRUE(warnings.messages().empty()) << warnings.all();
  EXPECT_TRUE(at::allclose(y.to(at::kFloat), at::gelu(x, "tanh").to(at::kFloat), 4e-3, 1e-3));
}

workload_spec two_input_spec() {
  workload_spec s;
  auto d = parse_spec_text(R"(version: 1
name: bind-me
inputs:
  x: {shape: [B, S, 64], dtype: bfloat16}
  m: {shape: [S, 64], dtype: bfloat16}
graph:
  - add: {input: x, other: m}
  - silu
cases:
  - {B: 2, S: 3}
)", "bind-me.yaml", &s);
  EXPECT_TRUE(d.empty()) << (d.empty() ? "" : d.front().str());
  return s;
}

TEST(kforge_ops, a_call_binds_the_specs_symbols) {
  workload_spec s = two_input_spec();
  ops::call_binding b = ops::bind_call(s, {{{4, 7, 64}, dtype::bfloat16}, {{7, 64}, dtype::bfloat16}});
  ASSERT_TRUE(b.ok) << b.why;
  EXPECT_EQ(b.c.name, "B=4,S=7");
  ASSERT_EQ(b.outputs.size(), 1u);
  EXPECT_EQ(b.outputs[0].shape, (std::vector<int64_t>{4, 7, 64}));
  EXPECT_EQ(b.outputs[0].type, dtype::bfloat16);
}

TEST(kforge_ops, a_call_the_spec_does_not_describe_says_why) {
  workload_spec s = two_input_spec();
  auto why = [&](std::vector<tensor_desc> in) { return ops::bind_call(s, in).why; };
  EXPECT_EQ(why({{{4, 7, 64}, dtype::float32}, {{7, 64}, dtype::bfloat16}}), "x is float32, the spec takes bfloat16");
  EXPECT_EQ(why({{{7, 64}, dtype::bfloat16}, {{7, 64}, dtype::bfloat16}}), "x has 2 dims, the spec's has 3");
  EXPECT_EQ(why({{{4, 7, 32}, dtype::bfloat16}, {{7, 64}, dtype::bfloat16}}), "x's dim 2 is 32, the spec's is 64");
  EXPECT_EQ(why({{{4, 7, 64}, dtype::bfloat16}, {{6, 64}, dtype::bfloat16}}), "S is 7 in one input and 6 in m");
  EXPECT_EQ(why({{{4, 7, 64}, dtype::bfloat16}}), "1 inputs, the spec takes 2");
  EXPECT_NE(why({{{0, 7, 64}, dtype::bfloat16}, {{7, 64}, dtype::bfloat16}}).find("at least 1"), std::string::npos);
}

TEST(kforge_ops, operator_names_and_schemas_come_from_the_spec) {
  EXPECT_EQ(ops::op_name("gpt2-gelu-tanh"), "gpt2_gelu_tanh");
  EXPECT_EQ(ops::op_name("3d-pool"), "w3d_pool");
  EXPECT_EQ(ops::op_schema(two_input_spec()), "bind_me(Tensor x, Tensor m) -> Tensor");
}

}  // namespace
}  // namespace kf
