#include "gate/gate.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "measure/stats.h"
#include "report/text_escape.h"

namespace kf {
namespace {

gate_check make(std::string kind, std::string case_name, std::string against, check_outcome o, std::string sentence,
                nlohmann::json numbers = nlohmann::json::object()) {
  gate_check c;
  c.kind = std::move(kind);
  c.case_name = std::move(case_name);
  c.against = std::move(against);
  c.outcome = o;
  c.sentence = std::move(sentence);
  c.numbers = std::move(numbers);
  return c;
}

std::string us(double v) { return format_us(v) + " us"; }
std::string pv(double p) { return p < 1e-4 ? fmt::format("{:.1e}", p) : fmt::format("{:.4f}", p); }

// The kernel's measured series for a case, or a check explaining why there is none.
const impl_result* kernel_of(const case_result& c, std::string kind, std::string against, gate_check* why) {
  const impl_result* k = c.find("kernel");
  if (k && k->status == impl_status::ok && !k->series(c.metric).empty()) return k;
  if (k && k->status == impl_status::failed)
    *why = make(kind, c.name, against, check_outcome::failed, fmt::format("the kernel failed while being timed: {}", k->why));
  else
    *why = make(kind, c.name, against, check_outcome::skipped,
                k && !k->why.empty() ? fmt::format("the kernel was not timed: {}", k->why) : "the kernel was not timed on this case");
  return nullptr;
}

void add_verify_checks(workload_result& w, const gate_options& o) {
  const auto& v = w.verify;
  if (v.verdict == "not_run") {
    if (w.error.empty())
      w.checks.push_back(make("verify", "", "", check_outcome::error,
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
      w.checks.push_back(make("verify", name, "", check_outcome::failed,
                              fmt::format("{} of {} checks failed: {}{}", failed, total, fmt::join(details, "; "),
                                          failed > static_cast<int>(details.size()) ? "; ..." : ""),
                              numbers));
    else
      w.checks.push_back(make("verify", name, "", check_outcome::passed,
                              fmt::format("{} checks passed ({})", total, fmt::join(rules, ", ")), numbers));
  }
  if (v.verdict == "failed" && !any_failed_check)
    w.checks.push_back(make("verify", "", "", check_outcome::failed,
                            v.why.empty() ? "the kernel was rejected without a failing check (see the worker log)" : v.why));
  if (v.verdict == "passed" && v.checks.empty())
    w.checks.push_back(make("verify", "", "", check_outcome::error, "the worker reported a pass without any checks"));

  // Timed cases need evidence of correctness, and a time below the floor is not physically possible.
  for (auto& c : w.cases) {
    auto it = std::find_if(w.checks.begin(), w.checks.end(),
                           [&](const gate_check& k) { return k.kind == "verify" && k.case_name == c.name; });
    if (it == w.checks.end()) {
      w.checks.push_back(make("verify", c.name, "", check_outcome::error,
                              "this case was timed but the verification reported nothing for it"));
      it = std::prev(w.checks.end());
    }
    const impl_result* k = c.find("kernel");
    if (!k || k->status != impl_status::ok || c.floor.bandwidth_floor_us <= 0) continue;
    double km = k->series(c.metric).stats.median_us;
    if (km > 0 && km < c.floor.bandwidth_floor_us * o.floor_slack) {
      it->outcome = check_outcome::failed;
      it->sentence += fmt::format("{}the kernel's median {} is below the bandwidth floor {} ({:.0f} bytes): faster than "
                                  "physically possible, so it skips work",
                                  it->sentence.empty() ? "" : "; ", us(km), us(c.floor.bandwidth_floor_us), c.floor.bytes);
      it->numbers["median_us"] = km;
      it->numbers["bandwidth_floor_us"] = c.floor.bandwidth_floor_us;
    }
  }
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
    return make("beats", c.name, b, check_outcome::skipped, fmt::format("{} was not measured{}", b, need));
  if (base->status == impl_status::skipped)
    return make("beats", c.name, b, check_outcome::skipped, fmt::format("{} baseline skipped: {}{}", b, base->why, need));
  if (base->status == impl_status::failed)
    return make("beats", c.name, b, required ? check_outcome::error : check_outcome::skipped,
                fmt::format("{} baseline failed: {}{}", b, base->why, need));
  const auto& ks = k->series(c.metric).samples_us;
  const auto& bs = base->series(c.metric).samples_us;
  if (bs.empty()) return make("beats", c.name, b, check_outcome::skipped, fmt::format("{} has no {} samples", b, c.metric));
  double km = stats::median(ks), bm = stats::median(bs);
  double p = stats::mann_whitney_u(ks, bs).p_value;
  nlohmann::json numbers = {{"kernel_median_us", km}, {"baseline_median_us", bm}, {"speedup", bm / km},
                            {"p_value", p},           {"n_kernel", ks.size()},  {"n_baseline", bs.size()},
                            {"metric", c.metric},     {"required", required}};
  bool enough = static_cast<int>(ks.size()) >= o.min_samples && static_cast<int>(bs.size()) >= o.min_samples;
  if (km < bm && enough && p < o.alpha)
    return make("beats", c.name, b, check_outcome::passed,
                fmt::format("kernel {} is {:.2f}x faster than {} {} (p = {}, {} vs {} samples)", us(km), bm / km, b,
                            us(bm), pv(p), ks.size(), bs.size()),
                numbers);
  check_outcome fail = required ? check_outcome::failed : check_outcome::skipped;
  std::string tail = required ? "; the spec's gate.must_beat requires it" : need;
  if (km >= bm)
    return make("beats", c.name, b, fail,
                fmt::format("kernel {} is not faster than {} {} ({:.2f}x slower){}", us(km), b, us(bm), km / bm, tail), numbers);
  if (!enough)
    return make("beats", c.name, b, fail,
                fmt::format("kernel {} vs {} {}: too few samples to tell ({} and {}, need {} each){}", us(km), b, us(bm),
                            ks.size(), bs.size(), o.min_samples, tail),
                numbers);
  return make("beats", c.name, b, fail,
              fmt::format("kernel {} vs {} {}: {:.1f}% faster but not significantly (p = {}, need < {}){}", us(km), b,
                          us(bm), (bm / km - 1) * 100, pv(p), o.alpha, tail),
              numbers);
}

gate_check regression_check(const case_result& c, const sample_series* before, std::string_view against_sv,
                            std::string_view origin, double max_regression, const gate_options& o) {
  gate_check why;
  std::string against(against_sv);
  const impl_result* k = kernel_of(c, "regression", against, &why);
  if (!k) return why;
  if (!before || before->empty())
    return make("regression", c.name, against, check_outcome::skipped,
                fmt::format("no {} samples of this case in {}", c.metric, origin));
  const auto& ks = k->series(c.metric).samples_us;
  const auto& bs = before->samples_us;
  double km = stats::median(ks), bm = stats::median(bs);
  double change = km / bm - 1;
  double p = stats::mann_whitney_u(ks, bs).p_value;
  nlohmann::json numbers = {{"median_us", km}, {"before_median_us", bm}, {"change", change},
                            {"p_value", p},    {"n", ks.size()},        {"n_before", bs.size()},
                            {"max_regression", max_regression}};
  auto pct = [](double x) { return fmt::format("{:+.1f}%", x * 100); };
  if (static_cast<int>(ks.size()) < o.min_samples || static_cast<int>(bs.size()) < o.min_samples)
    return make("regression", c.name, against, check_outcome::skipped,
                fmt::format("inconclusive: {} now vs {} in {} ({}), but only {} and {} samples (need {} each)", us(km),
                            us(bm), origin, pct(change), ks.size(), bs.size(), o.min_samples),
                numbers);
  bool significant = p < o.alpha;
  if (significant && change > max_regression)
    return make("regression", c.name, against, check_outcome::failed,
                fmt::format("kernel is {:.1f}% slower than in {} ({} vs {}, p = {}), over the {:.1f}% allowed by "
                            "gate.max_regression",
                            change * 100, origin, us(km), us(bm), pv(p), max_regression * 100),
                numbers);
  std::string verdict = !significant ? fmt::format("no significant change (p = {})", pv(p))
                        : change > 0 ? fmt::format("slower but within the {:.1f}% allowed (p = {})", max_regression * 100, pv(p))
                                     : fmt::format("faster (p = {})", pv(p));
  return make("regression", c.name, against, check_outcome::passed,
              fmt::format("{} vs {} in {} ({}): {}", us(km), us(bm), origin, pct(change), verdict), numbers);
}

void apply_gate(workload_result& w, const gate_spec& policy, const history_context& h, const gate_options& o) {
  w.checks.clear();
  if (w.kernel_path.empty()) {
    std::string note = w.kernel_note.empty() ? "no kernel stored for this GPU" : w.kernel_note;
    w.checks.push_back(make("kernel", "", "", policy.require_kernel ? check_outcome::failed : check_outcome::skipped,
                            fmt::format("{}: nothing to verify or time (`kforge retune` searches for one){}", note,
                                        policy.require_kernel ? "; the spec's gate.require_kernel requires one" : "")));
    return;
  }
  w.checks.push_back(make("kernel", "", "", check_outcome::passed,
                          w.kernel_note.empty() ? fmt::format("using {}", w.kernel_path)
                                                : fmt::format("using {} ({})", w.kernel_path, w.kernel_note)));
  add_verify_checks(w, o);

  for (auto& c : w.cases) {
    std::vector<std::string> baselines;
    for (const char* b : {"eager", "compile", "vendor"}) baselines.emplace_back(b);
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
      w.checks.push_back(make("regression", c.name, "history", o.require_history ? check_outcome::failed : check_outcome::skipped,
                              o.require_history ? s + " (--require-history)" : s));
    }
  }
}

}  // namespace kf
