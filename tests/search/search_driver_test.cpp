// The search loop with a deterministic evaluator and a real SQLite file: it finds the known best, keeps its
// tree on disk, resumes after a SIGKILL of a real search process, and seeds from stored winners.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>

#include <gtest/gtest.h>

#include "report/summarize.h"
#include "search/interrupt.h"
#include "search/roots.h"
#include "search/search_driver.h"
#include "search/tree_export.h"
#include "search_fake_evaluator.h"
#include "search_test_specs.h"
#include "util/error.h"
#include "util/fs.h"

namespace kf {
namespace {

const char* k_key = "cpu-x86-64";

std::vector<candidate> default_roots(const workload_spec& spec) {
  return search_roots(spec, device_kind::cpu, k_key, "/nonexistent").roots;
}

TEST(search_driver, finds_a_winner_better_than_its_root_and_keeps_the_tree) {
  temp_dir dir("kf-search");
  auto spec = test::softmax_spec();
  spec.hash = "h1";
  search_db db(dir.path() / "search.db");
  test::fake_evaluator ev;
  search_options o;
  o.budget = 30;
  o.seed = 7;
  search_driver d(spec, device_kind::cpu, k_key, db, ev, o);
  int progress_calls = 0;
  auto out = d.run(default_roots(spec), [&](const search_progress& p) {
    ++progress_calls;
    EXPECT_LE(p.evaluations, 30);
  });
  EXPECT_GT(progress_calls, 0);
  ASSERT_TRUE(out.winner.has_value()) << out.stop_reason;
  ASSERT_TRUE(out.best_root.has_value());
  EXPECT_EQ(out.winner->status, node_status::measured);
  EXPECT_LT(*out.winner->time_us, *out.best_root->time_us);
  EXPECT_EQ(out.lineage.front().cand.origin, "default");
  EXPECT_EQ(out.lineage.back().id, out.winner->id);
  // trajectory: one entry per evaluation, never getting worse
  EXPECT_EQ(static_cast<int>(out.trajectory.size()), out.evaluations);
  for (size_t i = 1; i < out.trajectory.size(); ++i)
    if (!std::isnan(out.trajectory[i - 1])) EXPECT_LE(out.trajectory[i], out.trajectory[i - 1]);
  // the reward is against the fastest baseline (compile, 80 us)
  EXPECT_NEAR(*out.winner->reward, std::log(80.0 / *out.winner->time_us), 1e-9);
  // what the tree holds is on disk
  auto rows = db.load_nodes(out.search_id);
  EXPECT_EQ(static_cast<int64_t>(rows.size()), db.count_nodes(out.search_id));
  int failed = 0;
  for (auto& r : rows) failed += r.status == node_status::compile_failed;
  EXPECT_GT(failed, 0);  // threads=4 fails in the fake: failures are kept as nodes
  EXPECT_GE(db.count_evaluations(out.search_id), out.evaluations);
  auto tree = search_tree_json(db, *db.find_search(spec.name, k_key));
  ASSERT_EQ(tree["nodes"].size(), rows.size());
  EXPECT_EQ(tree["nodes"][0]["parent"], -1);
  EXPECT_EQ(tree["nodes"][0]["status"], "ok");
  auto ev_rows = db.load_evaluations(out.winner->id);
  ASSERT_FALSE(ev_rows.empty());
  EXPECT_FALSE(ev_rows.back().samples.empty());
}

// A tree whose every node failed: the failed roots' neighbours are tried (rescue), and when they fail too the
// search says so rather than that it converged.
TEST(search_driver, a_tree_of_failures_stops_saying_every_candidate_failed) {
  temp_dir dir("kf-search-fail");
  auto spec = test::softmax_spec();
  spec.hash = "h1";
  search_db db(dir.path() / "search.db");
  test::fake_evaluator ev;
  ev.fail_all = true;
  search_options o;
  o.budget = 400;
  const auto roots = default_roots(spec);
  auto out = search_driver(spec, device_kind::cpu, k_key, db, ev, o).run(roots);
  EXPECT_FALSE(out.winner.has_value());
  EXPECT_EQ(out.stop_reason, "every candidate failed");
  EXPECT_GT(out.evaluations, static_cast<int64_t>(roots.size()));  // the roots' neighbours were tried
  EXPECT_LT(out.evaluations, 400);
  int below_roots = 0;
  for (auto& r : db.load_nodes(out.search_id)) below_roots += r.parent.has_value();
  EXPECT_GT(below_roots, 0);
}

// Every root fails verification (the families' defaults share a knob value whose numerics are wrong for this
// spec: float32's all_equal_rows against a mean computed as sum / n, say): the search does not stop at its roots;
// it tries their neighbours, and the winner is one that changed that knob, a child of a failed root.
TEST(search_driver, failed_roots_are_expanded_until_a_variant_passes) {
  temp_dir dir("kf-search-rescue");
  auto spec = test::softmax_spec();
  spec.hash = "h1";
  search_db db(dir.path() / "search.db");
  test::fake_evaluator ev;
  ev.verify_fails_with = {"passes", "two"};
  const auto roots = default_roots(spec);
  for (auto& r : roots) ASSERT_EQ(r.knobs.at("passes"), "two");
  search_options o;
  o.budget = 40;
  auto out = search_driver(spec, device_kind::cpu, k_key, db, ev, o).run(roots);
  ASSERT_TRUE(out.winner.has_value()) << out.stop_reason;
  EXPECT_EQ(out.winner->cand.knobs.at("passes"), "online");
  EXPECT_EQ(out.stop_reason, "budget");
}

// Stagnation closes subtrees so that the search spends its evaluations where they pay; once it has closed all of
// them, time and budget left are spent on them again rather than the search stopping as "converged" (on the
// H200 the suite's searches stopped so after 17-33 evaluations with half their time box left).
TEST(search_driver, stagnation_reopens_instead_of_ending_the_search) {
  temp_dir dir("kf-search-reopen");
  auto spec = test::softmax_spec();
  spec.hash = "h1";
  search_db db(dir.path() / "search.db");
  test::fake_evaluator ev;
  search_options o;
  o.budget = 60;
  auto out = search_driver(spec, device_kind::cpu, k_key, db, ev, o).run(default_roots(spec));
  ASSERT_TRUE(out.winner.has_value());
  EXPECT_GT(out.reopened, 0);
  // It ends on the budget, or because the proposer has nothing new anywhere (a converged tree).
  EXPECT_TRUE(out.stop_reason == "budget" || out.stop_reason == "converged") << out.stop_reason;
  if (out.stop_reason == "converged") {
    EXPECT_GT(out.evaluations, 30);
  } else {
    EXPECT_EQ(out.evaluations, 60);
  }
}

// With a time limit that ends the run before the budget would, the ETA is the time left, not the budget's.
TEST(search_driver, the_eta_counts_down_to_the_time_limit) {
  temp_dir dir("kf-search-eta");
  auto spec = test::softmax_spec();
  spec.hash = "h1";
  search_db db(dir.path() / "search.db");
  test::fake_evaluator ev(50);  // 50 ms a candidate: 200 evaluations would take 10 s
  search_options o;
  o.budget = 200;
  o.time_s = 0.3;
  search_driver d(spec, device_kind::cpu, k_key, db, ev, o);
  int seen = 0;
  auto out = d.run(default_roots(spec), [&](const search_progress& p) {
    if (p.eta_s < 0) return;
    ++seen;
    EXPECT_LE(p.eta_s, std::max(0.0, o.time_s - p.elapsed_s) + 1e-9) << p.elapsed_s << " + " << p.eta_s;
  });
  EXPECT_GT(seen, 0);
  EXPECT_EQ(out.stop_reason, "time");
}

// A time limit stops a batch between candidates: the ones not started stay pending in the tree (a resumed run
// takes them first) instead of the whole batch running past the limit.
TEST(search_driver, a_time_limit_stops_inside_a_batch_and_leaves_the_rest_pending) {
  temp_dir dir("kf-search-time-batch");
  auto spec = test::softmax_spec();
  spec.hash = "h1";
  search_db db(dir.path() / "search.db");
  test::fake_evaluator ev(60);  // 60 ms a candidate: a batch of 32 would take about 2 s
  search_options o;
  o.budget = 200;
  o.batch = 32;
  o.time_s = 0.3;
  auto out = search_driver(spec, device_kind::cpu, k_key, db, ev, o).run(default_roots(spec));
  EXPECT_EQ(out.stop_reason, "time");
  EXPECT_GE(ev.calls, 1);
  EXPECT_LT(ev.calls, 32);  // the rest of the first batch was not run
  EXPECT_EQ(out.session_evaluations, ev.calls);
  auto nodes = db.load_nodes(out.search_id);
  const auto pending = std::count_if(nodes.begin(), nodes.end(), [](auto& r) { return r.status == node_status::pending; });
  EXPECT_EQ(static_cast<int>(nodes.size() - pending), ev.calls);
  EXPECT_GT(pending, 0);
  // Resumed without a limit, the search takes the pending ones first.
  test::fake_evaluator again;
  o.resume = true;
  o.time_s = 0;
  o.budget = out.evaluations + static_cast<int>(pending);
  auto resumed = search_driver(spec, device_kind::cpu, k_key, db, again, o).run(default_roots(spec));
  EXPECT_EQ(resumed.search_id, out.search_id);
  for (auto& r : db.load_nodes(out.search_id))
    if (r.id <= nodes.back().id) EXPECT_NE(r.status, node_status::pending) << "node " << r.id;
}

// A first torch.compile export can take minutes: timing the baselines does not use up --time, so the search
// still evaluates candidates, and says how long the baselines took.
TEST(search_driver, timing_the_baselines_does_not_count_against_the_time_limit) {
  temp_dir dir("kf-search-baselines");
  auto spec = test::softmax_spec();
  spec.hash = "h1";
  search_db db(dir.path() / "search.db");
  test::fake_evaluator ev(20);
  ev.baseline_delay_ms = 400;
  search_options o;
  o.budget = 200;
  o.time_s = 0.3;
  o.batch = 1;
  auto out = search_driver(spec, device_kind::cpu, k_key, db, ev, o).run(default_roots(spec));
  EXPECT_EQ(out.stop_reason, "time");
  EXPECT_GE(out.session_evaluations, 2);  // with the baselines counted, the limit was spent before the first
  EXPECT_GE(out.baseline_seconds, 0.4);
  EXPECT_LT(out.baseline_seconds, 10.0);
}

// Two gated cases: on c2 torch.compile takes 50 us; vector_width=16 (the fastest on c1, and the best mean reward)
// takes 52 us there, every other candidate 45 us.
class gate_evaluator : public test::fake_evaluator {
 public:
  nlohmann::json baselines() override {
    return {{"eager", {{"c1", 100.0}, {"c2", 100.0}}}, {"compile", {{"c1", 80.0}, {"c2", 50.0}}}};
  }
  static double c2_of(const candidate& c) {
    auto it = c.knobs.find("vector_width");
    return it != c.knobs.end() && it->second == "16" ? 52.0 : 45.0;
  }
  std::vector<eval_result> evaluate(const std::vector<candidate>& batch, double full_below_us,
                                    double stop_at_s) override {
    auto out = fake_evaluator::evaluate(batch, full_below_us, stop_at_s);
    for (size_t i = 0; i < out.size(); ++i)
      if (!out[i].case_us.empty()) out[i].case_us["c2"] = c2_of(batch[i]);
    return out;
  }
  eval_result confirm(const candidate& c) override {
    auto r = fake_evaluator::confirm(c);
    if (!r.case_us.empty()) r.case_us["c2"] = c2_of(c);
    return r;
  }
};

// The stored kernel (54 us in the fake landscape) against the search's best (51.3 us, 5 % faster), both timed in
// the same search: a 2 % threshold replaces it, 10 % keeps it and says why.
TEST(search_driver, the_winner_replaces_the_stored_kernel_only_by_more_than_the_min_gain) {
  temp_dir dir("kf-search-min-gain");
  auto spec = test::softmax_spec();
  spec.hash = "h1";
  auto* f = find_family("row_softmax_cpu", device_kind::cpu);
  auto stored = f->default_variant(spec);
  stored["vector_width"] = "16";
  stored["passes"] = "online";
  write_file_atomic(dir.path() / "cpu-x86-64.cpp", "// stored cpu winner\n");
  write_file_atomic(dir.path() / "cpu-x86-64.json",
                    nlohmann::json({{"family", "row_softmax_cpu"}, {"knobs", stored}}).dump());
  search_db db(dir.path() / "search.db");
  test::fake_evaluator ev;
  search_options o;
  o.budget = 40;
  search_driver d(spec, device_kind::cpu, k_key, db, ev, o);
  auto out = d.run(search_roots(spec, device_kind::cpu, k_key, dir.path()).roots);
  ASSERT_TRUE(out.winner && out.stored_root) << out.stop_reason;
  EXPECT_NEAR(*out.stored_root->time_us, 54.0, 1e-9);
  ASSERT_NEAR(*out.winner->time_us, 51.3, 1e-9);
  std::string why;
  EXPECT_TRUE(replaces_stored(out, 0.02, &why)) << why;
  EXPECT_FALSE(replaces_stored(out, 0.10, &why));
  EXPECT_NE(why.find("51.30 us"), std::string::npos) << why;
  EXPECT_NE(why.find("54.00 us"), std::string::npos) << why;
  // A winner that passes the gate where the stored kernel fails replaces it whatever the gain.
  auto gated = out;
  gated.winner_passes_gate = true;
  gated.stored_root_passes_gate = false;
  EXPECT_TRUE(replaces_stored(gated, 0.10, nullptr));
  // The stored kernel as the winner is never rewritten; no stored kernel, any winner is written.
  auto same = out;
  same.winner = out.stored_root;
  EXPECT_FALSE(replaces_stored(same, 0.0, &why));
  EXPECT_EQ(why, "the stored kernel is still the best");
  auto none = out;
  none.stored_root.reset();
  EXPECT_TRUE(replaces_stored(none, 0.10, nullptr));
}

TEST(search_driver, the_winner_passes_the_gate_when_a_candidate_does) {
  temp_dir dir("kf-search-gate");
  auto spec = test::softmax_spec();
  spec.hash = "h1";
  spec.gate.must_beat = {"compile"};
  search_db db(dir.path() / "search.db");
  gate_evaluator ev;
  search_options o;
  o.budget = 30;
  o.seed = 7;
  auto out = search_driver(spec, device_kind::cpu, k_key, db, ev, o).run(default_roots(spec));
  ASSERT_TRUE(out.winner.has_value()) << out.stop_reason;
  EXPECT_TRUE(out.winner_passes_gate);
  EXPECT_NE(out.winner->cand.knobs.at("vector_width"), "16");
  EXPECT_LT(out.winner->results["case_us"]["c2"].get<double>(), 50.0);
  // the search did find faster-on-average candidates that lose c2: the gate, not the mean, chose
  bool faster_seen = false;
  for (auto& r : db.load_nodes(out.search_id))
    faster_seen = faster_seen || (r.reward && *r.reward > *out.winner->reward && r.cand.knobs.count("vector_width") &&
                                  r.cand.knobs.at("vector_width") == "16");
  EXPECT_TRUE(faster_seen);

  // with nothing that passes, the fastest overall is still written, and says so
  spec.gate.must_beat = {"eager", "compile"};
  struct impossible : gate_evaluator {
    nlohmann::json baselines() override { return {{"compile", {{"c1", 1.0}, {"c2", 1.0}}}}; }
  } none;
  temp_dir dir2("kf-search-gate2");
  search_db db2(dir2.path() / "search.db");
  auto out2 = search_driver(spec, device_kind::cpu, k_key, db2, none, o).run(default_roots(spec));
  ASSERT_TRUE(out2.winner.has_value());
  EXPECT_FALSE(out2.winner_passes_gate);
}

// The winner's verdict is the gate's rule on the winner timed beside the baselines, as `kforge run` judges a
// stored kernel, not the search's medians: a winner that ranked ahead of compile on medians timed apart but loses
// when timed beside it does not pass, and the check says so in the gate's words.
TEST(search_driver, the_verdict_on_the_winner_is_the_gates_rule_beside_the_baselines) {
  struct beside : test::fake_evaluator {
    double kernel_us = 82.0;  // beside compile (80 us): slower, whatever the medians timed apart said
    int calls_beside = 0;
    bool stored_given = false;
    beside_baselines time_beside_baselines(const candidate&, const candidate* stored) override {
      ++calls_beside;
      stored_given = stored != nullptr;
      case_result c;
      c.name = "c1";
      auto series = [](double us) {
        impl_result i;
        for (int k = 0; k < 64; ++k) i.cold.samples_us.push_back(us * (1.0 + 0.001 * ((k * 7) % 5 - 2)));
        return i;
      };
      impl_result k = series(kernel_us), b = series(80.0);
      k.impl = "kernel";
      b.impl = "compile";
      c.impls = {k, b};
      summarize_case(c);
      return {{c}, ""};
    }
  };
  temp_dir dir("kf-search-verdict");
  auto spec = test::softmax_spec();
  spec.hash = "h1";
  spec.gate.must_beat = {"compile"};
  search_db db(dir.path() / "search.db");
  search_options o;
  o.budget = 6;
  beside ev;
  auto out = search_driver(spec, device_kind::cpu, k_key, db, ev, o).run(default_roots(spec));
  ASSERT_TRUE(out.winner.has_value()) << out.stop_reason;
  EXPECT_EQ(ev.calls_beside, 1);
  EXPECT_FALSE(ev.stored_given);  // no stored kernel for this GPU key
  ASSERT_EQ(out.verdict.size(), 1u);
  EXPECT_EQ(out.verdict[0].test_name(), "beats[compile][c1]");
  EXPECT_EQ(out.verdict[0].outcome, check_outcome::failed);
  EXPECT_NE(out.verdict[0].sentence.find("is not faster than compile"), std::string::npos) << out.verdict[0].sentence;
  EXPECT_FALSE(out.winner_passes_gate);

  // Faster beside compile: the gate's rule passes it.
  temp_dir dir2("kf-search-verdict2");
  search_db db2(dir2.path() / "search.db");
  beside fast;
  fast.kernel_us = 60.0;
  auto out2 = search_driver(spec, device_kind::cpu, k_key, db2, fast, o).run(default_roots(spec));
  ASSERT_EQ(out2.verdict.size(), 1u);
  EXPECT_EQ(out2.verdict[0].outcome, check_outcome::passed) << out2.verdict[0].sentence;
  EXPECT_TRUE(out2.winner_passes_gate);

  // An evaluator that cannot time beside the baselines: no verdict, the reason kept, the medians decide.
  temp_dir dir3("kf-search-verdict3");
  search_db db3(dir3.path() / "search.db");
  test::fake_evaluator plain;
  auto out3 = search_driver(spec, device_kind::cpu, k_key, db3, plain, o).run(default_roots(spec));
  EXPECT_TRUE(out3.verdict.empty());
  EXPECT_NE(out3.verdict_why.find("does not time candidates beside the baselines"), std::string::npos);
}

TEST(search_driver, a_stored_search_needs_resume_or_fresh) {
  temp_dir dir("kf-search");
  auto spec = test::softmax_spec();
  search_db db(dir.path() / "search.db");
  test::fake_evaluator ev;
  search_options o;
  o.budget = 4;
  search_driver(spec, device_kind::cpu, k_key, db, ev, o).run(default_roots(spec));
  EXPECT_THROW(search_driver(spec, device_kind::cpu, k_key, db, ev, o).run(default_roots(spec)), user_error);
  o.fresh = true;
  o.budget = 2;
  auto out = search_driver(spec, device_kind::cpu, k_key, db, ev, o).run(default_roots(spec));
  EXPECT_EQ(out.evaluations, 2);
  EXPECT_EQ(db.count_nodes(out.search_id), 2);
  // another workload shares the file
  auto other = test::pool_spec();
  auto out2 = search_driver(other, device_kind::cpu, k_key, db, ev, o).run(default_roots(other));
  EXPECT_NE(out2.search_id, out.search_id);
  EXPECT_EQ(db.count_nodes(out.search_id), 2);
  auto all = db.list_searches();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].workload, "test-avgpool");
  EXPECT_EQ(all[1].state, "done");
}

// Run by killed_search_resumes as a separate process (skipped otherwise): a slow search that never ends.
TEST(search_resume, child) {
  const char* path = std::getenv("KF_SEARCH_CHILD_DB");
  if (!path) GTEST_SKIP() << "helper process for search_resume.killed_search_resumes";
  auto spec = test::softmax_spec();
  search_db db(path);
  test::fake_evaluator ev(60);
  search_options o;
  o.budget = 100000;
  o.batch = 1;
  o.mcts.stagnation_k = 100000;
  install_search_interrupt();
  o.stop_requested = [] { return search_interrupted(); };
  auto out = search_driver(spec, device_kind::cpu, k_key, db, ev, o).run(default_roots(spec));
  EXPECT_EQ(out.stop_reason, "interrupted");
}

// Starts the child search process; it writes to `path`.
pid_t start_child_search(const std::string& path) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("KF_SEARCH_CHILD_DB", path.c_str(), 1);
    execl("/proc/self/exe", "kforge_tests", "--gtest_filter=search_resume.child", static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// Waits until the search in `path` has at least n evaluations (60 s at most).
void wait_for_evaluations(const std::string& path, const std::string& workload, int64_t n) {
  search_db db(path);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto s = db.find_search(workload, k_key); s && db.count_evaluations(s->id) >= n) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

TEST(search_resume, sigint_stops_cleanly_and_keeps_the_tree) {
  temp_dir dir("kf-sigint");
  auto path = (dir.path() / "search.db").string();
  pid_t pid = start_child_search(path);
  ASSERT_GT(pid, 0);
  wait_for_evaluations(path, test::softmax_spec().name, 6);
  ASSERT_EQ(kill(pid, SIGINT), 0);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by the signal instead of stopping";
  EXPECT_EQ(WEXITSTATUS(status), 0);  // the child test passed: stop_reason was "interrupted"
  search_db db(path);
  auto s = db.find_search(test::softmax_spec().name, k_key);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->state, "stopped");
  EXPECT_GE(db.count_nodes(s->id), 3);
}

TEST(search_resume, killed_search_resumes_losing_at_most_in_flight) {
  temp_dir dir("kf-resume");
  auto path = (dir.path() / "search.db").string();
  pid_t pid = start_child_search(path);
  ASSERT_GT(pid, 0);
  auto spec = test::softmax_spec();
  int64_t evaluated_before = 0;
  wait_for_evaluations(path, spec.name, 12);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the search process ended before it was killed";

  search_db db(path);
  auto s = db.find_search(spec.name, k_key);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->state, "running");  // it never got to say it stopped
  auto before = db.load_nodes(s->id);
  for (auto& r : before) evaluated_before += r.status != node_status::pending;
  ASSERT_GE(evaluated_before, 6);
  EXPECT_LE(static_cast<int64_t>(before.size()) - evaluated_before, 1) << "more than the one in flight was lost";

  test::fake_evaluator ev;
  search_options o;
  o.resume = true;
  o.budget = static_cast<int>(evaluated_before) + 5;
  o.batch = 1;
  auto out = search_driver(spec, device_kind::cpu, k_key, db, ev, o).run(default_roots(spec));
  EXPECT_EQ(out.search_id, s->id);
  EXPECT_EQ(out.evaluations - out.session_evaluations, evaluated_before);  // continued, not restarted
  EXPECT_EQ(out.evaluations, o.budget);
  auto after = db.load_nodes(s->id);
  EXPECT_GE(after.size(), before.size() + 4);
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(after[i].id, before[i].id);
    if (before[i].status != node_status::pending) EXPECT_EQ(after[i].status, before[i].status);
    else EXPECT_NE(after[i].status, node_status::pending);  // the one in flight was evaluated on resume
  }
}

TEST(search_roots, tried_variants_are_the_family_default_with_the_named_knobs) {
  auto spec = test::softmax_spec();
  auto* f = find_family("row_softmax_cpu", device_kind::cpu);
  auto roots = tried_roots(spec, device_kind::cpu, " vector_width=16 passes=online ; row_softmax_cpu: unroll=4;");
  ASSERT_EQ(roots.size(), 2u);
  auto want = f->default_variant(spec);
  want["vector_width"] = "16";
  want["passes"] = "online";
  EXPECT_EQ(roots[0].family, "row_softmax_cpu");
  EXPECT_EQ(roots[0].knobs, want);
  EXPECT_EQ(roots[0].origin, "tried: vector_width=16 passes=online");
  EXPECT_EQ(roots[0].source, f->emit(spec, want));
  EXPECT_EQ(roots[1].knobs.at("unroll"), "4");
  EXPECT_TRUE(tried_roots(spec, device_kind::cpu, "").empty());

  auto error_of = [&](const std::string& text) {
    try {
      tried_roots(spec, device_kind::cpu, text);
    } catch (const user_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("vector_widht=16").find("row_softmax_cpu has no knob vector_widht (its knobs: "), std::string::npos)
      << error_of("vector_widht=16");
  EXPECT_NE(error_of("vector_width=3").find("vector_width=3 is not one of its values (1, 4, 8, 16)"), std::string::npos)
      << error_of("vector_width=3");
  EXPECT_NE(error_of("vector_width").find("\"vector_width\" is not knob=value"), std::string::npos);
  EXPECT_NE(error_of("pool_cpu: threads=1").find("no family pool_cpu covers"), std::string::npos)
      << error_of("pool_cpu: threads=1");
  EXPECT_NE(error_of("unroll=4; threads=9").find("--try \"threads=9\""), std::string::npos)  // names the bad one
      << error_of("unroll=4; threads=9");
}

TEST(search_roots, seeds_from_stored_winners_of_this_and_other_gpu_keys) {
  temp_dir dir("kf-roots");
  auto spec = test::softmax_spec();
  auto* f = find_family("row_softmax_cpu", device_kind::cpu);
  auto mine = f->default_variant(spec);
  mine["vector_width"] = "16";
  write_file_atomic(dir.path() / "cpu-x86-64.cpp", "// stored cpu winner\n");
  write_file_atomic(dir.path() / "cpu-x86-64.json", nlohmann::json({{"family", "row_softmax_cpu"}, {"knobs", mine}}).dump());
  auto other = f->default_variant(spec);
  other["passes"] = "online";
  write_file_atomic(dir.path() / "sm90-nvidia-h200.json", nlohmann::json({{"family", "row_softmax_cuda"}, {"knobs", other}}).dump());
  write_file_atomic(dir.path() / "sm80-nvidia-a100.json",
                    nlohmann::json({{"family", "row_softmax_cuda"}, {"knobs", {{"threads_per_row", "32"}}}}).dump());
  auto r = search_roots(spec, device_kind::cpu, k_key, dir.path());
  ASSERT_EQ(r.roots.size(), 3u);
  EXPECT_EQ(r.roots[0].origin, "stored:cpu-x86-64");
  EXPECT_EQ(r.roots[0].source, "// stored cpu winner\n");
  EXPECT_EQ(r.roots[0].knobs, mine);
  EXPECT_EQ(r.roots[1].origin, "stored:sm90-nvidia-h200");
  EXPECT_EQ(r.roots[1].family, "row_softmax_cpu");  // re-emitted by this device's family of the same kind
  EXPECT_EQ(r.roots[1].knobs, other);
  EXPECT_EQ(r.roots[2].origin, "default");
  ASSERT_EQ(r.notes.size(), 1u) << fmt::format("{}", fmt::join(r.notes, "\n"));
  EXPECT_NE(r.notes[0].find("sm80-nvidia-a100"), std::string::npos);

  // a search started from them holds all three roots (checked below, after the changed-family case)
  {
    // This key's winner stored before the family gained a knob (and with one it has dropped): kept exactly as
    // stored, and re-emitted with the knobs completed so the proposer can move from it.
    temp_dir old_dir("kf-roots-old");
    auto stale = mine;
    stale.erase("vector_width");
    stale["retired_knob"] = "1";
    write_file_atomic(old_dir.path() / "cpu-x86-64.cpp", "// stored before vector_width existed\n");
    write_file_atomic(old_dir.path() / "cpu-x86-64.json",
                      nlohmann::json({{"family", "row_softmax_cpu"}, {"knobs", stale}}).dump());
    auto r2 = search_roots(spec, device_kind::cpu, k_key, old_dir.path());
    ASSERT_GE(r2.roots.size(), 2u);
    EXPECT_EQ(r2.roots[0].source, "// stored before vector_width existed\n");
    EXPECT_TRUE(r2.roots[0].family.empty());  // its knobs no longer describe a family variant
    EXPECT_EQ(r2.roots[1].family, "row_softmax_cpu");
    EXPECT_EQ(r2.roots[1].knobs.at("vector_width"), f->default_variant(spec).at("vector_width"));
    EXPECT_EQ(r2.roots[1].knobs.count("retired_knob"), 0u);
    EXPECT_NE(r2.roots[1].origin.find("vector_width="), std::string::npos) << r2.roots[1].origin;
    EXPECT_NE(r2.roots[1].origin.find("-retired_knob"), std::string::npos) << r2.roots[1].origin;
    ASSERT_EQ(r2.notes.size(), 1u);
  }

  // a search started from them holds all three roots
  search_db db(dir.path() / "search.db");
  test::fake_evaluator ev;
  search_options o;
  o.budget = 3;
  auto out = search_driver(spec, device_kind::cpu, k_key, db, ev, o).run(r.roots);
  auto rows = db.load_nodes(out.search_id);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].cand.origin, "stored:cpu-x86-64");
  EXPECT_FALSE(rows[1].parent.has_value());
}

}  // namespace
}  // namespace kf
