// The rules every comparison of implementations timed together follows, written once (docs/statistics.md):
// which series is compared (hot or cold), and what a ratio of two series says about a line. The timing loop's
// stopping rule, the gate's checks, the reports and the search all ask these.
#pragma once
#include <span>
#include <vector>

#include "measure/ratio_test.h"

namespace kf::measure {

// One implementation of a comparison: whether it was timed (did not fail or get skipped) and has hot samples.
struct timed_side {
  bool timed = false;
  bool has_hot = false;
};
// Compare like with like: hot samples only when every implementation that was timed has them (a long one is
// timed cold only), else cold. False when nothing was timed.
bool compares_hot(std::span<const timed_side> sides);

// The sequential rule's settings (ratio_test.h): the error rate per question over all its looks, the relative
// half-width that decides a question straddling its line, and the first look (pairs).
struct sequential_options {
  double alpha = 0.01;
  double resolution = 0.01;
  int first_look = 16;
};

// A / B against `threshold`, at the alpha of the look that these many pairs fall in.
struct ratio_judgement {
  stats::ratio_estimate ratio;
  stats::decision decision = stats::decision::open;
};
ratio_judgement judge_ratio(std::span<const double> a, std::span<const double> b, double threshold,
                            const sequential_options& o);

// "A beats B" (the gate's beats check, the search's verdict on its winner): A / B is below 1 with confidence.
inline bool beats(const ratio_judgement& j) { return j.decision == stats::decision::below; }

}  // namespace kf::measure
