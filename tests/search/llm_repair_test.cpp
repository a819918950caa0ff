// Repair chains in the tree policy (mcts.h): a failed attempt that is being repaired is not backed up, only the
// chain's last attempt is; the descent passes through a failed attempt to its repairs and never expands a failure.
#include <gtest/gtest.h>

#include "search/mcts.h"

namespace kf {
namespace {

candidate source(const std::string& s) {
  candidate c;
  c.source = s;
  c.source_hash = s;
  c.origin = "llm:m";
  return c;
}

TEST(llm_repair, only_the_last_attempt_of_a_repair_chain_counts) {
  mcts_tree t;
  auto root = t.add(0, source("root"));
  t.record(root, node_status::measured, 10.0, 0.5);
  ASSERT_EQ(t.select(), root);
  auto a = t.add(root, source("a"));
  auto a1 = t.add(a, source("a1"));  // its repair is asked for before its failure is recorded (search_driver)
  t.record(a, node_status::compile_failed, std::nullopt, std::nullopt, "error: x");
  EXPECT_EQ(t.at(root).visits, 1);  // the failure is not a result yet
  EXPECT_EQ(t.at(0).visits, 1);
  auto a2 = t.add(a1, source("a2"));
  t.record(a1, node_status::verify_failed, std::nullopt, std::nullopt, "match: wrong");
  EXPECT_EQ(t.at(root).visits, 1);
  t.record(a2, node_status::measured, 8.0, 0.7);  // the chain's outcome, backed up through a1 and a
  EXPECT_EQ(t.at(root).visits, 2);
  EXPECT_EQ(t.at(root).rewarded, 2);
  EXPECT_EQ(t.at(a).visits, 1);
  EXPECT_DOUBLE_EQ(t.at(a).best, 0.7);
  EXPECT_EQ(*t.best(), a2);
  EXPECT_EQ(t.lineage(a2), (std::vector<int64_t>{root, a, a1, a2}));

  // The root may still widen; once it may not, the descent goes through the failed attempts to the repair.
  mcts_options narrow;
  narrow.widening_c = 0.01;  // one child per node
  mcts_tree u(narrow);
  auto r = u.add(0, source("root"));
  u.record(r, node_status::measured, 10.0, 0.5);
  auto f = u.add(r, source("f"));
  auto f1 = u.add(f, source("f1"));
  u.record(f, node_status::verify_failed, std::nullopt, std::nullopt, "match: wrong");
  EXPECT_FALSE(u.select().has_value() && *u.select() == f);  // a failure is never expanded
  u.record(f1, node_status::measured, 9.0, 0.6);
  EXPECT_EQ(u.select(), f1);  // root has its one child: down through f to its repair

  // A chain that ends failed counts as one failure.
  mcts_tree w;
  auto q = w.add(0, source("root"));
  w.record(q, node_status::measured, 10.0, 0.5);
  auto g = w.add(q, source("g"));
  auto g1 = w.add(g, source("g1"));
  w.record(g, node_status::compile_failed, std::nullopt, std::nullopt, "error");
  w.record(g1, node_status::compile_failed, std::nullopt, std::nullopt, "error again");  // no repair of it: final
  EXPECT_EQ(w.at(q).visits, 2);
  EXPECT_EQ(w.at(q).rewarded, 1);
  EXPECT_EQ(w.select(), q);  // nothing below to enter: the root widens
}

}  // namespace
}  // namespace kf
