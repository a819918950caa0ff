// `kforge search` as a user runs it (a real subprocess): usage mistakes exit 2 with a message that says what to do.
#include <gtest/gtest.h>

#include "util/fs.h"
#include "util/subprocess.h"

namespace kf {
namespace {

const char* k_spec = R"(version: 1
name: tiny-softmax
model: test
inputs:
  x: {shape: [R, D], dtype: float32, init: {normal: {std: 1.0}}}
graph:
  - softmax: {input: x, dim: DIM}
cases:
  - {R: 4, D: 33, gate: true}
baselines: [eager]
gate: {max_regression: 5%, must_beat: [eager]}
search: {families: [row_softmax], budget: {evaluations: 3}}
)";

process_result kforge(const std::vector<std::string>& args, const std::string& cwd) {
  std::vector<std::string> argv = {KFORGE_BINARY_DIR "/kforge", "search"};
  argv.insert(argv.end(), args.begin(), args.end());
  process_options o;
  o.cwd = cwd;
  o.timeout = std::chrono::seconds(60);
  return run_process(argv, o);
}

std::string with_dim(const char* dim) {
  std::string s = k_spec;
  s.replace(s.find("DIM"), 3, dim);
  return s;
}

TEST(cmd_search, usage_mistakes_exit_2_and_say_what_to_do) {
  temp_dir dir("kf-cmd-search");
  write_file_atomic(dir.path() / "workloads" / "tiny-softmax.yaml", with_dim("-1"));
  auto cwd = dir.path().string();
  auto r = kforge({}, cwd);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("one workload name"), std::string::npos) << r.err;
  r = kforge({"tiny-softmax", "--device", "cpu", "--resume", "--fresh"}, cwd);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--resume and --fresh"), std::string::npos) << r.err;
  r = kforge({"tiny-softmax", "--device", "cpu", "--proposer", "templat"}, cwd);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown proposer"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("template"), std::string::npos) << r.err;
  r = kforge({"tiny-softmax", "--device", "cpu", "--budget", "0"}, cwd);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--budget"), std::string::npos) << r.err;
  r = kforge({"tiny-softmax", "--device", "cpu", "--min-gain", "150%"}, cwd);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--min-gain 150%: expected a percentage"), std::string::npos) << r.err;
  r = kforge({"tiny-softmax", "--device", "cpu", "--try", "threads=2 passes=three"}, cwd);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("passes=three is not one of its values (two, online)"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / ".kforge" / "search.db"));  // refused before any work
}

TEST(cmd_search, a_graph_no_family_covers_is_explained) {
  temp_dir dir("kf-cmd-search");
  write_file_atomic(dir.path() / "workloads" / "tiny-softmax.yaml", with_dim("0"));
  auto r = kforge({"tiny-softmax", "--device", "cpu", "--db", (dir.path() / "s.db").string()}, dir.path().string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no kernel family covers tiny-softmax"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("row_softmax_cpu: op 1 (softmax): only the last dim is reduced"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "workloads" / "tiny-softmax" / "kernels"));
}

// --devices cpu,cpu: two workers on the cpu take the search's candidates (how CI covers the scheduling of a
// several-GPU search); the summary names both and their evaluations, and the winner is written as on one device.
TEST(cmd_search, two_workers_on_the_cpu_share_a_search) {
  temp_dir dir("kf-cmd-search-devices");
  write_file_atomic(dir.path() / "workloads" / "tiny-softmax.yaml", with_dim("-1"));
  auto cwd = dir.path().string();
  auto r = kforge({"tiny-softmax", "--device", "cpu", "--devices", "cpu,cpu"}, cwd);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--device and --devices"), std::string::npos) << r.err;
  std::vector<std::string> argv = {KFORGE_BINARY_DIR "/kforge", "search", "tiny-softmax", "--devices", "cpu,cpu",
                                   "--time", "10s", "--budget", "6"};
  process_options o;
  o.cwd = cwd;
  o.timeout = std::chrono::seconds(600);  // CI's loaded 2 cores: the baselines are timed on both workers first
  r = run_process(argv, o);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string said = r.out + r.err;  // the summary (term::say)
  EXPECT_NE(said.find("search tiny-softmax on cpu#1, cpu#2"), std::string::npos) << said;
  const auto devices = said.find("  devices: cpu#1 ");
  ASSERT_NE(devices, std::string::npos) << said;
  EXPECT_NE(said.find(", cpu#2 ", devices), std::string::npos) << said;
  EXPECT_NE(said.find("  winner: "), std::string::npos) << said;
  int written = 0;  // <cpu key>.cpp and .json
  for (auto& e : std::filesystem::directory_iterator(dir.path() / "workloads" / "tiny-softmax" / "kernels"))
    written += e.path().extension() == ".cpp" || e.path().extension() == ".json";
  EXPECT_EQ(written, 2);
}

}  // namespace
}  // namespace kf
