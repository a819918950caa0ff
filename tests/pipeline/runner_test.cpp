// The run pipeline on a fake backend: stored kernels in a temp workloads folder, a real git repository for the
// history and the merge-base's kernel, canned worker answers.
#include <map>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/ranges.h>

#include "pipeline/runner.h"
#include "../support/report_fixture.h"
#include "store/git_repo.h"
#include "store/history.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/subprocess.h"

namespace kf {
namespace {

class fake_backend : public run_backend {
 public:
  double kernel_us = 50, base_us = 50;
  bool verify_passes = true;
  bool compile_available = true;
  bool throw_in_check = false;
  std::vector<std::string> checked, compiled;
  nlohmann::json last_measure;

  std::string device_kind_name() const override { return "cuda"; }
  nlohmann::json env() override {
    return {{"device", "cuda:0"}, {"gpu_name", "NVIDIA H200"}, {"arch", "sm_90"}, {"sm_count", 132}, {"torch", "2.11.0"}};
  }
  candidate_check check(const workload_spec& spec, const std::string& source, const std::string&) override {
    checked.push_back(source);
    if (throw_in_check) throw infra_error("kforge-worker could not start: no CUDA device 0");
    candidate_check c;
    c.verify.verdict = verify_passes ? "passed" : "failed";
    for (auto& cs : spec.cases)
      c.verify.checks.push_back({"match", cs.name, 1, verify_passes, verify_passes ? "ok" : "max err 3.2 of tolerance", {}});
    if (verify_passes) c.so_path = "/tmp/kernel.so";
    return c;
  }
  compile_result compile(const std::string& source, const std::string&) override {
    compiled.push_back(source);
    compile_result r;
    r.ok = true;
    r.so_path = "/tmp/base.so";
    return r;
  }
  // The worker crashes while timing: with the kernel among the impls (kernel_crashes), or only beside baselines.
  bool kernel_crashes = false, crashes_with_baselines = false;
  int measures = 0;
  worker_outcome measure(const nlohmann::json& request, std::chrono::milliseconds) override {
    last_measure = request;
    ++measures;
    if (kernel_crashes || (crashes_with_baselines && request["impls"].size() > 1)) {
      worker_outcome dead;
      dead.status = worker_status::crashed;
      dead.signal = "SIGSEGV";
      return dead;
    }
    nlohmann::json results = nlohmann::json::array();
    for (auto& c : request["cases"]) {
      for (auto& impl : request["impls"]) {
        std::string name = impl.value("name", impl.value("kind", ""));
        double t = name == "kernel" ? kernel_us : name == "base" ? base_us : name == "eager" ? 200 : name == "compile" ? 75 : 0;
        if (name == "vendor") {
          results.push_back({{"impl", "vendor"}, {"case", c}, {"available", false}, {"not_available", "no cuDNN op for softcap"}});
          continue;
        }
        results.push_back({{"impl", name}, {"case", c}, {"available", true},
                           {"cold", {{"samples_us", fixture::samples(t, 20, 0.01, results.size() + 1)}, {"discarded", 0}}}});
      }
    }
    worker_outcome o;
    o.response = {{"ok", true}, {"results", results},
                  {"floor", {{request["cases"][0].get<std::string>(),
                              {{"bytes", 1e8}, {"bandwidth_floor_us", 25.0}, {"launch_floor_us", 3.5}, {"floor_us", 25.0}}}}},
                  {"env", {{"sm_clock_mhz", 1980}}}};
    return o;
  }
  nlohmann::json baseline_impl(const std::string& name, const workload_spec&, const std::vector<std::string>& cases,
                               const std::string&) override {
    if (name != "compile") return {{"kind", name}};
    if (!compile_available) return {{"skipped", "skipped: python has no torch"}};
    nlohmann::json pt2 = nlohmann::json::object();
    for (auto& c : cases) pt2[c] = {{"default", "/tmp/" + c + ".pt2"}};
    return {{"kind", "compile"}, {"pt2", pt2}};
  }
  void prepare_baseline(const std::string& name, const std::vector<baseline_work>& work,
                        const std::string& gpu_key) override {
    EXPECT_EQ(name, "compile");  // the only baseline with a parent side
    for (auto& w : work) prepared[w.spec->name] = w.cases;
    prepared_key = gpu_key;
  }
  std::string compiler_identity() override { return "nvcc fake"; }
  std::map<std::string, std::vector<std::string>> prepared;
  std::string prepared_key;
};

class runner_fixture : public ::testing::Test {
 protected:
  temp_dir dir{"kforge-runner"};
  std::string git(std::vector<std::string> args) {
    std::vector<std::string> argv = {"git", "-C", dir.path().string(), "-c", "user.name=T", "-c", "user.email=t@e",
                                     "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run_process(argv);
    EXPECT_TRUE(r.ok()) << r.err;
    return r.out;
  }
  workload_spec spec(const std::string& name) {
    workload_spec s;
    s.name = name;
    s.path = (dir.path() / "workloads" / (name + ".yaml")).string();
    case_spec c;
    c.name = "S=1024";
    c.gate = true;
    case_spec small;
    small.name = "S=7";
    s.cases = {c, small};
    s.gate.must_beat = {"eager", "compile"};
    return s;
  }
  void store_kernel(const std::string& name, const std::string& text) {
    write_file_atomic(dir.path() / "workloads" / name / "kernels" / "sm90-nvidia-h200.cu", text);
  }
  void SetUp() override { git({"init", "-q"}); }
};

TEST_F(runner_fixture, passing_workload_is_verified_timed_and_gated) {
  store_kernel("w", "// v1\n");
  git({"add", "."});
  git({"commit", "-q", "-m", "v1"});
  git_repo repo(dir.path());
  fake_backend b;
  run_options o;
  run_result r = run_workloads({spec("w")}, b, &repo, o);
  EXPECT_EQ(r.env.gpu_key, "sm90-nvidia-h200");
  EXPECT_EQ(r.env.compiler, "nvcc fake");
  EXPECT_EQ(r.env.sm_clock_mhz, 1980);
  ASSERT_EQ(r.workloads.size(), 1u);
  const auto& w = r.workloads[0];
  ASSERT_EQ(w.cases.size(), 1u);  // only the gated case is timed
  EXPECT_EQ(w.cases[0].name, "S=1024");
  EXPECT_EQ(b.last_measure["cases"], nlohmann::json::array({"S=1024"}));
  EXPECT_NEAR(w.cases[0].speedups.at("eager"), 4.0, 0.1);
  EXPECT_EQ(w.cases[0].find("vendor")->status, impl_status::skipped);
  EXPECT_EQ(w.cases[0].find("vendor")->why, "no cuDNN op for softcap");
  EXPECT_NEAR(w.cases[0].floor.fraction, 0.5, 0.01);
  EXPECT_EQ(w.outcome(), check_outcome::skipped);  // no history: reported, not passed in silence
  EXPECT_EQ(r.exit_code(), 0);
}

// `git init` and a first run before any commit: the run goes on without history, and says why.
TEST_F(runner_fixture, a_repository_without_a_commit_runs_without_history) {
  store_kernel("w", "// v1\n");
  git_repo repo(dir.path());
  fake_backend b;
  run_result r = run_workloads({spec("w")}, b, &repo, {});
  ASSERT_EQ(r.workloads.size(), 1u);
  EXPECT_TRUE(r.env.git_commit.empty());
  EXPECT_EQ(r.workloads[0].outcome(), check_outcome::skipped);
  EXPECT_EQ(r.exit_code(), 0);
  const run_history h = load_run_history(&repo, "", "sm90-nvidia-h200");
  EXPECT_NE(h.entry.why.find("no commit yet"), std::string::npos) << h.entry.why;
  run_options with_base;
  with_base.base_ref = "main";  // a base to compare with cannot be found before the first commit: a user error
  EXPECT_THROW(run_workloads({spec("w")}, b, &repo, with_base), user_error);
}

TEST_F(runner_fixture, compile_baselines_are_prepared_up_front_for_workloads_with_a_kernel) {
  store_kernel("has", "// k\n");
  auto with_compile = spec("has"), no_kernel = spec("none"), eager_only = spec("eager-only");
  with_compile.baselines = no_kernel.baselines = {"eager", "compile"};
  eager_only.baselines = {"eager"};
  store_kernel("eager-only", "// k\n");
  fake_backend b;
  run_workloads({with_compile, no_kernel, eager_only}, b, nullptr, {});
  ASSERT_EQ(b.prepared.size(), 1u);  // no kernel: nothing to compare; no compile baseline: nothing to export
  EXPECT_EQ(b.prepared.at("has"), std::vector<std::string>{"S=1024"});  // gated cases only
  EXPECT_EQ(b.prepared_key, "sm90-nvidia-h200");

  fake_backend all;  // --baselines on the command line overrides the specs' lists
  run_options o;
  o.baselines = {"compile"};
  run_workloads({with_compile, no_kernel, eager_only}, all, nullptr, o);
  EXPECT_EQ(all.prepared.size(), 2u);
}

TEST_F(runner_fixture, missing_kernel_and_failed_verify_are_results) {
  fake_backend b;
  b.verify_passes = false;
  store_kernel("bad", "// wrong\n");
  run_result r = run_workloads({spec("none"), spec("bad")}, b, nullptr, {});
  ASSERT_EQ(r.workloads.size(), 2u);
  EXPECT_THAT(r.workloads[0].kernel_note, ::testing::HasSubstr("no kernel for sm90-nvidia-h200"));
  EXPECT_EQ(r.workloads[0].outcome(), check_outcome::skipped);
  EXPECT_EQ(r.workloads[1].verify.verdict, "failed");
  EXPECT_TRUE(r.workloads[1].cases.empty());  // not timed
  EXPECT_TRUE(b.last_measure.is_null());
  EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(runner_fixture, changed_kernel_is_measured_against_the_merge_base_version) {
  store_kernel("w", "// v1\n");
  git({"add", "."});
  git({"commit", "-q", "-m", "v1"});
  git({"checkout", "-q", "-b", "pr"});
  store_kernel("w", "// v2 slower\n");
  git({"commit", "-q", "-am", "v2"});
  git_repo repo(dir.path());
  fake_backend b;
  b.kernel_us = 60;  // 20% slower than the base
  run_options o;
  o.base_ref = "main";
  run_result r = run_workloads({spec("w")}, b, &repo, o);
  ASSERT_EQ(b.compiled.size(), 1u);
  EXPECT_EQ(b.compiled[0], "// v1\n");
  EXPECT_EQ(r.base_commit, repo.resolve("main"));
  const auto& w = r.workloads[0];
  ASSERT_NE(w.cases[0].find("base"), nullptr);
  auto it = std::find_if(w.checks.begin(), w.checks.end(), [](auto& c) { return c.kind == "regression"; });
  ASSERT_NE(it, w.checks.end());
  EXPECT_EQ(it->against, "base");
  EXPECT_EQ(it->outcome, check_outcome::failed) << it->sentence;
  EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(runner_fixture, recorded_history_is_compared_on_the_next_commit) {
  store_kernel("w", "// v1\n");
  git({"add", "."});
  git({"commit", "-q", "-m", "v1"});
  git_repo repo(dir.path());
  fake_backend b;
  run_result first = run_workloads({spec("w")}, b, &repo, {});
  record_history(repo, repo.resolve("HEAD"), first);
  write_file_atomic(dir.path() / "README", "x\n");
  git({"add", "README"});
  git({"commit", "-q", "-m", "unrelated"});
  b.kernel_us = 70;  // the GPU got slower with the same kernel: history sees it
  run_result second = run_workloads({spec("w")}, b, &repo, {});
  auto& checks = second.workloads[0].checks;
  auto it = std::find_if(checks.begin(), checks.end(), [](auto& c) { return c.kind == "regression"; });
  ASSERT_NE(it, checks.end());
  EXPECT_EQ(it->against, "history");
  EXPECT_EQ(it->outcome, check_outcome::failed) << it->sentence;
  EXPECT_THAT(it->sentence, ::testing::HasSubstr("(the parent commit)"));
}

TEST_F(runner_fixture, unavailable_compile_baseline_is_skipped_with_its_reason) {
  store_kernel("w", "// v1\n");
  fake_backend b;
  b.compile_available = false;
  run_result r = run_workloads({spec("w")}, b, nullptr, {});
  const auto* c = r.workloads[0].cases[0].find("compile");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, impl_status::skipped);
  EXPECT_EQ(c->why, "skipped: python has no torch");
  auto& checks = r.workloads[0].checks;
  auto it = std::find_if(checks.begin(), checks.end(), [](auto& k) { return k.test_name() == "beats[compile][S=1024]"; });
  ASSERT_NE(it, checks.end());
  EXPECT_EQ(it->outcome, check_outcome::skipped);
}

TEST_F(runner_fixture, infrastructure_failure_is_the_workloads_error_and_others_run) {
  store_kernel("a", "// a\n");
  store_kernel("b", "// b\n");
  fake_backend b;
  b.throw_in_check = true;
  run_result r = run_workloads({spec("a"), spec("b")}, b, nullptr, {});
  ASSERT_EQ(r.workloads.size(), 2u);
  EXPECT_THAT(r.workloads[0].error, ::testing::HasSubstr("could not start"));
  EXPECT_EQ(r.workloads[1].outcome(), check_outcome::error);
  EXPECT_EQ(r.exit_code(), 2);
}

// A worker that dies while timing the kernel beside the baselines: the kernel is timed alone in a fresh worker,
// and judged by that. Failing there too, it is the kernel's failure (exit 1); passing, the first death is the
// infrastructure's (exit 2), and the verification's checks are kept either way.
TEST_F(runner_fixture, a_worker_death_while_timing_is_pinned_on_the_kernel_only_when_it_dies_alone_too) {
  store_kernel("a", "// a\n");
  fake_backend k;
  k.kernel_crashes = true;
  run_result r = run_workloads({spec("a")}, k, nullptr, {});
  EXPECT_EQ(k.measures, 2);
  EXPECT_EQ(k.last_measure["impls"].size(), 1u);
  ASSERT_EQ(r.workloads.size(), 1u);
  EXPECT_TRUE(r.workloads[0].error.empty()) << r.workloads[0].error;
  EXPECT_EQ(r.workloads[0].outcome(), check_outcome::failed);
  EXPECT_FALSE(r.workloads[0].verify.checks.empty());
  EXPECT_EQ(r.exit_code(), 1);

  fake_backend base;
  base.crashes_with_baselines = true;
  run_result rb = run_workloads({spec("a")}, base, nullptr, {});
  EXPECT_EQ(base.measures, 2);
  EXPECT_THAT(rb.workloads[0].error, ::testing::HasSubstr("crashed (SIGSEGV)"));
  EXPECT_EQ(rb.exit_code(), 2);
}

TEST_F(runner_fixture, stop_request_leaves_an_incomplete_run) {
  store_kernel("a", "// a\n");
  fake_backend b;
  run_options o;
  int asked = 0;
  o.stop_requested = [&] { return ++asked > 1; };
  run_result r = run_workloads({spec("a"), spec("b"), spec("c")}, b, nullptr, o);
  EXPECT_EQ(r.workloads.size(), 1u);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.incomplete_reason, "interrupted after 1 of 3 workloads");
  EXPECT_EQ(r.exit_code(), 2);
}

}  // namespace
}  // namespace kf
