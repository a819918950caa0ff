// `kforge check` as a user runs it: the real binary, real worker, exit codes 0 / 1 / 2.
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/subprocess.h"

using namespace kf;
namespace fs = std::filesystem;

namespace {

const fs::path k_data = fs::path(KFORGE_SOURCE_DIR) / "tests" / "data";

process_result kforge_check(std::vector<std::string> extra) {
  std::vector<std::string> argv = {std::string(KFORGE_BINARY_DIR) + "/kforge", "check", "--workload",
                                   (k_data / "specs" / "softmax-small.yaml").string(), "--cache",
                                   std::string(KFORGE_BINARY_DIR) + "/test-cache"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  process_options o;
  o.timeout = std::chrono::minutes(5);
  return run_process(argv, o);
}

std::string kernel(const std::string& rel) { return (k_data / "kernels" / rel).string(); }

}  // namespace

TEST(cmd_check, honest_kernel_passes_with_exit_0) {
  auto r = kforge_check({"--kernel", kernel("honest/naive.cpp")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict: PASSED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("new_inputs"), std::string::npos) << r.out;
}

TEST(cmd_check, cheat_fails_with_exit_1_naming_the_rule) {
  auto r = kforge_check({"--kernel", kernel("cheat/cpu/half_written.cpp")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("FAIL  all_written"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first failure: all_written"), std::string::npos) << r.out;
}

TEST(cmd_check, json_report) {
  auto r = kforge_check({"--kernel", kernel("cheat/cpu/zeros.cpp"), "--json", "--case", "R=5,C=33"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["passed"].get<bool>());
  EXPECT_EQ(j["device"], "cpu");
  bool saw_match_failure = false;
  for (auto& c : j["verdict"]["checks"]) {
    if (c["rule"] == "match" && !c["passed"].get<bool>()) saw_match_failure = true;
    if (!c["case"].get<std::string>().empty()) EXPECT_EQ(c["case"], "R=5,C=33");
  }
  EXPECT_TRUE(saw_match_failure);
}

TEST(cmd_check, bad_inputs_exit_2) {
  auto missing = kforge_check({"--kernel", kernel("no/such/file.cpp")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("kernel file not found"), std::string::npos) << missing.err;
  auto few = kforge_check({"--kernel", kernel("honest/naive.cpp"), "--seeds", "1"});
  EXPECT_EQ(few.exit_code, 2);
  EXPECT_NE(few.err.find("at least 3"), std::string::npos) << few.err;
  auto bad_case = kforge_check({"--kernel", kernel("honest/naive.cpp"), "--case", "R=1"});
  EXPECT_EQ(bad_case.exit_code, 2);
  EXPECT_NE(bad_case.err.find("R=5,C=33"), std::string::npos) << bad_case.err;  // lists the cases
  auto wrong_device = kforge_check({"--kernel", kernel("honest/naive.cu"), "--device", "cpu"});
  EXPECT_EQ(wrong_device.exit_code, 2);
}

TEST(cmd_check, compile_error_exits_1) {
  temp_dir t;
  fs::path k = t.path() / "broken.cpp";
  write_file_atomic(k, "#include \"kf_abi.h\"\nint kf_launch( {\n");
  auto r = kforge_check({"--kernel", k.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("FAIL  compiles"), std::string::npos) << r.out;
}
