// The cpu families' own kernels through the whole verifier (static scan, compile, every rule on every case, in a
// real worker), on specs that no bundled workload resembles: float32 log_softmax (max + log(sum) rounds), a masked
// and scaled one, float16 RMSNorm without eps, float32 LayerNorm / GroupNorm whose all-equal rows magnify an
// inexact mean by 1/sqrt(eps), and the tanh GELU's negative tail. A new user's first run found each of these
// failing the tool's own kernels; a kernel the family emits for a spec it covers must pass. pointwise_cpu's chains too:
// the MLP activations (SwiGLU, GeGLU, GELU) over odd sizes, broadcast operands of other dtypes (a row bias, a [T, 1]
// column, a channel, a scalar) that its vectorized loops read, a channels_last input that its general path reads, and
// every other elementwise op. row_softmax_cpu's few long rows split across a team of threads (more threads than CI's
// cores, so that segments are short and some empty): odd lengths, a broadcast mask, 3 rows, top-k merged from the
// segments' lists, and rows shorter than the team. col_softmax_cpu's softmax over an earlier dim.
#include <filesystem>

#include <gtest/gtest.h>

#include "../support/test_compiler.h"
#include "exec/compile.h"
#include "search/family.h"
#include "spec/spec_parse.h"
#include "verify/check.h"

namespace kf {
namespace {

namespace fs = std::filesystem;
const fs::path k_specs = fs::path(KFORGE_SOURCE_DIR) / "tests" / "data" / "specs" / "families";

using test::shared_compiler;

// The family's default for the spec, then the default with each of `variants`' knobs changed: each must pass.
// omp_threads: the worker's OMP_NUM_THREADS (0: OpenMP's default).
void expect_family_passes(const std::string& spec_file, const std::string& family_name,
                          const std::vector<knob_values>& variants, int omp_threads = 0) {
  SCOPED_TRACE(spec_file);
  const workload_spec spec = load_spec((k_specs / spec_file).string());
  const family* f = find_family(family_name, device_kind::cpu);
  ASSERT_NE(f, nullptr);
  std::string why;
  ASSERT_TRUE(f->covers(spec, &why)) << why;
  worker_options wo;
  wo.device = {device_kind::cpu, 0};
  if (omp_threads > 0) wo.env_set["OMP_NUM_THREADS"] = std::to_string(omp_threads);
  worker_client w(wo);
  std::vector<knob_values> all = {{}};
  all.insert(all.end(), variants.begin(), variants.end());
  for (auto& changes : all) {
    knob_values k = f->default_variant(spec);
    std::string label = "default";
    for (auto& [name, value] : changes) k[name] = value, label += " " + name + "=" + value;
    SCOPED_TRACE(label);
    ASSERT_TRUE(f->valid(k, spec, &why)) << why;
    check_report r = check_candidate(spec, f->emit(spec, k), spec.name + ".cpp", shared_compiler(), w, {});
    ASSERT_TRUE(r.compile.ok) << r.compile.log.substr(0, 2000);
    EXPECT_TRUE(r.result.passed()) << r.result.text();
  }
}

// Numbers as add/sub/mul/div operands (literals in the emitted chain, no tensor operand), alone and around a norm.
TEST(families_cpu_verify, number_operands_pass_in_a_chain_and_around_a_norm) {
  expect_family_passes("number-operands-f16.yaml", "pointwise_cpu", {});
  expect_family_passes("number-shift-rms-norm-bf16.yaml", "row_norm_cpu", {});
}

TEST(families_cpu_verify, float32_log_softmax_passes_large_magnitudes) {
  expect_family_passes("log-softmax-f32.yaml", "row_softmax_cpu",
                       {{{"passes", "online"}}, {{"math", "libm"}, {"cache_row", "1"}}});
}

TEST(families_cpu_verify, masked_scaled_log_softmax_passes) {
  expect_family_passes("masked-log-softmax-f32.yaml", "row_softmax_cpu", {{{"passes", "online"}}});
}

// One row of 151936 or 100003 values, 3 rows, and a row of 5: split at launch (auto) where it pays, always (within).
// 16 threads (8 and 4 below) on CI's 2 cores: each barrier waits for the scheduler, so the other specs take fewer.
TEST(families_cpu_verify, row_softmax_split_rows_f16_masked_log_softmax_to_float32_passes) {
  expect_family_passes("vocab-log-softmax-f16-mask.yaml", "row_softmax_cpu",
                       {{{"split", "within"}},
                        {{"split", "within"}, {"passes", "online"}},
                        {{"split", "within"}, {"cache_row", "0"}, {"math", "libm"}}},
                       16);
}

TEST(families_cpu_verify, row_softmax_split_rows_topk_merges_the_segments_lists) {
  expect_family_passes("vocab-softmax-topk-bf16.yaml", "row_softmax_cpu",
                       {{{"split", "within"}}, {{"split", "within"}, {"passes", "online"}, {"exp_once", "0"}}}, 8);
}

// A top-k without a softmax: a sigmoid router (rows dealt whole, and a row of 40001 split across 8 threads, whose
// lists merge without a statistics barrier between rows) and a sampler's top-k of scaled, bool-masked logits.
TEST(families_cpu_verify, row_softmax_topk_without_a_softmax_passes) {
  expect_family_passes("sigmoid-router-topk-f32.yaml", "row_softmax_cpu",
                       {{{"split", "within"}}, {{"threads", "1"}}, {{"schedule", "dynamic"}, {"rows_per_chunk", "1"}}},
                       8);
  expect_family_passes("scaled-masked-topk-bf16.yaml", "row_softmax_cpu", {{{"split", "within"}}}, 4);
}

TEST(families_cpu_verify, row_softmax_split_rows_rescale_the_kept_exponentials) {
  expect_family_passes("vocab-softcap-softmax-bf16.yaml", "row_softmax_cpu",
                       {{{"split", "within"}}, {{"split", "within"}, {"cache_row", "0"}, {"exp_once", "0"}}}, 4);
}

// col_softmax_cpu over dim 1 (tiles wider and narrower than an image's H x W, a class dim of one) and over dim -3 in
// bfloat16 with a softcap: staged and not, both unstaged passes' forms, both exps, one thread and a team.
TEST(families_cpu_verify, col_softmax_passes_over_an_earlier_dim) {
  expect_family_passes("col-softmax-f16.yaml", "col_softmax_cpu",
                       {{{"stage", "0"}, {"passes", "online"}}, {{"stage", "0"}, {"tile", "16"}, {"math", "libm"}},
                        {{"tile", "1024"}, {"threads", "1"}}, {{"f16_load", "hw"}, {"schedule", "dynamic"}}});
  // float32 log-probabilities of large logits (the verifier's x 100): (x - max) - log sum, not x - (max + log sum),
  // which rounds log sum away next to a max near 1000 (0 where torch gives -6e-5; found on the GPU).
  expect_family_passes("col-log-softmax-f32.yaml", "col_softmax_cpu", {{{"stage", "0"}, {"passes", "online"}}});
  expect_family_passes("col-log-softmax-bf16.yaml", "col_softmax_cpu",
                       {{{"stage", "0"}, {"passes", "online"}, {"tile", "64"}}, {{"math", "libm"}, {"threads", "2"}},
                        {{"stage", "0"}}},
                       3);
}

TEST(families_cpu_verify, float16_rms_norm_without_eps_takes_aten_s_epsilon) {
  expect_family_passes("rms-norm-f16-default-eps.yaml", "row_norm_cpu", {{{"cache_row", "1"}}});
}

TEST(families_cpu_verify, float32_layer_norm_rows_of_one_value_are_exact) {
  expect_family_passes("layer-norm-gelu-f32.yaml", "row_norm_cpu", {{{"math", "libm"}, {"cache_row", "1"}}});
}

// HF's residual RMSNorm: the float16 sum returned, the norm on its float32 widening, the result cast back.
TEST(families_cpu_verify, residual_sum_returned_before_its_widening_cast_passes) {
  expect_family_passes("add-rms-norm-widened-f16.yaml", "row_norm_cpu", {{{"cache_row", "1"}}, {{"cache_row", "0"}}});
}

TEST(families_cpu_verify, float32_group_norm_of_uneven_groups_passes) {
  expect_family_passes("group-norm-c40-silu-f32.yaml", "group_norm_cpu",
                       {{{"stats", "one_pass"}}, {{"vector_width", "1"}, {"cache_unit", "0"}}});
}

TEST(families_cpu_verify, tanh_gelu_passes_on_its_negative_tail_with_either_math) {
  expect_family_passes("group-norm-gelu-tanh-f32-cl.yaml", "group_norm_cpu", {{{"math", "libm"}}, {{"math", "poly"}}});
}

TEST(families_cpu_verify, pointwise_swiglu_bf16_passes) {
  expect_family_passes("swiglu-bf16.yaml", "pointwise_cpu",
                       {{{"threads", "1"}}, {{"chunk", "1024"}, {"schedule", "dynamic"}}, {{"math", "libm"}}});
}

TEST(families_cpu_verify, pointwise_geglu_tanh_bf16_passes) {
  expect_family_passes("geglu-tanh-bf16.yaml", "pointwise_cpu", {{{"math", "libm"}}, {{"chunk", "1024"}, {"threads", "2"}}});
}

TEST(families_cpu_verify, pointwise_gelu_f16_passes) {
  expect_family_passes("gelu-f16.yaml", "pointwise_cpu", {{{"math", "libm"}}});
}

TEST(families_cpu_verify, pointwise_row_bias_and_float32_column_pass_to_float32_tolerance) {
  expect_family_passes("bias-col-gelu-f32.yaml", "pointwise_cpu",
                       {{{"math", "libm"}}, {{"chunk", "1024"}, {"threads", "1"}}});
}

TEST(families_cpu_verify, pointwise_channels_last_input_passes_through_the_general_path) {
  expect_family_passes("channels-last-bias-silu-bf16.yaml", "pointwise_cpu",
                       {{{"threads", "1"}}, {{"chunk", "1024"}, {"schedule", "dynamic"}}});
}

TEST(families_cpu_verify, pointwise_every_other_op_passes) {
  expect_family_passes("unary-chain-f32.yaml", "pointwise_cpu", {{{"math", "libm"}}});
}

}  // namespace
}  // namespace kf
