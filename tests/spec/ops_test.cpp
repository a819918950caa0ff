// The op registry: schema lookups and shape/dtype inference per case, including the mismatches it must catch.
#include <gtest/gtest.h>

#include "spec/ops.h"
#include "spec/spec_parse.h"

namespace kf {
namespace {

workload_spec parse_ok(const std::string& text) {
  workload_spec s;
  auto diags = parse_spec_text(text, "t.yaml", &s);
  std::string all;
  for (auto& d : diags) all += d.str() + "\n";
  EXPECT_TRUE(diags.empty()) << all;
  return s;
}

// A spec whose graph is `ops` over x: [A, B, C, D] (bound by the single case) plus named extra inputs.
std::string spec_text(const std::string& x_shape, const std::string& x_dtype, const std::string& graph,
                      const std::string& extra_inputs = "", const std::string& cases = "[{}]") {
  return "version: 1\nname: t\ninputs:\n  x: {shape: " + x_shape + ", dtype: " + x_dtype + "}\n" + extra_inputs +
         "graph:\n" + graph + "cases: " + cases + "\n";
}

// The first diagnostic the parser gives `text` (its field empty and message "no error" where there is none).
spec_diagnostic first_diagnostic(const std::string& text) {
  workload_spec s;
  auto d = parse_spec_text(text, "t.yaml", &s);
  if (d.empty()) {
    spec_diagnostic none;
    none.message = "no error";
    return none;
  }
  return d[0];
}

std::vector<tensor_desc> outputs_of(const std::string& text) {
  workload_spec s = parse_ok(text);
  return infer_outputs(s, s.cases.at(0));
}

TEST(ops, registry_lists_every_op_with_a_schema) {
  auto names = op_names();
  for (const char* n : {"softcap", "scale", "add_mask", "softmax", "log_softmax", "topk", "group_norm", "layer_norm",
                        "rms_norm", "silu", "gelu", "adaptive_avg_pool2d", "avg_pool2d", "max_pool2d", "flatten", "cast", "linear",
                        "matmul"})
    EXPECT_NE(find_op(n), nullptr) << n;
  EXPECT_EQ(names.size(), op_table().size());
  EXPECT_EQ(find_op("nope"), nullptr);
  EXPECT_TRUE(find_op("softmax")->find_arg("dim")->required);
  EXPECT_FALSE(find_op("softmax")->find_arg("dtype")->required);
  EXPECT_EQ(find_op("topk")->output_names, (std::vector<std::string>{"values", "indices"}));
}

TEST(ops, softmax_keeps_input_dtype_unless_given) {
  auto o = outputs_of(spec_text("[2, 3]", "bfloat16", "  - softmax: {input: x, dim: -1}\n"));
  EXPECT_EQ(o.at(0), (tensor_desc{{2, 3}, dtype::bfloat16}));
  o = outputs_of(spec_text("[2, 3]", "bfloat16", "  - softmax: {input: x, dim: -1, dtype: float32}\n"));
  EXPECT_EQ(o.at(0).type, dtype::float32);
}

TEST(ops, gemma_attention_chain_ends_in_bfloat16) {
  auto o = outputs_of(spec_text("[1, 8, S, S]", "bfloat16",
                                "  - softcap: {input: x, cap: 50.0}\n  - softmax: {dim: -1, dtype: float32}\n  - cast: {dtype: bfloat16}\n",
                                "", "[{S: 7}]"));
  EXPECT_EQ(o.at(0), (tensor_desc{{1, 8, 7, 7}, dtype::bfloat16}));
}

TEST(ops, topk_outputs_values_and_int64_indices) {
  auto o = outputs_of(spec_text("[T, 256]", "float32", "  - topk: {input: x, k: 8}\n", "", "[{T: 5}]"));
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o[0], (tensor_desc{{5, 8}, dtype::float32}));
  EXPECT_EQ(o[1], (tensor_desc{{5, 8}, dtype::int64}));
}

TEST(ops, pool_then_flatten) {
  auto o = outputs_of(spec_text("[3, 2048, 7, 7]", "float16",
                                "  - adaptive_avg_pool2d: {input: x, output_size: 1}\n  - flatten: {start_dim: 1}\n"));
  EXPECT_EQ(o.at(0), (tensor_desc{{3, 2048}, dtype::float16}));
  o = outputs_of(spec_text("[3, 4, 7, 7]", "float32", "  - adaptive_avg_pool2d: {input: x, output_size: [2, 3]}\n"));
  EXPECT_EQ(o.at(0).shape, (std::vector<int64_t>{3, 4, 2, 3}));
}

// avg_pool2d sizes its output as torch does (pooling_output_shape): rounded down, or up with ceil_mode but never a
// window that starts past the input and its left padding; stride defaults to the kernel; padding at most half the
// kernel. The sizes below are torch 2.11's for the same calls.
TEST(ops, avg_pool2d_sizes_its_output_as_torch_does) {
  auto shape_of = [](const std::string& x, const std::string& args) {
    return outputs_of(spec_text(x, "float16", "  - avg_pool2d: {input: x, " + args + "}\n")).at(0).shape;
  };
  EXPECT_EQ(shape_of("[2, 3, 9, 9]", "kernel_size: 2"), (std::vector<int64_t>{2, 3, 4, 4}));
  EXPECT_EQ(shape_of("[2, 3, 9, 9]", "kernel_size: 2, ceil_mode: true"), (std::vector<int64_t>{2, 3, 5, 5}));
  EXPECT_EQ(shape_of("[3, 9, 9]", "kernel_size: 3, stride: 2, padding: 1"), (std::vector<int64_t>{3, 5, 5}));
  EXPECT_EQ(shape_of("[1, 1, 9, 9]", "kernel_size: 3, padding: 1, ceil_mode: true"), (std::vector<int64_t>{1, 1, 4, 4}));
  // ceil_mode's sixth window would start at (6 - 1) x 2 = 10 >= 9 + 1 (past the input and its padding): dropped.
  EXPECT_EQ(shape_of("[1, 1, 9, 9]", "kernel_size: 2, padding: 1, ceil_mode: true"), (std::vector<int64_t>{1, 1, 5, 5}));
  EXPECT_EQ(shape_of("[1, 1, 7, 12]", "kernel_size: [3, 2], stride: [2, 5], padding: [1, 0]"), (std::vector<int64_t>{1, 1, 4, 3}));
  EXPECT_EQ(shape_of("[1, 1, 6, 6]", "kernel_size: 2, stride: []"), (std::vector<int64_t>{1, 1, 3, 3}));

  // max_pool2d sizes its output the same way.
  EXPECT_EQ(outputs_of(spec_text("[2, 64, 112, 112]", "float16", "  - max_pool2d: {input: x, kernel_size: 3, stride: 2, padding: 1}\n")).at(0).shape,
            (std::vector<int64_t>{2, 64, 56, 56}));
  EXPECT_EQ(outputs_of(spec_text("[1, 8, 9, 9]", "float16", "  - max_pool2d: {input: x, kernel_size: 2, padding: 1, ceil_mode: true}\n")).at(0).shape,
            (std::vector<int64_t>{1, 8, 5, 5}));
  auto error_of = [](const std::string& x, const std::string& args) {
    return first_diagnostic(spec_text(x, "float16", "  - avg_pool2d: {input: x, " + args + "}\n"));
  };
  spec_diagnostic d = error_of("[1, 1, 9, 9]", "kernel_size: 3, padding: 2");
  EXPECT_NE(d.field.find("padding"), std::string::npos) << d.str();
  EXPECT_NE(d.message.find("more than half the kernel"), std::string::npos) << d.str();
  d = error_of("[1, 1, 2, 9]", "kernel_size: 3");
  EXPECT_NE(d.message.find("does not fit the input's height of 2"), std::string::npos) << d.str();
  d = error_of("[1, 1, 9, 9]", "kernel_size: 2, divisor_override: 0");
  EXPECT_NE(d.field.find("divisor_override"), std::string::npos) << d.str();
  d = error_of("[1, 1, 9, 9]", "kernel_size: [2, 2, 2]");
  EXPECT_NE(d.message.find("expected an integer or [h, w]"), std::string::npos) << d.str();
  d = error_of("[9, 9]", "kernel_size: 2");
  EXPECT_NE(d.message.find("3-d or 4-d"), std::string::npos) << d.str();
}

// A number as add/sub/mul/div's other is a Python scalar operand: x's shape and dtype stay (no promotion), and it
// names no input.
TEST(ops, a_number_operand_keeps_the_inputs_dtype) {
  workload_spec s = parse_ok(spec_text("[2, 3]", "bfloat16",
                                       "  - add: {input: x, other: 1.0}\n  - mul: {other: 1.702}\n  - sub: {other: -3}\n  - div: {other: 0.5}\n"));
  EXPECT_EQ(infer_outputs(s, s.cases.at(0)).at(0), (tensor_desc{{2, 3}, dtype::bfloat16}));
  EXPECT_TRUE(is_number_operand(s.graph[1], "other"));
  EXPECT_DOUBLE_EQ(s.graph[1].args.at("other").get<double>(), 1.702);
  EXPECT_EQ(tensor_arg_inputs(s.graph[1]), std::vector<std::string>{});
  EXPECT_EQ(tensor_arg_inputs(s.graph[0]), std::vector<std::string>{"x"});
}

TEST(ops, norms_keep_shape_and_dtype) {
  std::string wb = "  w: {shape: [C], dtype: bfloat16}\n  b: {shape: [C], dtype: bfloat16}\n";
  auto o = outputs_of(spec_text("[1, C, 5, 5]", "bfloat16", "  - group_norm: {input: x, num_groups: 4, weight: w, bias: b}\n  - silu\n",
                                wb, "[{C: 8}]"));
  EXPECT_EQ(o.at(0), (tensor_desc{{1, 8, 5, 5}, dtype::bfloat16}));
  o = outputs_of(spec_text("[4, 16]", "float32", "  - rms_norm: {input: x, normalized_shape: 16, weight: w}\n",
                           "  w: {shape: [16], dtype: float32}\n"));
  EXPECT_EQ(o.at(0), (tensor_desc{{4, 16}, dtype::float32}));
}

TEST(ops, linear_and_matmul_shapes) {
  auto o = outputs_of(spec_text("[2, 3, 16]", "float32", "  - linear: {input: x, weight: w, bias: b}\n",
                                "  w: {shape: [5, 16], dtype: float32}\n  b: {shape: [5], dtype: float32}\n"));
  EXPECT_EQ(o.at(0).shape, (std::vector<int64_t>{2, 3, 5}));
  o = outputs_of(spec_text("[4, 2, 3]", "float32", "  - matmul: {input: x, other: y}\n", "  y: {shape: [3, 7], dtype: float32}\n"));
  EXPECT_EQ(o.at(0).shape, (std::vector<int64_t>{4, 2, 7}));
  o = outputs_of(spec_text("[3]", "float32", "  - matmul: {input: x, other: y}\n", "  y: {shape: [2, 3, 7], dtype: float32}\n"));
  EXPECT_EQ(o.at(0).shape, (std::vector<int64_t>{2, 7}));
}

TEST(ops, add_mask_promotes_types) {
  auto o = outputs_of(spec_text("[2, 4, 4]", "bfloat16", "  - add_mask: {input: x, mask: m}\n",
                                "  m: {shape: [4, 4], dtype: float32, init: causal_mask}\n"));
  EXPECT_EQ(o.at(0), (tensor_desc{{2, 4, 4}, dtype::float32}));
}

TEST(ops, masked_fill_takes_a_bool_mask_that_keeps_the_shape_and_a_value_the_type_holds) {
  const std::string mask = "  m: {shape: [1, 4, 4], dtype: bool, init: causal_mask}\n";
  auto o = outputs_of(spec_text("[2, 3, 4, 4]", "float16", "  - masked_fill: {input: x, mask: m, value: -inf}\n", mask));
  EXPECT_EQ(o.at(0), (tensor_desc{{2, 3, 4, 4}, dtype::float16}));  // x's type: the mask does not promote
  workload_spec s = parse_ok(spec_text("[2, 3, 4, 4]", "float32", "  - masked_fill: {input: x, mask: m, value: -3.4028234663852886e38}\n", mask));
  EXPECT_EQ(s.graph[0].args["value"], -3.4028234663852886e38);
  s = parse_ok(spec_text("[2, 3, 4, 4]", "float32", "  - masked_fill: {input: x, mask: m, value: -.inf}\n", mask));
  EXPECT_EQ(s.graph[0].args["value"], "-inf");  // JSON holds no infinity
  EXPECT_EQ(number_value(s.graph[0].args["value"]), -INFINITY);
  auto first_error = [](const std::string& text) {
    const spec_diagnostic d = first_diagnostic(text);
    return d.field + ": " + d.message;
  };
  // A float mask is add_mask's; -1e9 overflows float16 (torch refuses it); a mask may not grow x; NaN is no value.
  EXPECT_NE(first_error(spec_text("[4, 4]", "float32", "  - masked_fill: {input: x, mask: m, value: 0}\n",
                                  "  m: {shape: [4, 4], dtype: float32}\n")).find("expected a bool mask"), std::string::npos);
  auto e = first_error(spec_text("[1, 4, 4]", "float16", "  - masked_fill: {input: x, mask: m, value: -1e9}\n", mask));
  EXPECT_NE(e.find("graph[0].masked_fill.value"), std::string::npos) << e;
  EXPECT_NE(e.find("does not fit the input's float16"), std::string::npos) << e;
  EXPECT_NE(first_error(spec_text("[4, 4]", "float32", "  - masked_fill: {input: x, mask: m, value: 0}\n", mask)).find("would grow"), std::string::npos);
  EXPECT_NE(first_error(spec_text("[1, 4, 4]", "float32", "  - masked_fill: {input: x, mask: m, value: .nan}\n", mask)).find("expected a number, -inf or inf"), std::string::npos);
}

// torch.where(condition, x, value): masked_fill's mirror, named for its condition.
TEST(ops, where_keeps_x_where_its_bool_condition_holds) {
  const std::string keep = "  keep: {shape: [4, 4], dtype: bool, init: {randint: {high: 2}}}\n";
  auto o = outputs_of(spec_text("[2, 4, 4]", "bfloat16", "  - where: {input: x, condition: keep, value: -inf}\n", keep));
  EXPECT_EQ(o.at(0), (tensor_desc{{2, 4, 4}, dtype::bfloat16}));
  const spec_diagnostic d = first_diagnostic(spec_text("[4, 4]", "float32", "  - where: {input: x, condition: m, value: 0}\n",
                                                       "  m: {shape: [4, 4], dtype: float32}\n"));
  EXPECT_EQ(d.field, "graph[0].where.condition");
  EXPECT_NE(d.message.find("expected a bool condition (true where x goes), got float32"), std::string::npos) << d.message;
}

TEST(ops, a_bool_input_is_drawn_as_a_mask_or_not_at_all) {
  spec_diagnostic d = first_diagnostic(spec_text("[4, 4]", "float32", "  - masked_fill: {input: x, mask: m, value: 0}\n",
                                                 "  m: {shape: [4, 4], dtype: bool}\n"));
  EXPECT_EQ(d.field, "inputs.m");
  EXPECT_NE(d.message.find("a bool input needs an init"), std::string::npos) << d.message;
  d = first_diagnostic(spec_text("[4, 4]", "float32", "  - masked_fill: {input: x, mask: m, value: 0}\n",
                                 "  m: {shape: [4, 4], dtype: bool, init: {randint: {high: 3}}}\n"));
  EXPECT_NE(d.message.find("a bool input holds 0 and 1"), std::string::npos) << d.message;
  parse_ok(spec_text("[4, 4]", "float32", "  - masked_fill: {input: x, mask: m, value: 0}\n",
                     "  m: {shape: [4, 4], dtype: bool, init: {randint: {high: 2}}}\n"));
}

TEST(ops, mismatch_throws_user_error_naming_the_field_and_case) {
  std::string text = spec_text("[1, C, 4, 4]", "float32", "  - group_norm: {input: x, num_groups: 4}\n", "", "[{C: 8}, {C: 6}]");
  workload_spec s;
  auto diags = parse_spec_text(text, "t.yaml", &s);
  ASSERT_EQ(diags.size(), 1u);  // the parser reports the case that fails, too
  EXPECT_EQ(diags[0].field, "graph[0].group_norm.num_groups");
  EXPECT_NE(diags[0].message.find("case C=6"), std::string::npos) << diags[0].message;
  EXPECT_NO_THROW(infer_outputs(s, s.cases[0]));
  try {
    infer_outputs(s, s.cases[1]);
    FAIL() << "expected a user_error";
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("graph[0].group_norm.num_groups: expected a positive divisor of the 6 channels, got 4"),
              std::string::npos) << e.what();
    EXPECT_EQ(e.where().line, 6);
  }
}

TEST(ops, helpers_follow_torch) {
  std::vector<int64_t> out;
  EXPECT_TRUE(broadcast_shapes({2, 1, 4}, {3, 1}, &out));
  EXPECT_EQ(out, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_FALSE(broadcast_shapes({2, 3}, {4}, &out));
  EXPECT_EQ(promote_types(dtype::bfloat16, dtype::float16), dtype::float32);
  EXPECT_EQ(promote_types(dtype::bfloat16, dtype::bfloat16), dtype::bfloat16);
  EXPECT_EQ(promote_types(dtype::int64, dtype::float16), dtype::float16);
  EXPECT_EQ(wrap_dim(-1, 4), 3);
  EXPECT_EQ(wrap_dim(4, 4), -1);
  EXPECT_EQ(wrap_dim(-5, 4), -1);
}

TEST(ops, tensor_inputs_and_outputs_of_a_graph) {
  workload_spec s = parse_ok(spec_text("[2, 4, 4]", "float32", "  - add_mask: {input: x, mask: m}\n  - softmax: {dim: -1}\n",
                                       "  m: {shape: [4, 4], dtype: float32, init: causal_mask}\n"));
  EXPECT_EQ(tensor_arg_inputs(s.graph[0]), (std::vector<std::string>{"x", "m"}));
  EXPECT_EQ(primary_input(s), "x");
  EXPECT_EQ(output_names(s), (std::vector<std::string>{"out"}));
  graph_shapes g;
  graph_error e;
  ASSERT_TRUE(try_infer_graph(s, s.cases[0], &g, &e)) << e.message;
  EXPECT_EQ(g.steps.size(), 2u);
  EXPECT_EQ(g.inputs.at(1), (tensor_desc{{4, 4}, dtype::float32}));
}

}  // namespace
}  // namespace kf
