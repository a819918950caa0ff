// row_norm_cuda through the whole verifier on the GPU (skipped without one): each strategy (teams of a few threads,
// a block, a cluster of blocks per row), rows held in registers and rows streamed through them, persistent grids with
// the weights held in registers, the scalar path for rows whose length or alignment rules out vectors, prologues
// with full and row-broadcast operands, a residual sum returned beside the norm in either output order (also before a
// widening cast, as float16), epilogues with an operand and a cast.
#include <filesystem>

#include <gtest/gtest.h>

#include "../support/family_verify.h"
#include "search/family.h"
#include "search_test_specs.h"
#include "spec/spec_parse.h"

namespace kf {
namespace {

namespace fs = std::filesystem;

using variants = std::vector<std::pair<workload_spec, knob_values>>;

workload_spec suite(const char* name) {
  return load_spec((fs::path(KFORGE_SOURCE_DIR) / "workloads" / name).string());
}

// Every strategy and its options, on one spec.
void add_strategies(variants& out, const workload_spec& s) {
  out.push_back({s, {}});
  out.push_back({s, {{"strategy", "team"}, {"team", "4"}, {"block", "64"}, {"chunks", "2"}}});
  out.push_back({s, {{"strategy", "team"}, {"team", "32"}, {"block", "256"}, {"chunks", "3"}, {"waves", "1"}, {"wregs", "1"}}});
  out.push_back({s, {{"strategy", "block"}, {"block", "64"}, {"chunks", "1"}}});  // most rows streamed
  out.push_back({s, {{"strategy", "block"}, {"block", "256"}, {"chunks", "5"}, {"waves", "2"}, {"wregs", "1"}, {"onepass", "1"}, {"fit", "0"}}});
  out.push_back({s, {{"strategy", "block"}, {"block", "1024"}, {"chunks", "2"}, {"fit", "1"}, {"wload", "late"}}});
  out.push_back({s, {{"strategy", "team"}, {"team", "16"}, {"chunks", "4"}, {"wload", "row"}}});
  out.push_back({s, {{"strategy", "cluster"}, {"cluster", "4"}, {"block", "128"}, {"chunks", "2"}, {"pdl", "0"}}});
  out.push_back({s, {{"strategy", "cluster"}, {"cluster", "2"}, {"block", "512"}, {"vec", "1"}, {"store", "streaming"}}});
}

variants all_variants() {
  variants v;
  for (const char* w : {"qwen25-7b-rmsnorm.yaml", "qwen3-32b-add-rmsnorm.yaml", "bert-base-layernorm.yaml"})
    add_strategies(v, suite(w));
  add_strategies(v, test::residual_rms_norm_spec(true, true));  // h first, then silu(y)
  add_strategies(v, test::row_norm_spec(false));                  // layer norm -> gelu(tanh), rows of 100
  // HF's residual RMSNorm: the float16 sum returned, the norm on its float32 widening, the result cast back.
  add_strategies(v, load_spec((fs::path(KFORGE_SOURCE_DIR) / "tests/data/specs/families/add-rms-norm-widened-f16.yaml").string()));
  // A row-broadcast operand in the prologue, an epilogue with a full operand and a cast, rows of 96.
  add_strategies(v, test::parse(R"(version: 1
name: gated-rmsnorm
inputs:
  x: {shape: [B, S, 96], dtype: bfloat16}
  g: {shape: [96], dtype: bfloat16}
  up: {shape: [B, S, 96], dtype: bfloat16}
  w: {shape: [96], dtype: bfloat16}
graph:
  - mul: {input: x, other: g}
  - rms_norm: {normalized_shape: [96], weight: w, eps: 1.0e-5}
  - silu
  - mul: {other: up}
  - cast: {dtype: float32}
cases: [{B: 2, S: 33, gate: true}, {B: 1, S: 1}]
)"));
  // Rows of odd length (scalar path) over two normalized dims, float16, no weight; long float32 rows (streamed
  // through registers unless a cluster holds them).
  add_strategies(v, test::parse(R"(version: 1
name: odd-layernorm
inputs:
  x: {shape: [R, 7, 143], dtype: float16}
graph:
  - layer_norm: {input: x, normalized_shape: [7, 143], eps: 1.0e-5}
cases: [{R: 9, gate: true}, {R: 1}]
)"));
  add_strategies(v, test::parse(R"(version: 1
name: long-rmsnorm
inputs:
  x: {shape: [R, 40000], dtype: float32}
  w: {shape: [40000], dtype: float32}
graph:
  - rms_norm: {input: x, normalized_shape: [40000], weight: w, eps: 1.0e-6}
cases: [{R: 3, gate: true}, {R: 1}]
)"));
  return v;
}

TEST(row_norm_cuda_verify, every_strategy_on_every_graph_kind) {
  KF_REQUIRE_GPU();
  const variants v = all_variants();
  test::warm("row_norm_cuda", device_kind::cuda, v);
  for (size_t i = 0; i < v.size(); ++i)
    test::expect_passes(v[i].first, v[i].first.name + " variant " + std::to_string(i % 9), "row_norm_cuda",
                        device_kind::cuda, v[i].second);
}

// Without a GPU, the same variants are still valid and emit (what the GPU run compiles).
TEST(row_norm_cuda_verify, every_variant_is_valid) {
  const family* f = find_family("row_norm_cuda", device_kind::cuda);
  ASSERT_NE(f, nullptr);
  for (auto& [s, changes] : all_variants()) {
    std::string why;
    ASSERT_TRUE(f->covers(s, &why)) << s.name << ": " << why;
    EXPECT_TRUE(f->valid(test::variant_of(*f, s, changes), s, &why)) << s.name << ": " << why;
  }
}

}  // namespace
}  // namespace kf
