#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gate/gate.h"
#include "../support/report_fixture.h"

namespace kf {
namespace {

const gate_check* find_check(const workload_result& w, const std::string& name) {
  for (auto& c : w.checks)
    if (c.test_name() == name) return &c;
  return nullptr;
}

gate_spec policy(std::vector<std::string> must_beat = {"eager", "compile"}) {
  gate_spec g;
  g.max_regression = 0.05;
  g.must_beat = std::move(must_beat);
  return g;
}

// The same workload with every kernel sample scaled by `factor` (a slower or faster kernel).
workload_result scaled(workload_result w, double factor, int n = 20, uint64_t seed = 7) {
  for (auto& c : w.cases) {
    auto* k = c.find("kernel");
    double median = k->cold.stats.median_us;
    k->cold.samples_us = fixture::samples(median * factor, n, 0.01, seed);
    summarize_case(c);
  }
  return w;
}

TEST(gate, clear_regression_against_history_fails) {
  workload_result before = fixture::workload("w", 1);
  workload_result now = scaled(before, 1.20);
  apply_gate(now, policy(), {&before, "history note of abc", ""});
  auto* r = find_check(now, "regression[B=1,H=8,S=1024]");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->outcome, check_outcome::failed) << r->sentence;
  EXPECT_THAT(r->sentence, ::testing::ContainsRegex("kernel is 19\\.[0-9]% slower than in history note of abc"));
  EXPECT_NE(r->sentence.find("gate.max_regression"), std::string::npos);
  EXPECT_GT(r->numbers["ratio_lo"].get<double>(), 1.05);  // beyond both medians' intervals
  EXPECT_EQ(now.outcome(), check_outcome::failed);
}

TEST(gate, noise_only_change_passes) {
  workload_result before = fixture::workload("w", 1);
  // Same distribution, different draw: no significant change.
  workload_result now = scaled(before, 1.0, 20, 99);
  apply_gate(now, policy(), {&before, "history", ""});
  auto* r = find_check(now, "regression[B=1,H=8,S=1024]");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->outcome, check_outcome::passed) << r->sentence;
  EXPECT_EQ(now.outcome(), check_outcome::passed);
}

TEST(gate, significant_but_small_slowdown_is_within_allowance) {
  workload_result before = fixture::workload("w", 1);
  workload_result now = scaled(before, 1.03);
  apply_gate(now, policy(), {&before, "history", ""});
  auto* r = find_check(now, "regression[B=1,H=8,S=1024]");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->outcome, check_outcome::passed) << r->sentence;
  EXPECT_NE(r->sentence.find("within the 5.0% allowed"), std::string::npos) << r->sentence;
}

TEST(gate, too_few_samples_is_inconclusive_not_passed) {
  workload_result before = fixture::workload("w", 1);
  workload_result now = scaled(before, 1.5, 6);
  apply_gate(now, policy({}), {&before, "history", ""});
  auto* r = find_check(now, "regression[B=1,H=8,S=1024]");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->outcome, check_outcome::inconclusive);
  EXPECT_NE(r->sentence.find("only 6 and 20 samples"), std::string::npos) << r->sentence;
}

TEST(gate, missing_history_is_reported) {
  workload_result now = fixture::workload("w", 1);
  apply_gate(now, policy(), {nullptr, "", "no kforge history note on abc"});
  auto* r = find_check(now, "regression[B=1,H=8,S=1024]");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->outcome, check_outcome::skipped);
  EXPECT_EQ(r->sentence, "no kforge history note on abc");

  gate_options strict;
  strict.require_history = true;
  apply_gate(now, policy(), {nullptr, "", "no kforge history note on abc"}, strict);
  EXPECT_EQ(find_check(now, "regression[B=1,H=8,S=1024]")->outcome, check_outcome::failed);
  EXPECT_EQ(now.outcome(), check_outcome::failed);
}

TEST(gate, base_measured_in_the_same_run_is_preferred_over_history) {
  workload_result before = fixture::workload("w", 1);
  workload_result now = fixture::workload("w", 1);
  // History says the kernel was 2x faster, but the base kernel measured now runs at the same speed.
  workload_result fast_history = scaled(before, 0.5);
  auto& c = now.cases[0];
  impl_result base = fixture::impl("base", c.find("kernel")->cold.stats.median_us, 20, 11);
  c.impls.push_back(base);
  summarize_case(c);
  apply_gate(now, policy(), {&fast_history, "history", ""});
  auto* r = find_check(now, "regression[B=1,H=8,S=1024]");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->against, "base");
  EXPECT_EQ(r->outcome, check_outcome::passed) << r->sentence;
}

TEST(gate, must_beat_fails_when_baseline_is_faster) {
  workload_result w = fixture::workload("w", 1);
  auto* compile = w.cases[0].find("compile");
  compile->cold.samples_us = fixture::samples(40, 20, 0.01, 5);  // kernel is at 50
  summarize_case(w.cases[0]);
  apply_gate(w, policy({"eager", "compile"}), {});
  auto* eager = find_check(w, "beats[eager][B=1,H=8,S=1024]");
  auto* comp = find_check(w, "beats[compile][B=1,H=8,S=1024]");
  ASSERT_NE(eager, nullptr);
  ASSERT_NE(comp, nullptr);
  EXPECT_EQ(eager->outcome, check_outcome::passed) << eager->sentence;
  EXPECT_EQ(comp->outcome, check_outcome::failed);
  EXPECT_NE(comp->sentence.find("not faster than compile"), std::string::npos) << comp->sentence;
  EXPECT_NE(comp->sentence.find("must_beat"), std::string::npos);
}

TEST(gate, must_beat_needs_significance) {
  workload_result w = fixture::workload("w", 1);
  // 1% faster on 1% noise over few samples: not significant.
  w.cases[0].find("kernel")->cold.samples_us = fixture::samples(50, 10, 0.05, 3);
  w.cases[0].find("compile")->cold.samples_us = fixture::samples(50.5, 10, 0.05, 4);
  summarize_case(w.cases[0]);
  apply_gate(w, policy({"compile"}), {});
  auto* comp = find_check(w, "beats[compile][B=1,H=8,S=1024]");
  ASSERT_NE(comp, nullptr);
  EXPECT_EQ(comp->outcome, check_outcome::inconclusive) << comp->sentence;
  EXPECT_NE(comp->sentence.find("could not be told apart"), std::string::npos) << comp->sentence;
  EXPECT_EQ(w.outcome(), check_outcome::inconclusive);  // neither passed nor failed, and exit code 0
}

TEST(gate, must_beat_fails_when_both_are_the_same_speed_to_the_resolution) {
  workload_result w = fixture::workload("w", 1);
  w.cases[0].find("kernel")->cold.samples_us = fixture::samples(50, 40, 0.001, 3);
  w.cases[0].find("compile")->cold.samples_us = fixture::samples(50, 40, 0.001, 4);
  summarize_case(w.cases[0]);
  apply_gate(w, policy({"compile"}), {});
  auto* comp = find_check(w, "beats[compile][B=1,H=8,S=1024]");
  ASSERT_NE(comp, nullptr);
  EXPECT_EQ(comp->outcome, check_outcome::failed) << comp->sentence;
  EXPECT_NE(comp->sentence.find("the same speed within"), std::string::npos) << comp->sentence;
}

// At the floor, a tie passes: eager already streams at the copy bandwidth and nothing is left to beat.
TEST(gate, must_beat_passes_a_tie_when_both_are_at_the_floor) {
  workload_result w = fixture::workload("w", 1);
  w.cases[0].find("kernel")->cold.samples_us = fixture::samples(50, 40, 0.001, 3);
  w.cases[0].find("compile")->cold.samples_us = fixture::samples(50, 40, 0.001, 4);
  w.cases[0].floor.floor_us = 48.5;  // both 3 % above it
  summarize_case(w.cases[0]);
  apply_gate(w, policy({"compile"}), {});
  auto* comp = find_check(w, "beats[compile][B=1,H=8,S=1024]");
  ASSERT_NE(comp, nullptr);
  EXPECT_EQ(comp->outcome, check_outcome::passed) << comp->sentence;
  EXPECT_NE(comp->sentence.find("at the floor"), std::string::npos) << comp->sentence;
  EXPECT_DOUBLE_EQ(comp->numbers["floor_us"].get<double>(), 48.5);
}

// GPT-2's GELU on an H100: the kernel 0.6 % slower than eager (1.004x to 1.008x), both 3 % above the floor.
TEST(gate, must_beat_passes_a_difference_inside_the_resolution_at_the_floor) {
  workload_result w = fixture::workload("w", 1);
  w.cases[0].find("kernel")->cold.samples_us = fixture::samples(50.3, 40, 0.001, 3);
  w.cases[0].find("compile")->cold.samples_us = fixture::samples(50, 40, 0.001, 4);
  w.cases[0].floor.floor_us = 48.5;
  summarize_case(w.cases[0]);
  apply_gate(w, policy({"compile"}), {});
  auto* comp = find_check(w, "beats[compile][B=1,H=8,S=1024]");
  ASSERT_NE(comp, nullptr);
  EXPECT_EQ(comp->numbers["decision"], "above") << comp->sentence;  // significantly slower, but by less than 1 %
  EXPECT_EQ(comp->outcome, check_outcome::passed) << comp->sentence;
  EXPECT_NE(comp->sentence.find("ties compile"), std::string::npos) << comp->sentence;
}

// Not at the floor (8 % above it), or slower beyond the resolution: the tie rule does not apply.
TEST(gate, must_beat_tie_rule_needs_both_within_the_band_and_a_tie) {
  workload_result w = fixture::workload("w", 1);
  w.cases[0].find("kernel")->cold.samples_us = fixture::samples(50, 40, 0.001, 3);
  w.cases[0].find("compile")->cold.samples_us = fixture::samples(50, 40, 0.001, 4);
  w.cases[0].floor.floor_us = 46.3;
  summarize_case(w.cases[0]);
  apply_gate(w, policy({"compile"}), {});
  auto* comp = find_check(w, "beats[compile][B=1,H=8,S=1024]");
  ASSERT_NE(comp, nullptr);
  EXPECT_EQ(comp->outcome, check_outcome::failed) << comp->sentence;

  workload_result slower = fixture::workload("w", 1);  // 3 % slower: beyond the 1 % resolution
  slower.cases[0].find("kernel")->cold.samples_us = fixture::samples(51, 40, 0.001, 3);
  slower.cases[0].find("compile")->cold.samples_us = fixture::samples(49.5, 40, 0.001, 4);
  slower.cases[0].floor.floor_us = 49;
  summarize_case(slower.cases[0]);
  apply_gate(slower, policy({"compile"}), {});
  auto* c2 = find_check(slower, "beats[compile][B=1,H=8,S=1024]");
  ASSERT_NE(c2, nullptr);
  EXPECT_EQ(c2->outcome, check_outcome::failed) << c2->sentence;
  EXPECT_NE(c2->sentence.find("slower"), std::string::npos) << c2->sentence;
}

// The base kernel timed alongside: rounds are paired, so a drift both share is no regression, a 10 % slowdown is.
workload_result with_base(double head_factor, double drift, uint64_t seed) {
  workload_result w = fixture::workload("w", 1);
  auto& c = w.cases[0];
  impl_result base = fixture::impl("base", 50, 40, seed);
  auto& head = c.find("kernel")->cold.samples_us;
  head = fixture::samples(50, 40, 0.002, seed + 1);
  for (int i = 0; i < 40; ++i) {
    double d = 1 + drift * i / 40.0;
    base.cold.samples_us[i] = 50 * d * (1 + 0.002 * ((i * 7) % 5 - 2) / 2.0);
    head[i] = 50 * head_factor * d * (1 + 0.002 * ((i * 3) % 5 - 2) / 2.0);
  }
  c.impls.push_back(base);
  summarize_case(c);
  return w;
}

TEST(gate, regression_against_the_base_uses_paired_rounds) {
  workload_result same = with_base(1.0, 0.3, 1);
  apply_gate(same, policy({}), {});
  auto* r = find_check(same, "regression[B=1,H=8,S=1024]");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->against, "base");
  EXPECT_EQ(r->outcome, check_outcome::passed) << r->sentence;

  workload_result slower = with_base(1.10, 0.3, 2);
  apply_gate(slower, policy({}), {});
  r = find_check(slower, "regression[B=1,H=8,S=1024]");
  EXPECT_EQ(r->outcome, check_outcome::failed) << r->sentence;
  EXPECT_NEAR(r->numbers["ratio"].get<double>(), 1.10, 0.01);
}

TEST(gate, false_discovery_control_spares_a_lone_marginal_regression_among_many) {
  run_result run;
  for (int i = 0; i < 30; ++i) {
    workload_result w = with_base(1.0, 0.0, 10 + i);
    w.name = "w" + std::to_string(i);
    apply_gate(w, policy({}), {});
    run.workloads.push_back(std::move(w));
  }
  // One check that failed on its own with a p-value just under its alpha: not significant among 30.
  gate_check& k = run.workloads[0].checks.back();
  ASSERT_EQ(k.kind, "regression");
  k.outcome = check_outcome::failed;
  k.numbers["p_value"] = 0.001;
  k.numbers["alpha"] = 0.0025;
  apply_false_discovery_control(run);
  EXPECT_EQ(k.outcome, check_outcome::inconclusive) << k.sentence;
  EXPECT_NE(k.sentence.find("false discovery rate over 30 regression checks"), std::string::npos) << k.sentence;
  // A strong one survives.
  k.outcome = check_outcome::failed;
  k.numbers["p_value"] = 1e-9;
  apply_false_discovery_control(run);
  EXPECT_EQ(k.outcome, check_outcome::failed);
}

TEST(gate, questions_name_every_baseline_and_the_base) {
  auto q = gate_questions({"eager", "compile"}, true, 0.05);
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(q[2]["b"], "base");
  EXPECT_DOUBLE_EQ(q[2]["threshold"].get<double>(), 1.05);
  EXPECT_EQ(gate_questions({}, false, 0.05).size(), 0u);
}

TEST(gate, skipped_baseline_is_reported_not_passed) {
  workload_result w = fixture::workload("w", 1);
  apply_gate(w, policy({"vendor"}), {});
  auto* v = find_check(w, "beats[vendor][B=1,H=8,S=1024]");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->outcome, check_outcome::skipped);
  EXPECT_NE(v->sentence.find("cuDNN has no fused"), std::string::npos);
  // A required baseline that was not measured at all is reported too.
  w.cases[0].impls.erase(w.cases[0].impls.begin() + 3);
  apply_gate(w, policy({"vendor"}), {});
  EXPECT_EQ(find_check(w, "beats[vendor][B=1,H=8,S=1024]")->outcome, check_outcome::skipped);
}

TEST(gate, failed_verification_fails_with_the_rule_and_numbers) {
  workload_result w = fixture::workload("w", 2);
  w.verify.verdict = "failed";
  w.verify.checks[1].passed = false;
  w.verify.checks[1].detail = "max abs error 0.5 > atol 1e-3 at [0, 3, 17]";
  apply_gate(w, policy(), {});
  auto* v = find_check(w, "verify[B=1,H=8,S=1024]");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->outcome, check_outcome::failed);
  EXPECT_NE(v->sentence.find("1 of 3 checks failed: matches_reference (seed 2): max abs error 0.5"), std::string::npos)
      << v->sentence;
  EXPECT_EQ(find_check(w, "verify[B=1,H=8,S=2048]")->outcome, check_outcome::passed);
  EXPECT_EQ(find_check(w, "verify")->outcome, check_outcome::passed);  // the static scan
  EXPECT_EQ(w.outcome(), check_outcome::failed);
}

TEST(gate, compile_failure_is_a_failed_verification) {
  workload_result w = fixture::workload("w", 1);
  w.cases.clear();
  w.verify = {};
  w.verify.verdict = "failed";
  w.verify.why = "does not compile: error: identifier \"foo\" is undefined";
  apply_gate(w, policy(), {});
  auto* v = find_check(w, "verify");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->outcome, check_outcome::failed);
  EXPECT_NE(v->sentence.find("does not compile"), std::string::npos);
}

TEST(gate, faster_than_the_floor_is_a_verification_failure) {
  workload_result w = fixture::workload("w", 1);
  w.cases[0].floor.bandwidth_floor_us = 100;  // the kernel claims 50 us
  w.cases[0].floor.floor_us = 100;
  apply_gate(w, policy(), {});
  auto* v = find_check(w, "verify[B=1,H=8,S=1024]");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->outcome, check_outcome::failed);
  EXPECT_NE(v->sentence.find("faster than physically possible"), std::string::npos) << v->sentence;
}

// Outputs that fit the L2 can stay there when the kernel ends: a kernel under the bandwidth floor but above the
// least time to read its inputs from DRAM is possible (BERT's LayerNorm on an H200 ran at 118 % of the floor).
TEST(gate, the_physical_floor_decides_what_is_faster_than_possible_when_measured) {
  workload_result w = fixture::workload("w", 1);
  w.cases[0].floor.bandwidth_floor_us = 100;  // the kernel claims 50 us
  w.cases[0].floor.floor_us = 100;
  w.cases[0].floor.physical_floor_us = 40;
  apply_gate(w, policy(), {});
  EXPECT_EQ(find_check(w, "verify[B=1,H=8,S=1024]")->outcome, check_outcome::passed);

  workload_result x = fixture::workload("x", 1);
  x.cases[0].floor.bandwidth_floor_us = 100;
  x.cases[0].floor.physical_floor_us = 60;
  apply_gate(x, policy(), {});
  auto* v = find_check(x, "verify[B=1,H=8,S=1024]");
  EXPECT_EQ(v->outcome, check_outcome::failed);
  EXPECT_NE(v->sentence.find("least time to read its inputs from DRAM"), std::string::npos) << v->sentence;
}

TEST(gate, timed_case_without_verification_evidence_is_an_error) {
  workload_result w = fixture::workload("w", 1);
  w.verify.checks.erase(w.verify.checks.begin(), w.verify.checks.begin() + 3);
  apply_gate(w, policy(), {});
  EXPECT_EQ(find_check(w, "verify[B=1,H=8,S=1024]")->outcome, check_outcome::error);
}

TEST(gate, missing_kernel_is_reported_and_can_be_required) {
  workload_result w;
  w.name = "w";
  w.kernel_note = "no kernel for sm90-nvidia-h200 in workloads/w/kernels";
  gate_spec g = policy();
  apply_gate(w, g, {});
  ASSERT_EQ(w.checks.size(), 1u);
  EXPECT_EQ(w.checks[0].test_name(), "kernel");
  EXPECT_EQ(w.checks[0].outcome, check_outcome::skipped);
  EXPECT_NE(w.checks[0].sentence.find("no kernel for sm90-nvidia-h200"), std::string::npos);
  g.require_kernel = true;
  apply_gate(w, g, {});
  EXPECT_EQ(w.checks[0].outcome, check_outcome::failed);
}

TEST(gate, kernel_that_crashed_while_timed_fails) {
  workload_result w = fixture::workload("w", 1);
  auto* k = w.cases[0].find("kernel");
  k->status = impl_status::failed;
  k->why = "worker crashed (SIGSEGV)";
  summarize_case(w.cases[0]);
  apply_gate(w, policy(), {});
  auto* b = find_check(w, "beats[eager][B=1,H=8,S=1024]");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->outcome, check_outcome::failed);
  EXPECT_NE(b->sentence.find("SIGSEGV"), std::string::npos);
}

TEST(gate, exit_codes_follow_the_worst_outcome) {
  run_result r = fixture::run(2, 1);
  for (auto& w : r.workloads) apply_gate(w, policy(), {nullptr, "", "no history"});
  EXPECT_EQ(r.exit_code(), 0);
  r.workloads[1].error = "worker could not start";
  EXPECT_EQ(r.exit_code(), 2);
  r.workloads[0].checks[0].outcome = check_outcome::failed;
  EXPECT_EQ(r.exit_code(), 1);
  r.workloads[0].checks[0].outcome = check_outcome::passed;
  r.workloads[1].error.clear();
  r.complete = false;
  EXPECT_EQ(r.exit_code(), 2);
}

}  // namespace
}  // namespace kf
