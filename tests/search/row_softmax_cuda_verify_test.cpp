// row_softmax_cuda through the whole verifier on the GPU (skipped without one): teams of 4 to 32 threads per row, fixed
// or sized at launch (several rows a warp, the last warp's spare teams running empty rows), rows held in registers and
// rows streamed, persistent grids, shared-memory row caches per team, and additive masks broadcast every way a model
// builds them (a causal [S, S] mask under [B, H, S, S] scores, a padding mask [B, 1, 1, S], a per-head mask [1, H, S,
// S]) whose leading dims the launch merges before the kernel walks them, and a vocabulary log-softmax whose row caches
// hold bfloat16.
#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "../support/family_verify.h"
#include "search/family.h"
#include "search_test_specs.h"
#include "spec/spec_parse.h"

namespace kf {
namespace {

namespace fs = std::filesystem;

using variants = std::vector<std::pair<workload_spec, knob_values>>;

workload_spec suite(const char* name) { return load_spec((fs::path(KFORGE_SOURCE_DIR) / "workloads" / name).string()); }

constexpr int k_per_spec = 20;

void add_teams(variants& out, const workload_spec& s) {
  out.push_back({s, {}});
  out.push_back({s, {{"strategy", "warp"}, {"team", "auto"}, {"chunks", "1"}, {"threads", "256"}}});
  out.push_back({s, {{"strategy", "warp"}, {"team", "4"}, {"chunks", "2"}}});  // longer rows streamed
  out.push_back({s, {{"strategy", "warp"}, {"team", "8"}, {"chunks", "4"}, {"online", "1"}}});
  out.push_back({s, {{"strategy", "warp"}, {"team", "16"}, {"chunks", "1"}, {"threads", "64"}}});
  out.push_back({s, {{"strategy", "warp"}, {"team", "16"}, {"cache", "smem"}, {"threads", "256"}}});
  out.push_back({s, {{"strategy", "warp"}, {"team", "32"}, {"chunks", "8"}, {"vec", "1"}}});
  out.push_back({s, {{"strategy", "block"}, {"threads", "128"}, {"chunks", "2"}, {"fit", "1"}}});
  out.push_back({s, {{"strategy", "block"}, {"threads", "64"}, {"chunks", "2"}, {"waves", "1"}}});  // persistent
  out.push_back({s, {{"strategy", "warp"}, {"team", "auto"}, {"waves", "2"}, {"pdl", "0"}}});
  out.push_back({s, {{"strategy", "cluster"}, {"cluster", "2"}, {"threads", "128"}, {"chunks", "2"}, {"online", "1"}}});
  // Teams of co-resident one-warp CTAs per row: sized at launch, and four a row (rows split across CTAs that meet in
  // global memory, whatever the row length).
  out.push_back({s, {{"strategy", "grid"}, {"threads", "32"}, {"chunks", "2"}, {"online", "1"}}});
  out.push_back({s, {{"strategy", "grid"}, {"split", "4"}, {"threads", "32"}, {"chunks", "1"}, {"online", "0"}}});
  // head=1: rows longer than the register cache keep its part there and read only the rest twice (a team, a
  // cluster and a grid team, each with rows past its cache; online and two-pass statistics).
  out.push_back({s, {{"strategy", "warp"}, {"team", "4"}, {"chunks", "2"}, {"head", "1"}}});
  out.push_back({s, {{"strategy", "cluster"}, {"cluster", "2"}, {"threads", "128"}, {"chunks", "1"}, {"vec", "1"},
                     {"online", "1"}, {"head", "1"}}});
  out.push_back({s, {{"strategy", "grid"}, {"split", "4"}, {"threads", "32"}, {"chunks", "1"}, {"vec", "1"},
                     {"online", "0"}, {"head", "1"}}});
  // Shared-memory row caches of a cluster's segments and of a block's rows (16-bit where the prologue's values are:
  // the vocabulary log-softmax below).
  out.push_back({s, {{"strategy", "cluster"}, {"cluster", "4"}, {"threads", "128"}, {"cache", "smem"}, {"online", "1"}}});
  out.push_back({s, {{"strategy", "block"}, {"threads", "64"}, {"cache", "smem"}, {"unroll", "2"}}});
  // The ragged path (rows of 37, 77, 5 and 5003 here; where every row is a whole number of vectors, the same kernel
  // as ragged=0): teams sized at launch, and a cluster keeping its segments' heads in registers.
  out.push_back({s, {{"strategy", "warp"}, {"team", "auto"}, {"chunks", "2"}, {"ragged", "1"}}});
  out.push_back({s, {{"strategy", "cluster"}, {"cluster", "2"}, {"threads", "128"}, {"chunks", "1"}, {"head", "1"},
                     {"ragged", "1"}}});
}

// log_softmax(x, dtype=float32) of a bfloat16 x, as a vocabulary projection's: the row cache holds bfloat16.
workload_spec vocab_log_softmax() {
  return test::parse(R"(version: 1
name: vocab-log-softmax
inputs:
  x: {shape: [T, N], dtype: bfloat16, init: {normal: {std: 2.0}}}
graph:
  - log_softmax: {input: x, dim: -1, dtype: float32}
cases: [{T: 3, N: 5003, gate: true}, {T: 2, N: 1000}]
)");
}

std::string masked(const char* mask_shape, const char* cases) {
  return fmt::format(R"(version: 1
name: masked-softmax
inputs:
  x: {{shape: [B, H, S, S], dtype: float16}}
  mask: {{shape: {}, dtype: float16, init: causal_mask}}
graph:
  - scale: {{input: x, factor: 0.125}}
  - add_mask: {{mask: mask}}
  - softmax: {{dim: -1}}
cases: {}
)",
                     mask_shape, cases);
}

variants all_variants() {
  variants v;
  add_teams(v, suite("gpt2-attn-softmax.yaml"));
  add_teams(v, test::softmax_spec(true, false));  // a float32 [S, S] mask, softcap, rows of 64 and 37
  // Rows a warp's teams do not divide (3 x 5 = 15 rows), a padding mask that walks the batch dim only, a per-head
  // mask, a log-softmax.
  add_teams(v, test::parse(masked("[B, 1, 1, S]", "[{B: 3, H: 5, S: 40, gate: true}, {B: 1, H: 1, S: 8}]")));
  add_teams(v, test::parse(masked("[1, H, S, S]", "[{B: 2, H: 3, S: 24, gate: true}, {B: 1, H: 1, S: 5}]")));
  add_teams(v, test::softmax_spec(false, true, 0, dtype::float32));
  add_teams(v, vocab_log_softmax());
  return v;
}

// Bool masks of masked_fill (one byte an element, vectors of them aligned as x's are or read a value at a time): a
// causal [1, 1, S, S] mask filled with float16's lowest, a random padding mask [B, 1, 1, S] filled with -inf before a
// widening log_softmax, and torch.where(keep, x, bfloat16's lowest) before a float32 softmax cast back.
variants bool_mask_variants() {
  variants v;
  const fs::path dir = fs::path(KFORGE_SOURCE_DIR) / "tests" / "data" / "specs" / "families";
  add_teams(v, load_spec((dir / "bool-causal-softmax-f16.yaml").string()));
  add_teams(v, load_spec((dir / "bool-padding-log-softmax-bf16.yaml").string()));
  add_teams(v, load_spec((dir / "where-causal-softmax-bf16.yaml").string()));
  return v;
}

// A top-k without a softmax (row_op): a sigmoid router over 256 experts and odd counts, and a sampler's top-k of
// scaled, bool-masked bfloat16 logits cast to float32. Top-k runs a warp a row (valid() says so): the variants move
// the vector, the block and the launch.
variants plain_topk_variants() {
  variants v;
  const fs::path dir = fs::path(KFORGE_SOURCE_DIR) / "tests" / "data" / "specs" / "families";
  for (const char* file : {"sigmoid-router-topk-f32.yaml", "scaled-masked-topk-bf16.yaml"}) {
    const workload_spec s = load_spec((dir / file).string());
    v.push_back({s, {}});
    v.push_back({s, {{"vec", "1"}, {"threads", "64"}}});
    v.push_back({s, {{"vec", "2"}, {"threads", "256"}, {"pdl", "0"}, {"unroll", "2"}}});
    v.push_back({s, {{"vec", "8"}, {"waves", "1"}}});
  }
  return v;
}

void expect_all_pass(const variants& v) {
  test::warm("row_softmax_cuda", device_kind::cuda, v);
  for (size_t i = 0; i < v.size(); ++i)
    test::expect_passes(v[i].first, v[i].first.name + " variant " + std::to_string(i % k_per_spec), "row_softmax_cuda",
                        device_kind::cuda, v[i].second);
}

TEST(row_softmax_cuda_verify, every_team_on_bool_masks) {
  KF_REQUIRE_GPU();
  expect_all_pass(bool_mask_variants());
}

TEST(row_softmax_cuda_verify, a_topk_without_a_softmax_on_every_vector_and_block) {
  KF_REQUIRE_GPU();
  expect_all_pass(plain_topk_variants());
}

TEST(row_softmax_cuda_verify, every_team_on_every_mask_kind) {
  KF_REQUIRE_GPU();
  expect_all_pass(all_variants());
}

// Without a GPU, the same variants are still valid and emit (what the GPU run
// compiles).
TEST(row_softmax_cuda_verify, every_variant_is_valid) {
  const family* f = find_family("row_softmax_cuda", device_kind::cuda);
  ASSERT_NE(f, nullptr);
  variants v = all_variants();
  for (auto& b : bool_mask_variants()) v.push_back(b);
  for (auto& b : plain_topk_variants()) v.push_back(b);
  for (auto& [s, changes] : v) {
    std::string why;
    ASSERT_TRUE(f->covers(s, &why)) << s.name << ": " << why;
    EXPECT_TRUE(f->valid(test::variant_of(*f, s, changes), s, &why)) << s.name << ": " << why;
    EXPECT_FALSE(f->emit(s, test::variant_of(*f, s, changes)).empty());
  }
}

}  // namespace
}  // namespace kf
