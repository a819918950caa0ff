// `kforge run` as a CI job runs it: the real binary. Report paths are settled before any work.
#include <filesystem>

#include <gtest/gtest.h>

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
