// `kforge run` as a CI job runs it: the real binary. Report paths are settled before any work.
#include <algorithm>
#include <cstdlib>
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

// The specs' folder is --workloads, as for search, check and reemit; --workloads-dir (its older spelling) still
// works; both at once are a usage error.
TEST(cmd_run, takes_the_workloads_folder_as_the_other_commands_do) {
  temp_dir d("kf-cmd-run");
  fs::create_directories(d.path() / "specs");
  write_file_atomic(d.path() / "specs" / "qwen-router-softmax.yaml",
                    read_file(std::string(KFORGE_SOURCE_DIR) + "/workloads/qwen-router-softmax.yaml"));
  const std::string dir = (d.path() / "specs").string();
  for (const char* flag : {"--workloads", "--workloads-dir"}) {
    auto r = kforge_run({flag, dir, "--markdown", (d.path() / "r.md").string()});
    EXPECT_NE(r.err.find("qwen-router-softmax"), std::string::npos) << flag << ": " << r.err;
    EXPECT_NE(r.exit_code, 2) << flag << ": " << r.err;
  }
  auto both = kforge_run({"--workloads", dir, "--workloads-dir", dir});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("give one"), std::string::npos) << both.err;
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

// --prepare-only: a runner's cache step. The torch.compile packages of every gated case are exported (here by a
// stand-in python on PATH that logs each export), nothing is verified or timed, and no report is written; report
// flags are refused.
TEST(cmd_run, prepare_only_exports_the_packages_and_times_nothing) {
  temp_dir d("kf-cmd-run");
  const fs::path src = fs::path(KFORGE_SOURCE_DIR) / "workloads";
  fs::create_directories(d.path() / "workloads");
  fs::copy_file(src / "gpt2-gelu-tanh.yaml", d.path() / "workloads" / "gpt2-gelu-tanh.yaml");
  fs::copy(src / "gpt2-gelu-tanh", d.path() / "workloads" / "gpt2-gelu-tanh", fs::copy_options::recursive);
  const fs::path bin = d.path() / "bin";
  fs::create_directories(bin);
  write_file_atomic(bin / "python3", R"(#!/bin/sh
if [ "$1" = "-c" ]; then echo "9.9.9+fake"; exit 0; fi
out=""; mode=""; case_name=""
while [ $# -gt 0 ]; do
  case "$1" in --out) out="$2"; shift;; --mode) mode="$2"; shift;; --case) case_name="$2"; shift;; esac
  shift
done
echo "$case_name $mode" >> "$(dirname "$0")/exports"
echo package > "$out"
)");
  fs::permissions(bin / "python3", fs::perms::owner_all);
  process_options po;
  po.env_set["PATH"] = bin.string() + ":" + std::getenv("PATH");
  const std::string kf = std::string(KFORGE_BINARY_DIR) + "/kforge";
  const std::string dir = (d.path() / "workloads").string(), cache = (d.path() / "cache").string();
  auto r = run_process({kf, "run", "--device", "cpu", "--workloads-dir", dir, "--cache", cache, "--prepare-only"}, po);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("torch.compile baseline prepared in"), std::string::npos) << r.err;
  // The one gated case that runs on the cpu (BT=8192 is cuda only), in both modes; nothing timed or summed up.
  std::string exports = read_file(bin / "exports");
  EXPECT_NE(exports.find("BT=128 default\n"), std::string::npos) << exports;
  EXPECT_NE(exports.find("BT=128 max-autotune\n"), std::string::npos) << exports;
  EXPECT_EQ(std::count(exports.begin(), exports.end(), '\n'), 2) << exports;
  EXPECT_EQ(r.err.find("kforge run: "), std::string::npos) << r.err;
  int packages = 0;
  for (auto& e : fs::directory_iterator(d.path() / "cache" / "aoti")) packages += e.path().extension() == ".pt2";
  EXPECT_EQ(packages, 2);

  auto again = run_process({kf, "run", "--device", "cpu", "--workloads-dir", dir, "--cache", cache, "--prepare-only"}, po);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  exports = read_file(bin / "exports");
  EXPECT_EQ(std::count(exports.begin(), exports.end(), '\n'), 2) << "the second step found them cached";

  // A workload that times no torch.compile: nothing to prepare, said so.
  std::string spec = read_file(d.path() / "workloads" / "gpt2-gelu-tanh.yaml");
  const std::string both = "baselines: [eager, compile]";
  ASSERT_NE(spec.find(both), std::string::npos);
  spec.replace(spec.find(both), both.size(), "baselines: [eager]");
  write_file_atomic(d.path() / "workloads" / "gpt2-gelu-tanh.yaml", spec);
  auto none = run_process({kf, "run", "--device", "cpu", "--workloads-dir", dir, "--cache", cache, "--prepare-only"}, po);
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE(none.err.find("no baseline to prepare"), std::string::npos) << none.err;
  EXPECT_EQ(none.err.find("prepared in"), std::string::npos) << none.err;

  // A workload with no kernel yet (its first search may run beside this step): its packages are prepared too.
  write_file_atomic(d.path() / "workloads" / "gpt2-gelu-tanh.yaml", read_file(src / "gpt2-gelu-tanh.yaml"));
  fs::remove_all(d.path() / "workloads" / "gpt2-gelu-tanh" / "kernels");
  const std::string fresh_cache = (d.path() / "cache-fresh").string();
  auto first = run_process(
      {kf, "run", "--device", "cpu", "--workloads-dir", dir, "--cache", fresh_cache, "--prepare-only"}, po);
  EXPECT_EQ(first.exit_code, 0) << first.err;
  exports = read_file(bin / "exports");
  EXPECT_EQ(std::count(exports.begin(), exports.end(), '\n'), 4) << exports;

  auto refused = run_process({kf, "run", "--device", "cpu", "--workloads-dir", dir, "--prepare-only", "--json",
                              (d.path() / "r.json").string()}, po);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--prepare-only times nothing: --json"), std::string::npos) << refused.err;
}
