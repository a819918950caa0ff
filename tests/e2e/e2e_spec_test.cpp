// The e2e entry's YAML (lib/e2e/e2e_spec.h): what it reads, and each mistake named with file:line:column.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/e2e_spec.h"
#include "util/fs.h"

using namespace kf;
using ::testing::HasSubstr;

namespace {

const std::string k_model = std::string(KFORGE_SOURCE_DIR) + "/tests/data/e2e/tiny_model.py:make";

std::string error_of(const std::string& text) {
  try {
    e2e::parse_e2e_spec_text(text, "g.e2e.yaml");
  } catch (const user_error& e) { return e.what(); }
  return "";
}

}  // namespace

TEST(e2e_spec, reads_an_entry) {
  auto s = e2e::parse_e2e_spec_text("e2e:\n  model: " + k_model +
                                        "\n  args: {scale: 0.05, layers: 1, fast: true}\n  must_beat: "
                                        "[eager]\n"
                                        "  min_predicted_fraction: 0.8\n  max_regression: 3%\n"
                                        "  variants: [kforge]\n  tolerance: {rtol: 0.01, atol: 0.001}\n",
                                    "g.e2e.yaml");
  EXPECT_EQ(s.name, "tiny_model");
  EXPECT_EQ(s.model, k_model);
  EXPECT_EQ(s.model_args, "scale=0.05,layers=1,fast=True");
  EXPECT_EQ(s.must_beat, std::vector<std::string>{"eager"});
  EXPECT_EQ(s.variants, (std::vector<std::string>{"eager", "kforge"}));  // eager always: the reference
  ASSERT_TRUE(s.min_predicted_fraction.has_value());
  EXPECT_DOUBLE_EQ(*s.min_predicted_fraction, 0.8);
  EXPECT_DOUBLE_EQ(s.max_regression, 0.03);
  EXPECT_DOUBLE_EQ(*s.rtol, 0.01);
  EXPECT_DOUBLE_EQ(*s.atol, 0.001);
}

TEST(e2e_spec, the_checked_in_test_entry_parses_and_is_recognized) {
  const std::string path = std::string(KFORGE_SOURCE_DIR) + "/tests/data/e2e/tiny.e2e.yaml";
  EXPECT_TRUE(e2e::is_e2e_file(path));
  EXPECT_FALSE(e2e::is_e2e_file(std::string(KFORGE_SOURCE_DIR) + "/workloads/gpt2-gelu-tanh.yaml"));
  EXPECT_FALSE(e2e::is_e2e_file(std::string(KFORGE_SOURCE_DIR) + "/tests/data/e2e/tiny_model.py"));
}

TEST(e2e_spec, mistakes_are_named_with_file_and_line) {
  EXPECT_THAT(error_of("e2e:\n  model: " + k_model + "\n  must_beats: [eager]\n"),
              HasSubstr("g.e2e.yaml:3:3: e2e.must_beats: unknown field `must_beats`; did you mean `must_beat`?"));
  EXPECT_THAT(error_of("e2e:\n  model: nowhere/model.py:make\n"),
              HasSubstr("g.e2e.yaml:2:10: e2e.model: nowhere/model.py does not exist"));
  EXPECT_THAT(error_of("e2e:\n  model: " + k_model.substr(0, k_model.size() - 5) + "\n"),
              HasSubstr("expected FILE.py:FUNCTION"));
  EXPECT_THAT(error_of("e2e:\n  model: " + k_model + "\n  variants: [eager, kforge, compiled]\n"),
              HasSubstr("g.e2e.yaml:3:29: e2e.variants[2]"));
  EXPECT_THAT(error_of("e2e:\n  model: " + k_model + "\n  variants: [kforge]\n  must_beat: [compile]\n"),
              HasSubstr("beating compile needs the compile_kforge variant"));
  EXPECT_THAT(error_of("e2e:\n  model: " + k_model + "\n  args: {dims: [1, 2]}\n"), HasSubstr("e2e.args.dims"));
  EXPECT_THAT(error_of("e2e: [model\n"), HasSubstr("g.e2e.yaml:2:1: not valid YAML"));
  EXPECT_THAT(error_of("model: x.py:make\n"), HasSubstr("g.e2e.yaml:1:1"));
  EXPECT_THAT(error_of("e2e:\n  name: x\n"), HasSubstr("model"));
}

TEST(e2e_spec, a_missing_file_is_the_users_mistake) {
  EXPECT_THROW(e2e::load_e2e_spec("/nonexistent/x.e2e.yaml"), user_error);
}
