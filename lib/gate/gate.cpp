#include "gate/gate.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "measure/compare.h"
#include "measure/ratio_test.h"
#include "measure/stats.h"
#include "report/text_escape.h"
#include "spec/baseline_registry.h"

namespace kf {

gate_check make_gate_check(std::string kind, std::string case_name, std::string against, check_outcome o,
                           std::string sentence, nlohmann::json numbers) {
  gate_check c;
  c.kind = std::move(kind);
  c.case_name = std::move(case_name);
  c.against = std::move(against);
  c.outcome = o;
  c.sentence = std::move(sentence);
  c.numbers = std::move(numbers);
  return c;
}

namespace {

std::string us(double v) { return format_us(v) + " us"; }
std::string pv(double p) { return p < 1e-4 ? fmt::format("{:.1e}", p) : fmt::format("{:.4f}", p); }

// The kernel's measured series for a case, or a check explaining why there is none.
const impl_result* kernel_of(const case_result& c, std::string kind, std::string against, gate_check* why) {
  const impl_result* k = c.find("kernel");
  if (k && k->status == impl_status::ok && !k->series(c.metric).empty()) return k;
  if (k && k->status == impl_status::failed)
    *why = make_gate_check(kind, c.name, against, check_outcome::failed,
                           fmt::format("the kernel failed while being timed: {}", k->why));
  else
    *why = make_gate_check(kind, c.name, against, check_outcome::skipped,
                           k && !k->why.empty() ? fmt::format("the kernel was not timed: {}", k->why)
                                                : "the kernel was not timed on this case");
  return nullptr;
}

void add_verify_checks(workload_result& w, const gate_options& o) {
  const auto& v = w.verify;
  if (v.verdict == "not_run") {
    if (w.error.empty())
      w.checks.push_back(make_gate_check(
          "verify", "", "", check_outcome::error,
          v.why.empty() ? "verification did not run" : fmt::format("verification did not run: {}", v.why)));
    return;
  }
  // Groups in first-seen order; "" holds checks that are not per case (the static scan).
  std::vector<std::string> order;
  for (auto& c : v.checks)
    if (std::find(order.begin(), order.end(), c.case_name) == order.end()) order.push_back(c.case_name);
  bool any_failed_check = false;
  for (auto& name : order) {
    int total = 0, failed = 0;
    std::vector<std::string> rules, details;
    nlohmann::json numbers = nlohmann::json::object();
    for (auto& c : v.checks) {
      if (c.case_name != name) continue;
      ++total;
      if (std::find(rules.begin(), rules.end(), c.rule) == rules.end()) rules.push_back(c.rule);
      if (c.passed) continue;
      ++failed;
      if (details.size() < 3)
        details.push_back(fmt::format("{}{}: {}", c.rule, c.seed ? fmt::format(" (seed {})", c.seed) : "", c.detail));
      if (numbers.empty() && c.numbers.is_object()) numbers = c.numbers;
    }
    numbers["checks"] = total;
    numbers["failed"] = failed;
    any_failed_check |= failed > 0;
    if (failed)
      w.checks.push_back(
          make_gate_check("verify", name, "", check_outcome::failed,
                          fmt::format("{} of {} checks failed: {}{}", failed, total, fmt::join(details, "; "),
                                      failed > static_cast<int>(details.size()) ? "; ..." : ""),
                          numbers));
    else
      w.checks.push_back(make_gate_check("verify", name, "", check_outcome::passed,
                                         fmt::format("{} checks passed ({})", total, fmt::join(rules, ", ")), numbers));
  }
  if (v.verdict == "failed" && !any_failed_check)
    w.checks.push_back(make_gate_check(
        "verify", "", "", check_outcome::failed,
        v.why.empty() ? "the kernel was rejected without a failing check (see the worker log)" : v.why));
  if (v.verdict == "passed" && v.checks.empty())
    w.checks.push_back(
        make_gate_check("verify", "", "", check_outcome::error, "the worker reported a pass without any checks"));

  // Timed cases need evidence of correctness, and a time below the floor is not physically possible.
  for (auto& c : w.cases) {
    auto it = std::find_if(w.checks.begin(), w.checks.end(),
                           [&](const gate_check& k) { return k.kind == "verify" && k.case_name == c.name; });
    if (it == w.checks.end()) {
      w.checks.push_back(make_gate_check("verify", c.name, "", check_outcome::error,
                                         "this case was timed but the verification reported nothing for it"));
      it = std::prev(w.checks.end());
    }
    const impl_result* k = c.find("kernel");
    // The physical floor where the worker measured one (the inputs from DRAM, outputs that may stay in L2), else
    // the bandwidth floor with slack (records before it).
    const bool physical = c.floor.physical_floor_us > 0;
    const double bound = physical ? c.floor.physical_floor_us : c.floor.bandwidth_floor_us * o.floor_slack;
    if (!k || k->status != impl_status::ok || bound <= 0) continue;
    double km = k->series(c.metric).stats.median_us;
    if (km > 0 && km < bound) {
      it->outcome = check_outcome::failed;
      it->sentence += fmt::format("{}the kernel's median {} is below the {} {} ({:.0f} bytes): faster than "
                                  "physically possible, so it skips work",
                                  it->sentence.empty() ? "" : "; ", us(km),
                                  physical ? "least time to read its inputs from DRAM" : "bandwidth floor", us(bound),
                                  c.floor.bytes);
      it->numbers["median_us"] = km;
      it->numbers[physical ? "physical_floor_us" : "bandwidth_floor_us"] = bound;
    }
  }
}

}  // namespace

namespace {

// The ratio a / b of two series timed interleaved, judged against `threshold` at the alpha of the look the
// measurement stopped at (measure/compare.h: the same rule the timing loop stopped on).
measure::ratio_judgement ratio_of(const std::vector<double>& a, const std::vector<double>& b, double threshold,
                                  const gate_options& o) {
  return measure::judge_ratio(a, b, threshold, {o.alpha, o.resolution, o.first_look});
}

std::string pct(double x) { return fmt::format("{:+.1f}%", x * 100); }

nlohmann::json ratio_numbers(const stats::ratio_estimate& r, stats::decision d) {
  return {{"ratio", r.ratio}, {"ratio_lo", r.lo},   {"ratio_hi", r.hi},
          {"pairs", r.n},     {"spread", r.spread}, {"decision", stats::decision_name(d)}};
}

}  // namespace

gate_check beats_check(const case_result& c, std::string_view baseline, bool required, const gate_options& o) {
  std::string b(baseline);
  gate_check why;
  const impl_result* k = kernel_of(c, "beats", b, &why);
  if (!k) return why;
  const impl_result* base = c.find(b);
  std::string need = required ? "" : " (not required by gate.must_beat)";
  if (!base)
    return make_gate_check("beats", c.name, b, check_outcome::skipped, fmt::format("{} was not measured{}", b, need));
  if (base->status == impl_status::skipped)
    return make_gate_check("beats", c.name, b, check_outcome::skipped,
                           fmt::format("{} baseline skipped: {}{}", b, base->why, need));
  if (base->status == impl_status::failed)
    return make_gate_check("beats", c.name, b, required ? check_outcome::error : check_outcome::skipped,
                           fmt::format("{} baseline failed: {}{}", b, base->why, need));
  const auto& ks = k->series(c.metric).samples_us;
  const auto& bs = base->series(c.metric).samples_us;
  if (bs.empty())
    return make_gate_check("beats", c.name, b, check_outcome::skipped,
                           fmt::format("{} has no {} samples", b, c.metric));
  double km = stats::median(ks), bm = stats::median(bs);
  const measure::ratio_judgement j = ratio_of(ks, bs, 1.0, o);
  const stats::ratio_estimate& r = j.ratio;
  const stats::decision d = j.decision;
  nlohmann::json numbers = {{"kernel_median_us", km}, {"baseline_median_us", bm}, {"speedup", 1 / r.ratio},
                            {"speedup_lo", 1 / r.hi},  {"speedup_hi", 1 / r.lo},  {"p_value", r.p_below},
                            {"n_kernel", ks.size()},   {"n_baseline", bs.size()}, {"metric", c.metric},
                            {"required", required}};
  numbers.update(ratio_numbers(r, d));
  std::string interval = fmt::format("{:.2f}x to {:.2f}x at {:.0f}% confidence, {} pairs", 1 / r.hi, 1 / r.lo,
                                     (1 - o.alpha) * 100, r.n);
  check_outcome fail = required ? check_outcome::failed : check_outcome::skipped;
  std::string tail = required ? "; the spec's gate.must_beat requires it" : need;
  if (static_cast<int>(r.n) < o.min_samples)
    return make_gate_check(
        "beats", c.name, b, check_outcome::inconclusive,
        fmt::format("inconclusive: kernel {} vs {} {}: too few samples to tell ({} pairs, need {}){}", us(km), b,
                    us(bm), r.n, o.min_samples, need),
        numbers);
  // Both at the floor (a memory-bound op eager already streams at the copy bandwidth): a tie is all there is, and
  // a difference inside the resolution is a coin flip between runs, not a reason to fail a merge.
  const double at_floor = c.floor.floor_us * (1 + o.floor_band);
  if (d != stats::decision::below && c.floor.floor_us > 0 && km <= at_floor && bm <= at_floor &&
      r.hi <= 1 + o.resolution) {
    numbers["floor_us"] = c.floor.floor_us;
    numbers["floor_band"] = o.floor_band;
    return make_gate_check(
        "beats", c.name, b, check_outcome::passed,
        fmt::format("kernel {} ties {} {} at the floor: {:+.1f}% ({}), at most the {:.0f}% resolution slower, both "
                    "within {:.0f}% of the {} floor; nothing is left to beat",
                    us(km), b, us(bm), (r.ratio - 1) * 100, interval, o.resolution * 100, o.floor_band * 100,
                    us(c.floor.floor_us)),
        numbers);
  }
  switch (d) {
    case stats::decision::below:
      return make_gate_check(
          "beats", c.name, b, check_outcome::passed,
          fmt::format("kernel {} is {:.2f}x faster than {} {} ({})", us(km), 1 / r.ratio, b, us(bm), interval),
          numbers);
    case stats::decision::above:
      return make_gate_check(
          "beats", c.name, b, fail,
          fmt::format("kernel {} is not faster than {} {}: {:.2f}x slower ({:.2f}x to {:.2f}x slower at {:.0f}% "
                      "confidence, {} pairs){}",
                      us(km), b, us(bm), r.ratio, r.lo, r.hi, (1 - o.alpha) * 100, r.n, tail),
          numbers);
    case stats::decision::within:
      return make_gate_check("beats", c.name, b, fail,
                             fmt::format("kernel {} is not faster than {} {}: the same speed within {:.1f}% ({}){}",
                                         us(km), b, us(bm), r.spread * 100, interval, tail),
                             numbers);
    case stats::decision::open: break;
  }
  return make_gate_check(
      "beats", c.name, b, check_outcome::inconclusive,
      fmt::format("inconclusive: kernel {} vs {} {} ({:.2f}x) could not be told apart within the time cap: "
                  "{} (noise +-{:.1f}%){}",
                  us(km), b, us(bm), 1 / r.ratio, interval, r.spread * 100, need),
      numbers);
}

namespace {

// The median's interval of a series: stored with it, or from its samples (a history note of an older kforge).
std::pair<double, double> median_interval(const sample_series& s) {
  if (s.stats.ci_lo_us > 0 && s.stats.ci_hi_us > 0) return {s.stats.ci_lo_us, s.stats.ci_hi_us};
  if (!s.samples_us.empty()) {
    stats::interval ci = stats::median_ci(s.samples_us, 0.01);
    return {ci.lo, ci.hi};
  }
  return {s.stats.median_us, s.stats.median_us};
}

double median_of(const sample_series& s) {
  if (s.stats.median_us > 0) return s.stats.median_us;
  return s.samples_us.empty() ? 0 : stats::median(s.samples_us);
}

// Against a stored note: the two runs were not interleaved, so run-to-run drift is not in the samples. Only a
// slowdown beyond both medians' intervals fails; a median over the line within them is inconclusive.
gate_check history_regression(const case_result& c, const sample_series& now, const sample_series& before,
                              std::string_view origin, double max_regression, const gate_options& o) {
  double km = median_of(now), bm = median_of(before);
  auto [klo, khi] = median_interval(now);
  auto [blo, bhi] = median_interval(before);
  double ratio = km / bm, lo = klo / bhi, hi = khi / blo;
  double line = 1 + max_regression;
  nlohmann::json numbers = {{"median_us", km},     {"before_median_us", bm}, {"change", ratio - 1},
                            {"ratio", ratio},      {"ratio_lo", lo},         {"ratio_hi", hi},
                            {"n", now.stats.count}, {"n_before", before.stats.count}, {"max_regression", max_regression}};
  std::string head = fmt::format("{} now vs {} in {} ({})", us(km), us(bm), origin, pct(ratio - 1));
  if (now.stats.count < o.min_samples || before.stats.count < o.min_samples)
    return make_gate_check("regression", c.name, "history", check_outcome::inconclusive,
                           fmt::format("inconclusive: {}, but only {} and {} samples (need {} each)", head,
                                       now.stats.count, before.stats.count, o.min_samples),
                           numbers);
  if (lo > line)
    return make_gate_check(
        "regression", c.name, "history", check_outcome::failed,
        fmt::format("kernel is {:.1f}% slower than in {} ({} vs {}; even the medians' intervals are {:.1f}% "
                    "apart), over the {:.1f}% allowed by gate.max_regression",
                    (ratio - 1) * 100, origin, us(km), us(bm), (lo - 1) * 100, max_regression * 100),
        numbers);
  if (ratio > line)
    return make_gate_check(
        "regression", c.name, "history", check_outcome::inconclusive,
        fmt::format("inconclusive: {}: over the {:.1f}% allowed, but within the medians' intervals ({:.2f}x to "
                    "{:.2f}x); runs on different days drift, so `--base` times the base kernel alongside",
                    head, max_regression * 100, lo, hi),
        numbers);
  return make_gate_check("regression", c.name, "history", check_outcome::passed,
                         fmt::format("{}: within the {:.1f}% allowed", head, max_regression * 100), numbers);
}

}  // namespace

gate_check regression_check(const case_result& c, const sample_series* before, std::string_view against_sv,
                            std::string_view origin, double max_regression, const gate_options& o) {
  gate_check why;
  std::string against(against_sv);
  const impl_result* k = kernel_of(c, "regression", against, &why);
  if (!k) return why;
  if (!before || (before->empty() && before->stats.count == 0))
    return make_gate_check("regression", c.name, against, check_outcome::skipped,
                           fmt::format("no {} samples of this case in {}", c.metric, origin));
  if (against != "base") return history_regression(c, k->series(c.metric), *before, origin, max_regression, o);

  const auto& ks = k->series(c.metric).samples_us;
  const auto& bs = before->samples_us;
  double km = stats::median(ks), bm = stats::median(bs);
  double line = 1 + max_regression;
  const measure::ratio_judgement j = ratio_of(ks, bs, line, o);
  const stats::ratio_estimate& r = j.ratio;
  const stats::decision d = j.decision;
  nlohmann::json numbers = {{"median_us", km},     {"before_median_us", bm}, {"change", r.ratio - 1},
                            {"p_value", r.p_above}, {"n", ks.size()},        {"n_before", bs.size()},
                            {"max_regression", max_regression},
                            {"alpha", stats::look_alpha(o.alpha, r.n, static_cast<std::size_t>(o.first_look))}};
  numbers.update(ratio_numbers(r, d));
  std::string head = fmt::format("{} vs {} in {} ({}; {:.3f}x to {:.3f}x at {:.0f}% confidence, {} pairs)", us(km),
                                 us(bm), origin, pct(r.ratio - 1), r.lo, r.hi, (1 - o.alpha) * 100, r.n);
  if (static_cast<int>(r.n) < o.min_samples)
    return make_gate_check("regression", c.name, against, check_outcome::inconclusive,
                           fmt::format("inconclusive: {}: too few pairs (need {})", head, o.min_samples), numbers);
  switch (d) {
    case stats::decision::above:
      return make_gate_check(
          "regression", c.name, against, check_outcome::failed,
          fmt::format("kernel is {:.1f}% slower than {} ({} vs {}, p = {}), over the {:.1f}% allowed by "
                      "gate.max_regression",
                      (r.ratio - 1) * 100, origin, us(km), us(bm), pv(r.p_above), max_regression * 100),
          numbers);
    case stats::decision::below:
    case stats::decision::within:
      return make_gate_check(
          "regression", c.name, against, check_outcome::passed,
          fmt::format("{}: {}", head,
                      d == stats::decision::within
                          ? fmt::format("within noise of the {:.1f}% allowed", max_regression * 100)
                      : r.ratio < 1 ? std::string("no slower")
                                    : fmt::format("within the {:.1f}% allowed", max_regression * 100)),
          numbers);
    case stats::decision::open: break;
  }
  return make_gate_check(
      "regression", c.name, against, check_outcome::inconclusive,
      fmt::format("inconclusive: {}: could not tell whether it is over the {:.1f}% allowed within the time cap "
                  "(noise +-{:.1f}%)",
                  head, max_regression * 100, r.spread * 100),
      numbers);
}

void apply_false_discovery_control(run_result& r, const gate_options& o) {
  std::vector<gate_check*> checks;
  std::vector<double> p;
  for (auto& w : r.workloads)
    for (auto& k : w.checks)
      if (k.kind == "regression" && k.against == "base" && k.numbers.contains("p_value") &&
          k.outcome != check_outcome::skipped && k.outcome != check_outcome::error) {
        checks.push_back(&k);
        p.push_back(k.numbers["p_value"].get<double>());
      }
  if (checks.empty()) return;
  std::vector<double> q = stats::benjamini_hochberg(p);
  for (std::size_t i = 0; i < checks.size(); ++i) {
    gate_check& k = *checks[i];
    k.numbers["q_value"] = q[i];
    k.numbers["regression_checks"] = checks.size();
    double alpha = k.numbers.value("alpha", o.alpha);
    if (k.outcome != check_outcome::failed || q[i] < alpha) continue;
    k.outcome = check_outcome::inconclusive;
    k.sentence = fmt::format("inconclusive: {}; but not significant at the run's false discovery rate over {} "
                             "regression checks (q = {}, need < {})",
                             k.sentence, checks.size(), pv(q[i]), pv(alpha));
  }
}

nlohmann::json gate_questions(const std::vector<std::string>& baselines, bool with_base, double max_regression) {
  nlohmann::json q = nlohmann::json::array();
  for (const auto& b : baselines) q.push_back({{"a", "kernel"}, {"b", b}, {"threshold", 1.0}});
  if (with_base) q.push_back({{"a", "kernel"}, {"b", "base"}, {"threshold", 1 + max_regression}});
  return q;
}

void apply_gate(workload_result& w, const gate_spec& policy, const history_context& h, const gate_options& o) {
  w.checks.clear();
  if (w.kernel_path.empty()) {
    std::string note = w.kernel_note.empty() ? "no kernel stored for this GPU" : w.kernel_note;
    w.checks.push_back(
        make_gate_check("kernel", "", "", policy.require_kernel ? check_outcome::failed : check_outcome::skipped,
                        fmt::format("{}: nothing to verify or time (`kforge retune` searches for one){}", note,
                                    policy.require_kernel ? "; the spec's gate.require_kernel requires one" : "")));
    return;
  }
  w.checks.push_back(make_gate_check("kernel", "", "", check_outcome::passed,
                                     w.kernel_note.empty()
                                         ? fmt::format("using {}", w.kernel_path)
                                         : fmt::format("using {} ({})", w.kernel_path, w.kernel_note)));
  add_verify_checks(w, o);

  for (auto& c : w.cases) {
    std::vector<std::string> baselines;  // the registered ones in their order, then any other measured or required
    for (const auto& b : registered_baselines()) baselines.push_back(b.name);
    for (auto& i : c.impls)
      if (i.impl != "kernel" && i.impl != "base" && std::find(baselines.begin(), baselines.end(), i.impl) == baselines.end())
        baselines.push_back(i.impl);
    for (auto& b : policy.must_beat)
      if (std::find(baselines.begin(), baselines.end(), b) == baselines.end()) baselines.push_back(b);
    for (auto& b : baselines) {
      bool required = std::find(policy.must_beat.begin(), policy.must_beat.end(), b) != policy.must_beat.end();
      if (!required && !c.find(b)) continue;  // neither measured nor required: nothing to say
      w.checks.push_back(beats_check(c, b, required, o));
      w.checks.back().advisory = !required;
    }

    const impl_result* base = c.find("base");
    if (base && base->status == impl_status::ok) {
      w.checks.push_back(regression_check(c, &base->series(c.metric), "base", "the merge-base's kernel measured in this run",
                                          policy.max_regression, o));
    } else if (h.previous) {
      const case_result* pc = h.previous->find_case(c.name);
      const impl_result* pk = pc ? pc->find("kernel") : nullptr;
      const sample_series* before = pk && pk->status == impl_status::ok ? &pk->series(c.metric) : nullptr;
      w.checks.push_back(regression_check(c, before, "history", h.origin.empty() ? "history" : h.origin, policy.max_regression, o));
    } else {
      gate_check why;
      if (!kernel_of(c, "regression", "history", &why)) {
        w.checks.push_back(why);
        continue;
      }
      std::string s = h.missing_why.empty() ? "no history to compare with" : h.missing_why;
      w.checks.push_back(make_gate_check("regression", c.name, "history",
                                         o.require_history ? check_outcome::failed : check_outcome::skipped,
                                         o.require_history ? s + " (--require-history)" : s));
    }
  }
}

}  // namespace kf
