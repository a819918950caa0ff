#include "verify/tolerance.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace kf {

tolerance default_tolerance(dtype t) {
  // About two units in the last place of the dtype (relative), and an absolute floor far below the values the
  // seed workloads produce; eager's measured error widens these where it must (see tolerance.h).
  switch (t) {
    case dtype::float64: return {1e-12, 1e-14};
    case dtype::float32: return {1e-5, 1e-7};
    case dtype::float16: return {2e-3, 1e-5};
    case dtype::bfloat16: return {1.6e-2, 1e-4};
    default: return {0, 0};  // integers: exact
  }
}

tolerance_choice effective_tolerance(dtype t, const tolerance_spec& spec_tol, double eager_ratio) {
  tolerance d = default_tolerance(t);
  if (!std::isfinite(eager_ratio) || eager_ratio < 0) eager_ratio = 0;
  double scale = std::max(1.0, 4 * eager_ratio);
  tolerance cap{d.rtol * scale, d.atol * scale};
  tolerance_choice c;
  if (!spec_tol.rtol && !spec_tol.atol) {
    c.tol = cap;
    c.why = scale > 1 ? fmt::format("{} default x {:.3g} (4x eager's own error)", dtype_name(t), scale)
                      : fmt::format("{} default", dtype_name(t));
    return c;
  }
  tolerance asked{spec_tol.rtol.value_or(d.rtol), spec_tol.atol.value_or(d.atol)};
  c.tol = {std::min(asked.rtol, cap.rtol), std::min(asked.atol, cap.atol)};
  c.clipped = asked.rtol > cap.rtol || asked.atol > cap.atol;
  c.why = c.clipped ? fmt::format("spec tolerance (rtol {:.3g}, atol {:.3g}) clipped to 4x eager's error "
                                  "(or the {} default)", asked.rtol, asked.atol, dtype_name(t))
                    : "spec tolerance";
  return c;
}

}  // namespace kf
