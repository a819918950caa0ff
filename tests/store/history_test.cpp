#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/ranges.h>

#include "../support/report_fixture.h"
#include "store/git_repo.h"
#include "store/history.h"
#include "store/history_note.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/subprocess.h"

namespace kf {
namespace {

// A real repository driven by the git command line, so libgit2's view is checked against git's own.
class repo_fixture : public ::testing::Test {
 protected:
  temp_dir dir{"kforge-history"};
  std::string git(std::vector<std::string> args) {
    std::vector<std::string> argv = {"git", "-C", dir.path().string(), "-c", "user.name=Test", "-c",
                                     "user.email=test@example.com", "-c", "init.defaultBranch=main", "-c",
                                     "commit.gpgsign=false"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run_process(argv);
    EXPECT_TRUE(r.ok()) << fmt::format("git {}: {}", fmt::join(args, " "), r.err);
    std::string out = r.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }
  std::string commit_file(const std::string& path, const std::string& text, const std::string& msg) {
    write_file_atomic(dir.path() / path, text);
    git({"add", path});
    git({"commit", "-q", "-m", msg});
    return git({"rev-parse", "HEAD"});
  }
  void SetUp() override { git({"init", "-q"}); }
};

TEST_F(repo_fixture, resolves_revisions_and_finds_the_merge_base) {
  std::string base = commit_file("a.txt", "one\n", "base");
  git({"checkout", "-q", "-b", "feature"});
  std::string feature = commit_file("a.txt", "two\n", "feature change");
  git({"checkout", "-q", "main"});
  std::string main2 = commit_file("b.txt", "other\n", "main moves on");
  git({"checkout", "-q", "feature"});

  git_repo repo(dir.path() / "a.txt");  // found from a path inside the tree
  EXPECT_EQ(repo.resolve("HEAD"), feature);
  EXPECT_EQ(repo.resolve("main"), main2);
  EXPECT_EQ(repo.merge_base("HEAD", "main"), base);
  EXPECT_EQ(repo.merge_base("HEAD", "main"), git({"merge-base", "HEAD", "main"}));
  EXPECT_THROW(repo.resolve("no-such-branch"), user_error);
  EXPECT_FALSE(repo.try_resolve("no-such-branch").has_value());
}

TEST_F(repo_fixture, loads_a_file_from_a_commit) {
  std::string first = commit_file("workloads/w/kernels/sm90-x.cu", "// v1\n", "v1");
  commit_file("workloads/w/kernels/sm90-x.cu", "// v2\n", "v2");
  git_repo repo(dir.path());
  EXPECT_EQ(repo.file_at(first, "workloads/w/kernels/sm90-x.cu").value(), "// v1\n");
  EXPECT_EQ(repo.file_at(repo.resolve("HEAD"), dir.path() / "workloads/w/kernels/sm90-x.cu").value(), "// v2\n");
  EXPECT_FALSE(repo.file_at(first, "workloads/w/kernels/none.cu").has_value());
  EXPECT_FALSE(repo.file_at(first, "workloads/w").has_value());  // a folder is not a file
  EXPECT_EQ(repo.relative(dir.path() / "workloads" / "w"), "workloads/w");
  EXPECT_THROW(repo.relative("/"), user_error);
}

TEST_F(repo_fixture, notes_round_trip_and_git_can_read_them) {
  std::string c = commit_file("a.txt", "x\n", "c");
  git_repo repo(dir.path());
  EXPECT_FALSE(repo.read_note(c, k_notes_ref).has_value());
  run_result r = fixture::run(2, 1);
  record_history(repo, c, r);
  std::string via_git = git({"notes", "--ref", "kforge", "show", c});
  auto note = nlohmann::json::parse(via_git);
  EXPECT_EQ(note["schema"], k_note_schema);
  EXPECT_TRUE(note["results"].contains("sm90-nvidia-h200"));

  history_entry h = load_history(repo, c, "sm90-nvidia-h200");
  ASSERT_TRUE(h.result.has_value()) << h.why;
  EXPECT_EQ(h.result->workloads.size(), 2u);
  // The note keeps summaries, not samples (#19): the compared metric's statistics per impl.
  const auto* k = h.result->workloads[0].cases[0].find("kernel");
  const auto& want = r.workloads[0].cases[0].find("kernel")->cold.stats;
  EXPECT_TRUE(k->cold.samples_us.empty());
  EXPECT_EQ(k->cold.stats.count, 20);
  EXPECT_NEAR(k->cold.stats.median_us, want.median_us, want.median_us * 1e-4);
  EXPECT_NEAR(k->cold.stats.ci_lo_us, want.ci_lo_us, want.ci_lo_us * 1e-4);
  EXPECT_EQ(h.result->workloads[0].cases[0].find("vendor")->status, impl_status::skipped);
  EXPECT_EQ(h.result->workloads[0].kernel_path, r.workloads[0].kernel_path);
  EXPECT_EQ(h.result->workloads[0].seconds, 3.5);
  EXPECT_EQ(via_git.find("samples_us"), std::string::npos);
  EXPECT_EQ(via_git.find("matches_reference"), std::string::npos);  // no verification lists
}

// Notes written before kforge.note/2 (full run results with samples) still load, samples and all, and a
// record into such a note rewrites it in the compact form, keeping the other GPU keys.
TEST_F(repo_fixture, old_notes_with_samples_still_load) {
  std::string c = commit_file("a.txt", "x\n", "c");
  git_repo repo(dir.path());
  run_result old = fixture::run(2, 1);
  nlohmann::json full = to_json(old);
  full["workloads"][0]["cases"][0]["impls"][0]["cold"]["samples_us"] = old.workloads[0].cases[0].impls[0].cold.samples_us;
  nlohmann::json note = {{"schema", "kforge.note/1"}, {"results", {{"sm80-nvidia-a100", full}, {"sm90-nvidia-h200", full}}}};
  repo.write_note(c, k_notes_ref, note.dump());

  auto h = load_history(repo, c, "sm90-nvidia-h200");
  ASSERT_TRUE(h.result.has_value()) << h.why;
  EXPECT_EQ(h.result->workloads.size(), 2u);
  EXPECT_EQ(h.result->workloads[0].cases[0].impls[0].cold.samples_us.size(), 20u);

  run_result update = fixture::run(1, 1);
  update.workloads[0].seconds = 7;
  record_history(repo, c, update);
  auto rewritten = nlohmann::json::parse(*repo.read_note(c, k_notes_ref));
  EXPECT_EQ(rewritten["schema"], "kforge.note/2");
  EXPECT_TRUE(rewritten["results"].contains("sm80-nvidia-a100"));
  EXPECT_EQ(rewritten.dump().find("samples_us"), std::string::npos);
  auto after = load_history(repo, c, "sm90-nvidia-h200");
  ASSERT_TRUE(after.result.has_value()) << after.why;
  ASSERT_EQ(after.result->workloads.size(), 2u);
  EXPECT_EQ(after.result->workloads[0].seconds, 7);
  EXPECT_EQ(after.result->workloads[1].name, "softmax-0001");
  ASSERT_TRUE(load_history(repo, c, "sm80-nvidia-a100").result.has_value());
}

// A workload's outcome survives the note: one "recorded" check stands for the checks that were not kept.
TEST(history, note_keeps_each_workloads_outcome) {
  run_result r = fixture::run(2, 1);
  gate_check k;
  k.kind = "beats";
  k.case_name = r.workloads[1].cases[0].name;
  k.against = "compile";
  k.outcome = check_outcome::failed;
  k.sentence = "kernel is not faster than compile";
  r.workloads[1].checks.push_back(k);
  auto note = nlohmann::json::parse(merge_note("", r));
  run_result back = run_from_note_entry(note["results"]["sm90-nvidia-h200"], "note");
  EXPECT_EQ(back.workloads[0].outcome(), check_outcome::passed);
  EXPECT_EQ(back.workloads[1].outcome(), check_outcome::failed);
  EXPECT_EQ(note.dump().find("not faster"), std::string::npos);  // no sentences
}

TEST_F(repo_fixture, recording_one_gpu_key_keeps_the_others) {
  std::string c = commit_file("a.txt", "x\n", "c");
  git_repo repo(dir.path());
  run_result h200 = fixture::run(2, 1);
  run_result a100 = fixture::run(1, 1);
  a100.env.gpu_key = "sm80-nvidia-a100";
  record_history(repo, c, h200);
  record_history(repo, c, a100);
  // A second shard for the H200: replaces its workload of the same name, keeps the other.
  run_result shard = fixture::run(1, 1);
  shard.workloads[0].seconds = 42;
  record_history(repo, c, shard);

  auto h = load_history(repo, c, "sm90-nvidia-h200");
  ASSERT_TRUE(h.result.has_value());
  ASSERT_EQ(h.result->workloads.size(), 2u);
  EXPECT_EQ(h.result->workloads[0].seconds, 42);
  auto a = load_history(repo, c, "sm80-nvidia-a100");
  ASSERT_TRUE(a.result.has_value());
  EXPECT_EQ(a.result->workloads.size(), 1u);
}

TEST_F(repo_fixture, missing_or_foreign_history_says_why) {
  std::string c = commit_file("a.txt", "x\n", "c");
  git_repo repo(dir.path());
  auto none = load_history(repo, c, "sm90-nvidia-h200");
  EXPECT_FALSE(none.result.has_value());
  EXPECT_THAT(none.why, ::testing::HasSubstr("no kforge history note on " + c.substr(0, 12)));

  record_history(repo, c, fixture::run(1, 1));
  auto other = load_history(repo, c, "sm100-nvidia-b200");
  EXPECT_FALSE(other.result.has_value());
  EXPECT_THAT(other.why, ::testing::HasSubstr("has no results for sm100-nvidia-b200 (it has: sm90-nvidia-h200)"));

  git({"notes", "--ref", "kforge", "add", "-f", "-m", "hand-written text", c});
  auto foreign = load_history(repo, c, "sm90-nvidia-h200");
  EXPECT_FALSE(foreign.result.has_value());
  EXPECT_THAT(foreign.why, ::testing::HasSubstr("not JSON"));
}

TEST_F(repo_fixture, pr_reads_the_merge_base_note) {
  std::string base = commit_file("a.txt", "one\n", "base");
  git_repo repo(dir.path());
  run_result recorded = fixture::run(1, 1);
  record_history(repo, base, recorded);
  git({"checkout", "-q", "-b", "pr"});
  commit_file("a.txt", "two\n", "pr change");
  git({"checkout", "-q", "main"});
  commit_file("b.txt", "three\n", "main moves on");
  git({"checkout", "-q", "pr"});

  std::string mb = repo.merge_base("HEAD", "main");
  EXPECT_EQ(mb, base);
  auto h = load_history(repo, mb, "sm90-nvidia-h200");
  ASSERT_TRUE(h.result.has_value()) << h.why;
  EXPECT_EQ(h.commit, base);
}

TEST(history, not_a_repository_is_a_user_error) {
  temp_dir d;
  EXPECT_THROW(git_repo{d.path()}, user_error);
}

}  // namespace
}  // namespace kf
