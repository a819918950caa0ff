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

}  // namespace
}  // namespace kf
