// `kforge report` end to end: the real binary on files written by the JSON reporter.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gate/gate.h"
#include "report/reporter.h"
#include "../support/report_fixture.h"
#include "util/fs.h"
#include "util/subprocess.h"

namespace kf {
namespace {

const std::string k_kforge = std::string(KFORGE_BINARY_DIR) + "/kforge";

run_result gated(int workloads, std::string first_name) {
  run_result r = fixture::run(workloads, 1);
  r.workloads[0].name = std::move(first_name);
  gate_spec g;
  g.must_beat = {"eager"};
  for (auto& w : r.workloads) apply_gate(w, g, {nullptr, "", "no history"});
  return r;
}

TEST(cmd_report, render_writes_every_requested_format) {
  temp_dir d;
  auto in = d.path() / "run.json";
  find_reporter("json").write(gated(2, "a"), in);
  auto res = run_process({k_kforge, "report", "render", in.string(), "--markdown", (d.path() / "r.md").string(),
                          "--junit", (d.path() / "r.xml").string(), "--html", (d.path() / "r.html").string(),
                          "--gbench", (d.path() / "r.gb.json").string()});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  EXPECT_THAT(read_file(d.path() / "r.md"), ::testing::HasSubstr("| a | B=1,H=8,S=1024 |"));
  EXPECT_THAT(read_file(d.path() / "r.xml"), ::testing::HasSubstr("<testsuite name=\"a\""));
  EXPECT_THAT(read_file(d.path() / "r.html"), ::testing::HasSubstr("<!doctype html>"));
  EXPECT_TRUE(nlohmann::json::parse(read_file(d.path() / "r.gb.json")).contains("benchmarks"));
}

TEST(cmd_report, merge_combines_shards) {
  temp_dir d;
  find_reporter("json").write(gated(2, "a"), d.path() / "s1.json");
  find_reporter("json").write(gated(2, "b"), d.path() / "s2.json");
  auto out = d.path() / "all.json";
  auto res = run_process({k_kforge, "report", "merge", out.string(), (d.path() / "s1.json").string(),
                          (d.path() / "s2.json").string()});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  run_result m = load_run_result(out.string());
  // a, softmax-0001 from s1; b from s2; softmax-0001 from s2 replaces s1's.
  ASSERT_EQ(m.workloads.size(), 3u);
  EXPECT_EQ(m.workloads[0].name, "a");
  EXPECT_EQ(m.workloads[2].name, "b");
}

TEST(cmd_report, bad_input_exits_2_naming_the_file) {
  temp_dir d;
  write_file_atomic(d.path() / "old.json", R"({"schema": "kforge.run/0"})");
  auto res = run_process({k_kforge, "report", "render", (d.path() / "old.json").string(), "--markdown",
                          (d.path() / "x.md").string()});
  EXPECT_EQ(res.exit_code, 2);
  EXPECT_THAT(res.err, ::testing::HasSubstr("old.json"));
  EXPECT_THAT(res.err, ::testing::HasSubstr("kforge.run/0"));
  EXPECT_FALSE(std::filesystem::exists(d.path() / "x.md"));
  auto none = run_process({k_kforge, "report", "render", (d.path() / "old.json").string(), "--markdwn", "x"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, ::testing::HasSubstr("did you mean --markdown"));
}

// The run JSON keeps summaries: --samples needs the side file `kforge run --samples` wrote, put back with
// --samples-from; asked without it, render refuses instead of writing an empty file.
TEST(cmd_report, samples_come_from_the_side_file) {
  temp_dir d;
  run_result r = gated(1, "a");
  find_reporter("json").write(r, d.path() / "run.json");
  find_reporter("samples").write(r, d.path() / "run.samples.json");
  auto out = d.path() / "again.samples.json";
  auto refused = run_process({k_kforge, "report", "render", (d.path() / "run.json").string(), "--samples", out.string()});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err, ::testing::HasSubstr("holds no raw samples"));
  EXPECT_FALSE(std::filesystem::exists(out));
  auto res = run_process({k_kforge, "report", "render", (d.path() / "run.json").string(), "--samples-from",
                          (d.path() / "run.samples.json").string(), "--samples", out.string()});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  EXPECT_EQ(read_file(out), read_file(d.path() / "run.samples.json"));
}

}  // namespace
}  // namespace kf
