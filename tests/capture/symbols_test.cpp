// Shape symbols for a pattern seen at several sizes (capture/symbols.h).
#include <gtest/gtest.h>

#include "capture/symbols.h"

using namespace kf;
using namespace kf::capture;

namespace {

std::string shape_str(const std::vector<dim>& shape) {
  std::string s;
  for (const auto& d : shape) s += (s.empty() ? "" : ",") + (d.is_symbol() ? d.symbol : std::to_string(d.value));
  return s;
}

using bindings = std::vector<std::pair<std::string, int64_t>>;

}  // namespace

TEST(capture_symbols, one_size_stays_literal) {
  auto s = infer_symbols({{{1, 102, 192}, {192}}});
  EXPECT_EQ(shape_str(s.inputs[0]), "1,102,192");
  EXPECT_EQ(shape_str(s.inputs[1]), "192");
  ASSERT_EQ(s.cases.size(), 1u);
  EXPECT_TRUE(s.cases[0].empty());
}

TEST(capture_symbols, dims_that_vary_together_share_a_symbol_across_tensors) {
  // A residual add at two token counts: x and r share T; the hidden size stays literal.
  auto s = infer_symbols({{{8, 64}, {8, 64}, {64}}, {{32, 64}, {32, 64}, {64}}});
  EXPECT_EQ(shape_str(s.inputs[0]), "T,64");
  EXPECT_EQ(shape_str(s.inputs[1]), "T,64");
  EXPECT_EQ(shape_str(s.inputs[2]), "64");
  EXPECT_EQ(s.cases, (std::vector<bindings>{{{"T", 8}}, {{"T", 32}}}));
}

TEST(capture_symbols, square_images_keep_h_and_w_and_a_weight_shares_c) {
  auto s = infer_symbols({{{1, 512, 16, 16}, {512}}, {{1, 256, 64, 64}, {256}}, {{1, 256, 32, 32}, {256}}});
  EXPECT_EQ(shape_str(s.inputs[0]), "1,C,H,W");
  EXPECT_EQ(shape_str(s.inputs[1]), "C");
  EXPECT_EQ(s.cases[1], (bindings{{"C", 256}, {"H", 64}, {"W", 64}}));
}

TEST(capture_symbols, a_mask_shares_the_scores_sequence_dims) {
  auto s = infer_symbols({{{1, 32, 77, 77}, {1, 1, 77, 77}}, {{1, 32, 128, 128}, {1, 1, 128, 128}}});
  EXPECT_EQ(shape_str(s.inputs[0]), "1,32,H,W");
  EXPECT_EQ(shape_str(s.inputs[1]), "1,1,H,W");
}

TEST(capture_symbols, a_name_taken_by_another_symbol_gets_a_digit) {
  // Two 2-d inputs whose leading dims vary differently: T and T2.
  auto s = infer_symbols({{{4, 8}, {3, 8}}, {{16, 8}, {5, 8}}});
  EXPECT_EQ(shape_str(s.inputs[0]), "T,8");
  EXPECT_EQ(shape_str(s.inputs[1]), "T2,8");
  EXPECT_EQ(s.cases[1], (bindings{{"T", 16}, {"T2", 5}}));
}
