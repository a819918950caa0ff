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
