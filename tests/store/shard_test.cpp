// `kforge run --shard K/N`: the split (deterministic, balanced by recorded time), its input checks, the merge's
// check that every shard came once, and three shards on the cpu device against the unsharded run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "store/shard.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/subprocess.h"

namespace kf {
namespace {

namespace fs = std::filesystem;
const std::string k_kforge = std::string(KFORGE_BINARY_DIR) + "/kforge";
const std::string k_src = KFORGE_SOURCE_DIR;

TEST(shard, parses_k_of_n_and_refuses_the_rest) {
  auto s = parse_shard("2/3");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(parse_shard("1/1").count, 1);
  for (const char* bad : {"0/2", "3/2", "2", "/2", "1/", "1/0", "-1/2", "a/b", "1/2/3", " 1/2", "1.5/2", ""}) {
    try {
      parse_shard(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const user_error& e) {
      EXPECT_THAT(e.message(), ::testing::HasSubstr("expected K/N")) << bad;
    }
  }
}

TEST(shard, longest_first_onto_the_least_loaded_shard) {
  std::vector<std::string> names = {"a", "b", "c", "d", "e"};
  auto plan = assign_shards(names, {{"a", 10}, {"b", 9}, {"c", 5}, {"d", 4}, {"e", 1}}, 2);
  ASSERT_EQ(plan.size(), 2u);
  // a(10) -> 1; b(9) -> 2; c(5) -> 2 (9 < 10); d(4) -> 1 (10 < 14); e(1) -> 1 (14 = 14: the first).
  EXPECT_EQ(plan[0], (std::vector<std::string>{"a", "d", "e"}));
  EXPECT_EQ(plan[1], (std::vector<std::string>{"b", "c"}));
  // The same input gives the same split, whatever order the times come in.
  EXPECT_EQ(assign_shards(names, {{"e", 1}, {"d", 4}, {"c", 5}, {"b", 9}, {"a", 10}}, 2), plan);
}

TEST(shard, without_history_equal_weights_by_name_and_unknown_ones_weigh_the_mean) {
  auto plan = assign_shards({"w3", "w1", "w2", "w4"}, {}, 3);
  EXPECT_EQ(plan[0], (std::vector<std::string>{"w1", "w4"}));
  EXPECT_EQ(plan[1], (std::vector<std::string>{"w2"}));
  EXPECT_EQ(plan[2], (std::vector<std::string>{"w3"}));
  // new (no time) weighs the mean of the known (5): big(9) -> 1, new(5) -> 2, small(1) -> 2.
  plan = assign_shards({"big", "small", "new"}, {{"big", 9}, {"small", 1}}, 2);
  EXPECT_EQ(plan[0], (std::vector<std::string>{"big"}));
  EXPECT_EQ(plan[1], (std::vector<std::string>{"small", "new"}));
  // More shards than workloads: some are empty, none is lost.
  plan = assign_shards({"x"}, {}, 3);
  EXPECT_EQ(plan[0], (std::vector<std::string>{"x"}));
  EXPECT_TRUE(plan[1].empty() && plan[2].empty());
}

run_result shard_result(int index, int count, std::vector<std::string> names, std::vector<std::string> all) {
  run_result r;
  for (auto& n : names) r.workloads.push_back(workload_result{.name = n});
  r.options["shard"] = {{"index", index}, {"count", count}, {"workloads", names}, {"of", all}};
  return r;
}

TEST(shard, merge_check_names_a_missing_repeated_or_disagreeing_shard) {
  std::vector<std::string> all = {"a", "b", "c"};
  auto s1 = shard_result(1, 3, {"a"}, all), s2 = shard_result(2, 3, {"b"}, all), s3 = shard_result(3, 3, {"c"}, all);
  EXPECT_EQ(check_shards({s1, s2, s3}), "");
  EXPECT_EQ(check_shards({run_result{}, run_result{}}), "");  // not shards: a plain merge
  EXPECT_EQ(check_shards({s1, s3}), "shard 2/3 is missing");
  EXPECT_EQ(check_shards({s1, s2, s2}), "shard 2/3 is given 2 times; shard 3/3 is missing; b is in shards 2 and 2");
  EXPECT_THAT(check_shards({s1, s2, shard_result(3, 3, {"c"}, {"a", "b", "c", "d"})}),
              ::testing::HasSubstr("another list of workloads"));
  EXPECT_THAT(check_shards({s1, s2, shard_result(3, 4, {"c"}, all)}), ::testing::HasSubstr("disagree"));
  EXPECT_THAT(check_shards({s1, s2, run_result{}}), ::testing::HasSubstr("some are not"));
}

// --- the real binary on the cpu device ---

const char* k_spec = R"(version: 1
name: NAME
model: shard test
inputs:
  x: {shape: [R, D], dtype: float32, init: {normal: {std: 1.0}}}
graph:
  - softmax: {input: x, dim: -1}
cases:
  - {R: 16, D: 64, gate: true}
baselines: [eager]
gate: {max_regression: 95%, must_beat: []}
)";

process_result kforge(std::vector<std::string> args, const fs::path& cwd) {
  args.insert(args.begin(), k_kforge);
  process_options o;
  o.cwd = cwd.string();
  o.timeout = std::chrono::minutes(5);
  return run_process(args, o);
}

process_result git(std::vector<std::string> args, const fs::path& cwd) {
  args.insert(args.begin(), {"git", "-c", "user.name=t", "-c", "user.email=t@example.com"});
  process_options o;
  o.cwd = cwd.string();
  return run_process(args, o);
}

const std::vector<std::string> k_quick = {"--device", "cpu", "--timeout", "1", "--min-time", "0.05", "--min-samples", "5"};

std::vector<std::string> with_quick(std::vector<std::string> args) {
  args.insert(args.begin() + 1, k_quick.begin(), k_quick.end());
  return args;
}

// Workloads whose verdicts do not depend on timing: two honest kernels, a cheating one (fails verification), one
// without a kernel.
void write_workloads(const fs::path& root) {
  auto put = [&](const std::string& name, const std::string& kernel) {
    std::string spec = k_spec;
    spec.replace(spec.find("NAME"), 4, name);
    write_file_atomic(root / "workloads" / (name + ".yaml"), spec);
    if (!kernel.empty())
      fs::copy_file(k_src + "/tests/data/kernels/" + kernel, root / "workloads" / name / "kernels" / "cpu-x86-64.cpp",
                    fs::copy_options::overwrite_existing);
  };
  for (auto n : {"honest-a", "honest-b", "cheat-c", "none-d"}) fs::create_directories(root / "workloads" / n / "kernels");
  put("honest-a", "honest/vectorized.cpp");
  put("honest-b", "honest/naive.cpp");
  put("cheat-c", "cheat/cpu/zeros.cpp");
  put("none-d", "");
}

// The decisions that do not depend on timing on a loaded machine (verification, the kernel's presence); the
// timed checks (advisory beats, regression) may differ between any two runs, sharded or not.
std::map<std::string, std::string> verdicts(const run_result& r) {
  std::map<std::string, std::string> out;
  for (auto& w : r.workloads) {
    std::string v = "verify=" + w.verify.verdict;
    for (auto& c : w.checks)
      if (c.kind == "verify" || c.kind == "kernel")
        v += " " + c.test_name() + "=" + std::string(check_outcome_name(c.outcome));
    out[w.name] = v;
  }
  return out;
}

TEST(shard, three_shards_on_the_cpu_device_give_the_unsharded_verdicts) {
  temp_dir d("kf-shard");
  const fs::path repo = d.path();
  write_workloads(repo);
  ASSERT_TRUE(git({"init", "-q", "-b", "main"}, repo).ok());
  ASSERT_TRUE(git({"add", "workloads"}, repo).ok());
  ASSERT_TRUE(git({"commit", "-qm", "workloads"}, repo).ok());
  // A recorded run on the first commit gives the second one's shards their weights.
  auto first = kforge(with_quick({"run", "--json", "first.json", "--record"}), repo);
  ASSERT_LE(first.exit_code, 1) << first.err;
  ASSERT_TRUE(git({"commit", "-q", "--allow-empty", "-m", "second"}, repo).ok());

  auto whole = kforge(with_quick({"run", "--json", "whole.json"}), repo);
  ASSERT_LE(whole.exit_code, 1) << whole.err;
  std::vector<std::string> merge_args = {"report", "merge", "merged.json", "--junit", "merged.xml", "--markdown",
                                         "merged.md", "--verdict"};
  std::set<std::string> seen;
  for (int k = 1; k <= 3; ++k) {
    std::string out = fmt::format("shard-{}.json", k);
    auto s = kforge(with_quick({"run", "--shard", fmt::format("{}/3", k), "--json", out}), repo);
    ASSERT_LE(s.exit_code, 1) << s.err;
    EXPECT_THAT(s.err, ::testing::HasSubstr(fmt::format("shard {}/3", k)));
    EXPECT_THAT(s.err, ::testing::HasSubstr("split by the times in the history note of"));
    run_result r = load_run_result((repo / out).string());
    EXPECT_EQ(r.options["shard"]["index"], k);
    EXPECT_EQ(r.options["shard"]["count"], 3);
    for (auto& w : r.workloads) EXPECT_TRUE(seen.insert(w.name).second) << w.name << " ran in two shards";
    merge_args.push_back(out);
  }
  EXPECT_EQ(seen, (std::set<std::string>{"honest-a", "honest-b", "cheat-c", "none-d"}));

  auto merged = kforge(merge_args, repo);
  run_result m = load_run_result((repo / "merged.json").string());
  run_result w = load_run_result((repo / "whole.json").string());
  EXPECT_EQ(merged.exit_code, m.exit_code()) << merged.err;  // --verdict: the merged run's verdict
  EXPECT_EQ(merged.exit_code, 1) << merged.err;                // cheat-c fails verification, in any shard
  EXPECT_EQ(verdicts(m), verdicts(w));
  ASSERT_EQ(m.workloads.size(), w.workloads.size());
  for (size_t i = 0; i < m.workloads.size(); ++i) EXPECT_EQ(m.workloads[i].name, w.workloads[i].name);  // same order
  EXPECT_EQ(verdicts(m)["cheat-c"].substr(0, 13), "verify=failed");
  EXPECT_EQ(verdicts(m)["none-d"].substr(0, 14), "verify=not_run");
  EXPECT_EQ(m.options["shard"]["merged"], (nlohmann::json{1, 2, 3}));
  EXPECT_TRUE(fs::exists(repo / "merged.xml") && fs::exists(repo / "merged.md"));

  // A shard left out: the merged run is incomplete, never a pass (exit 2, or 1 when a shard that came failed).
  auto missing = kforge({"report", "merge", "partial.json", "shard-1.json", "shard-3.json", "--verdict"}, repo);
  run_result partial = load_run_result((repo / "partial.json").string());
  EXPECT_FALSE(partial.complete);
  EXPECT_THAT(partial.incomplete_reason, ::testing::HasSubstr("shard 2/3 is missing"));
  EXPECT_NE(missing.exit_code, 0) << missing.err;
  EXPECT_EQ(missing.exit_code, partial.exit_code()) << missing.err;
}

TEST(shard, a_bad_shard_flag_exits_2_before_any_work) {
  temp_dir d("kf-shard");
  for (const char* bad : {"3/2", "0/1", "two"}) {
    auto r = kforge({"run", "--device", "cpu", "--shard", bad, "--json", "out/x.json"}, d.path());
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_THAT(r.err, ::testing::HasSubstr("--shard " + std::string(bad) + ": expected K/N")) << r.err;
  }
}

}  // namespace
}  // namespace kf
