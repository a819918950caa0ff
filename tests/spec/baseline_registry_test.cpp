// The baseline registry: what baselines/ registers, the names and defaults spec parsing takes from it, and how a
// run's parent sides answer for each baseline (tests/baselines/added_baseline_test.cpp runs a fake one end to end).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../support/scoped_baseline.h"
#include "spec/spec_parse.h"

namespace kf {
namespace {

using ::testing::HasSubstr;

const std::string k_spec = "version: 1\nname: t\ninputs:\n  x: {shape: [4, 8], dtype: float32}\ngraph:\n"
                           "  - softmax: {input: x, dim: -1}\ncases:\n  - {gate: true}\n";

std::string diagnostics(const std::string& text, workload_spec* s) {
  std::string out;
  for (auto& d : parse_spec_text(text, "t.yaml", s)) out += d.str() + "\n";
  return out;
}

TEST(baseline_registry, baselines_register_eager_compile_and_vendor_in_order) {
  EXPECT_EQ(baseline_names(), (std::vector<std::string>{"eager", "compile", "vendor"}));
  EXPECT_EQ(default_baseline_names(), baseline_names());
  EXPECT_EQ(workload_spec{}.baselines, baseline_names());
  ASSERT_NE(find_baseline("vendor"), nullptr);
  EXPECT_TRUE(find_baseline("vendor")->runs_on("cuda"));
  EXPECT_FALSE(find_baseline("vendor")->runs_on("cpu"));  // the search does not ask for it there
  EXPECT_TRUE(find_baseline("compile")->runs_on("cpu"));
  EXPECT_TRUE(find_baseline("compile")->make_preparer);  // exports packages in the parent
  EXPECT_FALSE(find_baseline("eager")->make_preparer);
  EXPECT_EQ(find_baseline("nope"), nullptr);
}

TEST(baseline_registry, spec_parsing_takes_the_names_and_defaults_from_it) {
  workload_spec s;
  EXPECT_THAT(diagnostics(k_spec + "baselines: [eager, fake]\n", &s), HasSubstr("fake"));
  {
    test::scoped_baseline fake({.name = "fake", .summary = "a test's"});  // by default, too
    workload_spec named, defaulted;
    EXPECT_EQ(diagnostics(k_spec + "baselines: [eager, fake]\ngate: {must_beat: [fake]}\n", &named), "");
    EXPECT_EQ(named.baselines, (std::vector<std::string>{"eager", "fake"}));
    EXPECT_EQ(diagnostics(k_spec, &defaulted), "");
    EXPECT_EQ(defaulted.baselines, (std::vector<std::string>{"eager", "compile", "vendor", "fake"}));
  }
  EXPECT_EQ(baseline_names(), (std::vector<std::string>{"eager", "compile", "vendor"}));  // gone with its scope
  EXPECT_THAT(diagnostics(k_spec + "baselines: [fake]\n", &s), HasSubstr("fake"));
}

// A parent side that counts what it was asked.
class counting_preparer : public baseline_preparer {
 public:
  explicit counting_preparer(int* made) { ++*made; }
  nlohmann::json impl(const workload_spec& spec, const std::vector<std::string>& cases, const std::string& key) override {
    if (cases.empty()) return {{"skipped", "skipped: no case"}};
    return {{"kind", "eager"}, {"name", "prepared"}, {"for", spec.name + " " + cases[0] + " " + key}};
  }
  void prepare(const std::vector<baseline_work>& work, const std::string&) override { prepared += work.size(); }
  static inline size_t prepared = 0;
};

TEST(baseline_registry, a_runs_parent_sides_answer_for_each_baseline) {
  int made = 0;
  baseline_target seen;
  test::scoped_baseline prepared({.name = "prepared", .make_preparer = [&](const baseline_target& t) {
                                    seen = t;
                                    return std::make_unique<counting_preparer>(&made);
                                  }});
  test::scoped_baseline fixed({.name = "fixed", .impl = {{"kind", "eager"}, {"name", "fixed"}}});
  workload_spec spec;
  spec.name = "w";
  baseline_preparers sides({"cuda", "/tmp/cache"});
  EXPECT_EQ(sides.impl("eager", spec, {"c"}, "k"), (nlohmann::json{{"kind", "eager"}}));
  EXPECT_EQ(sides.impl("fixed", spec, {"c"}, "k"), (nlohmann::json{{"kind", "eager"}, {"name", "fixed"}}));
  EXPECT_EQ(sides.impl("unknown", spec, {"c"}, "k"), (nlohmann::json{{"kind", "unknown"}}));
  EXPECT_EQ(made, 0);  // made on first use
  EXPECT_EQ(sides.impl("prepared", spec, {"c"}, "k")["for"], "w c k");
  sides.prepare("prepared", {{&spec, {"c"}}, {&spec, {"d"}}}, "k");
  sides.prepare("eager", {{&spec, {"c"}}}, "k");  // no parent side: nothing to do
  EXPECT_EQ(counting_preparer::prepared, 2u);
  std::string why;
  EXPECT_TRUE(baseline_skipped(sides.impl("prepared", spec, {}, "k"), &why));
  EXPECT_EQ(why, "skipped: no case");
  EXPECT_EQ(made, 1);  // once per run
  EXPECT_EQ(seen.device, "cuda");
  EXPECT_EQ(seen.cache_root, "/tmp/cache");
  // compile's impl object lists per-case skips under "skipped" too: an object, not a reason to skip it all.
  EXPECT_FALSE(baseline_skipped({{"kind", "compile"}, {"pt2", {{"c", {{"default", "/a.pt2"}}}}}, {"skipped", {{"d", {}}}}}));
}

}  // namespace
}  // namespace kf
