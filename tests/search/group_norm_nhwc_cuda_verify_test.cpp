// group_norm_nhwc_cuda through the whole verifier on the GPU (skipped without one): channels_last GroupNorm with one-
// and two-pass statistics and the fused kernel of a small image's whole groups, groups of 4 to 80 channels (a
// thread's vector inside one group or across two), channels more than the threads' vectors (a thread owning
// several), a column a thread (channels not a whole number of vectors), tiles from one an image to many, apply tiles
// of 16 to 128 positions by 32 to 128 channels (a tile or a chunk past the image's end), with SiLU and GELU, in
// bfloat16, float16 and float32. Without a GPU, the launch's checks of the tensors it is given: kforge's outputs are
// contiguous (the ABI).
#include <gtest/gtest.h>

#include "../support/family_verify.h"
#include "search/family.h"
#include "search_test_specs.h"
#include "util/fs.h"
#include "util/subprocess.h"

namespace kf {
namespace {

using variants = test::family_variants;

// The default (fused where a block's groups fit: every spec here but the 320-channel one's larger case), the two
// kernels (fuse_kb 0) with both statistics, every tile shape and vectors of 1 and 2, and the fused kernel at other
// block sizes (a block of 128 channels over 4-channel groups; one of 32 channels a load at a time).
void add_variants(variants& out, const workload_spec& s) {
  out.push_back({s, {}});
  out.push_back({s, {{"stats", "twopass"}, {"threads", "1024"}, {"blocks", "16"}, {"fuse_kb", "0"}}});
  out.push_back({s, {{"stats", "shifted"}, {"threads", "128"}, {"blocks", "1"}, {"pdl", "0"}, {"fuse_kb", "0"}}});
  out.push_back({s, {{"vec", "1"}, {"blocks", "2"}, {"threads", "1024"}, {"fuse_kb", "0"}}});
  out.push_back(
      {s, {{"vec", "2"}, {"threads", "512"}, {"blocks", "8"}, {"chunk", "32"}, {"ptile", "16"}, {"fuse_kb", "0"}}});
  out.push_back({s, {{"chunk", "128"}, {"ptile", "128"}, {"threads", "128"}, {"fuse_kb", "0"}}});
  out.push_back({s, {{"chunk", "128"}, {"threads", "128"}, {"fuse_kb", "192"}, {"pdl", "0"}}});
  out.push_back({s, {{"chunk", "32"}, {"vec", "1"}, {"fuse_kb", "48"}, {"threads", "1024"}}});
}

// test::group_norm_spec with w and b in x's dtype, as the op asks of a spec the verifier runs (its float32 w and b
// under a bfloat16 x are for the tests that launch kernels directly).
workload_spec group_norm_cl(bool silu, dtype t) {
  workload_spec s = test::group_norm_spec(silu, t, "channels_last");
  for (auto& in : s.inputs) in.type = t;
  return s;
}

variants all_variants() {
  variants v;
  add_variants(v, group_norm_cl(true, dtype::bfloat16));  // 32 channels, 8 groups, SiLU
  add_variants(v, group_norm_cl(false, dtype::float32));
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
  test::expect_all_pass("group_norm_nhwc_cuda", device_kind::cuda, all_variants(), 8);
}

// Without a GPU, the same variants are still valid and emit (what the GPU run compiles).
// A thread owns at most 4 channel vectors: 2560 channels one a vector need 640 threads, and a variant of 256 is not
// valid (on the GPU its launch declined every case, which the verifier fails).
TEST(group_norm_nhwc_cuda_verify, a_variant_whose_threads_cannot_own_every_channel_is_not_valid) {
  const family* f = find_family("group_norm_nhwc_cuda", device_kind::cuda);
  ASSERT_NE(f, nullptr);
  const workload_spec wide = all_variants().back().first;
  ASSERT_EQ(wide.name, "wide-groupnorm-cl");
  std::string why;
  EXPECT_FALSE(f->valid(test::variant_of(*f, wide, {{"vec", "1"}, {"threads", "256"}}), wide, &why));
  EXPECT_NE(why.find("2560 channels in vectors of 1 are more than 256 threads' 4 slots"), std::string::npos) << why;
  EXPECT_TRUE(f->valid(test::variant_of(*f, wide, {{"vec", "1"}, {"threads", "1024"}}), wide, &why)) << why;
  EXPECT_TRUE(f->valid(test::variant_of(*f, wide, {{"vec", "4"}, {"threads", "256"}}), wide, &why)) << why;
}

TEST(group_norm_nhwc_cuda_verify, every_variant_is_valid) {
  test::expect_all_valid("group_norm_nhwc_cuda", device_kind::cuda, all_variants());
}

// kf_launch's checks run before any CUDA call, so a host program can ask them on an empty batch (N = 0 returns 0
// once the tensors are accepted): a contiguous y, which is what the verifier, `kforge run` and the torch operator
// allocate, and a channels_last one are taken; a y in neither layout, or an x that is not channels_last, is
// declined (1). Version 2 took only a channels_last y, so on the GPU every candidate was declined ("kf_launch
// returned 1") and a search of a channels_last GroupNorm found nothing.
TEST(group_norm_nhwc_cuda_verify, kf_launch_takes_a_contiguous_or_channels_last_output) {
  if (std::string(KFORGE_NVCC).empty()) GTEST_SKIP() << "built without CUDA: no nvcc to compile the check";
  const workload_spec spec = test::parse(R"(version: 1
name: unet-groupnorm-silu-cl
inputs:
  x: {shape: [N, 64, 6, 5], dtype: float16, memory_format: channels_last}
  w: {shape: [64], dtype: float16}
  b: {shape: [64], dtype: float16}
graph:
  - group_norm: {input: x, num_groups: 32, weight: w, bias: b, eps: 1.0e-5}
  - silu
cases: [{N: 2, gate: true}]
)");
  const family* f = find_family("group_norm_nhwc_cuda", device_kind::cuda);
  ASSERT_NE(f, nullptr);
  temp_dir dir("kf-gn-nhwc-launch");
  write_file_atomic(dir.path() / "check.cu", f->emit(spec, f->default_variant(spec)) + R"(
#include <cstdio>
// An empty batch of [0, 64, 6, 5] in the given strides.
static kf_tensor t(int dtype, int64_t s0, int64_t s1, int64_t s2, int64_t s3) {
  kf_tensor r = {};
  r.data = (void*)256;
  r.dtype = dtype;
  r.ndim = 4;
  const int64_t shape[4] = {0, 64, 6, 5}, stride[4] = {s0, s1, s2, s3};
  for (int d = 0; d < 4; ++d) r.shape[d] = shape[d], r.stride[d] = stride[d];
  return r;
}
int main() {
  kf_tensor in[3] = {t(KF_FLOAT16, 1920, 1, 320, 64), {}, {}};
  for (int k = 1; k < 3; ++k) {
    in[k].data = (void*)256, in[k].dtype = KF_FLOAT16, in[k].ndim = 1, in[k].shape[0] = 64, in[k].stride[0] = 1;
  }
  kf_tensor nchw = t(KF_FLOAT16, 1920, 30, 5, 1), cl = t(KF_FLOAT16, 1920, 1, 320, 64), odd = t(KF_FLOAT16, 1920, 6, 1, 384);
  kf_tensor x_nchw[3] = {nchw, in[1], in[2]};
  std::printf("contiguous %d channels_last %d odd %d x_nchw %d\n", kf_launch(in, 3, &nchw, 1, nullptr),
              kf_launch(in, 3, &cl, 1, nullptr), kf_launch(in, 3, &odd, 1, nullptr), kf_launch(x_nchw, 3, &nchw, 1, nullptr));
  return 0;
}
)");
  const std::string exe = (dir.path() / "check").string();
  auto build = run_process({KFORGE_NVCC, "-O1", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a",
                            "-I" KFORGE_SOURCE_DIR "/lib/exec", "-o", exe, (dir.path() / "check.cu").string()});
  ASSERT_TRUE(build.ok()) << build.err.substr(0, 4000);
  auto r = run_process({exe});
  ASSERT_TRUE(r.ok()) << r.out << r.err;
  EXPECT_NE(r.out.find("contiguous 0 channels_last 0 odd 1 x_nchw 1"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace kf
