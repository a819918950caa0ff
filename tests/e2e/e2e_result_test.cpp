// e2e.py's samples through kforge's statistics (lib/e2e/e2e_result.h): medians and intervals as the run's, the
// speedups, the Amdahl prediction, and what the table and JSON say.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/e2e_result.h"
#include "measure/ratio_test.h"
#include "measure/stats.h"
#include "util/error.h"

using namespace kf;
using ::testing::HasSubstr;
using json = nlohmann::json;

namespace {

std::vector<double> around(double center, int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(center * (1 + 0.01 * ((i * 7) % 5 - 2)));
  return v;
}

json samples() {
  return {{"version", 1},
          {"model", "m.py:make"},
          {"device", "cpu"},
          {"torch", "2.11.0"},
          {"threads", 2},
          {"hot_skipped", "cpu: no CUDA graph"},
          {"patched", {{{"module", "act"}, {"workloads", {"gpt2-gelu-tanh"}}}}},
          {"variants",
           {{{"name", "eager"}, {"status", "ok"}, {"cold_us", around(1000, 20)}},
            {{"name", "kforge"}, {"status", "ok"}, {"cold_us", around(800, 20)}, {"max_error_ratio", 0.01}},
            {{"name", "compile"}, {"status", "failed"}, {"why", "outputs differ from eager: output 0 ..."}},
            {{"name", "compile_kforge"}, {"status", "ok"}, {"cold_us", around(500, 20)}}}},
          // The pattern takes half the forward (500 of 1000 us) and runs 2x faster: Amdahl says 1 / (0.5 + 0.25).
          {"profile",
           {{"passes", 3},
            {"total_us", {1000, 990, 1010}},
            {"patterns",
             {{{"module", "act"},
               {"workloads", {"gpt2-gelu-tanh"}},
               {"eager_us", {500, 500, 500}},
               {"kforge_us", {250, 240, 260}}}}}}}};
}

}  // namespace

TEST(e2e_result, summarizes_the_raw_samples_with_the_runs_statistics) {
  auto r = e2e::result_from_samples(samples(), "s.json");
  ASSERT_EQ(r.variants.size(), 4u);
  const auto* e = r.find("eager");
  std::vector<double> raw = around(1000, 20);
  EXPECT_DOUBLE_EQ(e->cold.stats.median_us, stats::median(raw));
  auto ci = stats::median_ci(raw, 0.01);
  EXPECT_DOUBLE_EQ(e->cold.stats.ci_lo_us, ci.lo);
  EXPECT_DOUBLE_EQ(e->cold.stats.ci_hi_us, ci.hi);
  EXPECT_EQ(e->cold.stats.count, 20);
  EXPECT_EQ(r.metric(), "cold");
  EXPECT_NEAR(r.speedup("kforge", "eager"), 1.25, 1e-9);
  EXPECT_EQ(r.speedup("compile_kforge", "compile"),
            0);  // compile failed: no speedup over it
  EXPECT_TRUE(r.any_failed());
  EXPECT_EQ(r.find("compile")->status, impl_status::failed);
}

TEST(e2e_result, predicts_the_speedup_from_the_profile) {
  auto r = e2e::result_from_samples(samples(), "s.json");
  const auto& a = r.profile;
  ASSERT_TRUE(a.profiled);
  EXPECT_DOUBLE_EQ(a.forward_us, 1000);
  EXPECT_DOUBLE_EQ(a.share, 0.5);
  EXPECT_DOUBLE_EQ(a.pattern_speedup, 2.0);
  EXPECT_NEAR(a.predicted, 1 / (0.5 + 0.25), 1e-12);
  EXPECT_NEAR(a.measured, 1.25, 1e-9);
  EXPECT_NEAR(a.fraction, 0.25 / (4.0 / 3 - 1),
              1e-9);  // 75 % of the predicted gain
}

TEST(e2e_result, the_table_and_json_say_what_was_measured) {
  auto r = e2e::result_from_samples(samples(), "s.json");
  std::string t = e2e::table_text(r);
  EXPECT_THAT(t, HasSubstr("cpu: no CUDA graph"));
  EXPECT_THAT(t, HasSubstr("compile         failed"));
  EXPECT_THAT(t, HasSubstr("compile failed: outputs differ from eager"));
  EXPECT_THAT(t, HasSubstr("predicted 1.33x, measured 1.25x (75% of the predicted gain)"));
  EXPECT_THAT(t, HasSubstr("act (gpt2-gelu-tanh)"));
  json j = e2e::to_json(r);
  EXPECT_EQ(j["schema"], "kforge.e2e/1");
  EXPECT_EQ(j["variants"][1]["name"], "kforge");
  EXPECT_EQ(j["variants"][1]["cold"]["samples_us"].size(), 20u);
  EXPECT_EQ(j["variants"][1]["hot_skipped"], "cpu: no CUDA graph");
  EXPECT_TRUE(j["variants"][2]["cold"].is_null());
  EXPECT_NEAR(j["speedups"]["kforge/eager"].get<double>(), 1.25, 1e-9);
  EXPECT_NEAR(j["amdahl"]["measured_fraction"].get<double>(), 0.75, 1e-9);
  EXPECT_EQ(j["amdahl"]["source"], "in-model profile (diagnostic)");
  EXPECT_THAT(t, HasSubstr("In-model profile (diagnostic, synchronized hooks)"));
  EXPECT_FALSE(j["prediction"]["has_shares"].get<bool>());  // no replaced_cases in these samples
  EXPECT_THAT(e2e::markdown(r), HasSubstr("| kforge | ok |"));
}

// The kforge variant when its forward could not be captured for the graph rewrite: ok, module patching only, and
// it says so in the table, the JSON and the Markdown; a graph-replaced pattern is a profile entry like a module.
TEST(e2e_result, a_note_on_a_variant_that_ran_with_less_is_shown) {
  json s = samples();
  s["variants"][1]["note"] = "the forward was not captured for the graph rewrite (x): kforge.patch's modules only";
  s["profile"]["patterns"].push_back({{"module", "(graph)"},
                                      {"workloads", {"llama3-8b-swiglu"}},
                                      {"count", 2},
                                      {"eager_us", {100, 100, 100}},
                                      {"kforge_us", {50, 50, 50}}});
  auto r = e2e::result_from_samples(s, "s.json");
  EXPECT_EQ(r.find("kforge")->status, impl_status::ok);
  EXPECT_THAT(e2e::table_text(r), HasSubstr("  kforge note: the forward was not captured for the graph rewrite (x)"));
  EXPECT_THAT(e2e::table_text(r), HasSubstr("(graph) (llama3-8b-swiglu): eager 100"));
  EXPECT_EQ(e2e::to_json(r)["variants"][1]["note"], s["variants"][1]["note"]);
  EXPECT_THAT(e2e::markdown(r), HasSubstr("| kforge | ok |"));
  EXPECT_THAT(e2e::markdown(r), HasSubstr("- kforge note: the forward was not captured"));
  EXPECT_DOUBLE_EQ(r.profile.share, 0.6);  // 500 + 100 of 1000 us
}

TEST(e2e_result, hot_samples_are_compared_when_every_variant_has_them) {
  json s = samples();
  s["variants"].erase(2);
  for (auto& v : s["variants"]) v["hot_us"] = around(v["name"] == "eager" ? 400 : 200, 12);
  auto r = e2e::result_from_samples(s, "s.json");
  EXPECT_EQ(r.metric(), "hot");
  EXPECT_NEAR(r.speedup("kforge", "eager"), 2.0, 1e-9);
}

TEST(e2e_result, what_is_not_e2e_samples_is_refused_naming_the_file) {
  EXPECT_THROW(e2e::result_from_samples(json::array(), "s.json"), user_error);
  json s = samples();
  s["version"] = 9;
  EXPECT_THROW(e2e::result_from_samples(s, "s.json"), user_error);
  s = samples();
  s["variants"][0]["cold_us"] = {1, "x"};
  try {
    e2e::result_from_samples(s, "s.json");
    FAIL();
  } catch (const user_error& e) { EXPECT_THAT(std::string(e.what()), HasSubstr("s.json")); }
}

// e2e.py's replaced_cases: the capture's shares and the winners' recorded speedups make the prediction, against the
// compared series (here cold: 1000 -> 800 us, 1.25x).
TEST(e2e_result, predicts_the_speedup_from_the_captures_shares) {
  json s = samples();
  s["replaced_cases"] = {{{"workload", "gpt2-gelu-tanh"},
                          {"case", "T=1"},
                          {"calls", 2},
                          {"share", 0.4},
                          {"captured_calls", 2},
                          {"key", "cpu-x86-64"},
                          {"record_eager_us", 40.0},
                          {"record_kernel_us", 20.0},
                          {"record_speedup", 3.0}}};
  auto r = e2e::result_from_samples(s, "s.json");
  ASSERT_TRUE(r.shares.has_shares());
  EXPECT_DOUBLE_EQ(r.shares.share, 0.4);
  EXPECT_NEAR(r.shares.predicted, 1 / (0.6 + 0.4 / 2), 1e-12);  // 1.25x
  EXPECT_NEAR(r.shares.measured, 1.25, 1e-9);
  EXPECT_EQ(r.shares.metric, "cold");
  EXPECT_NEAR(r.shares.fraction, 1.0, 1e-9);
  json j = e2e::to_json(r);
  EXPECT_EQ(j["prediction"]["source"], "capture shares");
  EXPECT_NEAR(j["prediction"]["predicted_speedup"].get<double>(), 1.25, 1e-9);
  EXPECT_EQ(j["prediction"]["cases"][0]["speedup_from"], "case");
  std::string t = e2e::table_text(r);
  EXPECT_THAT(t, HasSubstr("Amdahl from the capture's shares: the replaced cases take 40.0% of the captured time"));
  EXPECT_THAT(t, HasSubstr("predicted 1.25x, measured 1.25x (cold medians) (100% of the predicted gain)"));
  EXPECT_THAT(t, HasSubstr("gpt2-gelu-tanh [T=1]: 2 calls, 40.00% of the captured time, 2.00x over eager"));
  EXPECT_THAT(e2e::markdown(r), HasSubstr("| gpt2-gelu-tanh | T=1 | 2 | 40.00% | 2.00x |"));
  s["replaced_cases"][0]["share"] = -1;
  EXPECT_THROW(e2e::result_from_samples(s, "s.json"), user_error);
}
