// col_softmax_cuda through the whole verifier on the GPU (skipped without one): softmax and log_softmax over dim 0,
// 1 and -2 of 4-d inputs, float16, bfloat16 and float32, cached in registers or shared memory and streamed (one pass
// and three), one row of threads along the dim and many, vectors of columns and a column a thread (an inner dim of
// 7 x 7), with the verifier's adversarial inputs (a column's -inf entries, columns of one value).
#include <gtest/gtest.h>

#include "../support/family_verify.h"
#include "search/family.h"
#include "search_test_specs.h"

namespace kf {
namespace {

using variants = test::family_variants;

void add_variants(variants& out, const workload_spec& s) {
  out.push_back({s, {}});
  out.push_back({s, {{"cache", "regs"}, {"ty", "32"}, {"chunks", "8"}, {"vec", "2"}, {"threads", "128"}}});
  out.push_back({s, {{"cache", "regs"}, {"ty", "4"}, {"chunks", "64"}, {"vec", "1"}, {"online", "1"}}});
  out.push_back({s, {{"cache", "stream"}, {"ty", "1"}, {"online", "1"}, {"threads", "64"}}});
  out.push_back({s, {{"cache", "stream"}, {"ty", "16"}, {"online", "0"}, {"threads", "512"}, {"pdl", "0"}}});
  out.push_back({s, {{"cache", "smem"}, {"ty", "8"}, {"threads", "256"}, {"vec", "4"}}});
  out.push_back({s, {{"cache", "smem"}, {"ty", "1"}, {"online", "1"}, {"threads", "128"}}});
  // Mostly streamed: 2 x 4 values of the dim held.
  out.push_back({s, {{"cache", "regs"}, {"ty", "2"}, {"chunks", "4"}, {"threads", "1024"}, {"vec", "4"}}});
}

variants all_variants() {
  variants v;
  add_variants(v, test::col_softmax_spec());                                          // fp16 -> fp32 over classes
  add_variants(v, test::col_softmax_spec(0, true, dtype::bfloat16, dtype::bfloat16));   // log_softmax over the batch
  add_variants(v, test::col_softmax_spec(-2, false, dtype::float32));                 // over H
  add_variants(v, test::parse(R"(version: 1
name: odd-col-softmax
inputs:
  x: {shape: [B, C, 7, 7], dtype: float16}
graph:
  - softcap: {input: x, cap: 30.0}
  - log_softmax: {dim: 1}
cases: [{B: 3, C: 1000, gate: true}, {B: 1, C: 1}]
)"));
  return v;
}

TEST(col_softmax_cuda_verify, every_path_on_every_graph_kind) {
  KF_REQUIRE_GPU();
  test::expect_all_pass("col_softmax_cuda", device_kind::cuda, all_variants(), 8);
}

// Without a GPU, the same variants are still valid and emit (what the GPU run compiles).
TEST(col_softmax_cuda_verify, every_variant_is_valid) {
  test::expect_all_valid("col_softmax_cuda", device_kind::cuda, all_variants());
}

}  // namespace
}  // namespace kf
