// kforge_ops where the kernel does not cover a call: a non-contiguous or misaligned input, a dtype or size the spec
// does not take, a kernel that declines, no kernel at all. Each runs the eager graph (the same numbers eager gives)
// and warns once per shape; the Meta kernel gives the outputs' shapes and dtypes; load reports what it skipped.
#include <gtest/gtest.h>

#include "ops_support.h"
#include "spec/reference_torch.h"

namespace kf {
namespace {

using test::call_kforge;

size_t count_containing(const std::vector<std::string>& messages, const std::string& part) {
  size_t n = 0;
  for (auto& m : messages) n += m.find(part) != std::string::npos;
  return n;
}

class kforge_ops_fallback : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    test::load_ops(test::k_ops_workloads, "cpu", {"gpt2-gelu-tanh", "qwen3-32b-add-rmsnorm"});
  }
};

TEST_F(kforge_ops_fallback, a_non_contiguous_input_runs_eager_and_warns_once_per_shape) {
  workload_spec spec = test::ops_spec("gpt2-gelu-tanh");
  at::Tensor wide = make_inputs(spec, spec.cases.back(), 0, c10::Device(c10::kCPU)).at(0);  // [7, 3072]
  at::Tensor x = wide.t().contiguous().t();  // the same values, column-major
  ASSERT_FALSE(x.is_contiguous());
  test::warning_catcher warnings;
  at::Tensor y1 = call_kforge("gpt2_gelu_tanh", {x}).at(0);
  at::Tensor y2 = call_kforge("gpt2_gelu_tanh", {x}).at(0);
  EXPECT_TRUE(at::equal(y1, run_graph(spec, {x}).at(0)));  // eager's own numbers
  EXPECT_TRUE(at::equal(y1, y2));
  EXPECT_TRUE(y1.is_contiguous());
  ASSERT_EQ(warnings.messages().size(), 1u) << warnings.all();
  EXPECT_NE(warnings.messages()[0].find("kforge.gpt2_gelu_tanh: x is not contiguous; running the eager graph"),
            std::string::npos) << warnings.all();
  // Another shape warns again, once.
  at::Tensor other = at::randn({3072, 3}).to(at::kHalf).t();
  call_kforge("gpt2_gelu_tanh", {other});
  call_kforge("gpt2_gelu_tanh", {other});
  EXPECT_EQ(count_containing(warnings.messages(), "not contiguous"), 2u) << warnings.all();
}

TEST_F(kforge_ops_fallback, a_dtype_the_kernel_does_not_take_runs_eager) {
  at::Tensor x = at::randn({4, 3072});  // float32; the spec takes float16
  test::warning_catcher warnings;
  at::Tensor y = call_kforge("gpt2_gelu_tanh", {x}).at(0);
  EXPECT_EQ(y.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(y, at::gelu(x, "tanh")));
  EXPECT_EQ(count_containing(warnings.messages(), "x is float32, the spec takes float16"), 1u) << warnings.all();
}

TEST_F(kforge_ops_fallback, a_size_the_spec_does_not_take_runs_eager) {
  at::Tensor x = at::randn({4, 100}).to(at::kHalf);
  test::warning_catcher warnings;
  at::Tensor y = call_kforge("gpt2_gelu_tanh", {x}).at(0);
  EXPECT_TRUE(at::equal(y, at::gelu(x, "tanh")));
  EXPECT_EQ(count_containing(warnings.messages(), "x's dim 1 is 100, the spec's is 3072"), 1u) << warnings.all();
}

TEST_F(kforge_ops_fallback, a_misaligned_input_runs_eager) {
  at::Tensor flat = at::randn({3 * 3072 + 1}).to(at::kHalf);
  at::Tensor x = flat.narrow(0, 1, 3 * 3072).view({3, 3072});  // contiguous, 2 bytes past an aligned start
  ASSERT_TRUE(x.is_contiguous());
  test::warning_catcher warnings;
  at::Tensor y = call_kforge("gpt2_gelu_tanh", {x}).at(0);
  EXPECT_TRUE(at::equal(y, at::gelu(x, "tanh")));
  EXPECT_EQ(count_containing(warnings.messages(), "does not start 16-byte aligned"), 1u) << warnings.all();
}

TEST_F(kforge_ops_fallback, two_outputs_fall_back_as_two_outputs) {
  workload_spec spec = test::ops_spec("qwen3-32b-add-rmsnorm");
  std::vector<at::Tensor> in = make_inputs(spec, spec.cases.back(), 0, c10::Device(c10::kCPU));
  in[0] = in[0].t().contiguous().t();
  test::warning_catcher warnings;
  std::vector<at::Tensor> out = call_kforge("qwen3_32b_add_rmsnorm", in);
  std::vector<at::Tensor> eager = run_graph(spec, in);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(at::equal(out[0], eager[0]));
  EXPECT_TRUE(at::equal(out[1], eager[1]));
  EXPECT_EQ(count_containing(warnings.messages(), "x is not contiguous"), 1u) << warnings.all();
}

TEST(kforge_ops, a_kernel_that_declines_runs_eager) {
  nlohmann::json report = test::load_ops(test::k_ops_test_workloads, "cpu", {"ops-declines"});
  ASSERT_TRUE(test::loaded_entry(report, "ops_declines")["kernels"]["cpu"]["kernel"].get<bool>()) << report.dump(2);
  at::Tensor x = at::randn({4, 16});
  test::warning_catcher warnings;
  at::Tensor y = call_kforge("ops_declines", {x}).at(0);
  call_kforge("ops_declines", {x});
  EXPECT_TRUE(at::equal(y, at::silu(x)));
  EXPECT_EQ(count_containing(warnings.messages(), "kf_launch declined the call (returned 3)"), 1u) << warnings.all();
}

TEST(kforge_ops, a_workload_without_a_kernel_is_an_operator_that_runs_eager) {
  nlohmann::json report = test::load_ops(test::k_ops_test_workloads, "cpu", {"ops-no-kernel"});
  nlohmann::json e = test::loaded_entry(report, "ops_no_kernel");
  ASSERT_FALSE(e.is_null()) << report.dump(2);
  EXPECT_FALSE(e["kernels"]["cpu"]["kernel"].get<bool>());
  EXPECT_NE(e["kernels"]["cpu"]["why"].get<std::string>().find("no kernel for " + cpu_key()), std::string::npos);
  at::Tensor x = at::randn({3, 8}), w = at::randn({8});
  test::warning_catcher warnings;
  at::Tensor y = call_kforge("ops_no_kernel", {x, w}).at(0);
  EXPECT_TRUE(at::equal(y, at::tanh(x * w)));
  EXPECT_EQ(count_containing(warnings.messages(), "no kernel for"), 1u) << warnings.all();
}

TEST(kforge_ops, load_reports_a_spec_it_cannot_read_and_goes_on) {
  nlohmann::json report = test::load_ops(test::k_ops_test_workloads, "cpu", {"ops-broken", "ops-no-kernel"});
  ASSERT_EQ(report["skipped"].size(), 1u) << report.dump(2);
  EXPECT_NE(report["skipped"][0]["spec"].get<std::string>().find("ops-broken.yaml"), std::string::npos);
  EXPECT_NE(report["skipped"][0]["why"].get<std::string>().find("dim"), std::string::npos) << report.dump(2);
  EXPECT_FALSE(test::loaded_entry(report, "ops_no_kernel").is_null());
}

TEST(kforge_ops, load_refuses_what_is_not_there) {
  EXPECT_THROW(test::load_ops(test::k_ops_test_workloads / "nowhere", "cpu", {}), c10::Error);
  EXPECT_THROW(test::load_ops(test::k_ops_test_workloads, "cpu", {"no-such-workload"}), c10::Error);
  EXPECT_THROW(test::load_ops(test::k_ops_test_workloads, "tpu", {"ops-no-kernel"}), c10::Error);
  if (!test::have_gpu_device())
    EXPECT_THROW(test::load_ops(test::k_ops_test_workloads, "cuda", {"ops-no-kernel"}), c10::Error);
}

TEST_F(kforge_ops_fallback, meta_gives_the_outputs_shapes_and_dtypes) {
  auto meta = [](std::vector<int64_t> shape, at::ScalarType t) {
    return at::empty(shape, at::TensorOptions().dtype(t).device(c10::kMeta));
  };
  std::vector<at::Tensor> out = call_kforge("qwen3_32b_add_rmsnorm", {meta({9, 5120}, at::kBFloat16),
                                                                      meta({9, 5120}, at::kBFloat16),
                                                                      meta({5120}, at::kBFloat16)});
  ASSERT_EQ(out.size(), 2u);
  for (auto& t : out) {
    EXPECT_TRUE(t.is_meta());
    EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{9, 5120}));
    EXPECT_EQ(t.scalar_type(), at::kBFloat16);
  }
  // A call the spec does not take: the eager graph's shapes and dtypes, run on meta tensors.
  at::Tensor y = call_kforge("gpt2_gelu_tanh", {meta({2, 5, 64}, at::kFloat)}).at(0);
  EXPECT_TRUE(y.is_meta());
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 5, 64}));
  EXPECT_EQ(y.scalar_type(), at::kFloat);
  EXPECT_TRUE(y.is_contiguous());
}

}  // namespace
}  // namespace kf
