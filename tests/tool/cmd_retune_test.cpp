// `kforge retune --dry-run --from RUN.json`: which workloads the nightly searches again, and why. The real binary,
// a real workloads folder and a run JSON written by the report library.
#include <filesystem>

#include <gtest/gtest.h>

#include "report/run_result.h"
#include "../support/seed_workloads.h"
#include "util/fs.h"
#include "util/subprocess.h"

using namespace kf;
namespace fs = std::filesystem;
using kf::test::seed_workloads;

namespace {

process_result dry_run(const fs::path& workloads, const fs::path& run_json) {
  return run_process({std::string(KFORGE_BINARY_DIR) + "/kforge", "retune", "--device", "cpu", "--dry-run",
                      "--workloads", workloads.string(), "--from", run_json.string()});
}

fs::path run_with_check(const temp_dir& d, const std::string& kind, check_outcome outcome) {
  run_result run;
  workload_result w;
  w.name = "qwen-router-softmax";
  gate_check c;
  c.kind = kind;
  c.case_name = "T=4096,E=256";
  c.against = kind == "beats" ? "compile" : kind == "regression" ? "history" : "";
  c.outcome = outcome;
  c.sentence = "the sentence of the " + kind + " check";
  w.checks.push_back(c);
  run.workloads.push_back(w);
  fs::path p = d.path() / (kind + ".json");
  write_file_atomic(p, to_json(run).dump());
  return p;
}

}  // namespace

// A kernel that regressed, is wrong on this GPU or loses to a required baseline is searched again; one whose check
// passed (or is only inconclusive) is not.
TEST(cmd_retune, retunes_what_regressed_was_wrong_or_lost_to_a_required_baseline) {
  temp_dir d("kf-cmd-retune");
  fs::path workloads = seed_workloads(d);
  struct expectation {
    std::string kind;
    std::string reason;
  };
  for (const auto& e : {expectation{"regression", "regressed: "}, expectation{"verify", "wrong on this GPU: "},
                        expectation{"beats", "loses to a required baseline: "}}) {
    auto r = dry_run(workloads, run_with_check(d, e.kind, check_outcome::failed));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("qwen-router-softmax: " + e.reason + "the sentence of the " + e.kind + " check"),
              std::string::npos)
        << e.kind << ": " << r.err;
  }
  for (auto outcome : {check_outcome::passed, check_outcome::inconclusive}) {
    auto r = dry_run(workloads, run_with_check(d, "beats", outcome));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("qwen-router-softmax:"), std::string::npos) << r.err;
  }
}
