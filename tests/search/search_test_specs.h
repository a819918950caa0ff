// Small workload specs built in code for the search tests (no YAML parser needed): one per graph shape the
// cpu families cover, with a few variants each.
#pragma once
#include <string>
#include <vector>

#include "spec/spec.h"

namespace kf::test {

inline input_spec tensor_input(std::string name, std::vector<dim> shape, dtype t, std::string format = "contiguous") {
  input_spec in;
  in.name = std::move(name);
  in.shape = std::move(shape);
  in.type = t;
  in.memory_format = std::move(format);
  return in;
}

inline dim sym(const char* s) { return dim{s, 0}; }
inline dim lit(int64_t v) { return dim{"", v}; }

inline case_spec make_case(std::vector<std::pair<std::string, int64_t>> b, bool gate) {
  case_spec c;
  for (auto& [k, v] : b) c.name += (c.name.empty() ? "" : ",") + k + "=" + std::to_string(v);
  c.bindings = std::move(b);
  c.gate = gate;
  return c;
}

// softcap -> softmax(float32) -> cast(bf16) on bf16 [B, H, S, S], optionally with a mask, log and top-k.
inline workload_spec softmax_spec(bool mask = false, bool log = false, int64_t topk = 0, dtype in = dtype::bfloat16) {
  workload_spec s;
  s.name = "test-softmax";
  s.inputs.push_back(tensor_input("x", {sym("B"), sym("H"), sym("S"), sym("S")}, in));
  s.graph.push_back({"softcap", {{"input", "x"}, {"cap", 50.0}}, {}});
  if (mask) {
    s.inputs.push_back(tensor_input("m", {sym("S"), sym("S")}, dtype::float32));
    s.graph.push_back({"add_mask", {{"mask", "m"}}, {}});
  }
  s.graph.push_back({"scale", {{"factor", 0.5}}, {}});
  s.graph.push_back({log ? "log_softmax" : "softmax", {{"dim", -1}, {"dtype", "float32"}}, {}});
  s.graph.push_back({"cast", {{"dtype", "bfloat16"}}, {}});
  if (topk) s.graph.push_back({"topk", {{"k", topk}, {"dim", -1}}, {}});
  s.cases = {make_case({{"B", 1}, {"H", 2}, {"S", 64}}, true), make_case({{"B", 2}, {"H", 3}, {"S", 37}}, false)};
  s.search.families = {"row_softmax"};
  return s;
}

// (log_)softmax over dim `dim` of [B, C, H, W] (a segmentation head's classes at dim 1), a scale before it and a
// cast of the float32 result to `out` after; cases with inner dims that are and are not a whole number of vectors.
inline workload_spec col_softmax_spec(int dim = 1, bool log = false, dtype in = dtype::float16,
                                      dtype out = dtype::float32) {
  workload_spec s;
  s.name = "test-col-softmax";
  s.inputs.push_back(tensor_input("x", {sym("B"), sym("C"), sym("H"), sym("W")}, in));
  s.graph.push_back({"scale", {{"input", "x"}, {"factor", 0.5}}, {}});
  s.graph.push_back({log ? "log_softmax" : "softmax", {{"dim", dim}, {"dtype", "float32"}}, {}});
  if (out != dtype::float32) s.graph.push_back({"cast", {{"dtype", dtype_name(out)}}, {}});
  s.cases = {make_case({{"B", 2}, {"C", 19}, {"H", 16}, {"W", 16}}, true),
             make_case({{"B", 1}, {"C", 150}, {"H", 5}, {"W", 7}}, false)};
  s.search.families = {"col_softmax"};
  return s;
}

// group_norm(groups, weight, bias) [-> silu] on [N, C, H, W].
inline workload_spec group_norm_spec(bool silu = true, dtype in = dtype::bfloat16, std::string format = "contiguous") {
  workload_spec s;
  s.name = "test-groupnorm";
  s.inputs.push_back(tensor_input("x", {sym("N"), lit(32), sym("H"), sym("W")}, in, format));
  s.inputs.push_back(tensor_input("w", {lit(32)}, dtype::float32));
  s.inputs.push_back(tensor_input("b", {lit(32)}, dtype::float32));
  s.graph.push_back({"group_norm", {{"input", "x"}, {"num_groups", 8}, {"weight", "w"}, {"bias", "b"}, {"eps", 1e-6}}, {}});
  if (silu) s.graph.push_back({"silu", nlohmann::json::object(), {}});
  s.cases = {make_case({{"N", 1}, {"H", 16}, {"W", 16}}, true), make_case({{"N", 2}, {"H", 5}, {"W", 7}}, false)};
  s.search.families = {"group_norm"};
  return s;
}

// layer_norm / rms_norm over the last dim of [R, D] -> gelu(tanh).
inline workload_spec row_norm_spec(bool rms, dtype in = dtype::float16) {
  workload_spec s;
  s.name = rms ? "test-rmsnorm" : "test-layernorm";
  s.inputs.push_back(tensor_input("x", {sym("R"), lit(100)}, in));
  s.inputs.push_back(tensor_input("w", {lit(100)}, in));
  nlohmann::json args = {{"input", "x"}, {"normalized_shape", {100}}, {"weight", "w"}, {"eps", 1e-5}};
  if (!rms) {
    s.inputs.push_back(tensor_input("b", {lit(100)}, in));
    args["bias"] = "b";
  }
  s.graph.push_back({rms ? "rms_norm" : "layer_norm", args, {}});
  s.graph.push_back({"gelu", {{"approximate", "tanh"}}, {}});
  s.cases = {make_case({{"R", 7}}, true)};
  return s;
}

// h = x + r; y = rms_norm(h) * w -> silu (optional), returning y and h (h first when `h_first`): a residual add
// whose sum is an extra output, over rows of 1000 elements in bfloat16.
inline workload_spec residual_rms_norm_spec(bool silu = false, bool h_first = false) {
  workload_spec s;
  s.name = "test-residual-rmsnorm";
  s.inputs.push_back(tensor_input("x", {sym("T"), lit(1000)}, dtype::bfloat16));
  s.inputs.push_back(tensor_input("r", {sym("T"), lit(1000)}, dtype::bfloat16));
  s.inputs.push_back(tensor_input("w", {lit(1000)}, dtype::bfloat16));
  s.graph.push_back({"add", {{"input", "x"}, {"other", "r"}}, {}, "h"});
  s.graph.push_back({"rms_norm", {{"normalized_shape", {1000}}, {"weight", "w"}, {"eps", 1e-6}}, {}, "y"});
  if (silu) {
    s.graph.back().as = "";
    s.graph.push_back({"silu", nlohmann::json::object(), {}, "y"});
  }
  s.outputs = h_first ? std::vector<std::string>{"h", "y"} : std::vector<std::string>{"y", "h"};
  s.cases = {make_case({{"T", 5}}, true), make_case({{"T", 1}}, false)};
  return s;
}

// adaptive_avg_pool2d(1) -> flatten on [N, C, 7, 7].
inline workload_spec pool_spec(std::string format = "contiguous", dtype in = dtype::float16) {
  workload_spec s;
  s.name = "test-avgpool";
  s.inputs.push_back(tensor_input("x", {sym("N"), sym("C"), lit(7), lit(7)}, in, format));
  s.graph.push_back({"adaptive_avg_pool2d", {{"input", "x"}, {"output_size", 1}}, {}});
  s.graph.push_back({"flatten", {{"start_dim", 1}}, {}});
  s.cases = {make_case({{"N", 2}, {"C", 300}}, true)};
  return s;
}

// adaptive_avg_pool2d to OH x OW (more than 1 x 1: torch's windows, overlapping where the sizes do not divide) over
// [N, C, 13, 10], then a cast to float32.
inline workload_spec adaptive_pool_spec(std::string format = "contiguous", dtype in = dtype::float16, int64_t oh = 6,
                                        int64_t ow = 4) {
  workload_spec s;
  s.name = "test-adaptive-avgpool";
  s.inputs.push_back(tensor_input("x", {sym("N"), sym("C"), lit(13), lit(10)}, in, format));
  s.graph.push_back({"adaptive_avg_pool2d", {{"input", "x"}, {"output_size", {oh, ow}}}, {}});
  s.graph.push_back({"cast", {{"dtype", "float32"}}, {}});
  s.cases = {make_case({{"N", 2}, {"C", 300}}, true), make_case({{"N", 1}, {"C", 3}}, false)};
  return s;
}

// avg_pool2d with `args` (kernel_size and whichever of stride, padding, ceil_mode, count_include_pad,
// divisor_override) over [N, C, H, W], then a cast to float32; two cases of different sizes (the output's follows x's).
// (max_pool_spec: the same with max_pool2d.)
inline workload_spec window_pool_spec(const std::string& op, nlohmann::json args, std::string format, dtype in) {
  workload_spec s;
  s.name = "test-" + op;
  s.inputs.push_back(tensor_input("x", {sym("N"), sym("C"), sym("H"), sym("W")}, in, format));
  args["input"] = "x";
  s.graph.push_back({op, args, {}});
  s.graph.push_back({"cast", {{"dtype", "float32"}}, {}});
  s.cases = {make_case({{"N", 2}, {"C", 24}, {"H", 13}, {"W", 10}}, true), make_case({{"N", 1}, {"C", 3}, {"H", 7}, {"W", 9}}, false)};
  return s;
}

inline workload_spec avg_pool_spec(nlohmann::json args, std::string format = "contiguous", dtype in = dtype::float16) {
  return window_pool_spec("avg_pool2d", std::move(args), std::move(format), in);
}
inline workload_spec max_pool_spec(nlohmann::json args, std::string format = "contiguous", dtype in = dtype::float16) {
  return window_pool_spec("max_pool2d", std::move(args), std::move(format), in);
}

// The max_pool2d windows the pooling tests try: ResNet's stem (3 x 3, stride 2, padded by one: the padding never the
// largest), YOLO's SPPF (5 x 5, stride 1, padded by two), 2 x 2, an uneven window with ceil_mode, and gaps.
inline std::vector<nlohmann::json> max_pool_windows() {
  return {
      {{"kernel_size", 3}, {"stride", 2}, {"padding", 1}},
      {{"kernel_size", 5}, {"stride", 1}, {"padding", 2}},
      {{"kernel_size", 2}},
      {{"kernel_size", {3, 2}}, {"stride", {2, 1}}, {"padding", {1, 0}}, {"ceil_mode", true}},
      {{"kernel_size", 2}, {"stride", 3}},
  };
}

// The avg_pool2d windows the pooling tests try: DenseNet's and ResNet-D's 2 x 2 (stride the kernel), a 3 x 3 stride-2
// window padded by one (counting the padding), Inception's 3 x 3 stride-1 with the padding not counted, an uneven
// window and stride with ceil_mode, a divisor_override, and a stride longer than the window (rows skipped).
inline std::vector<nlohmann::json> avg_pool_windows() {
  return {
      {{"kernel_size", 2}},
      {{"kernel_size", 3}, {"stride", 2}, {"padding", 1}},
      {{"kernel_size", 3}, {"stride", 1}, {"padding", 1}, {"count_include_pad", false}},
      {{"kernel_size", {3, 2}}, {"stride", {2, 1}}, {"padding", {1, 0}}, {"ceil_mode", true}, {"count_include_pad", false}},
      {{"kernel_size", 3}, {"stride", 2}, {"ceil_mode", true}, {"divisor_override", 5}},
      {{"kernel_size", 2}, {"stride", 3}},
  };
}

// silu(gate) * up on [T, D] (a SwiGLU activation): elementwise with a binary op, which no reduction family covers.
inline workload_spec swiglu_spec(dtype in = dtype::bfloat16) {
  workload_spec s;
  s.name = "test-swiglu";
  s.inputs.push_back(tensor_input("gate", {sym("T"), lit(256)}, in));
  s.inputs.push_back(tensor_input("up", {sym("T"), lit(256)}, in));
  s.graph.push_back({"silu", {{"input", "gate"}}, {}});
  s.graph.push_back({"mul", {{"other", "up"}}, {}});
  s.cases = {make_case({{"T", 64}}, true), make_case({{"T", 3}}, false)};
  return s;
}

// x @ y on float32 [M, 6] x [6, 3]: only the generic code generator covers it.
inline workload_spec matmul_spec() {
  workload_spec s;
  s.name = "test-matmul";
  s.inputs.push_back(tensor_input("x", {sym("M"), lit(6)}, dtype::float32));
  s.inputs.push_back(tensor_input("y", {lit(6), lit(3)}, dtype::float32));
  s.graph.push_back({"matmul", {{"input", "x"}, {"other", "y"}}, {}});
  s.cases = {make_case({{"M", 5}}, true)};
  return s;
}

// (x + bias) * scale -> gelu(tanh) -> cast: binary ops with a row-broadcast bias and a [T, 1] column operand.
inline workload_spec bias_gelu_spec(dtype in = dtype::float16) {
  workload_spec s;
  s.name = "test-bias-gelu";
  s.inputs.push_back(tensor_input("x", {sym("T"), lit(96)}, in));
  s.inputs.push_back(tensor_input("bias", {lit(96)}, in));
  s.inputs.push_back(tensor_input("col", {sym("T"), lit(1)}, dtype::float32));
  s.graph.push_back({"add", {{"input", "x"}, {"other", "bias"}}, {}});
  s.graph.push_back({"mul", {{"other", "col"}}, {}});
  s.graph.push_back({"gelu", {{"approximate", "tanh"}}, {}});
  s.graph.push_back({"cast", {{"dtype", "bfloat16"}}, {}});
  s.cases = {make_case({{"T", 33}}, true)};
  return s;
}

}  // namespace kf::test
