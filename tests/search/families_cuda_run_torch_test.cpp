// group_norm_cuda's strategies that keep state in device memory across blocks (split, team, stream), compiled by
// kforge's compiler and run through the worker's kernel impl on a real GPU (skipped without one): results against
// LibTorch in float64 on shapes that leave partial segments and odd vector widths, launches of different shapes
// one after another (the counters a launch leaves must not leak into the next), and launches replayed from a CUDA
// graph, as hot timing runs them. Also pool_cuda's small-batch kernels on shapes that take and refuse their fast
// paths.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "../support/crash_context.h"
#include "exec/compile.h"
#include "exec/impl_torch.h"
#include "search/family.h"
#include "search_test_specs.h"

namespace kf {
namespace {

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
#define REQUIRE_GPU() if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU: these kernels run on one"

struct variant {
  std::string label;
  knob_values knobs;
};

// GroupNorm(8 groups of 32 channels) -> SiLU in float64, the way the spec defines it.
at::Tensor group_norm_silu_ref(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  auto y = at::group_norm(x.to(at::kDouble), 8, w.to(at::kDouble), b.to(at::kDouble), 1e-6);
  return y * at::sigmoid(y);
}

// Compiles every variant of `spec` in one batch (into the default compile cache); the impls load them as the
// worker does. No temp_dir here: libtorch.so exports its own std::filesystem::remove_all, which binds ahead of
// libstdc++'s in this binary and crashed on an existing folder (a null function pointer) on the GPU runner.
std::vector<std::unique_ptr<impl>> build(const workload_spec& spec, const std::vector<variant>& vs,
                                         const std::string& family_name = "group_norm_cuda") {
  const family* f = find_family(family_name, device_kind::cuda);
  std::vector<compile_request> reqs;
  for (auto& v : vs) {
    knob_values k = f->default_variant(spec);
    for (auto& [name, val] : v.knobs) k[name] = val;
    std::string why;
    EXPECT_TRUE(f->valid(k, spec, &why)) << v.label << ": " << why;
    reqs.push_back({f->emit(spec, k), device_kind::cuda, "sm_90a", {}, v.label});
  }
  test::crash_context("compiling " + std::to_string(reqs.size()) + " " + family_name + " variants");
  auto results = compiler().compile_batch(reqs);
  test::crash_context("loading them");
  std::vector<std::unique_ptr<impl>> out;
  for (size_t i = 0; i < vs.size(); ++i) {
    EXPECT_TRUE(results[i].ok) << vs[i].label << ": " << results[i].log.substr(0, 4000);
    out.push_back(results[i].ok ? make_kernel_impl({{"kind", "kernel"}, {"name", vs[i].label}, {"so", results[i].so_path}},
                                                   spec, device_id{device_kind::cuda, 0})
                                : nullptr);
  }
  return out;
}

const std::vector<variant>& grid_variants() {
  static const std::vector<variant> vs = {
      {"stream", {{"strategy", "stream"}}},
      {"stream_small_items", {{"strategy", "stream"}, {"seg_kb", "8"}, {"lag_mb", "1"}, {"threads", "128"}}},
      {"stream_sumsq", {{"strategy", "stream"}, {"seg_kb", "64"}, {"lag_mb", "16"}, {"stats", "sumsq"}}},
      {"stream_one_block_an_sm", {{"strategy", "stream"}, {"sm_blocks", "1"}, {"threads", "1024"}, {"lag_mb", "0"}}},
      {"stream_l2_hint", {{"strategy", "stream"}, {"l2_hint", "1"}}},
      // Epoch-tagged records (no counter to reset: each launch and each graph replay must see only its own) and
      // deeper copy pipelines (a block holding up to three tickets ahead).
      {"stream_tagged", {{"strategy", "stream"}, {"publish", "tagged"}}},
      {"stream_tagged_3_stages", {{"strategy", "stream"}, {"publish", "tagged"}, {"stages", "3"}, {"stats", "sumsq"}}},
      {"stream_tagged_4_small_stages",
       {{"strategy", "stream"}, {"publish", "tagged"}, {"stages", "4"}, {"seg_kb", "8"}, {"threads", "128"}}},
      {"stream_counter_3_stages", {{"strategy", "stream"}, {"stages", "3"}, {"seg_kb", "64"}}},
      // The team kernel for tensors within L2 (the small shapes here), the stream kernel above.
      {"stream_team_l2", {{"strategy", "stream"}, {"team_l2", "25"}, {"team_kb", "96"}}},
      {"team", {{"strategy", "team"}}},
      {"team_96", {{"strategy", "team"}, {"team_kb", "96"}, {"threads", "256"}}},
      {"split", {{"strategy", "split"}, {"splits", "32"}}},
      // Values the compile test reaches only through its added variants: split sizes at both ends, the forward
      // order, the team's 144 KiB segments (192, the default, is `team`), clusters of 2 and 16 (non-portable)
      // blocks a row.
      {"split_8_forward", {{"strategy", "split"}, {"splits", "8"}, {"reverse", "0"}}},
      {"split_256", {{"strategy", "split"}, {"splits", "256"}}},
      {"team_144", {{"strategy", "team"}, {"team_kb", "144"}}},
      {"cluster_2", {{"strategy", "cluster"}, {"cluster", "2"}}},
      {"cluster_16", {{"strategy", "cluster"}, {"cluster", "16"}}},
      // The ring of shared-memory slots: few and many slots a block, every `ahead`, the team handover for small
      // tensors; rows too long for the device's shared memory (the last shape) take the stream kernel instead.
      {"ring", {{"strategy", "ring"}}},
      {"ring_64_few_slots", {{"strategy", "ring"}, {"ring_kb", "64"}, {"seg_kb", "16"}, {"threads", "128"}}},
      {"ring_96_ahead1", {{"strategy", "ring"}, {"ring_kb", "96"}, {"ahead", "1"}}},
      {"ring_128_ahead3", {{"strategy", "ring"}, {"ring_kb", "128"}, {"seg_kb", "16"}, {"ahead", "3"}}},
      {"ring_224_many_slots",
       {{"strategy", "ring"}, {"ring_kb", "224"}, {"seg_kb", "8"}, {"ahead", "4"}, {"stats", "sumsq"}, {"threads", "512"}}},
      {"ring_team_l2", {{"strategy", "ring"}, {"team_l2", "25"}, {"team_kb", "96"}}},
  };
  // The grid kernels themselves (fit=0): a `fit` launch hands the shapes here whose rows fit a block's or a
  // cluster's registers to the per-row kernels. Then `fit` over the same shapes: [2, 32, 8, 8] takes a block per
  // row, [3, 32, 37, 29] (the scalar path) and [4, 32, 96, 160] a cluster per row, the others the grid kernel;
  // clusters of 2 at 512 threads, and of 16 (non-portable: the occupancy query must allow it, or the launch falls
  // through to the grid kernel).
  static const std::vector<variant> all = [] {
    std::vector<variant> out = vs;
    for (auto& v : out) v.knobs.emplace("fit", "0");
    out.push_back({"stream_fit",
                   {{"strategy", "stream"}, {"fit", "1"}, {"cluster", "4"}, {"chunks", "8"}, {"threads", "256"}}});
    out.push_back({"team_fit_cluster_2", {{"strategy", "team"}, {"fit", "1"}, {"cluster", "2"}, {"threads", "512"}}});
    out.push_back({"split_fit_cluster_16_sumsq",
                   {{"strategy", "split"}, {"fit", "1"}, {"cluster", "16"}, {"chunks", "2"}, {"stats", "sumsq"}}});
    out.push_back({"ring_fit_one_chunk", {{"strategy", "ring"}, {"fit", "1"}, {"cluster", "8"}, {"chunks", "1"}}});
    return out;
  }();
  return all;
}

// The largest |got - want| over |want| + 1 (an absolute error near zero, a relative one elsewhere).
double worst_error(const at::Tensor& got, const at::Tensor& want) {
  return ((got.to(at::kDouble) - want).abs() / (want.abs() + 1.0)).max().item<double>();
}

TEST(families_cuda_run, grid_strategies_match_torch_across_shapes_launch_after_launch) {
  REQUIRE_GPU();
  const auto spec = test::group_norm_spec();  // x [N, 32, H, W] bfloat16, 8 groups, float32 affine, SiLU
  auto impls = build(spec, grid_variants());
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, 0);
  c10::cuda::CUDAStreamGuard guard(stream);
  auto opt = at::TensorOptions().device(at::kCUDA);
  // Long rows (2 MiB groups: many segments and team members), a row shorter than one segment, odd H*W (the
  // scalar path, partial last segments), then the first shape again: each launch must start from clean counters.
  // Last, 25 MiB groups: more than the ring's slots hold on an H200.
  const std::vector<std::vector<int64_t>> shapes = {
      {1, 32, 512, 512}, {2, 32, 8, 8}, {3, 32, 37, 29}, {1, 32, 512, 512}, {4, 32, 96, 160}, {1, 32, 2048, 1536}};
  at::manual_seed(7);
  for (size_t i = 0; i < impls.size(); ++i) {
    if (!impls[i]) continue;
    for (auto& shape : shapes) {
      auto x = (at::randn(shape, opt) * 3 + 1).to(at::kBFloat16);
      auto w = at::randn({32}, opt), b = at::randn({32}, opt);
      auto y = at::full(shape, std::nan(""), opt.dtype(at::kBFloat16));
      std::vector<at::Tensor> out{y};
      test::crash_context(grid_variants()[i].label + " on " + c10::str(at::IntArrayRef(shape)));
      ASSERT_EQ(impls[i]->launch({x, w, b}, out, stream.stream()), 0) << grid_variants()[i].label;
      ASSERT_EQ(cudaStreamSynchronize(stream.stream()), cudaSuccess) << grid_variants()[i].label;
      EXPECT_LT(worst_error(y, group_norm_silu_ref(x, w, b)), 2e-2)
          << grid_variants()[i].label << " on " << at::IntArrayRef(shape);
    }
  }
}

// float32 GroupNorm held in registers (a block, a cluster, a warp per row, and `fit` handing a grid strategy's rows
// to them) takes the two-pass statistics whatever `stats` says: every output within float32's default tolerance
// (rtol 1e-5, atol 1e-7), widened only as the verifier widens it, to 4x eager's own error against float64.
TEST(families_cuda_run, float32_group_norm_held_rows_are_as_accurate_as_the_verifier_asks) {
  REQUIRE_GPU();
  auto spec = test::group_norm_spec(false, dtype::float32);  // x [N, 32, H, W] float32, 8 groups, float32 affine
  const std::vector<variant> vs = {
      {"stream_fit_shifted", {{"strategy", "stream"}, {"fit", "1"}, {"threads", "512"}, {"stats", "shifted"}}},
      {"block_sumsq", {{"strategy", "block"}, {"threads", "1024"}, {"stats", "sumsq"}}},
      {"cluster_4_shifted", {{"strategy", "cluster"}, {"cluster", "4"}, {"threads", "512"}, {"stats", "shifted"}}},
      {"warp_twopass", {{"strategy", "warp"}, {"threads", "128"}, {"stats", "twopass"}}},
  };
  spec.cases.push_back(test::make_case({{"N", 4}, {"H", 64}, {"W", 64}}, true));  // gated: the defaults see these rows
  auto impls = build(spec, vs);
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, 0);
  c10::cuda::CUDAStreamGuard guard(stream);
  auto opt = at::TensorOptions().device(at::kCUDA);
  at::manual_seed(31);
  // Groups of 4 x 64 x 64 = 16384 values (the warp's rows stream: longer than 32 threads hold), and of 4 x 8 x 8.
  for (std::vector<int64_t> shape : {std::vector<int64_t>{4, 32, 64, 64}, std::vector<int64_t>{3, 32, 8, 8}}) {
    auto x = at::randn(shape, opt) + 0.5, w = at::randn({32}, opt) * 0.1 + 1, b = at::randn({32}, opt) * 0.1;
    const auto want = at::group_norm(x.to(at::kDouble), 8, w.to(at::kDouble), b.to(at::kDouble), 1e-6);
    // In units of the default tolerance, as the verifier measures: eager's own error sets how far it widens.
    auto units_of = [&](const at::Tensor& got) {
      return (got.to(at::kDouble) - want).abs() / (want.abs() * 1e-5 + 1e-7);
    };
    auto units = [&](const at::Tensor& got) { return units_of(got).max().item<double>(); };
    // Where a variant misses: its worst element beside the float64 value, x there, and its group's statistics.
    auto worst = [&](const at::Tensor& got) {
      const int64_t i = units_of(got).flatten().argmax().item<int64_t>();
      const int64_t per_group = x.numel() / shape[0] / 8, g = i / per_group;
      const auto xg = x.to(at::kDouble).reshape({-1, per_group})[g];
      return fmt::format("worst element {}: got {:.9g}, float64 {:.9g}, x {:.9g}; group {} mean {:.9g} var {:.9g}", i,
                         got.flatten()[i].item<double>(), want.flatten()[i].item<double>(),
                         x.flatten()[i].item<double>(), g, xg.mean().item<double>(), xg.var(false).item<double>());
    };
    const double allowed = std::max(1.0, 4 * units(at::group_norm(x, 8, w, b, 1e-6)));
    for (size_t i = 0; i < impls.size(); ++i) {
      if (!impls[i]) continue;
      const std::string what = vs[i].label + " on " + c10::str(at::IntArrayRef(shape));
      test::crash_context(what);
      auto y = at::full(shape, std::nan(""), opt);
      std::vector<at::Tensor> out{y};
      ASSERT_EQ(impls[i]->launch({x, w, b}, out, stream.stream()), 0) << what;
      ASSERT_EQ(cudaStreamSynchronize(stream.stream()), cudaSuccess) << what;
      EXPECT_LE(units(y), allowed) << what << "; " << worst(y);
    }
  }
}

// Hot timing replays launches from a CUDA graph: the cooperative team launch and the stream kernel's ticket
// counters must work there too, launch after launch.
TEST(families_cuda_run, grid_strategies_replay_from_a_cuda_graph) {
  REQUIRE_GPU();
  const auto spec = test::group_norm_spec();
  auto impls = build(spec, grid_variants());
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, 0);
  c10::cuda::CUDAStreamGuard guard(stream);
  auto opt = at::TensorOptions().device(at::kCUDA);
  const std::vector<int64_t> shape = {1, 32, 256, 384};
  at::manual_seed(11);
  auto x = at::randn(shape, opt).to(at::kBFloat16);
  auto w = at::randn({32}, opt), b = at::randn({32}, opt);
  const auto want = group_norm_silu_ref(x, w, b);
  for (size_t i = 0; i < impls.size(); ++i) {
    if (!impls[i]) continue;
    const std::string& label = grid_variants()[i].label;
    auto y = at::full(shape, std::nan(""), opt.dtype(at::kBFloat16));
    std::vector<at::Tensor> out{y};
    ASSERT_EQ(impls[i]->launch({x, w, b}, out, stream.stream()), 0) << label;  // set up outside the capture
    ASSERT_EQ(cudaStreamSynchronize(stream.stream()), cudaSuccess) << label;
    y.fill_(std::nan(""));
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(stream.stream(), cudaStreamCaptureModeThreadLocal), cudaSuccess);
    for (int k = 0; k < 3; ++k) EXPECT_EQ(impls[i]->launch({x, w, b}, out, stream.stream()), 0) << label;
    ASSERT_EQ(cudaStreamEndCapture(stream.stream(), &graph), cudaSuccess) << label;
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess) << label;
    for (int r = 0; r < 2; ++r) ASSERT_EQ(cudaGraphLaunch(exec, stream.stream()), cudaSuccess) << label;
    ASSERT_EQ(cudaStreamSynchronize(stream.stream()), cudaSuccess) << label;
    EXPECT_LT(worst_error(y, want), 2e-2) << label;
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
}

// Average pooling of batches small enough for pool_cuda's small launch, every kernel of it against LibTorch in
// three dtypes: NCHW staged, direct and flat reads; channels_last split, warp (1, 2, 4 warps a block) and
// loop kernels. Shapes take and refuse the fast paths: windows shorter than a vector or a warp, longer than a
// range or two warps' worth of positions, plane or channel counts that leave a partial range or are not a multiple
// of a 16-byte vector, and an x that starts one element past a 16-byte boundary.
void check_pool_small_launches(const std::string& format, const std::vector<variant>& vs) {
  const std::vector<std::vector<int64_t>> shapes = {{1, 2048, 7, 7}, {3, 24, 5, 9}, {1, 64, 12, 12}, {2, 16, 2, 3},
                                                    {1, 20, 7, 7},   {2, 40, 9, 8}, {1, 16, 3, 3}};
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, 0);
  c10::cuda::CUDAStreamGuard guard(stream);
  at::manual_seed(5);
  for (auto t : {dtype::float16, dtype::bfloat16, dtype::float32}) {
    auto spec = test::pool_spec(format, t);
    spec.inputs[0].shape = {test::sym("N"), test::sym("C"), test::sym("H"), test::sym("W")};
    spec.cases = {test::make_case({{"N", 1}, {"C", 2048}, {"H", 7}, {"W", 7}}, true)};
    const auto st = t == dtype::float16 ? at::kHalf : t == dtype::bfloat16 ? at::kBFloat16 : at::kFloat;
    auto opt = at::TensorOptions().device(at::kCUDA).dtype(st);
    auto impls = build(spec, vs, "pool_cuda");
    for (size_t i = 0; i < impls.size(); ++i) {
      if (!impls[i]) continue;
      for (auto& shape : shapes)
        for (bool offset : {false, true}) {
          const int64_t n = shape[0], c = shape[1], h = shape[2], w = shape[3];
          // Values around 3 rather than 0: sums that grow, so a lost or doubled partial shows.
          auto flat = at::randn({n * c * h * w + 1}, opt) + 3;
          auto body = flat.narrow(0, offset ? 1 : 0, n * c * h * w);
          auto x = format == "channels_last" ? body.as_strided(shape, {h * w * c, 1, w * c, c}) : body.view(shape);
          auto y = at::full({n, c}, std::nan(""), opt);
          std::vector<at::Tensor> out{y};
          const std::string what = vs[i].label + " " + std::string(c10::toString(st)) + " on " +
                                   c10::str(at::IntArrayRef(shape)) + (offset ? " (x one element off)" : "");
          ASSERT_EQ(impls[i]->launch({x}, out, stream.stream()), 0) << what;
          ASSERT_EQ(cudaStreamSynchronize(stream.stream()), cudaSuccess) << what;
          EXPECT_LT(worst_error(y, x.to(at::kDouble).mean({2, 3})), 1e-2) << what;
        }
    }
  }
}

TEST(families_cuda_run, pool_nchw_small_launches_match_torch) {
  REQUIRE_GPU();
  check_pool_small_launches("contiguous", {
                                              {"staged", {{"small_direct", "0"}}},
                                              {"direct", {{"small_direct", "1"}}},
                                              {"flat", {{"small_direct", "2"}, {"small_tpp", "8"}}},
                                          });
}

TEST(families_cuda_run, pool_channels_last_small_launches_match_torch) {
  REQUIRE_GPU();
  check_pool_small_launches("channels_last", {
                                                 {"split", {}},
                                                 {"warp1", {{"small_cl_warp", "1"}}},
                                                 {"warp2", {{"small_cl_warp", "2"}}},
                                                 {"warp4", {{"small_cl_warp", "4"}}},
                                                 {"loop2", {{"small_cl_loop", "2"}}},
                                             });
}

// row_softmax_cuda's strategy=grid keeps per-team counters in device memory: launches of different shapes one after
// another must each start from clean counters, teams of one to hundreds of CTAs, rows in registers and streamed
// (a row longer than the team's registers), the vector and the scalar path (a prime row length), more rows than
// teams (each team takes several rows, one barrier round each), online and two-pass reductions.
TEST(families_cuda_run, softmax_grid_teams_match_torch_across_shapes_launch_after_launch) {
  REQUIRE_GPU();
  const auto spec = test::softmax_spec();  // softcap 50, scale 0.5, softmax in float32, cast to bfloat16
  const std::vector<variant> vs = {
      {"grid_auto", {{"strategy", "grid"}, {"threads", "256"}, {"chunks", "4"}, {"online", "1"}}},
      {"grid_two_pass", {{"strategy", "grid"}, {"threads", "128"}, {"chunks", "2"}, {"online", "0"}}},
      {"grid_split_8_streamed", {{"strategy", "grid"}, {"split", "8"}, {"threads", "64"}, {"chunks", "1"}}},
      {"grid_split_128", {{"strategy", "grid"}, {"split", "128"}, {"threads", "32"}, {"chunks", "2"}}},
  };
  auto impls = build(spec, vs, "row_softmax_cuda");
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, 0);
  c10::cuda::CUDAStreamGuard guard(stream);
  auto opt = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  const std::vector<std::vector<int64_t>> shapes = {{1, 1, 8, 262144}, {1, 1, 1, 128256}, {1, 1, 3, 100003},
                                                    {2, 4, 500, 2048},  {1, 1, 8, 262144}, {1, 1, 2, 8}};
  at::manual_seed(13);
  for (size_t i = 0; i < impls.size(); ++i) {
    if (!impls[i]) continue;
    for (auto& shape : shapes) {
      auto x = at::randn(shape, opt) * 8;
      auto y = at::full(shape, std::nan(""), opt);
      std::vector<at::Tensor> out{y};
      const std::string what = vs[i].label + " on " + c10::str(at::IntArrayRef(shape));
      test::crash_context(what);
      ASSERT_EQ(impls[i]->launch({x}, out, stream.stream()), 0) << what;
      ASSERT_EQ(cudaStreamSynchronize(stream.stream()), cudaSuccess) << what;
      const auto want = at::softmax(at::tanh(x.to(at::kDouble) / 50) * 50 * 0.5, -1);
      // Relative to the row's largest value: softmax values of long rows are tiny, bfloat16 keeps 3 digits.
      const auto scale = want.amax(-1, true);
      EXPECT_LT(((y.to(at::kDouble) - want).abs() / scale).max().item<double>(), 1e-2) << what;
      EXPECT_NEAR(y.to(at::kDouble).sum(-1).min().item<double>(), 1.0, 0.05) << what;
    }
  }
}

// row_softmax_cuda's ragged path (ragged=1): rows that are not a whole number of 16-byte vectors (37, 77, 5003, 51865:
// CLIP's tokens, vocabularies) and views whose first element is not aligned, under a float32 mask, on every strategy
// (held rows, streamed rows, shared-memory caches, clusters, grid teams). Each row starts at another place in its
// first vector; the vectors that straddle a row's ends load and store only the row's elements (NaN-filled outputs
// show an element left unwritten, a guard element after y one written past the row). A y whose phase differs from
// x's takes the element-wise path, still right.
TEST(families_cuda_run, softmax_ragged_rows_match_torch_on_every_strategy) {
  REQUIRE_GPU();
  const auto spec = test::softmax_spec(true);  // softcap 50, float32 [S, S] mask, scale 0.5, float32 -> bfloat16
  std::vector<variant> vs = {
      {"warp_auto", {{"strategy", "warp"}, {"team", "auto"}, {"chunks", "2"}, {"threads", "128"}}},
      {"warp_8_streamed", {{"strategy", "warp"}, {"team", "8"}, {"chunks", "1"}, {"head", "1"}}},
      {"warp_16_smem", {{"strategy", "warp"}, {"team", "16"}, {"cache", "smem"}, {"threads", "256"}}},
      {"block_fit", {{"strategy", "block"}, {"threads", "256"}, {"chunks", "2"}, {"fit", "1"}}},
      {"block_streamed_online", {{"strategy", "block"}, {"threads", "64"}, {"chunks", "1"}, {"online", "1"}}},
      {"block_smem", {{"strategy", "block"}, {"threads", "128"}, {"cache", "smem"}, {"unroll", "2"}}},
      {"cluster_4", {{"strategy", "cluster"}, {"cluster", "4"}, {"threads", "128"}, {"chunks", "2"}}},
      {"grid_auto", {{"strategy", "grid"}, {"threads", "128"}, {"chunks", "2"}, {"online", "1"}}},
      {"grid_split_4_head", {{"strategy", "grid"}, {"split", "4"}, {"threads", "32"}, {"chunks", "1"}, {"head", "1"}}},
  };
  for (auto& v : vs) v.knobs.emplace("ragged", "1");
  auto impls = build(spec, vs, "row_softmax_cuda");
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, 0);
  c10::cuda::CUDAStreamGuard guard(stream);
  auto opt = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  struct shape_case {
    int64_t b, h, r, n;  // x [b, h, r, n] under a mask [r, n]
    int x_off, y_off;    // elements before x's and y's first: views of larger buffers
  };
  const std::vector<shape_case> cases = {{2, 3, 37, 37, 0, 0}, {1, 2, 77, 77, 0, 0}, {1, 1, 3, 5003, 0, 0},
                                         {1, 1, 2, 51865, 0, 0}, {1, 1, 3, 3, 0, 0}, {2, 2, 64, 64, 3, 3},
                                         {1, 2, 77, 77, 5, 5}, {1, 2, 77, 77, 1, 0}};
  at::manual_seed(41);
  for (size_t i = 0; i < impls.size(); ++i) {
    if (!impls[i]) continue;
    for (auto& c : cases) {
      const std::vector<int64_t> shape = {c.b, c.h, c.r, c.n};
      const int64_t n = c.b * c.h * c.r * c.n;
      const std::string what = fmt::format("{} on {} (x +{}, y +{})", vs[i].label, c10::str(at::IntArrayRef(shape)),
                                           c.x_off, c.y_off);
      test::crash_context(what);
      auto xbuf = at::randn({n + c.x_off}, opt) * 8;
      auto x = xbuf.narrow(0, c.x_off, n).view(shape);
      auto m = at::randn({c.r, c.n}, opt.dtype(at::kFloat));
      auto ybuf = at::full({n + c.y_off + 1}, std::nan(""), opt);
      auto y = ybuf.narrow(0, c.y_off, n).view(shape);
      ybuf[n + c.y_off].fill_(7.0);  // the guard after y
      std::vector<at::Tensor> out{y};
      ASSERT_EQ(impls[i]->launch({x, m}, out, stream.stream()), 0) << what;
      ASSERT_EQ(cudaStreamSynchronize(stream.stream()), cudaSuccess) << what;
      const auto want = at::softmax((at::tanh(x.to(at::kDouble) / 50) * 50 + m.to(at::kDouble)) * 0.5, -1);
      const auto scale = want.amax(-1, true);
      EXPECT_LT(((y.to(at::kDouble) - want).abs() / scale).max().item<double>(), 1e-2) << what;
      EXPECT_EQ(y.isnan().sum().item<int64_t>(), 0) << what << ": elements left unwritten";
      EXPECT_EQ(ybuf[n + c.y_off].item<float>(), 7.0f) << what << ": written past the last row";
      if (c.y_off > 0) EXPECT_TRUE(ybuf.narrow(0, 0, c.y_off).isnan().all().item<bool>()) << what << ": before y";
    }
  }
}

// row_norm_cuda's float32 LayerNorm on rows of one repeated value (verify's all_equal_rows): x - mean must be 0
// exactly, or rstd = 1/sqrt(eps) magnifies the mean's last bit (an error of 6e-4 against float32's 1e-5 where the
// mean was sum / n). Every strategy, rows held in registers and streamed (longer than the registers hold): y is b,
// bit for bit; random rows still match float64.
TEST(families_cuda_run, float32_layer_norm_of_constant_rows_is_exactly_its_bias) {
  REQUIRE_GPU();
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, 0);
  c10::cuda::CUDAStreamGuard guard(stream);
  const std::vector<variant> vs = {
      {"team_8", {{"strategy", "team"}, {"team", "8"}, {"fit", "0"}}},
      {"warp", {{"strategy", "team"}, {"team", "32"}, {"fit", "0"}}},
      {"block_256", {{"strategy", "block"}, {"block", "256"}, {"fit", "0"}}},
      {"block_streamed", {{"strategy", "block"}, {"block", "64"}, {"chunks", "1"}, {"vec", "4"}, {"fit", "0"}}},
      {"cluster_4", {{"strategy", "cluster"}, {"cluster", "4"}, {"block", "256"}, {"fit", "0"}}},
  };
  auto opt = at::TensorOptions().device(at::kCUDA).dtype(at::kFloat);
  at::manual_seed(29);
  for (int64_t d : {100, 1024, 20000}) {
    workload_spec spec;
    spec.name = "test-layernorm-f32";
    spec.inputs = {test::tensor_input("x", {test::sym("R"), test::lit(d)}, dtype::float32),
                   test::tensor_input("w", {test::lit(d)}, dtype::float32),
                   test::tensor_input("b", {test::lit(d)}, dtype::float32)};
    spec.graph.push_back(
        {"layer_norm", {{"input", "x"}, {"normalized_shape", {d}}, {"weight", "w"}, {"bias", "b"}, {"eps", 1e-6}}, {}});
    spec.cases = {test::make_case({{"R", 37}}, true)};
    auto impls = build(spec, vs, "row_norm_cuda");
    const int64_t rows = 37;
    auto w = at::randn({d}, opt) * 0.1 + 1, b = at::randn({d}, opt) * 0.1;
    // Each row one value, of varied magnitude: sums of 3.7 or 1234.5 repeated d times round in float32.
    auto x = (at::rand({rows, 1}, opt) * 2000 - 1000).expand({rows, d}).contiguous();
    auto noisy = at::randn({rows, d}, opt) * 3 + 5;
    for (size_t i = 0; i < impls.size(); ++i) {
      if (!impls[i]) continue;
      const std::string what = vs[i].label + " on rows of " + std::to_string(d);
      test::crash_context(what);
      auto y = at::full({rows, d}, std::nan(""), opt);
      std::vector<at::Tensor> out{y};
      ASSERT_EQ(impls[i]->launch({x, w, b}, out, stream.stream()), 0) << what;
      ASSERT_EQ(cudaStreamSynchronize(stream.stream()), cudaSuccess) << what;
      EXPECT_TRUE(at::equal(y, b.expand({rows, d}))) << what << ": worst |y - b| "
                                                     << (y - b).abs().max().item<float>();
      ASSERT_EQ(impls[i]->launch({noisy, w, b}, out, stream.stream()), 0) << what;
      ASSERT_EQ(cudaStreamSynchronize(stream.stream()), cudaSuccess) << what;
      const auto want = at::layer_norm(noisy.to(at::kDouble), {d}, w.to(at::kDouble), b.to(at::kDouble), 1e-6);
      EXPECT_LT(worst_error(y, want), 1e-5) << what;
    }
  }
}

// A kernel launched with PDL (pdl=1) may be scheduled before the kernel ahead of it on the stream has finished: it
// must still read what that kernel wrote. Each launch here follows a kernel that rewrites x (x *= 2), in stream
// order and replayed from a CUDA graph, as hot timing runs them; a launch that read x before the copy finished
// would return the previous input's answer.
TEST(families_cuda_run, pdl_launches_read_what_the_kernel_before_them_wrote) {
  REQUIRE_GPU();
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, 0);
  c10::cuda::CUDAStreamGuard guard(stream);
  struct op_case {
    std::string family;
    workload_spec spec;
    std::vector<int64_t> shape;
    std::vector<variant> variants;
  };
  const std::vector<variant> pool_variants = {{"pool_pdl", {{"pdl", "1"}}},
                                              {"pool_pdl_direct", {{"pdl", "1"}, {"small_direct", "1"}}}};
  const std::vector<op_case> ops = {
      {"pool_cuda", test::pool_spec(), {1, 2048, 7, 7}, pool_variants},
      {"pool_cuda", test::pool_spec(), {32, 2048, 7, 7}, pool_variants},
      {"pool_cuda", test::pool_spec("channels_last"), {1, 2048, 7, 7}, {{"pool_cl_pdl", {{"pdl", "1"}}}}},
      {"row_softmax_cuda", test::softmax_spec(), {1, 8, 256, 256},
       {{"softmax_warp_pdl", {{"pdl", "1"}, {"strategy", "warp"}, {"threads", "128"}, {"chunks", "1"}}},
        {"softmax_block_pdl", {{"pdl", "1"}, {"strategy", "block"}, {"threads", "128"}, {"chunks", "1"}}},
        {"softmax_cluster_pdl", {{"pdl", "1"}, {"strategy", "cluster"}, {"cluster", "2"}, {"threads", "128"}}}}},
      // Three rows of 40000: teams of up to 40 co-resident CTAs a row (strategy=grid), the cooperative launch
      // with PDL, then without it.
      {"row_softmax_cuda", test::softmax_spec(), {1, 1, 3, 40000},
       {{"softmax_grid_pdl", {{"pdl", "1"}, {"strategy", "grid"}, {"threads", "128"}, {"chunks", "1"}}},
        {"softmax_grid_split4", {{"pdl", "0"}, {"strategy", "grid"}, {"split", "4"}, {"threads", "256"}}}}},
  };
  at::manual_seed(3);
  for (auto& op : ops) {
    auto impls = build(op.spec, op.variants, op.family);
    const bool cl = op.spec.inputs[0].memory_format == "channels_last";
    auto opt = at::TensorOptions().device(at::kCUDA).dtype(op.family == "pool_cuda" ? at::kHalf : at::kBFloat16);
    auto fresh = [&] {
      auto t = at::randn(op.shape, opt) * 4 + 1;
      return cl ? t.contiguous(at::MemoryFormat::ChannelsLast) : t;
    };
    auto want_for = [&](const at::Tensor& in) {
      if (op.family == "pool_cuda") return in.to(at::kDouble).mean({2, 3});
      return at::softmax(at::tanh(in.to(at::kDouble) / 50) * 50 * 0.5, -1);
    };
    for (size_t i = 0; i < impls.size(); ++i) {
      if (!impls[i]) continue;
      const std::string label = op.variants[i].label + " on " + c10::str(at::IntArrayRef(op.shape));
      auto x = fresh();
      const std::vector<at::Tensor> next = {fresh(), fresh(), fresh()};
      auto y_shape = op.family == "pool_cuda" ? std::vector<int64_t>{op.shape[0], op.shape[1]} : op.shape;
      std::vector<at::Tensor> ys;
      for (size_t k = 0; k < next.size(); ++k) ys.push_back(at::full(y_shape, std::nan(""), opt));
      std::vector<at::Tensor> halves;  // exact: x / 2 in a 16-bit float
      for (auto& t : next) halves.push_back(t / 2);
      auto run_all = [&] {
        for (size_t k = 0; k < next.size(); ++k) {
          x.copy_(halves[k]);  // a copy, then a kernel that writes x right before the launch
          x.mul_(2);
          std::vector<at::Tensor> out{ys[k]};
          EXPECT_EQ(impls[i]->launch({x}, out, stream.stream()), 0) << label;
        }
      };
      auto check = [&](const char* how) {
        ASSERT_EQ(cudaStreamSynchronize(stream.stream()), cudaSuccess) << label;
        for (size_t k = 0; k < next.size(); ++k)
          EXPECT_LT(worst_error(ys[k], want_for(next[k])), 1e-2) << label << ", launch " << k << " " << how;
      };
      run_all();
      check("in stream order");
      for (auto& y : ys) y.fill_(std::nan(""));
      x.zero_();
      cudaGraph_t graph = nullptr;
      ASSERT_EQ(cudaStreamBeginCapture(stream.stream(), cudaStreamCaptureModeThreadLocal), cudaSuccess);
      run_all();
      ASSERT_EQ(cudaStreamEndCapture(stream.stream(), &graph), cudaSuccess) << label;
      cudaGraphExec_t exec = nullptr;
      ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess) << label;
      ASSERT_EQ(cudaGraphLaunch(exec, stream.stream()), cudaSuccess) << label;
      check("replayed from a CUDA graph");
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
    }
  }
}

}  // namespace
}  // namespace kf
