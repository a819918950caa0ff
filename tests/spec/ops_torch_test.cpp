// The LibTorch side of the spec: each op against hand-computed values, eager vs float64 reference on every
// seed workload, seeded inputs (deterministic, per device), and the adversarial variants.
#include <cmath>

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include "spec/adversarial.h"
#include "spec/input_cache_torch.h"
#include "spec/ops_torch.h"
#include "spec/reference_torch.h"
#include "spec/spec_parse.h"

namespace kf {
namespace {

const std::string k_workloads = std::string(KFORGE_SOURCE_DIR) + "/workloads";
const c10::Device k_cpu(c10::kCPU);

workload_spec spec_of(const std::string& inputs, const std::string& graph, const std::string& cases = "[{}]") {
  workload_spec s;
  auto d = parse_spec_text("version: 1\nname: t\ninputs:\n" + inputs + "graph:\n" + graph + "cases: " + cases + "\n", "t.yaml", &s);
  std::string all;
  for (auto& x : d) all += x.str() + "\n";
  EXPECT_TRUE(d.empty()) << all;
  return s;
}

at::Tensor t(std::vector<float> v, std::vector<int64_t> shape) {
  return at::tensor(v, at::kFloat).reshape(shape);
}

// One op on x (float32) with the given args and extra inputs; returns the first output.
std::vector<at::Tensor> run1(const std::string& op_line, const std::vector<int64_t>& shape, const at::Tensor& x,
                             const std::string& extra_inputs = "", std::vector<at::Tensor> extra = {}) {
  std::string sh;
  for (auto d : shape) sh += (sh.empty() ? "" : ", ") + std::to_string(d);
  workload_spec s = spec_of("  x: {shape: [" + sh + "], dtype: float32}\n" + extra_inputs, "  - " + op_line + "\n");
  std::vector<at::Tensor> ins = {x};
  ins.insert(ins.end(), extra.begin(), extra.end());
  return run_graph(s, ins);
}

void expect_close(const at::Tensor& got, std::vector<double> want, double tol = 1e-5) {
  auto g = got.to(at::kDouble).contiguous().flatten();
  ASSERT_EQ(g.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isinf(want[i])) EXPECT_EQ(g[i].item<double>(), want[i]) << "element " << i;
    else EXPECT_NEAR(g[i].item<double>(), want[i], tol) << "element " << i;
  }
}

TEST(ops_torch, every_registry_op_has_a_torch_implementation) {
  for (auto& n : op_names()) EXPECT_NE(find_torch_op(n), nullptr) << n;
  EXPECT_EQ(torch_op_table().size(), op_table().size());
}

TEST(ops_torch, elementwise_ops_match_hand_values) {
  at::Tensor x = t({0.f, 1.f, -2.f, 50.f}, {4});
  expect_close(run1("softcap: {input: x, cap: 50.0}", {4}, x)[0], {0, 50 * std::tanh(1 / 50.0), 50 * std::tanh(-2 / 50.0), 50 * std::tanh(1.0)});
  expect_close(run1("scale: {input: x, factor: 0.5}", {4}, x)[0], {0, 0.5, -1, 25});
  expect_close(run1("silu: {input: x}", {4}, x)[0], {0, 0.7310585786, -0.2384058440, 50});
  expect_close(run1("gelu: {input: x}", {4}, x)[0], {0, 0.8413447461, -0.0455002639, 50});
  expect_close(run1("gelu: {input: x, approximate: tanh}", {4}, x)[0], {0, 0.8411919906, -0.0454023059, 50});
  expect_close(run1("cast: {input: x, dtype: int32}", {4}, x)[0], {0, 1, -2, 50});
  EXPECT_EQ(run1("cast: {input: x, dtype: bfloat16}", {4}, x)[0].scalar_type(), at::kBFloat16);
}

TEST(ops_torch, softmax_family_matches_hand_values) {
  at::Tensor x = t({0.f, std::log(2.f), 0.f, 0.f}, {2, 2});
  expect_close(run1("softmax: {input: x, dim: -1}", {2, 2}, x)[0], {1 / 3.0, 2 / 3.0, 0.5, 0.5});
  expect_close(run1("softmax: {input: x, dim: 0}", {2, 2}, x)[0], {0.5, 2 / 3.0, 0.5, 1 / 3.0});
  expect_close(run1("log_softmax: {input: x, dim: 1}", {2, 2}, x)[0], {std::log(1 / 3.0), std::log(2 / 3.0), std::log(0.5), std::log(0.5)});
  auto r = run1("softmax: {input: x, dim: -1, dtype: float64}", {2, 2}, x);
  EXPECT_EQ(r[0].scalar_type(), at::kDouble);
  at::Tensor m = t({0.f, -INFINITY, 0.f, 0.f}, {2, 2});
  expect_close(run1("add_mask: {input: x, mask: m}", {2, 2}, x, "  m: {shape: [2, 2], dtype: float32}\n", {m})[0],
               {0, -INFINITY, 0, 0});
}

TEST(ops_torch, topk_returns_values_and_indices) {
  at::Tensor x = t({1.f, 3.f, 2.f, 0.f, 5.f, 4.f, -1.f, 5.5f}, {2, 4});
  auto r = run1("topk: {input: x, k: 2}", {2, 4}, x);
  ASSERT_EQ(r.size(), 2u);
  expect_close(r[0], {3, 2, 5.5, 5});
  EXPECT_EQ(r[1].scalar_type(), at::kLong);
  expect_close(r[1], {1, 2, 3, 0});
  expect_close(run1("topk: {input: x, k: 1, largest: false}", {2, 4}, x)[0], {0, -1});
}

TEST(ops_torch, norms_match_hand_values) {
  at::Tensor x = t({1.f, 2.f, 3.f, 4.f}, {1, 2, 2});
  double s = std::sqrt(1.25 + 1e-5);
  expect_close(run1("group_norm: {input: x, num_groups: 1}", {1, 2, 2}, x)[0], {-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s});
  // two groups of one channel: each normalized alone; weight 2, bias 1 per channel
  at::Tensor w = t({2.f, 2.f}, {2}), b = t({1.f, 1.f}, {2});
  double s2 = std::sqrt(0.25 + 1e-5);
  expect_close(run1("group_norm: {input: x, num_groups: 2, weight: w, bias: b}", {1, 2, 2}, x,
                    "  w: {shape: [2], dtype: float32}\n  b: {shape: [2], dtype: float32}\n", {w, b})[0],
               {1 - 1 / s2, 1 + 1 / s2, 1 - 1 / s2, 1 + 1 / s2});
  expect_close(run1("layer_norm: {input: x, normalized_shape: 2, eps: 0}", {1, 2, 2}, x)[0], {-1, 1, -1, 1});
  at::Tensor y = t({3.f, 4.f}, {1, 2});
  double rms = std::sqrt(12.5);
  expect_close(run1("rms_norm: {input: x, normalized_shape: [2], eps: 0}", {1, 2}, y)[0], {3 / rms, 4 / rms});
}

TEST(ops_torch, pool_flatten_linear_matmul_match_hand_values) {
  at::Tensor x = t({1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f}, {1, 2, 2, 2});
  expect_close(run1("adaptive_avg_pool2d: {input: x, output_size: 1}", {1, 2, 2, 2}, x)[0], {2.5, 6.5});
  // A 3 x 3 window a row apart, padded by one: the corner's window holds 4 of x's values and 5 of padding.
  at::Tensor g = t({1.f, 2.f, 3.f, 4.f}, {1, 1, 2, 2});
  expect_close(run1("avg_pool2d: {input: x, kernel_size: 3, stride: 1, padding: 1}", {1, 1, 2, 2}, g)[0],
               {10. / 9, 10. / 9, 10. / 9, 10. / 9});
  expect_close(run1("avg_pool2d: {input: x, kernel_size: 3, stride: 1, padding: 1, count_include_pad: false}", {1, 1, 2, 2}, g)[0],
               {2.5, 2.5, 2.5, 2.5});
  expect_close(run1("avg_pool2d: {input: x, kernel_size: 2, divisor_override: 2}", {1, 1, 2, 2}, g)[0], {5});
  // max_pool2d pads with -inf: a 3 x 3 window padded by one at each corner of [[1, 2], [3, 4]] sees all four values.
  expect_close(run1("max_pool2d: {input: x, kernel_size: 3, stride: 1, padding: 1}", {1, 1, 2, 2}, t({-1.f, -2.f, -3.f, -4.f}, {1, 1, 2, 2}))[0],
               {-1, -1, -1, -1});
  // Number operands, as x + 1.5 and x / 4 are written in Python.
  expect_close(run1("add: {input: x, other: 1.5}", {1, 1, 2, 2}, g)[0], {2.5, 3.5, 4.5, 5.5});
  expect_close(run1("div: {input: x, other: 4}", {1, 1, 2, 2}, g)[0], {0.25, 0.5, 0.75, 1});
  auto f = run1("flatten: {input: x, start_dim: 1}", {1, 2, 2, 2}, x)[0];
  EXPECT_EQ(f.sizes(), (at::IntArrayRef{1, 8}));
  at::Tensor v = t({1.f, 2.f}, {1, 2}), w = t({1.f, 1.f, 2.f, 0.f}, {2, 2}), b = t({0.5f, 0.f}, {2});
  expect_close(run1("linear: {input: x, weight: w, bias: b}", {1, 2}, v,
                    "  w: {shape: [2, 2], dtype: float32}\n  b: {shape: [2], dtype: float32}\n", {w, b})[0], {3.5, 2});
  expect_close(run1("matmul: {input: x, other: w}", {1, 2}, v, "  w: {shape: [2, 2], dtype: float32}\n", {w})[0], {5, 1});
}

// Eager and the float64 reference agree on every seed workload (smallest cpu case), within what eager's own
// rounding explains; the reference really is float64 and keeps integer outputs.
TEST(ops_torch, eager_and_float64_reference_agree_on_seed_workloads) {
  for (auto& f : find_specs(k_workloads)) {
    workload_spec s = load_spec(f);
    const case_spec* small = nullptr;
    for (auto& c : s.cases)
      if (c.runs_on("cpu") && (!small || infer_outputs(s, c)[0].numel() < infer_outputs(s, *small)[0].numel())) small = &c;
    ASSERT_NE(small, nullptr) << f;
    auto ins = make_inputs(s, *small, 1, k_cpu);
    auto eager = run_graph(s, ins), ref = run_graph_f64(s, ins);
    auto descs = infer_outputs(s, *small);
    ASSERT_EQ(eager.size(), descs.size()) << f;
    for (size_t i = 0; i < eager.size(); ++i) {
      EXPECT_EQ(eager[i].sizes().vec(), descs[i].shape) << f;
      EXPECT_EQ(from_scalar_type(eager[i].scalar_type()), descs[i].type) << f << " output " << i;
      if (!is_floating(descs[i].type)) {
        EXPECT_EQ(ref[i].scalar_type(), at::kLong) << f;
        continue;
      }
      EXPECT_EQ(ref[i].scalar_type(), at::kDouble) << f;
      double scale = ref[i].abs().max().item<double>();
      double err = (eager[i].to(at::kDouble) - ref[i]).abs().max().item<double>();
      EXPECT_LT(err, 0.05 * std::max(scale, 1e-3)) << f << " case " << small->name;
      EXPECT_GT(scale, 0) << f;
    }
  }
}

TEST(ops_torch, float64_reference_is_exact_where_eager_is_float32) {
  workload_spec s = spec_of("  x: {shape: [3, 5], dtype: float32}\n", "  - softmax: {input: x, dim: -1}\n");
  auto ins = make_inputs(s, s.cases[0], 7, k_cpu);
  auto e = run_graph(s, ins)[0], r = run_graph_f64(s, ins)[0];
  EXPECT_LT((e.to(at::kDouble) - r).abs().max().item<double>(), 1e-6);
  EXPECT_NEAR(r.sum(-1)[0].item<double>(), 1.0, 1e-12);
}

TEST(ops_torch, inputs_are_seeded_and_shaped) {
  workload_spec s = load_spec("sd35-vae-groupnorm", k_workloads);
  const case_spec& c = s.cases.at(3);
  auto a = make_inputs(s, c, 42, k_cpu), b = make_inputs(s, c, 42, k_cpu), d = make_inputs(s, c, 43, k_cpu);
  ASSERT_EQ(a.size(), 3u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(at::equal(a[i], b[i]));
    EXPECT_FALSE(at::equal(a[i], d[i]));
    EXPECT_EQ(a[i].scalar_type(), at::kBFloat16);
  }
  EXPECT_EQ(a[0].sizes(), (at::IntArrayRef{2, 96, 7, 7}));
  EXPECT_FALSE(at::equal(a[1], a[2]));  // each input its own stream
  if (at::hasCUDA()) {
    auto g = make_inputs(s, c, 42, c10::Device(c10::kCUDA, 0));
    EXPECT_TRUE(g[0].is_cuda());
    EXPECT_TRUE(at::equal(g[0].cpu(), a[0]));
  }
}

// A large input is drawn in chunks on LibTorch's threads, each chunk from its own stream: the values do not depend
// on the thread count, chunks do not repeat each other, and the distribution is the one asked for.
TEST(ops_torch, large_inputs_draw_in_parallel_chunks_independent_of_the_thread_count) {
  workload_spec n = spec_of("  x: {shape: [3, 1000003], dtype: float32, init: {normal: {mean: 1.0, std: 2.0}}}\n",
                            "  - softmax: {input: x, dim: -1}\n");
  workload_spec u = spec_of("  x: {shape: [3, 1000003], dtype: float32, init: {uniform: {low: -1.0, high: 3.0}}}\n",
                            "  - softmax: {input: x, dim: -1}\n");
  set_input_cache_budget(0);  // every call draws
  const int threads = at::get_num_threads();
  auto draw = [&] {
    return std::vector<at::Tensor>{make_inputs(n, n.cases[0], 5, k_cpu)[0], make_inputs(u, u.cases[0], 5, k_cpu)[0]};
  };
  at::set_num_threads(1);
  auto one = draw();
  at::set_num_threads(4);
  auto four = draw();
  at::set_num_threads(threads);
  set_input_cache_budget(int64_t(2048) << 20);
  for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(at::equal(one[i], four[i])) << i;
  const int64_t chunk = int64_t{1} << 20;
  at::Tensor flat = one[0].view({-1});
  EXPECT_FALSE(at::equal(flat.narrow(0, 0, 1000), flat.narrow(0, chunk, 1000)));  // chunk 1 is its own stream
  EXPECT_NEAR(one[0].mean().item<double>(), 1.0, 0.01);
  EXPECT_NEAR(one[0].std().item<double>(), 2.0, 0.01);
  EXPECT_GE(one[1].min().item<double>(), -1.0);
  EXPECT_LT(one[1].max().item<double>(), 3.0);
  EXPECT_NEAR(one[1].mean().item<double>(), 1.0, 0.01);
}

TEST(ops_torch, repeated_draws_come_from_the_input_cache_and_stay_private) {
  workload_spec s = spec_of("  x: {shape: [3, 1000], dtype: bfloat16, init: {normal: {std: 2.0}}}\n",
                            "  - softmax: {input: x, dim: -1}\n");
  set_input_cache_budget(int64_t(64) << 20);
  const auto before = input_cache_statistics();
  auto a = make_inputs(s, s.cases[0], 11, k_cpu);
  auto b = make_inputs(s, s.cases[0], 11, k_cpu);
  auto adv1 = make_adversarial_inputs(s, s.cases[0], "large_magnitude", 11, k_cpu);
  auto adv2 = make_adversarial_inputs(s, s.cases[0], "large_magnitude", 11, k_cpu);
  const auto after = input_cache_statistics();
  EXPECT_EQ(after.misses - before.misses, 2);  // the seeded draw once, its adversarial variant once
  EXPECT_EQ(after.hits - before.hits, 4);      // b, the base of both adversarial calls, adv2
  EXPECT_TRUE(at::equal(a[0], b[0]));
  EXPECT_TRUE(at::equal(adv1[0], adv2[0]));
  EXPECT_TRUE(at::equal(adv1[0], (a[0].to(at::kFloat) * 100).to(at::kBFloat16)));
  a[0].fill_(0);  // each caller has its own copy: the next draw is unchanged
  EXPECT_TRUE(at::equal(make_inputs(s, s.cases[0], 11, k_cpu)[0], b[0]));
  EXPECT_FALSE(at::equal(make_inputs(s, s.cases[0], 12, k_cpu)[0], b[0]));
  // an entry larger than the budget is drawn, not kept; a budget of 0 empties the cache
  set_input_cache_budget(1024);
  EXPECT_EQ(input_cache_statistics().bytes, 0);
  const auto small = input_cache_statistics();
  make_inputs(s, s.cases[0], 11, k_cpu);
  make_inputs(s, s.cases[0], 11, k_cpu);
  EXPECT_EQ(input_cache_statistics().misses - small.misses, 2);
  set_input_cache_budget(int64_t(2048) << 20);
}

// On a GPU the inputs come from the device's input cache: a fresh copy each call (another address, equal values,
// the layout kept), and a copy the caller overwrites does not change the next one.
TEST(ops_torch, gpu_inputs_come_from_the_device_cache_as_private_copies) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device: the device input cache is exercised on the GPU runner";
  const c10::Device gpu(c10::kCUDA, 0);
  workload_spec s = spec_of("  x: {shape: [2, 8, 5, 5], dtype: float16, memory_format: channels_last, init: {normal: {std: 2.0}}}\n",
                            "  - softmax: {input: x, dim: -1}\n");
  const auto before = device_input_cache_statistics(gpu);
  auto a = make_inputs(s, s.cases[0], 21, gpu);
  auto b = make_inputs(s, s.cases[0], 21, gpu);
  auto adv = make_adversarial_inputs(s, s.cases[0], "large_magnitude", 21, gpu);
  auto adv2 = make_adversarial_inputs(s, s.cases[0], "large_magnitude", 21, gpu);
  const auto after = device_input_cache_statistics(gpu);
  EXPECT_EQ(after.misses - before.misses, 2);  // the draw and its adversarial variant, each copied over once
  EXPECT_EQ(after.hits - before.hits, 2);
  ASSERT_TRUE(a[0].is_cuda());
  EXPECT_NE(a[0].data_ptr(), b[0].data_ptr());
  EXPECT_TRUE(a[0].is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(at::equal(a[0].cpu(), make_inputs(s, s.cases[0], 21, k_cpu)[0]));
  EXPECT_TRUE(at::equal(adv[0], adv2[0]));
  EXPECT_FALSE(at::equal(adv[0], a[0]));
  a[0].fill_(0);
  EXPECT_TRUE(at::equal(make_inputs(s, s.cases[0], 21, gpu)[0], b[0]));
}

TEST(ops_torch, channels_last_and_causal_mask_inits) {
  workload_spec s = load_spec("resnet50-avgpool-cl", k_workloads);
  auto x = make_inputs(s, s.cases.at(3), 1, k_cpu)[0];
  EXPECT_TRUE(x.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_FALSE(x.is_contiguous());
  workload_spec m = spec_of("  x: {shape: [2, 3, 4], dtype: float32}\n  m: {shape: [3, 4], dtype: bfloat16, init: causal_mask}\n",
                            "  - add_mask: {input: x, mask: m}\n");
  auto mask = make_inputs(m, m.cases[0], 1, k_cpu)[1].to(at::kFloat);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(mask[i][j].item<float>(), j <= i ? 0.f : -INFINITY) << i << "," << j;
}

TEST(ops_torch, bool_masks_fill_where_true) {
  // causal_mask on a bool input: true above the diagonal (the positions a causal masked_fill fills).
  workload_spec m = spec_of("  x: {shape: [2, 3, 4], dtype: float16}\n  m: {shape: [3, 4], dtype: bool, init: causal_mask}\n",
                            "  - masked_fill: {input: x, mask: m, value: -inf}\n  - softmax: {dim: -1, dtype: float32}\n");
  auto in = make_inputs(m, m.cases[0], 1, k_cpu);
  ASSERT_EQ(in[1].scalar_type(), at::kBool);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(in[1][i][j].item<bool>(), j > i) << i << "," << j;
  at::Tensor y = run_graph(m, in)[0];
  at::Tensor want = at::softmax(in[0].masked_fill(in[1], -INFINITY), -1, at::kFloat);
  EXPECT_TRUE(at::equal(y, want));
  EXPECT_EQ(y[1][0][3].item<float>(), 0.f);  // a filled position's probability
  at::Tensor x = t({1.f, 2.f, 3.f, 4.f}, {2, 2});
  at::Tensor b = at::tensor({1, 0, 0, 1}, at::kInt).to(at::kBool).reshape({2, 2});
  expect_close(run1("masked_fill: {input: x, mask: b, value: -65504}", {2, 2}, x, "  b: {shape: [2, 2], dtype: bool, init: causal_mask}\n", {b})[0],
               {-65504, 2, 3, -65504});
  expect_close(run1("where: {input: x, condition: b, value: -inf}", {2, 2}, x, "  b: {shape: [2, 2], dtype: bool, init: causal_mask}\n", {b})[0],
               {1, -INFINITY, -INFINITY, 4});
}

TEST(ops_torch, adversarial_inputs) {
  workload_spec s = load_spec("qwen-router-topk", k_workloads);
  const case_spec& c = s.cases.at(2);  // [7, 257]
  EXPECT_EQ(adversarial_kind_names(), (std::vector<std::string>{"large_magnitude", "all_equal_rows", "neg_inf_mask"}));
  for (auto& k : adversarial_kind_names()) EXPECT_TRUE(adversarial_applies(s, k)) << k;
  EXPECT_FALSE(adversarial_applies(load_spec("resnet50-avgpool", k_workloads), "neg_inf_mask"));
  auto base = make_inputs(s, c, 5, k_cpu)[0].to(at::kFloat);
  auto big = make_adversarial_inputs(s, c, "large_magnitude", 5, k_cpu)[0].to(at::kFloat);
  EXPECT_GT(big.abs().max().item<float>(), 50 * base.abs().max().item<float>());
  auto eq = make_adversarial_inputs(s, c, "all_equal_rows", 5, k_cpu)[0];
  EXPECT_TRUE(at::equal(eq, eq.narrow(1, 0, 1).expand(eq.sizes())));
  auto ni = make_adversarial_inputs(s, c, "neg_inf_mask", 5, k_cpu)[0];
  auto finite = at::isfinite(ni);
  EXPECT_TRUE(finite.any(-1).all().item<bool>());   // never a whole row of -inf
  EXPECT_FALSE(finite.all().item<bool>());          // but some -inf
  EXPECT_TRUE(at::equal(ni, make_adversarial_inputs(s, c, "neg_inf_mask", 5, k_cpu)[0]));
  EXPECT_THROW(make_adversarial_inputs(s, c, "nope", 5, k_cpu), user_error);
  auto out = run_graph(s, make_adversarial_inputs(s, c, "neg_inf_mask", 5, k_cpu));
  EXPECT_TRUE(at::isfinite(out[0]).all().item<bool>());
}

TEST(ops_torch, all_equal_rows_gives_group_norm_zero_variance_groups) {
  workload_spec s = load_spec("sd35-vae-groupnorm", k_workloads);
  const case_spec& c = s.cases.at(3);  // [2, 96, 7, 7], 32 groups of 3 channels
  EXPECT_TRUE(adversarial_applies(s, "all_equal_rows"));
  auto ins = make_adversarial_inputs(s, c, "all_equal_rows", 3, k_cpu);
  auto groups = ins[0].reshape({2, 32, -1});
  EXPECT_TRUE(at::equal(groups, groups.narrow(2, 0, 1).expand(groups.sizes())));
  EXPECT_FALSE(at::equal(groups.select(1, 0), groups.select(1, 1)));
  auto out = run_graph_f64(s, ins)[0];
  EXPECT_TRUE(at::isfinite(out).all().item<bool>());
  // zero variance: the output is the bias, channel by channel
  auto bias = ins[2].to(at::kDouble).view({1, 96, 1, 1}).expand(out.sizes());
  EXPECT_LT((out - bias).abs().max().item<double>(), 1e-9);
}

}  // namespace
}  // namespace kf
