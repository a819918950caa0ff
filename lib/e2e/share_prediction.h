// The Amdahl prediction from kforge capture's time shares (issue #23's target: eager with kforge's operators is
// faster than eager by at least 80 % of what the captured workloads' speedups predict). Each spec case the kforge
// variant's operators replaced (e2e.py's "replaced_cases", from kforge.replaced_cases) brings its share s of the
// captured model's time and the stored winner's recorded speedup k over eager; the rest of the model keeps k = 1:
//   predicted = 1 / (1 - S + sum s / k),  S = sum s.
// The measured gain is eager's median over the kforge variant's on the series the e2e table compares.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kf::e2e {

struct replaced_case {
  std::string workload;
  std::string case_name;              // empty: the calls' sizes are none of the spec's cases
  int calls = 0;                      // calls one forward of the kforge variant made that the kernel takes
  std::optional<double> share;        // the spec case's share of the captured model's time (kforge capture's)
  std::optional<int> captured_calls;  // the calls the capture saw at that case
  std::string key;                    // the stored winner's GPU key
  std::optional<double> record_eager_us, record_kernel_us;  // the winner's record on that case
  std::optional<double> record_speedup;                     // the record's speedup over eager across its cases

  // share x calls / captured_calls (0 without a share): the time of the calls the variant replaced, each at the
  // capture's time per call at this case. Calls beyond the captured ones are this operator covering part of a
  // larger captured pattern at the same sizes (the SD3.5 VAE's GroupNorm+SiLU inside its add+GroupNorm+SiLU, whose
  // spec has no kernel): the same work, so the same time each, which that larger pattern's share held.
  double counted_share() const;
  // The kernel's speedup over eager: the record's on this case, else across its cases, else 1 (nothing known).
  double speedup() const;
  std::string speedup_source() const;  // "case", "record" or "none"
};

struct share_prediction {
  std::vector<replaced_case> cases;
  double share = 0;       // S: the replaced cases' counted shares
  double predicted = 0;   // 1 / (1 - S + sum s / k); 0 when no replaced case has a share
  double measured = 0;    // eager / kforge on `metric` (0: not measured)
  std::string metric;     // the compared series, hot or cold
  double fraction = 0;    // (measured - 1) / (predicted - 1)
  bool has_shares() const;
  bool fraction_known() const { return predicted > 1 && measured > 0; }
};

// The prediction from `cases`, with the measured gain on `metric`.
share_prediction predict_from_shares(std::vector<replaced_case> cases, double measured, const std::string& metric);

// e2e.py's "replaced_cases" (null or absent: none); throws user_error naming `source` when malformed.
std::vector<replaced_case> replaced_cases_from_json(const nlohmann::json& j, const std::string& source);

nlohmann::json to_json(const share_prediction& p);
// One line: "Amdahl from the capture's shares: ...", or why there is no such prediction.
std::string share_prediction_line(const share_prediction& p);

}  // namespace kf::e2e
