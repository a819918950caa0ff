// kforge doctor and kforge validate, run as the built binary: structure of the output and exit codes.
#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "spec/spec_parse.h"
#include "util/fs.h"
#include "util/subprocess.h"

namespace kf {
namespace {

const std::string k_kforge = KFORGE_BINARY_DIR "/kforge";
const std::string k_source = KFORGE_SOURCE_DIR;

TEST(doctor, json_lists_every_check_with_a_status) {
  process_options o;
  o.env_set["OPENAI_API_KEY"] = "sk-test-secret-value";
  auto r = run_process({k_kforge, "doctor", "--json", "--workloads", k_source + "/workloads"}, o);
  ASSERT_TRUE(r.started);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(r.exit_code, j.at("cpu_ready").get<bool>() ? 0 : 2);
  std::set<std::string> whats;
  for (auto& c : j.at("checks")) {
    std::string s = c.at("status");
    EXPECT_TRUE(s == "ok" || s == "missing" || s == "warn") << s;
    if (s != "ok") EXPECT_FALSE(c.at("fix").get<std::string>().empty()) << c.dump();
    whats.insert(c.at("what").get<std::string>());
  }
  for (const char* w : {"kforge", "c++ compiler", "nvcc", "kforge-worker", "cudnn", "libgit2", "sqlite", "llm endpoint", "workloads"})
    EXPECT_TRUE(whats.count(w)) << w;
  EXPECT_TRUE(whats.count("python + torch") || whats.count("python"));
  if (j.at("cpu_ready").get<bool>()) {  // the cpu worker's own view: its cpu, threads and torch
    ASSERT_TRUE(whats.count("worker cpu")) << r.out;
    for (auto& c : j.at("checks"))
      if (c.at("what") == "worker cpu") {
        EXPECT_EQ(c.at("status"), "ok") << c.dump();
        EXPECT_NE(c.at("detail").get<std::string>().find("threads"), std::string::npos) << c.dump();
      }
  }
  EXPECT_EQ(r.out.find("sk-test-secret-value"), std::string::npos);  // names the variable, never the key
  EXPECT_NE(r.out.find("OPENAI_API_KEY set"), std::string::npos);
  EXPECT_NE(r.out.find("all valid"), std::string::npos);
}

TEST(doctor, text_lines_and_bad_workloads_folder) {
  temp_dir d;
  auto r = run_process({k_kforge, "doctor", "--no-torch", "--workloads", (d.path() / "nope").string()});
  EXPECT_NE(r.out.find("warn     workloads"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("is not a folder"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ok       c++ compiler"), std::string::npos) << r.out;
  auto quiet = run_process({k_kforge, "doctor", "--no-torch", "--no-worker"});
  EXPECT_EQ(quiet.out.find("worker cpu"), std::string::npos) << quiet.out;  // --no-worker starts none
}

TEST(validate, exit_codes_and_messages) {
  auto ok = run_process({k_kforge, "validate", k_source + "/workloads"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  const size_t n = find_specs(k_source + "/workloads").size();  // every bundled spec is valid
  EXPECT_NE(ok.out.find(fmt::format("{0} specs checked: {0} valid, 0 invalid", n)), std::string::npos) << ok.out;
  std::string bad_file = k_source + "/tests/data/specs/broken/unknown-op.yaml";
  auto bad = run_process({k_kforge, "validate", bad_file});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.out.find(bad_file + ":6:5: error: graph[0]: unknown op `group_nrom`; did you mean `group_norm`?"), std::string::npos) << bad.out;
  auto missing = run_process({k_kforge, "validate", "/nonexistent/x.yaml"});
  EXPECT_EQ(missing.exit_code, 2);
  auto j = run_process({k_kforge, "validate", "--json", bad_file, k_source + "/workloads/qwen-router-topk.yaml"});
  EXPECT_EQ(j.exit_code, 2);
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc.at("valid"), 1);
  EXPECT_EQ(doc.at("invalid"), 1);
  auto& e = doc.at("specs").at(0).at("errors").at(0);
  EXPECT_EQ(e.at("line"), 6);
  EXPECT_EQ(e.at("column"), 5);
  EXPECT_EQ(e.at("field"), "graph[0]");
  auto ops = run_process({k_kforge, "validate", "--ops"});
  EXPECT_EQ(ops.exit_code, 0);
  EXPECT_NE(ops.out.find("group_norm"), std::string::npos);
}

}  // namespace
}  // namespace kf
