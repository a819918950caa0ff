// Reading trace.py's JSON (capture/trace.h): operators, tensor metadata, where values come from and go.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "capture/trace.h"
#include "capture_fixtures.h"
#include "util/error.h"

using namespace kf;
using namespace kf::capture;
using ::testing::HasSubstr;

TEST(capture_trace, reads_a_fixture_and_indexes_its_dataflow) {
  const trace t = test::fixture("norm_two_sizes");
  EXPECT_EQ(t.model, "tests/data/capture/generate.py:norm_two_sizes");
  EXPECT_EQ(t.device, "cpu");
  ASSERT_EQ(t.ops.size(), 14u);
  const traced_op& ln = t.ops[0];
  EXPECT_EQ(ln.name, "aten.native_layer_norm.default");
  EXPECT_EQ(ln.module, "norm");
  ASSERT_EQ(ln.outputs.size(), 3u);  // the result, mean and rstd
  EXPECT_EQ(t.meta(ln.outputs[0]).shape, (std::vector<int64_t>{2, 8, 64}));
  EXPECT_EQ(t.meta(ln.outputs[0]).dtype, "float32");
  // The normalized result goes on to the GELU; mean and rstd to nothing.
  ASSERT_EQ(t.consumers(ln.outputs[0]).size(), 1u);
  EXPECT_EQ(t.ops[t.consumers(ln.outputs[0])[0]].name, "aten.gelu.default");
  EXPECT_TRUE(t.consumers(ln.outputs[1]).empty());
  EXPECT_EQ(t.producer(ln.outputs[0]), 0u);
  // The input and the weight came from outside the operators.
  EXPECT_FALSE(t.producer(ln.inputs[0]).has_value());
  EXPECT_EQ(t.origins.at(ln.inputs[0]), (nlohmann::json{{"input", 0}}));
  EXPECT_EQ(t.origins.at(ln.inputs[1]), (nlohmann::json{{"param", "norm.weight"}}));
  EXPECT_EQ(t.model_outputs.size(), 2u);
  double sum = 0;
  for (const auto& op : t.ops) sum += op.time_us;
  EXPECT_DOUBLE_EQ(t.total_us(), sum);
}

TEST(capture_trace, an_in_place_operator_makes_a_new_value) {
  const trace t = test::fixture("resnet_tail");
  for (const auto& op : t.ops) {
    if (op.name != "aten.relu_.default") continue;
    ASSERT_EQ(op.outputs.size(), 1u);
    EXPECT_NE(op.outputs[0], op.inputs[0]) << "the relu_ at " << op.index << " reads and writes one value";
  }
}

TEST(capture_trace, strides_say_contiguous_or_channels_last) {
  tensor_meta m{0, {2, 8, 4, 4}, {128, 16, 4, 1}, "float32"};
  EXPECT_TRUE(m.contiguous());
  EXPECT_FALSE(m.channels_last());
  m.stride = {128, 1, 32, 8};
  EXPECT_FALSE(m.contiguous());
  EXPECT_TRUE(m.channels_last());
  m.stride = {128, 16, 1, 4};  // transposed: neither
  EXPECT_FALSE(m.contiguous());
  EXPECT_FALSE(m.channels_last());
  EXPECT_EQ(m.numel(), 256);
  EXPECT_TRUE(tensor_meta({0, {1}, {1}, "bfloat16"}).spec_dtype().has_value());
  EXPECT_EQ(tensor_meta({0, {1}, {1}, "bool"}).spec_dtype(), dtype::boolean);  // masked_fill's masks; not uint8
  EXPECT_FALSE(tensor_meta({0, {1}, {1}, "complex64"}).spec_dtype().has_value());
}

TEST(capture_trace, rejects_what_is_not_a_trace_naming_the_file) {
  try {
    parse_trace(nlohmann::json{{"version", 99}, {"ops", nlohmann::json::array()}}, "old.json");
    FAIL() << "a trace of another version was read";
  } catch (const user_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("old.json"));
    EXPECT_THAT(e.what(), HasSubstr("version 99"));
  }
  nlohmann::json bad = {{"version", k_trace_version},
                        {"ops", {{{"op", "aten.relu.default"}, {"args", {{{"value", 1}}}}}}}};
  EXPECT_THROW(parse_trace(bad, "t.json"), user_error);  // a tensor without shape and dtype
  EXPECT_THROW(read_trace("/nonexistent/trace.json"), user_error);
}
