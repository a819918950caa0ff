// The generic code generator (generic_cpu) through the whole verifier, in a real worker: a small spec for every op of
// the op table in every floating dtype, generated here from the table, and the graphs that mix them (binary ops with
// broadcast operands, a named intermediate returned as a second output, linear and matmul with vector operands).
// Every spec that validates must get a correct root kernel.
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "../support/family_verify.h"
#include "../support/test_compiler.h"
#include "exec/compile.h"
#include "search/family.h"
#include "spec/ops.h"
#include "spec/spec_parse.h"
#include "verify/check.h"

namespace kf {
namespace {

namespace fs = std::filesystem;

using test::expect_passes;
using test::parse;
using test::shared_compiler;
using test::shared_worker;

#define REQUIRE_GPU() KF_REQUIRE_GPU()

// A one-op spec for `op` in dtype `t`: x (and the op's tensor arguments) sized for the op.
std::string one_op_spec(const std::string& op, const std::string& t) {
  std::string x = "[3, 8, 6]", extra, args, init;
  if (op == "softcap") args = "cap: 5.0";
  else if (op == "scale") args = "factor: 0.5";
  else if (op == "add_mask") args = "mask: m", extra = fmt::format("  m: {{shape: [8, 6], dtype: {}}}\n", t);
  else if (op == "masked_fill") args = "mask: m, value: -inf", extra = "  m: {shape: [8, 6], dtype: bool, init: {randint: {high: 2}}}\n";
  else if (op == "where") args = "condition: m, value: 2.5", extra = "  m: {shape: [6], dtype: bool, init: {randint: {high: 2}}}\n";
  else if (op == "softmax") args = "dim: 1";
  else if (op == "log_softmax") args = "dim: -1, dtype: float32";
  else if (op == "topk") args = "k: 3, dim: 1";
  else if (op == "group_norm") {
    x = "[2, 4, 3, 5]", args = "num_groups: 2, weight: w, bias: b";
    extra = fmt::format("  w: {{shape: [4], dtype: {0}}}\n  b: {{shape: [4], dtype: {0}}}\n", t);
  } else if (op == "layer_norm") {
    args = "normalized_shape: [8, 6], weight: w, bias: b";
    extra = fmt::format("  w: {{shape: [8, 6], dtype: {0}}}\n  b: {{shape: [8, 6], dtype: {0}}}\n", t);
  } else if (op == "rms_norm") {
    args = "normalized_shape: [6], weight: w";
    extra = fmt::format("  w: {{shape: [6], dtype: {0}}}\n", t);
  } else if (op == "gelu") args = "approximate: tanh";
  else if (op == "adaptive_avg_pool2d") x = "[2, 4, 5, 7]", args = "output_size: [2, 3]";
  else if (op == "avg_pool2d") x = "[2, 4, 7, 8]", args = "kernel_size: [3, 2], stride: [2, 3], padding: [1, 1], ceil_mode: true, count_include_pad: false";
  else if (op == "max_pool2d") x = "[2, 4, 7, 8]", args = "kernel_size: 3, stride: 2, padding: 1, ceil_mode: true";
  else if (op == "flatten") args = "start_dim: 1";
  else if (op == "cast") args = fmt::format("dtype: {}", t == "float32" ? "bfloat16" : "float32");
  else if (op == "linear") {
    args = "weight: w, bias: b";
    extra = fmt::format("  w: {{shape: [5, 6], dtype: {0}}}\n  b: {{shape: [5], dtype: {0}}}\n", t);
  } else if (op == "matmul") args = "other: y", extra = fmt::format("  y: {{shape: [6, 4], dtype: {}}}\n", t);
  else if (op == "rsqrt") init = ", init: {uniform: {low: 0.5, high: 2.0}}";
  else if (op == "hardswish" || op == "hardsigmoid") init = ", init: {normal: {std: 3.0}}";  // both clamps and the ramp
  else if (op == "clamp") args = "min: -0.5, max: 0.75";
  else if (op == "add" || op == "sub" || op == "mul") args = "other: y", extra = fmt::format("  y: {{shape: [8, 1], dtype: {}}}\n", t);
  else if (op == "div") {
    args = "other: y";
    extra = fmt::format("  y: {{shape: [8, 1], dtype: {}, init: {{uniform: {{low: 0.5, high: 2.0}}}}}}\n", t);
  }
  return fmt::format("version: 1\nname: one-op\ninputs:\n  x: {{shape: {}, dtype: {}{}}}\n{}graph:\n  - {}: {{input: x{}}}\ncases: [{{gate: true}}]\n",
                     x, t, init, extra, op, args.empty() ? "" : ", " + args);
}

void expect_generic_passes(const workload_spec& spec, const std::string& label, device_kind device = device_kind::cpu) {
  expect_passes(spec, label, device == device_kind::cuda ? "generic_cuda" : "generic_cpu", device);
}

// Compiles the sources together (a pool of threads), so that the checks after find them in the compile cache.
void warm(const std::vector<workload_spec>& specs, device_kind device) {
  const family* f = find_family(device == device_kind::cuda ? "generic_cuda" : "generic_cpu", device);
  std::vector<compile_request> reqs;
  for (auto& s : specs) reqs.push_back({f->emit(s, f->default_variant(s)), device, "sm_90a", {}, s.name});
  shared_compiler().compile_batch(reqs);
}

void every_op(device_kind device) {
  std::vector<std::pair<std::string, workload_spec>> specs;
  std::set<std::string> tried;
  for (const std::string& op : op_names())
    for (const char* t : {"float32", "float16", "bfloat16", "float64"}) {
      specs.emplace_back(op + " " + t, parse(one_op_spec(op, t)));
      tried.insert(op);
    }
  std::vector<workload_spec> all;
  for (auto& [_, s] : specs) all.push_back(s);
  warm(all, device);
  for (auto& [label, s] : specs) expect_generic_passes(s, label, device);
  EXPECT_EQ(tried.size(), op_table().size());
}

TEST(generic_verify, every_op_in_every_floating_dtype) { every_op(device_kind::cpu); }

TEST(generic_verify_cuda, every_op_in_every_floating_dtype) {
  REQUIRE_GPU();
  every_op(device_kind::cuda);
}

const fs::path k_good = fs::path(KFORGE_SOURCE_DIR) / "tests" / "data" / "specs" / "good";

TEST(generic_verify_cuda, mixed_graphs_extra_outputs_and_the_pointwise_family) {
  REQUIRE_GPU();
  for (const char* f : {"elementwise-ops.yaml", "residual-rmsnorm.yaml", "mlp.yaml", "norms.yaml", "everything.yaml"})
    expect_generic_passes(load_spec((k_good / f).string()), f, device_kind::cuda);
  // pointwise_cuda on chains of every kind of operand, in each of its paths.
  const fs::path work = fs::path(KFORGE_SOURCE_DIR) / "workloads";
  for (const char* w : {"llama3-8b-swiglu.yaml", "gemma2-2b-geglu.yaml", "gpt2-gelu-tanh.yaml"}) {
    const workload_spec s = load_spec((work / w).string());
    expect_passes(s, w, "pointwise_cuda", device_kind::cuda);
    expect_passes(s, w, "pointwise_cuda", device_kind::cuda,
                  {{"vec", "16"}, {"loads", "4"}, {"waves", "2"}, {"store", "streaming"}, {"math", "fast"}});
    expect_passes(s, w, "pointwise_cuda", device_kind::cuda, {{"vec", "1"}, {"loads", "1"}, {"block", "1024"}});
  }
  workload_spec chain = load_spec((k_good / "elementwise-ops.yaml").string());
  chain.outputs.clear();  // the last op's result only: pointwise writes that
  chain.graph[5].as.clear();
  expect_passes(chain, "every elementwise op, broadcast operands", "pointwise_cuda", device_kind::cuda);
  expect_passes(chain, "every elementwise op, broadcast operands", "pointwise_cuda", device_kind::cuda, {{"vec", "2"}});
}

TEST(generic_verify, mixed_graphs_and_extra_outputs) {
  for (const char* f : {"elementwise-ops.yaml", "residual-rmsnorm.yaml", "mlp.yaml", "norms.yaml", "everything.yaml"})
    expect_generic_passes(load_spec((k_good / f).string()), f);
  // A bool mask broadcast over rows, which pointwise_cpu does not read (it takes floating operands): generic's.
  const workload_spec fill = load_spec((k_good.parent_path() / "families" / "bool-fill-mul-f32.yaml").string());
  std::string why;
  EXPECT_FALSE(find_family("pointwise_cpu", device_kind::cpu)->covers(fill, &why));
  EXPECT_NE(why.find("an operand is bool"), std::string::npos) << why;
  expect_generic_passes(fill, "bool-fill-mul-f32.yaml");
  // A linear layer with a long inner dim in float32 (a float sum over K=512 drifts past float32's tolerance).
  expect_generic_passes(parse(R"(version: 1
name: long-k
inputs:
  x: {shape: [T, 512], dtype: float32}
  w: {shape: [96, 512], dtype: float32}
  b: {shape: [96], dtype: float32}
graph:
  - linear: {input: x, weight: w, bias: b}
cases: [{T: 33, gate: true}, {T: 3}]
)"), "linear over K=512");
  // Vector operands of matmul and linear, a reduction in the middle of elementwise runs, a named reduction result.
  expect_generic_passes(parse(R"(version: 1
name: vectors
inputs:
  v: {shape: [6], dtype: float32}
  m: {shape: [2, 6, 3], dtype: float32}
  u: {shape: [3], dtype: float32}
graph:
  - matmul: {input: v, other: m}
  - matmul: {other: u}
cases: [{gate: true}]
)"), "vector matmuls");
  expect_generic_passes(parse(R"(version: 1
name: middle
inputs:
  x: {shape: [B, 4, 10], dtype: bfloat16}
  r: {shape: [B, 4, 10], dtype: bfloat16}
  g: {shape: [10], dtype: bfloat16}
graph:
  - add: {input: x, other: r, as: h}
  - scale: {factor: 2.0}
  - softmax: {dim: -1, as: p}
  - mul: {other: g}
  - log_softmax: {dim: 1}
outputs: [out, p, h]
cases: [{B: 2, gate: true}, {B: 1}]
)"), "reduction between elementwise runs");
}

TEST(generic_cpu, is_offered_only_where_no_family_covers) {
  const workload_spec matmul = parse(R"(version: 1
name: matmul
inputs:
  x: {shape: [4, 6], dtype: float32}
  y: {shape: [6, 3], dtype: float32}
graph:
  - matmul: {input: x, other: y}
cases: [{gate: true}]
)");
  std::vector<std::string> names;
  for (auto* f : covering_families(matmul, device_kind::cpu)) names.push_back(f->name());
  EXPECT_NE(std::find(names.begin(), names.end(), "generic_cpu"), names.end());
  const workload_spec softmax = parse(one_op_spec("log_softmax", "float32"));  // over the last dim: row_softmax
  for (auto* f : covering_families(softmax, device_kind::cpu)) EXPECT_NE(f->name(), "generic_cpu");
  workload_spec named = softmax;
  named.search.families = {"generic"};
  ASSERT_EQ(covering_families(named, device_kind::cpu).size(), 1u);
  EXPECT_EQ(covering_families(named, device_kind::cpu)[0]->name(), "generic_cpu");
}

}  // namespace
}  // namespace kf
