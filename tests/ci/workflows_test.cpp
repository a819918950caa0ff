// The workflows' own commands, run end to end without GitHub or a GPU (ci/run-workflow): in clones of a small
// repository whose origin is a bare repository in a temp folder, on the cpu device, with the GitHub API a loopback
// fake (ci/post-comment's curl) and `gh` a fake on PATH. actions/checkout, actions/cache and the JUnit action are
// skipped (the runner says so); the artifacts go through a folder. The Build steps are skipped: the tool is this
// build's (or $KFORGE_BIN's). What is checked: record-main pushes a note to origin; the PR gate's two shards and
// report job produce the JUnit, Markdown and JSON and post the comment; the nightly retune pushes one commit with
// the new winner to kforge/retune and opens one pull request. Also: the workflows pass ci/run-workflow --lint.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/subprocess.h"

namespace kf {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
const std::string k_src = KFORGE_SOURCE_DIR;

std::string kforge_bin_dir() {
  const char* e = std::getenv("KFORGE_BIN");  // a build to reuse (the tests build none of their own)
  return e && *e ? e : KFORGE_BINARY_DIR;
}

process_result sh(const std::string& script, const fs::path& cwd) {
  process_options o;
  o.cwd = cwd.string();
  o.timeout = std::chrono::minutes(2);
  o.env_set = {{"GIT_AUTHOR_NAME", "t"}, {"GIT_AUTHOR_EMAIL", "t@example.com"}, {"GIT_COMMITTER_NAME", "t"},
               {"GIT_COMMITTER_EMAIL", "t@example.com"}};
  return run_process({"bash", "-euo", "pipefail", "-c", script}, o);
}

const char* k_spec = R"(version: 1
name: NAME
model: workflow test
inputs:
  x: {shape: [R, D], dtype: float32, init: {normal: {std: 1.0}}}
graph:
  - softmax: {input: x, dim: -1}
cases:
  - {R: 16, D: 64, gate: true}
baselines: [eager]
gate: {max_regression: 95%, must_beat: []}
search: {families: [row_softmax], budget: {evaluations: 3}}
)";

class workflows : public ::testing::Test {
 protected:
  void SetUp() override {
    if (run_process({"python3", "-c", "import yaml"}).exit_code != 0) GTEST_SKIP() << "python3 with PyYAML missing";
    if (!find_program("curl") || !find_program("git")) GTEST_SKIP() << "curl or git missing";
    root = m_dir.path();
    // The repository: the CI scripts and workflows of this source tree, two small workloads (one with a stored cpu
    // kernel, one without: the nightly's work), pushed to a bare origin.
    fs::path seed = root / "seed";
    fs::create_directories(seed / "workloads" / "tiny-a" / "kernels");
    fs::copy(k_src + "/ci", seed / "ci", fs::copy_options::recursive);
    fs::copy(k_src + "/.github", seed / ".github", fs::copy_options::recursive);
    write_file_atomic(seed / ".gitignore", "/build*/\n/.kforge/\n/out/\n");
    for (auto name : {"tiny-a", "tiny-b"}) {
      std::string spec = k_spec;
      spec.replace(spec.find("NAME"), 4, name);
      write_file_atomic(seed / "workloads" / (std::string(name) + ".yaml"), spec);
    }
    fs::copy_file(k_src + "/tests/data/kernels/honest/vectorized.cpp", seed / "workloads/tiny-a/kernels/cpu-x86-64.cpp");
    auto r = sh("git init -q -b main && git add -A && git commit -qm seed && git init -q --bare -b main ../origin.git && "
                "git remote add origin ../origin.git && git push -q origin main", seed);
    ASSERT_TRUE(r.ok()) << r.err;
    // The tool the workflows call ($KFORGE), with short timing so the test stays short on a loaded 2-core machine;
    // and a fake gh that logs its arguments (no pull request exists yet).
    fs::create_directories(root / "bin");
    write_file_atomic(root / "bin" / "kforge-quick",
                      "#!/bin/sh\nbin='" + kforge_bin_dir() + "/kforge'\n"
                      "if [ \"$1\" = run ]; then shift; exec \"$bin\" run --timeout 1 --min-time 0.05 --min-samples 5 \"$@\"; fi\n"
                      "exec \"$bin\" \"$@\"\n");
    write_file_atomic(root / "bin" / "gh",
                      "#!/bin/sh\necho \"gh $*\" >> '" + (root / "gh.log").string() + "'\n"
                      "case \"$1 $2\" in 'pr view') exit 1 ;; 'pr create') echo https://github.com/acme/model/pull/9 ;; esac\n");
    fs::permissions(root / "bin" / "kforge-quick", fs::perms::owner_all, fs::perm_options::add);
    fs::permissions(root / "bin" / "gh", fs::perms::owner_all, fs::perm_options::add);
  }

  // A fresh clone of origin: what actions/checkout would leave (fetch-depth 0).
  fs::path clone(const std::string& name, const std::string& setup = "true") {
    auto r = sh("git clone -q origin.git " + name + " && cd " + name + " && " + setup, root);
    EXPECT_TRUE(r.ok()) << r.err;
    return root / name;
  }

  // ci/run-workflow on `workflow` in `workdir`; returns its log (jobs, steps, outcomes).
  json run_workflow(const fs::path& workdir, const std::string& workflow, const json& context,
                    std::vector<std::string> jobs = {}, int* exit_code = nullptr) {
    write_file_atomic(root / "context.json", context.dump());
    std::vector<std::string> argv = {k_src + "/ci/run-workflow", (workdir / ".github/workflows" / workflow).string()};
    argv.insert(argv.end(), jobs.begin(), jobs.end());
    const std::vector<std::string> options = {
        "--workdir", workdir.string(), "--context", (root / "context.json").string(),
        "--artifacts", (root / ("artifacts-" + workflow)).string(), "--log", (root / "log.json").string(),
        "--skip-step", "Build", "--env", "KFORGE=" + (root / "bin" / "kforge-quick").string(),
        "--env", "KFORGE_DEVICE=cpu",
        "--env", "KFORGE_SANDBOX=on",  // the protections this machine allows: strict refuses one without Landlock
        "--env", "PATH=" + (root / "bin").string() + ":" + std::getenv("PATH")};
    argv.insert(argv.end(), options.begin(), options.end());
    process_options o;
    o.timeout = std::chrono::minutes(5);
    o.merge_stderr = true;
    auto r = run_process(argv, o);
    m_output = r.out;
    if (std::getenv("KFORGE_TEST_VERBOSE")) std::cout << m_output;  // the runner's account of every step
    if (exit_code) *exit_code = r.exit_code;
    EXPECT_FALSE(r.timed_out) << r.out;
    EXPECT_TRUE(fs::exists(root / "log.json")) << r.out;
    return fs::exists(root / "log.json") ? json::parse(read_file(root / "log.json")) : json::object();
  }

  static const json* step(const json& log, const std::string& job, const std::string& name, int nth = 0) {
    for (auto& j : log["jobs"])
      if (j["job"] == job && nth-- == 0)
        for (auto& s : j["steps"])
          if (s["name"].get<std::string>().rfind(name, 0) == 0) return &s;
    return nullptr;
  }

  std::string git_out(const std::string& cmd) { return sh(cmd, root).out; }

  temp_dir m_dir{"kf-workflows"};
  fs::path root;
  std::string m_output;
};

json push_context() {
  return {{"github", {{"repository", "acme/model"}, {"event_name", "push"}, {"ref", "refs/heads/main"},
                      {"run_id", "7"}, {"event", json::object()}}},
          {"secrets", {{"GITHUB_TOKEN", "test-token"}}}};
}

TEST_F(workflows, record_main_stores_a_note_and_pushes_it_to_origin) {
  fs::path work = clone("main");
  int code = -1;
  json log = run_workflow(work, "record-main.yml", push_context(), {}, &code);
  ASSERT_EQ(code, 0) << m_output;
  EXPECT_THAT(m_output, ::testing::HasSubstr("skipping uses: actions/checkout@v4"));
  EXPECT_THAT(m_output, ::testing::HasSubstr("skipped as asked (--skip-step)"));  // Build
  ASSERT_NE(step(log, "record", "Push the note"), nullptr);
  EXPECT_EQ((*step(log, "record", "Push the note"))["outcome"], "success");
  std::string head = git_out("git -C main rev-parse HEAD");
  auto note = sh("git --git-dir origin.git notes --ref kforge show " + head, root);
  ASSERT_TRUE(note.ok()) << "origin has no note on main's head: " << note.err << m_output;
  EXPECT_THAT(note.out, ::testing::HasSubstr("cpu-x86-64"));
  EXPECT_TRUE(fs::exists(root / "artifacts-record-main.yml" / "kforge-main-" / "out" / "kforge.json")) << m_output;
}

TEST_F(workflows, pr_gate_runs_two_shards_joins_them_and_posts_one_comment) {
  // main's history first (the gate compares with it and balances its shards by it), then a pull request.
  fs::path main = clone("main");
  int code = -1;
  run_workflow(main, "record-main.yml", push_context(), {}, &code);
  ASSERT_EQ(code, 0) << m_output;
  fs::path pr = clone("pr", "git checkout -q -b feature && echo '# a change' >> workloads/tiny-a.yaml && "
                            "git commit -qam 'a change'");

  temp_dir api("kf-fake-github");
  write_file_atomic(api.path() / "comments.json", "[]");
  auto port_file = api.path() / "port", api_log = api.path() / "log.json";
  std::thread server([&] {
    process_options o;
    o.timeout = std::chrono::minutes(5);
    run_process({"python3", k_src + "/tests/data/fake_github.py", port_file.string(), api_log.string(),
                 (api.path() / "comments.json").string(), "2"}, o);
  });
  for (int i = 0; i < 200 && !fs::exists(port_file); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::string api_url = "http://127.0.0.1:" + read_file(port_file);
  json pull = {{"number", 5}, {"head", {{"repo", {{"full_name", "acme/model"}}}}}};
  json ctx = {{"github", {{"repository", "acme/model"}, {"event_name", "pull_request"}, {"base_ref", "main"},
                          {"head_ref", "feature"}, {"run_id", "8"}, {"api_url", api_url},
                          {"event", {{"number", 5}, {"pull_request", pull}}}}},
              {"secrets", {{"GITHUB_TOKEN", "test-token"}}}};
  json log = run_workflow(pr, "pr-gate.yml", ctx, {}, &code);
  // The fake serves two requests (the comment lookup and the post); if none came, unblock it.
  for (int i = 0; i < 2 && (!fs::exists(api_log) || json::parse(read_file(api_log)).size() < 2); ++i)
    run_process({"curl", "-s", "-o", "/dev/null", "--max-time", "5", api_url + "/unblock"});
  server.join();

  for (auto f : {"kforge.junit.xml", "kforge.md", "kforge.json"})
    EXPECT_TRUE(fs::exists(pr / "out" / f)) << f << "\n" << m_output;
  ASSERT_TRUE(fs::exists(pr / "out" / "kforge.json")) << m_output;
  json merged = json::parse(read_file(pr / "out" / "kforge.json"));
  EXPECT_EQ(merged["options"]["shard"]["merged"], (json{1, 2})) << m_output;
  EXPECT_EQ(merged["workloads"].size(), 2u);
  EXPECT_EQ(merged["base"]["ref"], "origin/main");
  for (int k = 0; k < 2; ++k) {
    auto* run = step(log, "gate", "kforge run (shard", k);
    ASSERT_NE(run, nullptr) << m_output;
    EXPECT_EQ((*run)["outcome"], "success") << m_output;
    EXPECT_EQ((*run)["name"], fmt::format("kforge run (shard {} of 2)", k + 1));
  }
  // The comment: looked up, then posted, with the report.
  ASSERT_TRUE(fs::exists(api_log));
  json calls = json::parse(read_file(api_log));
  ASSERT_EQ(calls.size(), 2u) << m_output;
  EXPECT_EQ(calls[1]["method"], "POST");
  EXPECT_EQ(calls[1]["path"], "/repos/acme/model/issues/5/comments");
  EXPECT_THAT(json::parse(calls[1]["body"].get<std::string>())["body"].get<std::string>(),
              ::testing::HasSubstr("<!-- kforge-report -->"));
  // The check's verdict is the merged run's: exit 0 with a green check, else the step fails.
  auto* verdict = step(log, "report", "Verdict");
  ASSERT_NE(verdict, nullptr);
  const bool passed = merged["workloads"].size() == 2u && code == 0;
  EXPECT_EQ((*verdict)["outcome"], passed ? "success" : "failure") << m_output;
  EXPECT_EQ((*step(log, "report", "Upload reports"))["with"]["retention-days"], "14");
}

TEST_F(workflows, a_fork_pull_request_waits_for_approval_in_an_environment) {
  fs::path pr = clone("pr");
  json pull = {{"number", 6}, {"head", {{"repo", {{"full_name", "stranger/model"}}}}}};
  json ctx = {{"github", {{"repository", "acme/model"}, {"event_name", "pull_request"}, {"base_ref", "main"},
                          {"event", {{"pull_request", pull}}}}}};
  json log = run_workflow(pr, "pr-gate.yml", ctx, {"approve"});
  ASSERT_EQ(log["jobs"].size(), 1u) << m_output;
  EXPECT_EQ(log["jobs"][0]["environment"], "gpu-fork-pr");
  pull["head"]["repo"]["full_name"] = "acme/model";
  ctx["github"]["event"]["pull_request"] = pull;
  log = run_workflow(pr, "pr-gate.yml", ctx, {"approve"});
  EXPECT_EQ(log["jobs"][0]["environment"], "");
}

TEST_F(workflows, nightly_retune_pushes_the_new_winner_to_one_branch_and_opens_one_pull_request) {
  fs::path work = clone("nightly");
  json ctx = {{"github", {{"repository", "acme/model"}, {"event_name", "schedule"}, {"run_id", "9"},
                          {"event", json::object()}}},
              {"secrets", {{"GITHUB_TOKEN", "test-token"}}}};
  int code = -1;
  json log = run_workflow(work, "nightly-retune.yml", ctx, {}, &code);
  ASSERT_EQ(code, 0) << m_output;
  EXPECT_THAT(m_output, ::testing::HasSubstr("skipping uses: actions/cache@v4"));
  auto files = sh("git --git-dir origin.git show --name-only --format=%s kforge/retune", root);
  ASSERT_TRUE(files.ok()) << "no kforge/retune branch on origin: " << files.err << m_output;
  EXPECT_THAT(files.out, ::testing::HasSubstr("kforge retune: new winners"));
  EXPECT_THAT(files.out, ::testing::HasSubstr("workloads/tiny-b/kernels/cpu-x86-64.cpp"));
  EXPECT_THAT(files.out, ::testing::Not(::testing::HasSubstr("tiny-a")));
  // The branch is one commit on main.
  EXPECT_EQ(git_out("git --git-dir origin.git rev-list --count main..kforge/retune"), "1\n");
  std::string gh = read_file(root / "gh.log");
  EXPECT_THAT(gh, ::testing::HasSubstr("gh auth setup-git"));
  EXPECT_THAT(gh, ::testing::HasSubstr("gh pr create --base main --head kforge/retune"));
}

TEST_F(workflows, nightly_retune_without_new_winners_says_so_and_opens_no_pull_request) {
  // Every workload has a kernel and nothing regressed: nothing to retune.
  fs::path work = clone("nightly", "git rm -q workloads/tiny-b.yaml && git commit -qm 'only tiny-a' && git push -q origin main");
  json ctx = {{"github", {{"repository", "acme/model"}, {"event_name", "schedule"}, {"event", json::object()}}}};
  int code = -1;
  run_workflow(work, "nightly-retune.yml", ctx, {}, &code);
  ASSERT_EQ(code, 0) << m_output;
  EXPECT_THAT(m_output, ::testing::HasSubstr("no new winners tonight: no pull request"));
  EXPECT_FALSE(sh("git --git-dir origin.git rev-parse --verify -q kforge/retune", root).ok());
  EXPECT_FALSE(fs::exists(root / "gh.log"));
}

TEST(workflows_lint, the_workflows_pass_the_structure_and_shellcheck_checks) {
  if (run_process({"python3", "-c", "import yaml"}).exit_code != 0) GTEST_SKIP() << "python3 with PyYAML missing";
  process_options o;
  o.cwd = k_src;
  o.merge_stderr = true;
  auto r = run_process({k_src + "/ci/run-workflow", "--lint", ".github/workflows/pr-gate.yml",
                        ".github/workflows/record-main.yml", ".github/workflows/nightly-retune.yml"}, o);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, ::testing::HasSubstr("0 problem(s)"));
}

}  // namespace
}  // namespace kf
