// `kforge run` as a CI job runs it: the real binary. Report paths are settled before any work.
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/subprocess.h"

using namespace kf;
namespace fs = std::filesystem;

namespace {

process_result kforge_run(std::vector<std::string> extra) {
  std::vector<std::string> argv = {std::string(KFORGE_BINARY_DIR) + "/kforge", "run", "--device", "cpu"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return run_process(argv);
}

}  // namespace

// A workflow writes its reports under out/, which nothing else makes: kforge makes a report's missing folders.
// Made before anything else, so the run below (an empty workloads folder) still exits 2 for its own reason.
TEST(cmd_run, makes_a_reports_missing_folders_and_says_when_it_cannot) {
  temp_dir d("kf-cmd-run");
  fs::create_directories(d.path() / "workloads");
  auto r = kforge_run({"--workloads-dir", (d.path() / "workloads").string(), "--junit",
                       (d.path() / "out" / "pr" / "kforge.junit.xml").string()});
  EXPECT_TRUE(fs::is_directory(d.path() / "out" / "pr")) << r.err;
  EXPECT_EQ(r.err.find("does not exist"), std::string::npos) << r.err;

  write_file_atomic(d.path() / "blocker", "a file where the folder should be");
  auto blocked = kforge_run({"--workloads-dir", (d.path() / "workloads").string(), "--markdown",
                             (d.path() / "blocker" / "kforge.md").string()});
  EXPECT_EQ(blocked.exit_code, 2);
  EXPECT_NE(blocked.err.find("cannot make the folder"), std::string::npos) << blocked.err;
}

// No kernel for this GPU key anywhere: the run verified nothing and must not read as passed (#19 part 8). Exit 0
// unless the spec sets gate.require_kernel (the seeds do), then 1.
TEST(cmd_run, a_run_that_verified_nothing_says_so) {
  temp_dir d("kf-cmd-run");
  fs::create_directories(d.path() / "workloads");
  std::string spec = read_file(std::string(KFORGE_SOURCE_DIR) + "/workloads/qwen-router-softmax.yaml");
  const std::string required = ", require_kernel: true";
  ASSERT_NE(spec.find(required), std::string::npos) << "the seeds set gate.require_kernel";
  std::string optional = spec;
  optional.erase(optional.find(required), required.size());
  write_file_atomic(d.path() / "workloads" / "qwen-router-softmax.yaml", optional);
  auto md = d.path() / "out" / "r.md";
  auto r = kforge_run({"--workloads-dir", (d.path() / "workloads").string(), "--markdown", md.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("kforge run: nothing verified (1 workload"), std::string::npos) << r.err;
  EXPECT_NE(read_file(md).find("kforge: nothing verified"), std::string::npos);

  write_file_atomic(d.path() / "workloads" / "qwen-router-softmax.yaml", spec);
  auto req = kforge_run({"--workloads-dir", (d.path() / "workloads").string()});
  EXPECT_EQ(req.exit_code, 1) << req.err;
  EXPECT_NE(req.err.find("the spec's gate.require_kernel requires one"), std::string::npos) << req.err;
  EXPECT_NE(req.err.find("kforge run: failed"), std::string::npos) << req.err;
}

namespace {

process_result kforge(std::vector<std::string> args) {
  args.insert(args.begin(), std::string(KFORGE_BINARY_DIR) + "/kforge");
  return run_process(args);
}

}  // namespace

// --devices: a bad list is a usage error (exit 2) before any worker starts; `cpu,cpu` runs two workers on the cpu
// and gives one report, each workload saying which worker ran it.
TEST(cmd_run, devices_spreads_the_run_over_two_cpu_workers_and_refuses_bad_lists) {
  temp_dir d("kf-cmd-run");
  const std::string required = ", require_kernel: true";
  for (const char* name : {"qwen-router-softmax", "gpt2-gelu-tanh"}) {
    std::string spec = read_file(std::string(KFORGE_SOURCE_DIR) + "/workloads/" + name + ".yaml");
    if (auto at = spec.find(required); at != std::string::npos) spec.erase(at, required.size());
    write_file_atomic(d.path() / "workloads" / (std::string(name) + ".yaml"), spec);
  }
  const std::string dir = (d.path() / "workloads").string();
  for (auto [list, says] : std::vector<std::pair<std::string, std::string>>{
           {"cpu,,cpu", "--devices: an empty item"}, {"tpu", "unknown device 'tpu'"}, {"all,cpu", "stands alone"}}) {
    auto bad = kforge({"run", "--workloads-dir", dir, "--devices", list});
    EXPECT_EQ(bad.exit_code, 2) << list << "\n" << bad.err;
    EXPECT_NE(bad.err.find(says), std::string::npos) << bad.err;
  }
  auto both = kforge({"run", "--workloads-dir", dir, "--device", "cpu", "--devices", "cpu"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("--device and --devices"), std::string::npos) << both.err;

  auto json = d.path() / "out" / "r.json";
  auto r = kforge({"run", "--workloads-dir", dir, "--devices", "cpu,cpu", "--json", json.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("--devices: cpu#1, cpu#2 (as asked)"), std::string::npos) << r.err;
  auto j = nlohmann::json::parse(read_file(json));
  ASSERT_EQ(j["env"]["devices"].size(), 2u) << j["env"].dump();
  ASSERT_EQ(j["workloads"].size(), 2u);
  EXPECT_EQ(j["workloads"][0]["name"], "gpt2-gelu-tanh");  // the specs' order
  for (auto& w : j["workloads"]) {
    std::string device = w.value("device", "");
    EXPECT_TRUE(device == "cpu#1" || device == "cpu#2") << w.dump();
  }
}
