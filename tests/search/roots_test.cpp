// The search's roots from stored winners: a winner recorded before its family gained a knob comes back with the
// knob at the value whose code it already had (knob::before, as `kforge reemit` fills it), not at today's default.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "search/roots.h"
#include "search_test_specs.h"
#include "util/fs.h"

namespace kf {
namespace {

TEST(search_roots, a_knob_gained_since_takes_the_value_of_the_code_before_it) {
  temp_dir dir("kf-roots");
  const auto spec = test::swiglu_spec();
  // pointwise_cuda gained `pdl` (before: 0, default 1) after this winner was recorded on another GPU.
  nlohmann::json meta = {{"family", "pointwise_cuda"},
                         {"family_version", 1},
                         {"knobs", {{"vec", "8"}, {"loads", "1"}, {"block", "128"}, {"waves", "0"}, {"store", "default"}, {"math", "precise"}}}};
  write_file_atomic(dir.path() / "sm90-other.json", meta.dump());
  const auto roots = search_roots(spec, device_kind::cuda, "sm100-new", dir.path());
  ASSERT_GE(roots.roots.size(), 2u);  // the stored winner re-emitted, then the family's default
  const candidate& stored = roots.roots.front();
  EXPECT_EQ(stored.family, "pointwise_cuda");
  EXPECT_EQ(stored.knobs.at("pdl"), "0") << stored.origin;
  EXPECT_EQ(stored.knobs.at("vec"), "8");
  EXPECT_NE(stored.origin.find("pdl=0"), std::string::npos) << stored.origin;
  EXPECT_EQ(roots.roots.back().knobs.at("pdl"), "1");  // the default has it on
}

// A decode step's one long row and a prefill's many want different kernels: besides the family's default for the
// whole spec (sized for its fewest rows), each tuned case's own default is a root, for the dispatch to keep.
TEST(search_roots, each_tuned_case_adds_its_own_default_where_it_differs) {
  auto spec = test::softmax_spec(false, true);
  spec.inputs[0].shape = {test::sym("T"), test::lit(128256)};
  spec.cases = {test::make_case({{"T", 1}}, true), test::make_case({{"T", 512}}, true),
                test::make_case({{"T", 3}}, false)};
  const auto roots = search_roots(spec, device_kind::cuda, "sm90-test", "/nonexistent").roots;
  ASSERT_EQ(roots.size(), 2u);  // T=1's default is the whole spec's; T=3 is not timed
  EXPECT_EQ(roots[0].origin, "default");
  EXPECT_EQ(roots[0].knobs.at("strategy"), "grid");
  EXPECT_EQ(roots[1].origin, "default for T=512");
  EXPECT_EQ(roots[1].knobs.at("strategy"), "cluster");
  spec.cases.resize(1);  // one case: the spec's default alone
  EXPECT_EQ(search_roots(spec, device_kind::cuda, "sm90-test", "/nonexistent").roots.size(), 1u);
}

}  // namespace
}  // namespace kf
