// ci/post-comment against a loopback fake of the GitHub API: posts a new comment, or updates kforge's own.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/subprocess.h"

namespace kf {
namespace {

const std::string k_src = KFORGE_SOURCE_DIR;

// Runs the fake API for `requests` requests while ci/post-comment runs; returns the fake's request log.
nlohmann::json post(const nlohmann::json& comments, int requests, const std::string& report, process_result* result) {
  temp_dir d;
  write_file_atomic(d.path() / "comments.json", comments.dump());
  write_file_atomic(d.path() / "report.md", report);
  auto port_file = d.path() / "port", log_file = d.path() / "log.json";
  std::thread server([&] {
    process_options o;
    o.timeout = std::chrono::seconds(30);
    run_process({"python3", k_src + "/tests/data/fake_github.py", port_file.string(), log_file.string(),
                 (d.path() / "comments.json").string(), std::to_string(requests)}, o);
  });
  for (int i = 0; i < 200 && !std::filesystem::exists(port_file); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::string port = read_file(port_file);
  process_options o;
  o.timeout = std::chrono::seconds(30);
  o.env_set = {{"GITHUB_TOKEN", "test-token"}, {"GITHUB_REPOSITORY", "acme/model"}, {"PR_NUMBER", "5"},
               {"GITHUB_API_URL", "http://127.0.0.1:" + port}};
  *result = run_process({k_src + "/ci/post-comment", (d.path() / "report.md").string()}, o);
  server.join();
  return nlohmann::json::parse(read_file(log_file));
}

TEST(post_comment, posts_a_new_comment_when_none_is_ours) {
  if (!find_program("curl") || !find_program("python3")) GTEST_SKIP() << "curl or python3 missing";
  process_result r;
  auto log = post({{{"id", 1}, {"body", "LGTM"}}}, 2, "<!-- kforge-report -->\n### ✅ kforge\n", &r);
  ASSERT_TRUE(r.ok()) << r.err;
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0]["method"], "GET");
  EXPECT_EQ(log[1]["method"], "POST");
  EXPECT_EQ(log[1]["path"], "/repos/acme/model/issues/5/comments");
  EXPECT_EQ(log[1]["auth"], "Bearer test-token");
  EXPECT_THAT(nlohmann::json::parse(log[1]["body"].get<std::string>())["body"].get<std::string>(),
              ::testing::HasSubstr("### ✅ kforge"));
  EXPECT_THAT(r.out, ::testing::HasSubstr("posted a comment on #5"));
}

TEST(post_comment, updates_its_earlier_comment) {
  if (!find_program("curl") || !find_program("python3")) GTEST_SKIP() << "curl or python3 missing";
  process_result r;
  auto log = post({{{"id", 1}, {"body", "LGTM"}},
                   {{"id", 42}, {"body", "<!-- kforge-report -->\nold"}, {"user", {{"login", "github-actions[bot]"}}}}},
                  2,
                  "<!-- kforge-report -->\nnew \"quoted\" text\n", &r);
  ASSERT_TRUE(r.ok()) << r.err;
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1]["method"], "PATCH");
  EXPECT_EQ(log[1]["path"], "/repos/acme/model/issues/comments/42");
  EXPECT_EQ(nlohmann::json::parse(log[1]["body"].get<std::string>())["body"], "<!-- kforge-report -->\nnew \"quoted\" text\n");
}

// A reviewer's comment that starts with the marker (a quote of the report) is not kforge's: a new comment is posted
// and the reviewer's is left alone.
TEST(post_comment, never_edits_another_authors_comment) {
  if (!find_program("curl") || !find_program("python3")) GTEST_SKIP() << "curl or python3 missing";
  process_result r;
  auto log = post({{{"id", 7}, {"body", "<!-- kforge-report -->\nquoted"}, {"user", {{"login", "reviewer"}}}}}, 2,
                  "<!-- kforge-report -->\nnew\n", &r);
  ASSERT_TRUE(r.ok()) << r.err;
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1]["method"], "POST");
  EXPECT_EQ(log[1]["auth"], "Bearer test-token");
}

}  // namespace
}  // namespace kf
