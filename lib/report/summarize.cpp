#include "report/summarize.h"

#include "measure/compare.h"
#include "measure/ratio_test.h"
#include "measure/stats.h"

namespace kf {

void summarize(sample_series& s) {
  if (s.samples_us.empty() && s.stats.count > 0) return;  // loaded from a summary: the stats are all there is
  auto sum = stats::summarize(s.samples_us);
  s.stats.count = static_cast<int>(sum.n);
  s.stats.median_us = sum.median;
  s.stats.iqr_us = sum.iqr();
  s.stats.min_us = sum.min;
  s.stats.noise = sum.noise;
  s.stats.q1_us = sum.q1;
  s.stats.q3_us = sum.q3;
  if (s.samples_us.empty()) {
    s.stats.ci_lo_us = s.stats.ci_hi_us = 0;
    return;
  }
  stats::interval ci = stats::median_ci(s.samples_us, 0.01);
  s.stats.ci_lo_us = ci.lo;
  s.stats.ci_hi_us = ci.hi;
}

void summarize_case(case_result& c) {
  std::vector<measure::timed_side> sides;
  for (auto& i : c.impls) {
    summarize(i.cold);
    summarize(i.hot);
    sides.push_back({i.status == impl_status::ok, i.hot.measured()});
  }
  c.metric = measure::compares_hot(sides) ? "hot" : "cold";  // like with like (measure/compare.h)
  c.speedups.clear();
  c.floor.fraction = 0;
  const impl_result* k = c.find("kernel");
  if (!k || k->status != impl_status::ok) return;
  double km = k->series(c.metric).stats.median_us;
  if (km <= 0) return;
  for (auto& i : c.impls) {
    if (i.impl == "kernel" || i.status != impl_status::ok) continue;
    double bm = i.series(c.metric).stats.median_us;
    if (bm > 0) c.speedups[i.impl] = bm / km;
  }
  if (c.floor.floor_us > 0) c.floor.fraction = c.floor.floor_us / km;
}

}  // namespace kf
