// How close a candidate's output must be to the float64 reference (docs/design.md "Verify": tolerance defaults from
// the output dtype and is never looser than eager's own error x 4).
//
// An element passes when |out - ref| <= atol + rtol * |ref|. Eager's error is measured in units of the dtype
// default: r_eager = max_i |eager_i - ref_i| / (atol_d + rtol_d * |ref_i|). The loosest tolerance an output may
// have is the cap = default * max(1, 4 * r_eager): four times what eager itself needs, and never below the dtype
// default (eager can be exact where a correct kernel that sums in another order is not).
//  - no tolerance in the spec: effective = cap (a kernel as accurate as eager passes with a 4x margin);
//  - a tolerance in the spec: effective = min(spec, cap) per component. A spec may tighten freely; a looser one
//    is clipped, so a typo like rtol: 0.5 cannot wave a wrong kernel through.
#pragma once
#include <string>

#include "spec/spec.h"

namespace kf {

struct tolerance {
  double rtol = 0;
  double atol = 0;
};

tolerance default_tolerance(dtype t);

struct tolerance_choice {
  tolerance tol;
  bool clipped = false;  // the spec asked for a looser tolerance than the cap
  std::string why;       // one line: where the numbers come from
};

// `eager_ratio`: eager's max error in units of default_tolerance(t) (0 when eager is exact; NaN/Inf treated as 0
// since non-finite positions are the nan_inf rule's business).
tolerance_choice effective_tolerance(dtype t, const tolerance_spec& spec_tol, double eager_ratio);

}  // namespace kf
