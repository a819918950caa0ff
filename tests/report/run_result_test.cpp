#include <gtest/gtest.h>

#include "gate/gate.h"
#include <regex>

#include "report/reporter.h"
#include "report/samples_file.h"
#include "../support/report_fixture.h"
#include "util/fs.h"

namespace kf {
namespace {

TEST(run_result, json_round_trip_keeps_every_field) {
  run_result r = fixture::run(3, 2);
  gate_spec g;
  g.must_beat = {"eager"};
  for (auto& w : r.workloads) apply_gate(w, g, {nullptr, "", "no history"});
  r.workloads[1].error = "worker timed out after 30 s";
  r.workloads[2].compile_log = "error: \xff bad byte";
  r.base_ref = "origin/main";
  r.base_commit = "abc";
  r.complete = false;
  r.incomplete_reason = "interrupted";
  r.searches.push_back({"softmax-0000", "sm90-nvidia-h200", {{1, -1, "root", "ok", 50, 0, "int x;"}, {2, 1, "tpr=64", "ok", 45, 0.1, "int y;"}}});
  r.env.sandbox = {{"mode", "strict"}, {"protections", {{{"name", "seccomp"}, {"active", true}, {"detail", "57 calls"}}}}};

  std::string text = render_json(r);
  run_result back = run_result_from_json(nlohmann::json::parse(text));
  EXPECT_EQ(render_json(back), render_json(r));  // idempotent: nothing lost, nothing invented
  EXPECT_EQ(back.workloads.size(), 3u);
  EXPECT_EQ(back.env.gpu_key, "sm90-nvidia-h200");
  EXPECT_EQ(back.env.sm_count, 132);
  EXPECT_EQ(back.env.sandbox["mode"], "strict");
  EXPECT_TRUE(back.env.sandbox["protections"][0]["active"].get<bool>());
  // Summaries only (#19): no raw samples in the JSON, the statistics are there.
  EXPECT_EQ(text.find("samples_us"), std::string::npos);
  EXPECT_TRUE(back.workloads[0].cases[0].impls[0].cold.samples_us.empty());
  const auto& before = r.workloads[0].cases[0].impls[0].cold.stats;
  const auto& after = back.workloads[0].cases[0].impls[0].cold.stats;
  EXPECT_EQ(after.count, 20);
  EXPECT_NEAR(after.median_us, before.median_us, before.median_us * 1e-4);
  EXPECT_NEAR(after.q1_us, before.q1_us, before.q1_us * 1e-4);
  EXPECT_NEAR(after.ci_hi_us, before.ci_hi_us, before.ci_hi_us * 1e-4);
  EXPECT_GT(after.ci_hi_us, after.ci_lo_us);
  EXPECT_EQ(back.workloads[0].cases[0].impls[3].status, impl_status::skipped);
  EXPECT_EQ(back.workloads[0].checks.size(), r.workloads[0].checks.size());
  EXPECT_EQ(back.workloads[1].error, "worker timed out after 30 s");
  EXPECT_FALSE(back.complete);
  EXPECT_EQ(back.exit_code(), 2);
  EXPECT_EQ(back.searches.at(0).nodes.at(1).parent, 1);
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["schema"], "kforge.run/1");
  EXPECT_EQ(j["workloads"][0]["cases"][0]["impls"][0]["cold"]["count"], 20);
}

TEST(run_result, rejects_other_schemas_naming_the_file) {
  try {
    run_result_from_json(nlohmann::json{{"schema", "kforge.run/2"}}, "shard.json");
    FAIL() << "expected user_error";
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("shard.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("kforge.run/2"), std::string::npos);
  }
  EXPECT_THROW(run_result_from_json(nlohmann::json::object(), "x.json"), user_error);
  EXPECT_THROW(run_result_from_json(nlohmann::json{{"schema", "kforge.run/1"}, {"workloads", {{{"cases", 3}}}}}, "x.json"),
               user_error);
}

// A result missing its workloads, or holding the wrong types, names the field and what was expected.
TEST(run_result, structural_errors_name_the_field) {
  auto message = [](nlohmann::json j) {
    j["schema"] = "kforge.run/1";
    try {
      run_result_from_json(j, "r.json");
    } catch (const user_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({}).find("workloads: missing"), std::string::npos) << message({});
  EXPECT_NE(message({{"workloads", "oops"}}).find("expected a list of workload results, got a string"), std::string::npos);
  EXPECT_NE(message({{"workloads", {1}}}).find("workloads[0]: expected an object, got a number"), std::string::npos);
  const auto typed = message({{"workloads", {{{"name", "w"}, {"cases", 3}}}}});
  EXPECT_NE(typed.find("workloads[0] (w)"), std::string::npos) << typed;
  EXPECT_EQ(typed.find("json.exception"), std::string::npos) << typed;
}

TEST(run_result, load_reports_invalid_json_as_user_error) {
  temp_dir d;
  write_file_atomic(d.path() / "bad.json", "{ not json");
  EXPECT_THROW(load_run_result((d.path() / "bad.json").string()), user_error);
}

TEST(run_result, merge_combines_shards_and_keeps_incompleteness) {
  run_result a = fixture::run(2, 1), b = fixture::run(3, 1);
  b.workloads.erase(b.workloads.begin());  // b has 0001 and 0002; 0001 overlaps
  b.workloads[0].seconds = 99;
  b.complete = false;
  b.incomplete_reason = "shard 2 timed out";
  run_result m = merge_runs({a, b});
  ASSERT_EQ(m.workloads.size(), 3u);
  EXPECT_EQ(m.workloads[1].name, "softmax-0001");
  EXPECT_EQ(m.workloads[1].seconds, 99);  // the later shard wins
  EXPECT_FALSE(m.complete);
  EXPECT_EQ(m.incomplete_reason, "shard 2 timed out");
  b.env.gpu_key = "sm80-nvidia-a100";
  EXPECT_THROW(merge_runs({a, b}), user_error);
}

TEST(run_result, summarize_fills_speedups_and_floor_fraction) {
  workload_result w = fixture::workload("w", 1, 50);
  const auto& c = w.cases[0];
  EXPECT_EQ(c.metric, "cold");
  EXPECT_NEAR(c.speedups.at("eager"), 4.0, 0.05);
  EXPECT_NEAR(c.speedups.at("compile"), 1.5, 0.02);
  EXPECT_EQ(c.speedups.count("vendor"), 0u);
  EXPECT_NEAR(c.floor.fraction, 0.6, 0.01);
  EXPECT_EQ(c.find("kernel")->cold.stats.count, 20);
}

}  // namespace
}  // namespace kf

namespace kf {
namespace {

TEST(run_result, numbers_are_rounded_to_five_significant_digits) {
  EXPECT_EQ(round_sig(51.23456789), 51.235);
  EXPECT_EQ(round_sig(0.000123456789, 3), 0.000123);
  EXPECT_EQ(round_sig(1366.54321), 1366.5);
  EXPECT_EQ(round_sig(0), 0);
  nlohmann::json j = {{"a", 1.23456789}, {"n", 20000}, {"list", {3.14159265, "x"}}};
  round_numbers(j);
  EXPECT_EQ(j.dump(), R"({"a":1.2346,"list":[3.1416,"x"],"n":20000})");
  // The JSON prints the rounded numbers, not 17 digits.
  run_result r = fixture::run(1, 1);
  std::string text = render_json(r);
  EXPECT_FALSE(std::regex_search(text, std::regex("[0-9]\\.[0-9]{8,}")));
}

// `kforge run --samples FILE`: the raw samples, one line per series, put back into a loaded run by name.
TEST(run_result, samples_side_file_round_trips) {
  run_result r = fixture::run(2, 2);
  r.workloads[0].cases[0].impls[0].hot.samples_us = {1.5, 1.25, 1.125};
  r.workloads[0].cases[0].impls[0].cold.discarded = 3;
  std::string text = render_samples(r);
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["schema"], "kforge.samples/1");
  EXPECT_EQ(j["series"].size(), 2u * 2 * 3 + 1);  // 3 measured impls per case (vendor skipped), one hot series
  EXPECT_EQ(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')), j["series"].size() + 2);  // a line each

  run_result back = run_result_from_json(nlohmann::json::parse(render_json(r)));
  EXPECT_EQ(count_sample_series(back), 0);
  EXPECT_EQ(attach_samples(back, j, "s.json"), 13);
  EXPECT_EQ(count_sample_series(back), 13);
  const auto& a = r.workloads[1].cases[1].impls[2].cold.samples_us;
  const auto& b = back.workloads[1].cases[1].impls[2].cold.samples_us;
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], b[k], a[k] * 1e-5);
  EXPECT_EQ(back.workloads[0].cases[0].impls[0].hot.samples_us, (std::vector<double>{1.5, 1.25, 1.125}));
  EXPECT_EQ(back.workloads[0].cases[0].impls[0].cold.discarded, 3);
  // A run without raw samples writes an empty list, and a wrong file is named.
  EXPECT_EQ(nlohmann::json::parse(render_samples(run_result_from_json(nlohmann::json::parse(render_json(r)))))["series"].size(), 0u);
  try {
    attach_samples(back, nlohmann::json{{"schema", "kforge.run/1"}}, "run.json");
    FAIL();
  } catch (const user_error& e) {
    EXPECT_NE(std::string(e.what()).find("run.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace kf
