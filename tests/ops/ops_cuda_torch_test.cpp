// kforge_ops on the GPU: the stored H200 winners as operators on the current stream, matching the reference, inside
// a CUDA graph, and falling back on a non-contiguous input. Skipped without a GPU (run on the GPU machine).
#include <gtest/gtest.h>

#include "call_binding.h"
#include "ops_support.h"
#include "spec/reference_torch.h"
#include "verify/compare_torch.h"

#if KFORGE_WITH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace kf {
namespace {

using test::call_kforge;

#define KF_REQUIRE_GPU_OPS() \
  if (!test::have_gpu_device()) GTEST_SKIP() << "no GPU (/dev/nvidiactl absent): the CUDA operators run on the GPU machine"

const std::vector<std::string> k_cuda_workloads = {"gpt2-gelu-tanh", "llama3-8b-swiglu", "qwen25-7b-rmsnorm",
                                                   "qwen3-32b-add-rmsnorm", "sd35-vae-groupnorm-silu"};

void expect_match(const workload_spec& spec, const case_spec& c, const std::vector<at::Tensor>& in,
                  const std::vector<at::Tensor>& out, const std::string& what) {
  std::vector<at::Tensor> ref = run_graph_f64(spec, in);
  std::vector<at::Tensor> eager = run_graph(spec, in);
  std::vector<tensor_desc> descs = infer_outputs(spec, c);
  ASSERT_EQ(out.size(), descs.size()) << what;
  for (size_t i = 0; i < out.size(); ++i) {
    output_comparison cmp = compare_output(out[i], ref[i], eager[i], descs[i].type, spec.tolerance);
    EXPECT_TRUE(cmp.match() && cmp.nan_inf_ok()) << what << " output " << i << ": " << cmp.match_text();
  }
}

TEST(kforge_ops_cuda, gpu_winners_match_the_reference_on_the_current_stream) {
  KF_REQUIRE_GPU_OPS();
#if KFORGE_WITH_CUDA
  nlohmann::json report = test::load_ops(test::k_ops_workloads, "cuda", k_cuda_workloads);
  for (const std::string& w : k_cuda_workloads) {
    nlohmann::json e = test::loaded_entry(report, ops::op_name(w));
    ASSERT_FALSE(e.is_null()) << w << report.dump(2);
    EXPECT_TRUE(e["kernels"]["cuda"]["kernel"].get<bool>()) << w << ": " << e["kernels"]["cuda"].dump();
  }
  c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
  c10::cuda::CUDAStreamGuard on_side(side);  // the operators must launch on the current stream, not the default one
  test::warning_catcher warnings;
  for (const std::string& w : k_cuda_workloads) {
    workload_spec spec = test::ops_spec(w);
    for (const case_spec& c : spec.cases) {
      std::vector<at::Tensor> in = make_inputs(spec, c, 0, c10::Device(c10::kCUDA, 0));
      std::vector<at::Tensor> out = call_kforge(ops::op_name(w), in);
      side.synchronize();
      expect_match(spec, c, in, out, w + " " + c.name);
    }
  }
  EXPECT_TRUE(warnings.messages().empty()) << "an operator fell back to eager:\n" << warnings.all();
#endif
}

TEST(kforge_ops_cuda, an_operator_replays_inside_a_cuda_graph) {
  KF_REQUIRE_GPU_OPS();
#if KFORGE_WITH_CUDA
  test::load_ops(test::k_ops_workloads, "cuda", {"llama3-8b-swiglu"});
  workload_spec spec = test::ops_spec("llama3-8b-swiglu");
  const case_spec& c = spec.cases.at(2);  // T=64
  std::vector<at::Tensor> in = make_inputs(spec, c, 0, c10::Device(c10::kCUDA, 0));
  c10::cuda::CUDAStream capture = c10::cuda::getStreamFromPool();
  c10::cuda::CUDAStreamGuard guard(capture);
  call_kforge("llama3_8b_swiglu", in);  // warm up outside the capture (allocator pools, the kernel's first launch)
  capture.synchronize();
  at::cuda::CUDAGraph graph;
  graph.capture_begin();
  at::Tensor out = call_kforge("llama3_8b_swiglu", in).at(0);
  graph.capture_end();
  // New values in the same input buffers: the replay computes them.
  std::vector<at::Tensor> fresh = make_inputs(spec, c, 7, c10::Device(c10::kCUDA, 0));
  for (size_t i = 0; i < in.size(); ++i) in[i].copy_(fresh[i]);
  graph.replay();
  capture.synchronize();
  expect_match(spec, c, in, {out}, "llama3-8b-swiglu replayed");
#endif
}

TEST(kforge_ops_cuda, a_non_contiguous_gpu_input_runs_eager) {
  KF_REQUIRE_GPU_OPS();
#if KFORGE_WITH_CUDA
  test::load_ops(test::k_ops_workloads, "cuda", {"gpt2-gelu-tanh"});
  at::Tensor x = at::randn({3072, 6}, at::TensorOptions().device(c10::kCUDA).dtype(at::kHalf)).t();
  test::warning_catcher warnings;
  at::Tensor y = call_kforge("gpt2_gelu_tanh", {x}).at(0);
  EXPECT_TRUE(at::equal(y, at::gelu(x, "tanh").contiguous()));
  EXPECT_EQ(warnings.messages().size(), 1u) << warnings.all();
#endif
}

}  // namespace
}  // namespace kf
