#include <set>

#include <gtest/gtest.h>

#include "verify/verdict.h"

using namespace kf;

TEST(verdict, empty_verdict_proves_nothing) { EXPECT_FALSE(verdict{}.passed()); }

TEST(verdict, worst_wins_and_later_passes_do_not_hide_a_failure) {
  verdict v;
  v.pass("match", "R=4,C=7", 0);
  v.fail("match", "R=4,C=7", 1, "max |err| 0.5 > tol");
  v.pass("match", "R=4,C=7", 2);
  v.pass("deterministic", "R=4,C=7", 0);
  EXPECT_FALSE(v.passed());
  EXPECT_EQ(v.status_of("match"), check_status::failed);
  EXPECT_EQ(v.status_of("match", "R=1,C=1"), check_status::passed);
  EXPECT_EQ(v.status_of("deterministic"), check_status::passed);
  EXPECT_EQ(v.first_failure(), "match on case R=4,C=7 seed 1: max |err| 0.5 > tol");
  std::string text = v.text();
  EXPECT_NE(text.find("FAIL  match"), std::string::npos) << text;
  EXPECT_NE(text.find("(seed 1)"), std::string::npos) << text;
  EXPECT_NE(text.find("verdict: FAILED"), std::string::npos);
}

TEST(verdict, merge_keeps_every_check) {
  verdict a, b;
  a.pass("compiles", "", -1);
  b.fail("crash", "R=1", -1, "killed by SIGSEGV");
  a.merge(b);
  EXPECT_EQ(a.checks().size(), 2u);
  EXPECT_FALSE(a.passed());
  EXPECT_TRUE(a.has("crash"));
}

TEST(verdict, skipped_does_not_fail) {
  verdict v;
  v.pass("match", "c", 0);
  v.add({"bandwidth_floor", "c", -1, check_status::skipped, "timed by measure", {}});
  EXPECT_TRUE(v.passed());
  EXPECT_EQ(v.status_of("bandwidth_floor"), check_status::skipped);
}

TEST(verdict, json_roundtrip) {
  verdict v;
  v.fail("all_written", "R=3,C=5", 2, "7 of 15 elements still poisoned", {{"unwritten", 7}});
  v.pass("match", "R=3,C=5", 2);
  auto j = v.to_json();
  EXPECT_FALSE(j["passed"].get<bool>());
  EXPECT_EQ(j["checks"][0]["rule"], "all_written");
  EXPECT_EQ(j["checks"][0]["passed"], false);
  verdict back = verdict::from_json(j);
  EXPECT_EQ(back.checks().size(), 2u);
  EXPECT_EQ(back.checks()[0].numbers["unwritten"], 7);
  EXPECT_EQ(back.checks()[0].seed, 2);
  EXPECT_FALSE(back.passed());
}

TEST(verdict, every_rule_has_a_summary_and_a_unique_name) {
  std::set<std::string_view> names;
  for (auto& r : verify_rules()) {
    EXPECT_FALSE(r.summary.empty()) << r.name;
    EXPECT_TRUE(names.insert(r.name).second) << "duplicate rule " << r.name;
  }
  EXPECT_TRUE(find_rule("new_inputs"));
  EXPECT_FALSE(find_rule("no_such_rule"));
}
