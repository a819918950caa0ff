// The Amdahl prediction from kforge capture's shares (lib/e2e/share_prediction.h): 1 / (1 - S + sum s / k), with
// each replaced case's share scaled by the calls the variant replaced and its speedup from the winner's record.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/share_prediction.h"
#include "util/error.h"

using namespace kf;
using e2e::replaced_case;

namespace {

replaced_case with(std::string workload, double share, double eager_us, double kernel_us, int calls = 1,
                   int captured = 1) {
  return replaced_case{.workload = std::move(workload),
                       .case_name = "default",
                       .calls = calls,
                       .share = share,
                       .captured_calls = captured,
                       .record_eager_us = eager_us,
                       .record_kernel_us = kernel_us};
}

}  // namespace

TEST(share_prediction, is_amdahls_law_over_the_replaced_cases) {
  // 25.2 % at 9.19x and 16.2 % at 2.17x (the Llama decoder's softmax and log-softmax winners on the H200).
  auto p = e2e::predict_from_shares({with("smax", 0.252, 1353.6, 147.3), with("lsm", 0.162, 1747.4, 806.9)}, 1.4,
                                    "hot");
  const double rest = 0.252 / (1353.6 / 147.3) + 0.162 / (1747.4 / 806.9);
  EXPECT_NEAR(p.share, 0.414, 1e-12);
  EXPECT_NEAR(p.predicted, 1 / (1 - 0.414 + rest), 1e-12);
  EXPECT_NEAR(p.fraction, (1.4 - 1) / (p.predicted - 1), 1e-12);
  EXPECT_TRUE(p.fraction_known());
}

TEST(share_prediction, a_case_replaced_at_some_of_its_calls_counts_that_part_of_its_share) {
  auto p = e2e::predict_from_shares({with("add-rmsnorm", 0.047, 2, 1, /*calls=*/2, /*captured=*/4)}, 1.0, "hot");
  EXPECT_NEAR(p.share, 0.0235, 1e-12);
  EXPECT_NEAR(p.predicted, 1 / (1 - 0.0235 + 0.0235 / 2), 1e-12);
  EXPECT_FALSE(p.fraction_known() && p.fraction > 0);  // measured 1.0x: no gain, fraction 0
}

TEST(share_prediction, calls_beyond_the_captured_ones_count_at_the_same_time_each) {
  // The VAE's GroupNorm+SiLU operator also runs inside 3 add+GroupNorm+SiLU calls at the captured sizes: 6 calls at
  // 13.7 % for 3.
  auto p = e2e::predict_from_shares({with("gn-silu", 0.137, 20, 1, /*calls=*/6, /*captured=*/3)}, 1.0, "hot");
  EXPECT_NEAR(p.share, 0.274, 1e-12);
  EXPECT_NEAR(p.predicted, 1 / (1 - 0.274 + 0.274 / 20), 1e-12);
}

TEST(share_prediction, the_speedup_falls_back_to_the_records_then_to_none) {
  replaced_case c{.workload = "w", .calls = 1, .share = 0.5, .record_speedup = 4.0};
  EXPECT_EQ(c.speedup_source(), "record");
  EXPECT_DOUBLE_EQ(c.speedup(), 4.0);
  c.record_speedup.reset();
  EXPECT_EQ(c.speedup_source(), "none");
  EXPECT_DOUBLE_EQ(c.speedup(), 1.0);  // nothing known: no gain predicted from it
  EXPECT_DOUBLE_EQ(e2e::predict_from_shares({c}, 1.2, "cold").predicted, 1.0);
  EXPECT_FALSE(e2e::predict_from_shares({c}, 1.2, "cold").fraction_known());
}

TEST(share_prediction, without_shares_there_is_no_prediction) {
  auto p = e2e::predict_from_shares({replaced_case{.workload = "w", .calls = 3, .record_speedup = 2.0}}, 1.5, "hot");
  EXPECT_FALSE(p.has_shares());
  EXPECT_EQ(p.predicted, 0);
  EXPECT_THAT(e2e::share_prediction_line(p), ::testing::HasSubstr("no replaced workload's spec has"));
  // Rounded shares adding up past the whole model are held to it.
  auto all = e2e::predict_from_shares({with("a", 0.6, 2, 1), with("b", 0.6, 2, 1)}, 1.5, "hot");
  EXPECT_DOUBLE_EQ(all.share, 1.0);
  EXPECT_NEAR(all.predicted, 2.0, 1e-12);
}

TEST(share_prediction, reads_e2e_pys_replaced_cases) {
  nlohmann::json j = {{{"workload", "w"},
                       {"case", nullptr},
                       {"calls", 2},
                       {"share", nullptr},
                       {"captured_calls", nullptr},
                       {"key", "cpu-x86-64"},
                       {"record_eager_us", nullptr},
                       {"record_kernel_us", nullptr},
                       {"record_speedup", 1.5}}};
  auto cases = e2e::replaced_cases_from_json(j, "s.json");
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].case_name, "");
  EXPECT_FALSE(cases[0].share.has_value());
  EXPECT_DOUBLE_EQ(cases[0].speedup(), 1.5);
  EXPECT_TRUE(e2e::replaced_cases_from_json(nullptr, "s.json").empty());
  EXPECT_THROW(e2e::replaced_cases_from_json(nlohmann::json::object(), "s.json"), user_error);
}
