// The CUDA side of measure on a real GPU (skipped without one): the cold/hot protocol on the empty kernel and
// on a LibTorch op, the copy bandwidth, and the vendor calls against LibTorch's own results.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "exec/worker_client.h"
#include "measure/cuda_sampler.h"
#include "measure/timing.h"
#include "spec/ops.h"
#include "spec/spec_parse.h"
#include "vendor/vendor_ops_torch.h"

namespace kf {
namespace {

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
#define REQUIRE_GPU() \
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU: the CUDA timing protocol and vendor calls need one"

TEST(measure_cuda, cold_and_hot_protocol_on_the_empty_kernel_and_an_op) {
  REQUIRE_GPU();
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, 0);
  auto s = measure::make_cuda_sampler(0, stream.stream());
  at::Tensor x = at::randn({4096, 256}, at::TensorOptions().device(at::kCUDA));
  measure::timed_impl op{"softmax", [&](void* st) {
                           c10::cuda::CUDAStreamGuard g(c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(st), 0));
                           at::softmax(x, -1);
                           return 0;
                         }};
  measure::timing_options o;
  o.stopping = {.min_samples = 10, .max_noise = 0.05, .min_seconds = 0.01, .timeout_s = 5};
  o.hot = measure::hot_mode::always;
  auto r = measure::time_interleaved(*s, {{"empty", s->empty_launch()}, op}, o);
  for (const auto& t : r) {
    EXPECT_TRUE(t.error.empty()) << t.impl << ": " << t.error;
    EXPECT_GE(t.cold.samples_us.size() + t.cold.discarded, 10u) << t.impl;
    ASSERT_TRUE(t.hot.has_value()) << t.impl << ": " << t.hot_skipped;
    EXPECT_GE(t.hot->launches_per_sample, 1);
    // A launch in a graph costs less than one launched cold behind an L2 flush.
    EXPECT_LT(t.hot->summary().median, t.cold.summary().median) << t.impl;
  }
  EXPECT_GT(s->copy_bandwidth_gbs(), 100);  // any datacenter GPU copies faster than 100 GB/s
  nlohmann::json env = s->environment();
  EXPECT_GT(env["sm_count"].get<int>(), 0);
  EXPECT_FALSE(env["gpu_name"].get<std::string>().empty());
}

// Every bundled workload's eager and vendor baselines through a real worker on the GPU: each is timed or says
// why it is not available; none takes the worker down (pooling once did, asking for a dtype it does not have).
TEST(measure_cuda, every_bundled_workload_times_its_eager_and_vendor_baselines) {
  REQUIRE_GPU();
  worker_client worker({.device = parse_device("cuda:0")});
  for (auto& e : std::filesystem::directory_iterator(std::filesystem::path(KFORGE_SOURCE_DIR) / "workloads")) {
    if (e.path().extension() != ".yaml") continue;
    workload_spec spec;
    auto diags = parse_spec(e.path().string(), &spec);
    ASSERT_TRUE(diags.empty()) << e.path() << ": " << diags[0].str();
    nlohmann::json req{{"cmd", "measure"},
                       {"spec", to_json(spec)},
                       {"impls", {{{"kind", "eager"}}, {{"kind", "vendor"}}}},
                       {"stopping", {{"min_samples", 3}, {"max_noise", 1.0}, {"min_seconds", 0.0}, {"timeout_s", 0.2}}}};
    worker_outcome o = worker.request(req, std::chrono::seconds(120));
    ASSERT_TRUE(o.ok()) << spec.name << ": " << o.describe() << "\n" << o.stderr_tail;
    ASSERT_TRUE(o.response.value("ok", false)) << spec.name << ": " << o.response.dump(1);
    for (const auto& r : o.response["results"]) {
      // cuDNN has softmax and pooling: a lone softmax and a pooling (+ flatten) get a vendor time, not a skip.
      bool vendor_op = (spec.graph.size() == 1 && spec.graph[0].op == "softmax") || spec.graph[0].op == "adaptive_avg_pool2d";
      if (r.value("impl", "") == "vendor" && vendor_op)
        EXPECT_TRUE(r.value("available", false)) << spec.name << ": " << r.dump();
      if (!r.value("available", true)) {
        EXPECT_FALSE(r.value("not_available", "").empty()) << spec.name << ": " << r.dump();
        continue;
      }
      EXPECT_FALSE(r.contains("error")) << spec.name << ": " << r.dump();
      EXPECT_GE(r["cold"]["samples_us"].size(), 3u) << spec.name << " " << r.value("impl", "?");
    }
  }
}

TEST(measure_cuda, an_impl_returning_nonzero_is_a_result) {
  REQUIRE_GPU();
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, 0);
  auto s = measure::make_cuda_sampler(0, stream.stream());
  measure::timing_options o;
  o.stopping = {.min_samples = 3, .max_noise = 1, .min_seconds = 0, .timeout_s = 2};
  auto r = measure::time_interleaved(*s, {{"refuses", [](void*) { return 5; }}}, o);
  EXPECT_EQ(r[0].error, "launch returned 5");
}

torch_op_args args_for(const std::string& op, const nlohmann::json& j, std::map<std::string, at::Tensor> t = {}) {
  return torch_op_args{*find_op(op), j, std::move(t), false};
}

TEST(measure_cuda, cudnn_softmax_matches_torch) {
  REQUIRE_GPU();
  at::Tensor x = at::randn({3, 7, 1000}, at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16));
  nlohmann::json a{{"dim", -1}, {"dtype", "float32"}};
  at::Tensor got = vendor::cudnn_softmax(x, args_for("softmax", a), false);
  EXPECT_TRUE(at::allclose(got, at::softmax(x, -1, at::kFloat), 1e-5, 1e-6));
  nlohmann::json mid{{"dim", 1}};
  at::Tensor xf = x.to(at::kFloat);
  EXPECT_TRUE(at::allclose(vendor::cudnn_softmax(xf, args_for("log_softmax", mid), true), at::log_softmax(xf, 1), 1e-4, 1e-5));
}

TEST(measure_cuda, cudnn_pooling_matches_adaptive_avg_pool) {
  REQUIRE_GPU();
  for (bool cl : {false, true}) {
    at::Tensor x = at::randn({3, 64, 7, 5}, at::TensorOptions().device(at::kCUDA).dtype(at::kHalf));
    if (cl) x = x.contiguous(at::MemoryFormat::ChannelsLast);
    at::Tensor got = vendor::cudnn_adaptive_avg_pool_1x1(x, args_for("adaptive_avg_pool2d", {{"output_size", 1}}));
    at::Tensor listed = vendor::cudnn_adaptive_avg_pool_1x1(x, args_for("adaptive_avg_pool2d", {{"output_size", {1}}}));
    EXPECT_TRUE(at::equal(listed, got)) << "output_size [1] is [1, 1]";
    EXPECT_TRUE(at::allclose(got.to(at::kFloat), at::adaptive_avg_pool2d(x, {1, 1}).to(at::kFloat), 1e-3, 1e-3)) << cl;
  }
}

TEST(measure_cuda, cublaslt_linear_matches_torch) {
  REQUIRE_GPU();
  auto o = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  at::Tensor x = at::randn({5, 33, 64}, o), w = at::randn({48, 64}, o), b = at::randn({48}, o);
  at::Tensor got = vendor::cublaslt_linear(x, args_for("linear", {{"weight", "w"}, {"bias", "b"}}, {{"weight", w}, {"bias", b}}));
  EXPECT_TRUE(at::allclose(got.to(at::kFloat), at::linear(x, w, b).to(at::kFloat), 2e-2, 2e-2));
}

}  // namespace
}  // namespace kf
