// The tree policy on trees with known rewards: UCT, progressive widening, stagnation, failures.
#include <gtest/gtest.h>

#include "search/mcts.h"

namespace kf {
namespace {

candidate cand(const std::string& name) {
  candidate c;
  c.family = "f";
  c.knobs = {{"k", name}};
  return c;
}

TEST(mcts, uct_prefers_reward_then_fewer_visits) {
  mcts_options o;
  o.widening_c = 0.01;  // allow exactly one child per node: selection must descend
  mcts_tree t(o);
  auto a = t.add(0, cand("a")), b = t.add(0, cand("b"));
  t.record(a, node_status::measured, 10.0, 0.5);
  t.record(b, node_status::measured, 20.0, 0.1);
  EXPECT_GT(t.uct(t.at(a), t.at(0)), t.uct(t.at(b), t.at(0)));
  EXPECT_EQ(t.select(), a);  // a may widen (0 children < 1 allowed)
  auto a1 = t.add(a, cand("a1"));
  t.record(a1, node_status::measured, 12.0, 0.45);
  // a now has 2 visits and Q=0.475 vs b's 0.1 with 1 visit; exploration 0.4*sqrt(ln3/2)=0.30 < gap+bonus(b)
  EXPECT_NEAR(t.uct(t.at(a), t.at(0)), 0.475 + 0.4 * std::sqrt(std::log(3.0) / 2), 1e-12);
  EXPECT_NEAR(t.uct(t.at(b), t.at(0)), 0.1 + 0.4 * std::sqrt(std::log(3.0) / 1), 1e-12);
  // equal rewards: the less visited child wins
  mcts_tree u(o);
  auto x = u.add(0, cand("x")), y = u.add(0, cand("y"));
  u.record(x, node_status::measured, 1.0, 0.2);
  u.record(y, node_status::measured, 1.0, 0.2);
  u.record(u.add(x, cand("x1")), node_status::measured, 1.0, 0.2);
  EXPECT_GT(u.uct(u.at(y), u.at(0)), u.uct(u.at(x), u.at(0)));
}

TEST(mcts, progressive_widening_allows_ceil_c_visits_pow_alpha) {
  mcts_options o;
  o.widening_c = 1.5;
  o.widening_alpha = 0.5;
  mcts_tree t(o);
  auto r = t.add(0, cand("r"));
  t.record(r, node_status::measured, 10, 0.0);
  EXPECT_EQ(t.children_allowed(t.at(r)), 2);  // ceil(1.5 * 1)
  auto c1 = t.add(r, cand("c1"));
  auto c2 = t.add(r, cand("c2"));
  t.record(c1, node_status::measured, 9, 0.1);
  t.record(c2, node_status::measured, 9, 0.05);
  EXPECT_EQ(t.at(r).visits, 3);
  EXPECT_EQ(t.children_allowed(t.at(r)), 3);  // ceil(1.5 * sqrt 3) = ceil(2.6)
  EXPECT_EQ(t.select(), r);                   // 2 children < 3 allowed: widen the root
  t.add(r, cand("c3"));
  // r is full (3 of 3); c1 (best reward, may widen: 0 of 2) is chosen
  EXPECT_EQ(t.select(), c1);
}

TEST(mcts, failed_children_keep_no_reward_and_are_not_entered) {
  mcts_options o;
  o.widening_c = 0.01;
  mcts_tree t(o);
  auto r = t.add(0, cand("r"));
  t.record(r, node_status::measured, 10, 0.0);
  auto bad = t.add(r, cand("bad"));
  t.record(bad, node_status::compile_failed, std::nullopt, std::nullopt, "error: x");
  EXPECT_FALSE(t.at(bad).reward.has_value());
  EXPECT_EQ(t.at(r).visits, 2);
  EXPECT_EQ(t.at(r).rewarded, 1);
  // r is full (1 of 1) and its only child failed: r is widened anyway rather than stalling
  EXPECT_EQ(t.select(), r);
  // a failure is never overwritten by a later success
  t.record(bad, node_status::measured, 5, 0.7);
  EXPECT_EQ(t.at(bad).status, node_status::compile_failed);
  EXPECT_EQ(t.best(), r);
}

TEST(mcts, stagnation_closes_a_subtree_and_the_search_converges) {
  mcts_options o;
  o.stagnation_k = 3;
  mcts_tree t(o);
  auto r = t.add(0, cand("r"));
  t.record(r, node_status::measured, 10, 0.3);
  for (int i = 0; i < 2; ++i) t.record(t.add(r, cand("n" + std::to_string(i))), node_status::measured, 11, 0.2);
  EXPECT_FALSE(t.at(r).closed);
  t.record(t.add(r, cand("n2")), node_status::verify_failed, std::nullopt, std::nullopt);
  EXPECT_TRUE(t.at(r).closed);  // three results without beating 0.3
  EXPECT_EQ(t.select(), std::nullopt);
  // an improvement resets the count
  mcts_tree u(o);
  auto s = u.add(0, cand("s"));
  u.record(s, node_status::measured, 10, 0.3);
  u.record(u.add(s, cand("a")), node_status::measured, 11, 0.2);
  u.record(u.add(s, cand("b")), node_status::measured, 8, 0.5);
  EXPECT_EQ(u.at(s).since_improvement, 0);
  EXPECT_NEAR(u.at(s).best, 0.5, 1e-12);
}

TEST(mcts, exhausted_nodes_are_not_widened_and_lineage_walks_to_the_root) {
  mcts_tree t;
  auto r = t.add(0, cand("r"));
  t.record(r, node_status::measured, 10, 0.1);
  auto c = t.add(r, cand("c"));
  t.record(c, node_status::screened, 9, 0.2);
  t.mark_exhausted(r);
  EXPECT_EQ(t.select(), c);
  t.mark_exhausted(c);
  EXPECT_EQ(t.select(), std::nullopt);
  EXPECT_EQ(t.lineage(c), (std::vector<int64_t>{r, c}));
  EXPECT_TRUE(t.contains(candidate_key(cand("c"))));
  EXPECT_EQ(t.best(), r);  // measured outranks screened
}

// Every root failed: the tree is rescuing, and the failed roots are expanded in turn (the one with the fewest
// children first); once any candidate passes, a failed node is expanded no more and the search goes on from it.
TEST(mcts, failed_roots_are_expanded_in_turn_until_something_passes) {
  mcts_tree t;
  auto a = t.add(0, cand("a")), b = t.add(0, cand("b"));
  t.record(a, node_status::verify_failed, std::nullopt, std::nullopt, "match: wrong");
  t.record(b, node_status::compile_failed, std::nullopt, std::nullopt, "error");
  ASSERT_TRUE(t.rescuing());
  EXPECT_EQ(t.select(), a);
  auto a1 = t.add(a, cand("a1"));
  EXPECT_EQ(t.select(), b);  // b has fewer children now
  auto b1 = t.add(b, cand("b1"));
  t.record(a1, node_status::verify_failed, std::nullopt, std::nullopt, "match: wrong");
  EXPECT_EQ(t.select(), a);  // a failed child is not expanded; its root is, again
  t.mark_exhausted(a);
  EXPECT_EQ(t.select(), b);
  t.record(b1, node_status::measured, 10.0, 0.5);
  EXPECT_FALSE(t.rescuing());
  EXPECT_EQ(t.select(), b1);  // through the failed root to what passed; neither root widens now
  t.mark_exhausted(b1);
  EXPECT_EQ(t.select(), std::nullopt);
}

}  // namespace
}  // namespace kf
