// `kforge e2e` and `kforge run E2E.yaml` end to end: the real binary runs lib/e2e/e2e.py on a tiny model
// (tests/data/e2e/tiny_model.py) on the cpu with the stored gpt2-gelu-tanh cpu kernel, and the tests assert what it
// decides and writes (variants, checks, exit codes), never a duration. Needs python3 with torch and
// build/libkforge_ops.so; skips without them. The cuda path skips without a GPU.
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/subprocess.h"

using namespace kf;
namespace fs = std::filesystem;
using ::testing::HasSubstr;

namespace {

const std::string k_src = KFORGE_SOURCE_DIR;
const std::string k_model = k_src + "/tests/data/e2e/tiny_model.py";

// Short series: the tests assert decisions, and CI has two cores.
const std::vector<std::string> k_quick = {"--device", "cpu",       "--warmup", "1",          "--min-samples",
                                          "10",       "--timeout", "0.2",      "--min-time", "0"};

process_result kforge(std::vector<std::string> args, const std::string& cwd = k_src) {
  args.insert(args.begin(), std::string(KFORGE_BINARY_DIR) + "/kforge");
  process_options o;
  o.env_set = {{"OMP_NUM_THREADS", "1"}};
  o.timeout = std::chrono::minutes(5);
  o.cwd = cwd;
  return run_process(args, o);
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string missing_prerequisite() {
  static const std::string why = [] {
    process_options o;
    o.timeout = std::chrono::minutes(2);
    if (!run_process({"python3", "-c", "import torch"}, o).ok()) return std::string("python3 cannot import torch");
    if (!fs::exists(std::string(KFORGE_BINARY_DIR) + "/libkforge_ops.so"))
      return std::string(
          "no libkforge_ops.so in the build folder (build the "
          "kforge_ops target)");
    return std::string();
  }();
  return why;
}

}  // namespace

TEST(e2e_cmd, times_a_tiny_model_on_the_cpu_and_writes_the_table_json_and_markdown) {
  if (auto why = missing_prerequisite(); !why.empty()) GTEST_SKIP() << why;
  temp_dir d("kf-e2e");
  const fs::path json_path = d.path() / "out/e2e.json", md = d.path() / "e2e.md";
  auto r = kforge(with({"e2e", "--model", k_model + ":make", "--names", "gpt2-gelu-tanh", "--variants", "eager,kforge",
                        "--json", json_path.string(), "--markdown", md.string()},
                       k_quick));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("cpu: no CUDA graph"));
  EXPECT_THAT(r.out, HasSubstr("Amdahl: the patched patterns take"));
  EXPECT_THAT(r.out, HasSubstr("act (gpt2-gelu-tanh)"));
  const nlohmann::json j = nlohmann::json::parse(read_file(json_path));
  EXPECT_EQ(j["schema"], "kforge.e2e/1");
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["metric"], "cold");
  ASSERT_EQ(j["variants"].size(), 2u);
  for (const auto& v : j["variants"]) {
    EXPECT_EQ(v["status"], "ok") << v.dump();
    EXPECT_GE(v["cold"]["n"].get<int>(), 10);
    EXPECT_EQ(v["cold"]["samples_us"].size(), v["cold"]["n"].get<size_t>());
    EXPECT_LE(v["cold"]["ci_lo_us"].get<double>(), v["cold"]["median_us"].get<double>());
    EXPECT_TRUE(v["hot"].is_null());
  }
  EXPECT_EQ(j["patched"][0]["workloads"][0], "gpt2-gelu-tanh");
  EXPECT_TRUE(j["amdahl"]["profiled"].get<bool>());
  EXPECT_GT(j["amdahl"]["share"].get<double>(), 0);
  EXPECT_THAT(read_file(md), HasSubstr("| kforge | ok |"));
}

TEST(e2e_cmd, kept_samples_are_summarized_again_without_python) {
  temp_dir d("kf-e2e");
  // Hot samples as a GPU run gives them: the table compares them; a failed variant exits 1.
  nlohmann::json s = {{"version", 1},
                      {"model", "m.py:make"},
                      {"device", "cuda"},
                      {"variants",
                       {{{"name", "eager"}, {"status", "ok"}, {"cold_us", {100, 101, 99}}, {"hot_us", {50, 51, 49}}},
                        {{"name", "kforge"}, {"status", "ok"}, {"cold_us", {80, 81, 79}}, {"hot_us", {25, 26, 24}}},
                        {{"name", "compile"}, {"status", "failed"}, {"why", "the forward raised RuntimeError: x"}}}}};
  write_file_atomic(d.path() / "s.json", s.dump());
  auto r = kforge({"e2e", "--from-samples", (d.path() / "s.json").string(), "--json", (d.path() / "e.json").string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("compared: hot medians"));
  EXPECT_THAT(r.out, HasSubstr("compile failed: the forward raised RuntimeError: x"));
  const nlohmann::json j = nlohmann::json::parse(read_file(d.path() / "e.json"));
  EXPECT_EQ(j["metric"], "hot");
  EXPECT_DOUBLE_EQ(j["speedups"]["kforge/eager"].get<double>(), 2.0);
  write_file_atomic(d.path() / "bad.json", "{");
  auto bad = kforge({"e2e", "--from-samples", (d.path() / "bad.json").string()});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("bad.json: not JSON"));
}

TEST(e2e_cmd, a_variant_whose_outputs_differ_from_eager_fails) {
  if (auto why = missing_prerequisite(); !why.empty()) GTEST_SKIP() << why;
  auto r = kforge(with({"e2e", "--model", k_model + ":make_mismatch", "--names", "gpt2-gelu-tanh", "--variants",
                        "eager,kforge", "--profile-passes", "1"},
                       k_quick));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("kforge failed: outputs differ from eager: output 0"));
}

// A workload that matches no module of the model: the kforge variant fails saying so (asked alone, without
// compile_kforge, which the patch step also marks).
TEST(e2e_cmd, nothing_patched_fails_the_kforge_variant_with_the_reason) {
  if (auto why = missing_prerequisite(); !why.empty()) GTEST_SKIP() << why;
  auto r = kforge(with({"e2e", "--model", k_model + ":make", "--names", "resnet50-avgpool", "--variants", "eager,kforge",
                        "--profile-passes", "1"},
                       k_quick));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("kforge failed: kforge.patch found no module"));
  EXPECT_THAT(r.out + r.err, ::testing::Not(HasSubstr("Traceback")));
}

TEST(e2e_cmd, bad_input_exits_2_saying_what_is_wrong) {
  auto missing = kforge({"e2e", "--model", "nowhere/model.py:make", "--device", "cpu"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("nowhere/model.py: --model nowhere/model.py:make: no such file"));
  auto no_model = kforge({"e2e"});
  EXPECT_EQ(no_model.exit_code, 2);
  EXPECT_THAT(no_model.err, HasSubstr("needs --model"));
  auto variant = kforge({"e2e", "--model", k_model + ":make", "--variants", "eager,fast"});
  EXPECT_EQ(variant.exit_code, 2);
  EXPECT_THAT(variant.err, HasSubstr("unknown variant `fast`"));
  if (auto why = missing_prerequisite(); !why.empty()) GTEST_SKIP() << why;
  auto function = kforge({"e2e", "--model", k_model + ":build", "--device", "cpu"});
  EXPECT_EQ(function.exit_code, 2) << function.out << function.err;
  EXPECT_THAT(function.err, HasSubstr("has no function build"));
  auto result = kforge({"e2e", "--model", k_model + ":not_a_pair", "--device", "cpu"});
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  EXPECT_THAT(result.err, HasSubstr("expected (model, example_inputs)"));
}

TEST(e2e_cmd, run_gates_an_e2e_entry_and_reports_it) {
  if (auto why = missing_prerequisite(); !why.empty()) GTEST_SKIP() << why;
  temp_dir d("kf-e2e-run");
  const fs::path junit = d.path() / "junit.xml", json_path = d.path() / "run.json", md = d.path() / "run.md";
  auto r = kforge({"run", "tests/data/e2e/tiny.e2e.yaml", "--device", "cpu", "--timeout", "0.2", "--min-time", "0",
                   "--junit", junit.string(), "--json", json_path.string(), "--markdown", md.string()});
  // No must_beat and no history of e2e:tiny: nothing to fail, whichever variant is faster here.
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(read_file(json_path));
  ASSERT_EQ(j["workloads"].size(), 1u) << j.dump(2);
  const auto& w = j["workloads"][0];
  EXPECT_EQ(w["name"], "e2e:tiny");
  std::map<std::string, std::string> outcomes;
  for (const auto& c : w["checks"]) outcomes[c["name"].get<std::string>()] = c["outcome"].get<std::string>();
  EXPECT_EQ(outcomes["kernel"], "passed") << w.dump(2);
  EXPECT_EQ(outcomes["verify[kforge]"], "passed") << w.dump(2);
  EXPECT_TRUE(outcomes.count("beats[eager][eager]")) << w.dump(2);
  EXPECT_TRUE(outcomes.count("regression[eager]")) << w.dump(2);
  EXPECT_TRUE(outcomes.count("amdahl[eager]")) << w.dump(2);
  EXPECT_THAT(read_file(junit), HasSubstr("e2e:tiny"));
  EXPECT_THAT(read_file(junit), HasSubstr("verify[kforge]"));
  EXPECT_THAT(read_file(md), HasSubstr("e2e:tiny"));
}

TEST(e2e_cmd, run_refuses_a_broken_e2e_entry_before_timing_anything) {
  temp_dir d("kf-e2e-run");
  write_file_atomic(d.path() / "bad.e2e.yaml",
                    "e2e:\n  model: tests/data/e2e/tiny_model.py:make\n  "
                    "must_beat: [vendor]\n");
  auto r = kforge({"run", (d.path() / "bad.e2e.yaml").string(), "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("bad.e2e.yaml:3:15: e2e.must_beat[0]"));
  write_file_atomic(d.path() / "gone.e2e.yaml", "e2e:\n  model: tests/data/e2e/gone.py:make\n");
  auto gone = kforge({"run", (d.path() / "gone.e2e.yaml").string(), "--device", "cpu"});
  EXPECT_EQ(gone.exit_code, 2) << gone.out << gone.err;
  EXPECT_THAT(gone.err, HasSubstr("gone.e2e.yaml:2:10: e2e.model: "
                                  "tests/data/e2e/gone.py does not exist"));
}

TEST(e2e_cmd, times_on_cuda_with_cuda_graphs) {
  if (!fs::exists("/dev/nvidiactl"))
    GTEST_SKIP() << "no GPU: the cuda path (CUDA events, CUDA graph replay) "
                    "runs on the device machine";
  if (auto why = missing_prerequisite(); !why.empty()) GTEST_SKIP() << why;
  temp_dir d("kf-e2e");
  const fs::path json_path = d.path() / "e2e.json";
  auto r = kforge({"e2e", "--model", k_model + ":make", "--device", "cuda", "--names", "gpt2-gelu-tanh", "--variants",
                   "eager,kforge", "--timeout", "0.5", "--json", json_path.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(read_file(json_path));
  for (const auto& v : j["variants"]) EXPECT_FALSE(v["hot"].is_null()) << v.dump();
  EXPECT_EQ(j["metric"], "hot");
}
