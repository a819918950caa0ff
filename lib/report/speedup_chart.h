// The HTML report's speedup chart: per gated case, the kernel's speedup against each baseline (bars on a log
// scale around 1x, left of the line: slower) and the fraction of the floor it reaches. Inline SVG built from
// the summaries, no script: a reviewer reads the run at a glance, with or without JavaScript.
#pragma once
#include <string>

#include "report/run_result.h"

namespace kf {

// An <svg> element (empty string when no case has a speedup or a floor fraction).
std::string speedup_chart_svg(const run_result& r);

}  // namespace kf
