// `kforge reemit`: the real binary on a copy of a seed workload, its stored winners current, then one made to look
// stored before families had versions (no version in its .json, a knob the family gained since missing).
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report/text_escape.h"
#include "store/kernel_header.h"
#include "../support/seed_workloads.h"
#include "util/fs.h"
#include "util/subprocess.h"

using namespace kf;
namespace fs = std::filesystem;
using kf::test::seed_workloads;
using ::testing::HasSubstr;

namespace {

process_result reemit(const fs::path& workloads, std::vector<std::string> more) {
  std::vector<std::string> argv = {std::string(KFORGE_BINARY_DIR) + "/kforge", "reemit", "--workloads",
                                   workloads.string()};
  argv.insert(argv.end(), more.begin(), more.end());
  return run_process(argv);
}

}  // namespace

TEST(cmd_reemit, checks_then_reemits_a_winner_stored_at_an_older_version) {
  temp_dir d("kf-cmd-reemit");
  const fs::path workloads = seed_workloads(d);
  auto r = reemit(workloads, {"--check"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out + r.err, HasSubstr("qwen-router-softmax sm90-nvidia-h200: current"));
  EXPECT_THAT(r.out + r.err, HasSubstr("qwen-router-softmax cpu-x86-64: current"));

  const fs::path kernels = workloads / "qwen-router-softmax" / "kernels";
  const fs::path cu = kernels / "sm90-nvidia-h200.cu", meta_path = kernels / "sm90-nvidia-h200.json";
  const std::string stored = read_file(cu);
  nlohmann::json meta = nlohmann::json::parse(read_file(meta_path));
  meta.erase("family_version");
  meta["knobs"].erase("pdl");
  write_file_atomic(meta_path, safe_dump(meta, 2));
  write_file_atomic(cu, "// kforge winner: qwen-router-softmax on sm90-nvidia-h200\n// lineage: old\n\nint old_code;\n");

  r = reemit(workloads, {"--check"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out + r.err, HasSubstr("version 0 (none recorded"));
  EXPECT_THAT(r.out + r.err, HasSubstr("kforge reemit qwen-router-softmax"));
  EXPECT_EQ(read_file(cu), "// kforge winner: qwen-router-softmax on sm90-nvidia-h200\n// lineage: old\n\nint old_code;\n");

  r = reemit(workloads, {"qwen-router-softmax", "--key", "sm90-nvidia-h200"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out + r.err, HasSubstr("re-emitted qwen-router-softmax sm90-nvidia-h200: row_softmax_cuda version 0 -> "));
  EXPECT_THAT(r.out + r.err, HasSubstr("filled pdl=0 (the code before the knob)"));
  const std::string text = read_file(cu);
  EXPECT_THAT(provenance_lines(text), ::testing::Contains(std::string("lineage: old")));
  EXPECT_EQ(parse_kernel_header(text)->knobs.at("pdl"), "0");
  const nlohmann::json after = nlohmann::json::parse(read_file(meta_path));
  EXPECT_EQ(after["knobs"]["pdl"], "0");
  EXPECT_EQ(after["reemitted"][0]["from_version"], 0);
  // Apart from pdl (on in the stored winner, filled off here) the code is the stored one's.
  EXPECT_NE(text, stored);

  r = reemit(workloads, {"--check"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}
