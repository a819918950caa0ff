// The template proposer: one- or two-knob moves, near ones first, valid for the family, never a knob set the
// tree already holds.
#include <set>

#include <gtest/gtest.h>

#include "search/family.h"
#include "search/template_proposer.h"
#include "search_test_specs.h"

namespace kf {
namespace {

int changed(const knob_values& a, const knob_values& b) {
  int n = 0;
  for (auto& [k, v] : a) n += b.at(k) != v;
  return n;
}

TEST(template_proposer, moves_one_or_two_knobs_and_never_repeats) {
  auto spec = test::group_norm_spec();
  auto* f = find_family("group_norm_cpu", device_kind::cpu);
  mcts_tree tree;
  auto root_knobs = f->default_variant(spec);
  auto root = tree.add(0, family_candidate(*f, spec, root_knobs, "default"));
  tree.record(root, node_status::measured, 10, 0.0);
  template_proposer p(42);
  auto first = p.propose({spec, device_kind::cpu, tree, root, 200});
  ASSERT_GT(first.size(), 10u);
  std::set<std::string> keys;
  size_t first_pair = first.size();
  for (size_t i = 0; i < first.size(); ++i)
    if (changed(root_knobs, first[i].knobs) == 2 && first_pair == first.size()) first_pair = i;
  // near single moves (every knob has at least one neighbouring value) come before any two-knob move
  EXPECT_GE(first_pair, f->knobs().size());
  for (auto& c : first) {
    EXPECT_TRUE(f->valid(c.knobs, spec, nullptr)) << c.origin;
    int n = changed(root_knobs, c.knobs);
    EXPECT_TRUE(n == 1 || n == 2) << c.origin;
    EXPECT_TRUE(keys.insert(candidate_key(c)).second) << "proposed twice: " << c.origin;
    EXPECT_FALSE(c.source.empty());
    EXPECT_EQ(c.source_hash.size(), 64u);
    EXPECT_EQ(c.origin.rfind("template:", 0), 0u);
  }
  EXPECT_EQ(changed(root_knobs, first.front().knobs), 1);
  // once in the tree, none is proposed again
  for (auto& c : first) tree.add(root, c);
  auto again = p.propose({spec, device_kind::cpu, tree, root, 200});
  for (auto& c : again) EXPECT_EQ(keys.count(candidate_key(c)), 0u) << c.origin;
  // the family rejects more than 32 accumulators (vector_width x unroll), so the proposer never offers them
  mcts_tree t2;
  auto r2 = t2.add(0, family_candidate(*f, spec, root_knobs, "default"));
  for (auto& c : p.propose({spec, device_kind::cpu, t2, r2, 500}))
    EXPECT_LE(knob_int(c.knobs, "vector_width") * knob_int(c.knobs, "unroll"), 32) << c.origin;
}

// group_norm_cuda's stream strategy reads neither chunks, cluster, splits nor reverse: a move of those alone emits
// the root's source again, so it is not proposed (it would cost an evaluation and could only tie).
TEST(template_proposer, skips_moves_that_emit_a_source_the_tree_holds) {
  auto spec = test::group_norm_spec();
  auto* f = find_family("group_norm_cuda", device_kind::cuda);
  ASSERT_NE(f, nullptr);
  auto root_knobs = f->default_variant(spec);
  root_knobs["strategy"] = "stream";
  ASSERT_TRUE(f->valid(root_knobs, spec, nullptr));
  auto moved = root_knobs;
  moved["chunks"] = root_knobs.at("chunks") == "8" ? "4" : "8";
  ASSERT_EQ(f->emit(spec, moved), f->emit(spec, root_knobs));
  mcts_tree tree;
  auto root = tree.add(0, family_candidate(*f, spec, root_knobs, "default"));
  tree.record(root, node_status::measured, 10, 0.0);
  template_proposer p(7);
  auto all = p.propose({spec, device_kind::cuda, tree, root, 1000});
  ASSERT_GT(all.size(), 10u);
  std::set<std::string> hashes = {tree.at(root).cand.source_hash};
  for (auto& c : all) {
    EXPECT_TRUE(hashes.insert(c.source_hash).second) << "a source proposed twice: " << c.origin;
    for (const char* k : {"chunks", "cluster", "splits", "reverse"})
      if (changed(root_knobs, c.knobs) == 1 && c.knobs.at(k) != root_knobs.at(k)) ADD_FAILURE() << c.origin;
  }
  // A strategy that reads chunks still gets moves of it.
  root_knobs["strategy"] = "block";
  mcts_tree t2;
  auto r2 = t2.add(0, family_candidate(*f, spec, root_knobs, "default"));
  bool chunk_move = false;
  for (auto& c : p.propose({spec, device_kind::cuda, t2, r2, 1000}))
    chunk_move = chunk_move || (changed(root_knobs, c.knobs) == 1 && c.knobs.at("chunks") != root_knobs.at("chunks"));
  EXPECT_TRUE(chunk_move);
}

// A family's trades (row_softmax_cuda: cluster x threads, the threads a row): from a cluster of 8 x 256 threads
// the move to 4 x 512 comes among the near moves, before any pair of neighbouring moves that is not a trade, and
// every trade keeps its pair's product.
TEST(template_proposer, trades_keep_a_pairs_product_and_come_with_the_near_moves) {
  auto spec = test::softmax_spec();
  auto* f = find_family("row_softmax_cuda", device_kind::cuda);
  ASSERT_NE(f, nullptr);
  auto root_knobs = f->default_variant(spec);
  root_knobs["strategy"] = "cluster", root_knobs["cluster"] = "8", root_knobs["threads"] = "256";
  ASSERT_TRUE(f->valid(root_knobs, spec, nullptr));
  mcts_tree tree;
  auto root = tree.add(0, family_candidate(*f, spec, root_knobs, "default"));
  tree.record(root, node_status::measured, 10, 0.0);
  template_proposer p(11);
  auto all = p.propose({spec, device_kind::cuda, tree, root, 1000});
  auto product = [](const knob_values& v, const std::string& a, const std::string& b) {
    return knob_int(v, a) * knob_int(v, b);
  };
  size_t the_trade = all.size(), first_pair = all.size(), trades = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const knob_values& k = all[i].knobs;
    if (changed(root_knobs, k) != 2) continue;
    bool is_trade = false;
    for (auto& [a, b] : f->trades())
      if (k.at(a) != root_knobs.at(a) && k.at(b) != root_knobs.at(b)) {
        is_trade = product(k, a, b) == product(root_knobs, a, b);
        ++trades;
      }
    if (k.at("cluster") == "4" && k.at("threads") == "512") the_trade = std::min(the_trade, i);
    if (!is_trade && first_pair == all.size()) first_pair = i;
  }
  EXPECT_GE(trades, 4u);
  ASSERT_LT(the_trade, all.size()) << "no move to a cluster of 4 x 512 threads";
  EXPECT_LT(the_trade, first_pair);
  // A family without trades proposes none: group_norm_cpu's first two-knob move comes after its near moves.
  EXPECT_TRUE(find_family("group_norm_cpu", device_kind::cpu)->trades().empty());
}

TEST(template_proposer, has_nothing_for_a_node_without_a_family) {
  auto spec = test::pool_spec();
  mcts_tree tree;
  candidate c;
  c.source = "// hand-written";
  c.source_hash = "abc";
  auto id = tree.add(0, c);
  template_proposer p(1);
  EXPECT_TRUE(p.propose({spec, device_kind::cpu, tree, id, 5}).empty());
  EXPECT_THROW(make_proposer("nonsense", 1), user_error);
  EXPECT_EQ(make_proposer("template", 1)->name(), "template");
}

}  // namespace
}  // namespace kf
