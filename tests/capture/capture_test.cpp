// kforge capture's analysis start to end (capture/capture.h) and its rendering (render.h): ranking, names,
// what no spec expresses, the summary, and specs that parse.
#include <regex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "capture/capture.h"
#include "capture/render.h"
#include "capture_fixtures.h"
#include "spec/spec_parse.h"

using namespace kf;
using namespace kf::capture;
using ::testing::HasSubstr;

TEST(capture_analyze, ranks_workloads_by_share_and_lists_what_no_spec_expresses) {
  const capture_result r = analyze(test::fixture("llama_block"));
  ASSERT_GE(r.workloads.size(), 4u);
  for (size_t i = 1; i < r.workloads.size(); ++i) EXPECT_GE(r.workloads[i - 1].time_us, r.workloads[i].time_us);
  EXPECT_EQ(r.workloads[0].pattern, "add -> rms_norm");
  std::vector<std::string> left;
  for (const auto& u : r.uncovered) left.push_back(u.op);
  EXPECT_THAT(left, ::testing::Contains("aten.mm.default"));
  EXPECT_THAT(left, ::testing::Contains("aten.bmm.default"));
  for (size_t i = 1; i < r.uncovered.size(); ++i) EXPECT_GE(r.uncovered[i - 1].time_us, r.uncovered[i].time_us);
  double shares = 0;
  for (const auto& w : r.workloads) shares += r.share(w.time_us);
  for (const auto& u : r.uncovered) shares += r.share(u.time_us);
  EXPECT_NEAR(shares, 1.0, 1e-9);
}

TEST(capture_analyze, every_captured_spec_is_valid_and_says_where_it_came_from) {
  const std::regex name_re("[a-z0-9]+(-[a-z0-9]+)*");
  for (const auto& f : test::fixture_names()) {
    const capture_result r = analyze(test::fixture(f));
    ASSERT_FALSE(r.workloads.empty()) << f;
    std::set<std::string> names;
    for (size_t i = 0; i < r.workloads.size(); ++i) {
      const auto& w = r.workloads[i];
      EXPECT_TRUE(std::regex_match(w.spec.name, name_re)) << w.spec.name;
      EXPECT_TRUE(names.insert(w.spec.name).second) << "two workloads named " << w.spec.name;
      EXPECT_EQ(w.spec.name.rfind("generate-", 0), 0u) << "named after the model's file: " << w.spec.name;
      const std::string text = captured_spec_text(r, i);
      workload_spec parsed;
      auto diags = parse_spec_text(text, w.spec.name + ".yaml", &parsed);
      std::string all;
      for (const auto& d : diags) all += d.str() + "\n";
      EXPECT_TRUE(diags.empty()) << f << ": " << w.spec.name << ":\n" << all << text;
      EXPECT_THAT(text, HasSubstr("# Where: "));
      EXPECT_THAT(text, HasSubstr("of the model's traced time (rank " + std::to_string(i + 1)));
      EXPECT_EQ(parsed.cases.size(), w.spec.cases.size());
      EXPECT_TRUE(parsed.cases.at(0).gate);
    }
  }
}

// Each case's share and calls are written as data (`share: 4.7%, calls: 4`), read back by the parser, for kforge
// e2e's Amdahl prediction; they match the case's comment.
TEST(capture_analyze, each_case_carries_its_share_and_calls_as_data) {
  const capture_result r = analyze(test::fixture("norm_two_sizes"));
  ASSERT_FALSE(r.workloads.empty());
  const auto& w = r.workloads[0];
  workload_spec parsed;
  const std::string text = captured_spec_text(r, 0);
  ASSERT_TRUE(parse_spec_text(text, w.spec.name + ".yaml", &parsed).empty()) << text;
  ASSERT_EQ(parsed.cases.size(), w.stats.size());
  for (size_t k = 0; k < parsed.cases.size(); ++k) {
    ASSERT_TRUE(parsed.cases[k].share.has_value()) << text;
    ASSERT_TRUE(parsed.cases[k].calls.has_value()) << text;
    EXPECT_NEAR(*parsed.cases[k].share, r.share(w.stats[k].time_us), 5e-3 * r.share(w.stats[k].time_us)) << text;
    EXPECT_EQ(*parsed.cases[k].calls, w.stats[k].calls);
  }
  EXPECT_THAT(text, ::testing::ContainsRegex("share: [0-9.]+%?, calls: [0-9]+\\}"));
}

TEST(capture_analyze, names_come_from_the_model_file) {
  EXPECT_EQ(model_slug("examples/models/llama3_decoder.py:make"), "llama3-decoder");
  EXPECT_EQ(model_slug("My Model.py:f"), "my-model");
  EXPECT_EQ(model_slug("__.py:f"), "model");
  const capture_result r = analyze(test::fixture("resnet_tail"));
  std::vector<std::string> names;
  for (const auto& w : r.workloads) names.push_back(w.spec.name);
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("generate-add-relu", "generate-relu", "generate-avgpool-flatten"));
}

TEST(capture_render, the_summary_table_and_json_list_workloads_and_what_is_left) {
  const capture_result r = analyze(test::fixture("norm_two_sizes"));
  written_files written = {{0, "captured/generate-layernorm-gelu.yaml"}};
  const std::string table = summary_table(r, written);
  EXPECT_THAT(table, HasSubstr("generate-layernorm-gelu*"));
  EXPECT_THAT(table, HasSubstr("layer_norm -> gelu"));
  EXPECT_THAT(table, HasSubstr("not expressible as a spec"));
  EXPECT_THAT(table, HasSubstr("aten.addmm.default"));
  EXPECT_THAT(table, HasSubstr("to captured/"));
  const nlohmann::json j = summary_json(r, written);
  ASSERT_EQ(j["workloads"].size(), 1u);
  const auto& w = j["workloads"][0];
  EXPECT_EQ(w["rank"], 1);
  EXPECT_EQ(w["calls"], 3);
  EXPECT_EQ(w["shapes"], 2);
  EXPECT_EQ(w["file"], "captured/generate-layernorm-gelu.yaml");
  EXPECT_EQ(w["cases"][0]["gate"], true);
  EXPECT_NEAR(w["share"].get<double>(), r.share(r.workloads[0].time_us), 1e-12);
  bool addmm = false;
  for (const auto& u : j["uncovered"]) addmm = addmm || (u["op"] == "aten.addmm.default" && u["calls"] == 2);
  EXPECT_TRUE(addmm);
  EXPECT_NEAR(j["covered_share"].get<double>() + [&] {
    double s = 0;
    for (const auto& u : j["uncovered"]) s += u["share"].get<double>();
    return s;
  }(), 1.0, 1e-9);
}
