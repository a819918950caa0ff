#include "measure/compare.h"

#include <algorithm>

namespace kf::measure {

bool compares_hot(std::span<const timed_side> sides) {
  bool any = false;
  for (const auto& s : sides) {
    if (!s.timed) continue;
    if (!s.has_hot) return false;
    any = true;
  }
  return any;
}

ratio_judgement judge_ratio(std::span<const double> a, std::span<const double> b, double threshold,
                            const sequential_options& o) {
  std::size_t n = std::min(a.size(), b.size());
  ratio_judgement j;
  j.ratio = stats::paired_ratio(a, b, threshold,
                                stats::look_alpha(o.alpha, n, static_cast<std::size_t>(o.first_look)));
  j.decision = stats::decide(j.ratio, threshold, o.resolution);
  return j;
}

}  // namespace kf::measure
