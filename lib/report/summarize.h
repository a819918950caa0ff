// Derived numbers of a measured case: statistics of every sample series, which series the comparisons use,
// speedups against the baselines and the fraction of the floor reached. The runner calls this once the
// worker's samples are in; reporters and the gate only read the result.
#pragma once
#include "report/run_result.h"

namespace kf {

// Fills `s.stats` from its samples; a series loaded from a summary (no samples, count > 0) keeps its stats.
void summarize(sample_series& s);
// Summarizes every impl's series; picks `metric` ("hot" when the kernel and every measured baseline have hot
// samples, else "cold"); fills `speedups` (baseline median / kernel median) and `floor.fraction`.
void summarize_case(case_result& c);

}  // namespace kf
