// The e2e gate's decisions (lib/e2e/e2e_gate.h) on made-up samples: beating eager passes, getting slower than the
// history fails, a variant whose outputs differ fails, the Amdahl fraction is held to e2e.min_predicted_fraction, and
// the run's exit code follows.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/e2e_gate.h"
#include "report/summarize.h"
#include "store/history_note.h"

using namespace kf;
using ::testing::HasSubstr;
using json = nlohmann::json;

namespace {

std::vector<double> around(double center, int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(center * (1 + 0.004 * ((i * 7) % 5 - 2)));
  return v;
}

e2e::e2e_result result(double eager_us, double kforge_us, double pattern_speedup = 2.0) {
  json s = {{"version", 1},
            {"model", "m.py:make"},
            {"device", "cpu"},
            {"patched", {{{"module", "act"}, {"workloads", {"w"}}}}},
            {"variants",
             {{{"name", "eager"}, {"status", "ok"}, {"cold_us", around(eager_us, 40)}},
              {{"name", "kforge"}, {"status", "ok"}, {"cold_us", around(kforge_us, 40)}, {"max_error_ratio", 0.1}}}},
            {"profile",
             {{"passes", 1},
              {"total_us", {eager_us}},
              {"patterns",
               {{{"module", "act"},
                 {"workloads", {"w"}},
                 {"eager_us", {eager_us / 2}},
                 {"kforge_us", {eager_us / 2 / pattern_speedup}}}}}}}};
  return e2e::result_from_samples(s, "s.json");
}

e2e::e2e_spec spec() {
  e2e::e2e_spec s;
  s.name = "tiny";
  s.path = "tiny.e2e.yaml";
  s.model = "m.py:make";
  s.variants = {"eager", "kforge"};
  s.must_beat = {"eager"};
  return s;
}

const gate_check* find(const workload_result& w, const std::string& name) {
  for (const auto& c : w.checks)
    if (c.test_name() == name) return &c;
  return nullptr;
}

workload_result gated(const e2e::e2e_result& r, const e2e::e2e_spec& s, const workload_result* previous = nullptr) {
  workload_result w = e2e::to_workload_result(r, s, "workloads");
  history_context h;
  h.previous = previous;
  h.origin = "the history note of abc (the parent commit)";
  h.missing_why = "no note";
  e2e::apply_e2e_gate(w, r, s, h);
  return w;
}

}  // namespace

TEST(e2e_gate, beating_eager_passes_and_is_one_entry_of_the_run) {
  auto w = gated(result(1000, 700), spec());
  EXPECT_EQ(w.name, "e2e:tiny");
  ASSERT_NE(find(w, "beats[eager][eager]"), nullptr);
  EXPECT_EQ(find(w, "beats[eager][eager]")->outcome, check_outcome::passed) << find(w, "beats[eager][eager]")->sentence;
  EXPECT_EQ(find(w, "verify[kforge]")->outcome, check_outcome::passed);
  EXPECT_EQ(find(w, "kernel")->outcome, check_outcome::passed);
  EXPECT_EQ(find(w, "regression[eager]")->outcome,
            check_outcome::skipped);               // no history: said, not passed
  EXPECT_EQ(w.outcome(), check_outcome::skipped);  // the skipped regression check: as a workload without history
  run_result r;
  r.workloads.push_back(w);
  EXPECT_EQ(r.exit_code(), 0);
}

TEST(e2e_gate, not_beating_a_required_baseline_fails) {
  auto w = gated(result(1000, 1100), spec());
  EXPECT_EQ(find(w, "beats[eager][eager]")->outcome, check_outcome::failed);
  run_result r;
  r.workloads.push_back(w);
  EXPECT_EQ(r.exit_code(), 1);
}

TEST(e2e_gate, slower_than_with_the_previous_kernels_fails) {
  auto before = gated(result(1000, 600), spec());
  auto now = gated(result(1000, 800), spec(),
                   &before);  // still beats eager, but 33 % slower than before
  EXPECT_EQ(find(now, "beats[eager][eager]")->outcome, check_outcome::passed);
  ASSERT_NE(find(now, "regression[eager]"), nullptr);
  EXPECT_EQ(find(now, "regression[eager]")->outcome, check_outcome::failed) << find(now, "regression[eager]")->sentence;
  EXPECT_EQ(now.outcome(), check_outcome::failed);
  auto same = gated(result(1000, 601), spec(), &before);
  EXPECT_EQ(find(same, "regression[eager]")->outcome, check_outcome::passed)
      << find(same, "regression[eager]")->sentence;
}

TEST(e2e_gate, a_variant_whose_outputs_differ_fails) {
  json s = {{"version", 1},
            {"patched", {{{"module", "act"}, {"workloads", {"w"}}}}},
            {"variants",
             {{{"name", "eager"}, {"status", "ok"}, {"cold_us", around(1000, 20)}},
              {{"name", "kforge"}, {"status", "failed"}, {"why", "outputs differ from eager: output 0 ..."}}}}};
  auto r = e2e::result_from_samples(s, "s.json");
  auto w = gated(r, spec());
  EXPECT_EQ(find(w, "verify[kforge]")->outcome, check_outcome::failed);
  EXPECT_THAT(find(w, "verify[kforge]")->sentence, HasSubstr("outputs differ from eager"));
  EXPECT_EQ(w.outcome(), check_outcome::failed);
}

TEST(e2e_gate, the_amdahl_fraction_is_held_to_the_spec) {
  auto s = spec();
  s.must_beat.clear();
  // Half the forward at 2x predicts 1.33x; 1000 -> 800 us is 1.25x, 75 % of the predicted gain.
  auto r = result(1000, 800);
  auto w = gated(r, s);
  EXPECT_TRUE(find(w, "amdahl[eager]")->advisory);  // no min_predicted_fraction: said, not gated
  s.min_predicted_fraction = 0.7;
  EXPECT_EQ(find(gated(r, s), "amdahl[eager]")->outcome, check_outcome::passed);
  s.min_predicted_fraction = 0.8;
  auto failed = gated(r, s);
  EXPECT_EQ(find(failed, "amdahl[eager]")->outcome, check_outcome::failed);
  EXPECT_THAT(find(failed, "amdahl[eager]")->sentence, HasSubstr("75% of the 1.333x the profile predicts"));
  EXPECT_THAT(find(failed, "amdahl[eager]")->sentence, HasSubstr("no replaced workload's spec has capture shares"));
  // A profile that predicts no gain has no fraction to reach.
  EXPECT_EQ(find(gated(result(1000, 800, 1.0), s), "amdahl[eager]")->outcome, check_outcome::skipped);
}

// With the capture's shares (a replaced case taking 40 % of the model at 2x predicts 1.25x), the gate holds the
// measured gain to that prediction, not the profile's (which predicts 1.333x here), and says so.
TEST(e2e_gate, the_amdahl_check_uses_the_captures_shares_when_there_are_some) {
  auto s = spec();
  s.must_beat.clear();
  s.min_predicted_fraction = 0.8;
  auto r = result(1000, 850);  // 1.176x measured: 70.6 % of 1.25x, 52.9 % of the profile's 1.333x
  r.shares = e2e::predict_from_shares({e2e::replaced_case{.workload = "w",
                                                          .case_name = "default",
                                                          .calls = 1,
                                                          .share = 0.4,
                                                          .captured_calls = 1,
                                                          .record_eager_us = 10.0,
                                                          .record_kernel_us = 5.0}},
                                      r.speedup("kforge", "eager"), r.metric());
  workload_result w = gated(r, s);
  const gate_check* c = find(w, "amdahl[eager]");
  EXPECT_EQ(c->outcome, check_outcome::failed);
  EXPECT_THAT(c->sentence, HasSubstr("71% of the 1.250x the capture's shares predict"));
  EXPECT_EQ(c->numbers["source"], "capture shares");
  s.min_predicted_fraction = 0.7;
  EXPECT_EQ(find(gated(r, s), "amdahl[eager]")->outcome, check_outcome::passed);  // the profile's 53 % would fail
  // Replaced cases without shares: back to the profile.
  r.shares = e2e::predict_from_shares({e2e::replaced_case{.workload = "w", .calls = 1}}, r.speedup("kforge", "eager"),
                                      r.metric());
  w = gated(r, s);
  c = find(w, "amdahl[eager]");
  EXPECT_EQ(c->numbers["source"], "in-model profile");
  EXPECT_THAT(c->sentence, HasSubstr("from the in-model profile: no replaced workload's spec has capture shares"));
  EXPECT_EQ(c->outcome, check_outcome::failed);
}

TEST(e2e_gate, min_speedup_asks_for_more_than_beating_eager) {
  auto s = spec();
  s.min_speedup = 1.5;
  EXPECT_EQ(find(gated(result(1000, 800), s), "speedup[eager]")->outcome, check_outcome::failed);
  EXPECT_EQ(find(gated(result(1000, 600), s), "speedup[eager]")->outcome, check_outcome::passed);
}

TEST(e2e_gate, nothing_patched_fails_the_kernel_check) {
  json j = {{"version", 1},
            {"variants",
             {{{"name", "eager"}, {"status", "ok"}, {"cold_us", around(1000, 20)}},
              {{"name", "kforge"}, {"status", "failed"}, {"why", "kforge.patch found no module"}}}}};
  auto w = gated(e2e::result_from_samples(j, "s.json"), spec());
  EXPECT_EQ(find(w, "kernel")->outcome, check_outcome::failed);
}

TEST(e2e_gate, the_entry_survives_the_history_note_and_gates_the_next_run) {
  run_result before;
  before.env.gpu_key = "cpu-x86-64";
  before.workloads.push_back(gated(result(1000, 600), spec()));
  // What the next run reads: the note's compact entry (summaries, no samples).
  run_result loaded = run_from_note_entry(note_entry(before), "note");
  const workload_result* previous = loaded.find_workload("e2e:tiny");
  ASSERT_NE(previous, nullptr);
  auto slower = gated(result(1000, 800), spec(), previous);
  EXPECT_EQ(find(slower, "regression[eager]")->outcome, check_outcome::failed)
      << find(slower, "regression[eager]")->sentence;
  auto same = gated(result(1000, 600), spec(), previous);
  EXPECT_EQ(find(same, "regression[eager]")->outcome, check_outcome::passed)
      << find(same, "regression[eager]")->sentence;
}
