// The e2e gate: see e2e_gate.h.
#include "e2e/e2e_gate.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gate/gate.h"
#include "report/summarize.h"
#include "report/text_escape.h"

namespace kf::e2e {
namespace {

impl_result impl_of(const variant_result& v, const std::string& as) {
  impl_result i;
  i.impl = as;
  i.status = v.status;
  i.why = v.why;
  i.cold = v.cold;
  i.hot = v.hot;
  i.description = v.name == as ? v.name : fmt::format("the {} variant", v.name);
  return i;
}

bool required(const e2e_spec& s, const std::string& b) {
  return std::find(s.must_beat.begin(), s.must_beat.end(), b) != s.must_beat.end();
}

}  // namespace

workload_result to_workload_result(const e2e_result& r, const e2e_spec& spec, const std::string& workloads) {
  workload_result w;
  w.name = "e2e:" + spec.name;
  w.spec_path = spec.path;
  w.kernel_path = workloads;
  std::vector<std::string> patched;
  for (const auto& p : r.patched)
    patched.push_back(fmt::format("{} ({})", p.value("module", ""),
                                  fmt::join(p.value("workloads", std::vector<std::string>{}), ", ")));
  w.kernel_note = patched.empty() ? "nothing patched (no module, no graph pattern)"
                                  : fmt::format("{} patched: {}", patched.size(), fmt::join(patched, "; "));
  w.verify.verdict = "passed";
  for (const auto& v : r.variants) {
    if (v.name == "eager") continue;
    verify_check c;
    c.rule = "matches_eager";
    c.case_name = v.name;
    c.passed = v.status == impl_status::ok;
    c.detail = c.passed ? (v.max_error_ratio ? fmt::format("max error {:.3g} of the tolerance", *v.max_error_ratio)
                                             : "matches")
                        : v.why;
    if (v.max_error_ratio) c.numbers["max_error_ratio"] = *v.max_error_ratio;
    if (!c.passed) w.verify.verdict = "failed";
    w.verify.checks.push_back(c);
  }
  for (const auto& [baseline, variant] : k_beats_variant) {
    const variant_result* b = r.find(baseline);
    const variant_result* k = r.find(variant);
    if (!b || !k) continue;
    case_result c;
    c.name = baseline;
    c.impls.push_back(impl_of(*k, "kernel"));
    c.impls.push_back(impl_of(*b, baseline));
    summarize_case(c);
    if (baseline == "eager" && r.shares.has_shares()) {
      const share_prediction& p = r.shares;
      c.impls[0].details["amdahl"] = {{"source", "capture shares"},
                                      {"share", p.share},
                                      {"predicted", p.predicted},
                                      {"measured", p.measured},
                                      {"fraction", p.fraction_known() ? nlohmann::json(p.fraction) : nlohmann::json()}};
    } else if (baseline == "eager" && r.profile.profiled) {
      const amdahl& a = r.profile;
      c.impls[0].details["amdahl"] = {{"source", "in-model profile"},
                                      {"share", a.share},
                                      {"pattern_speedup", a.pattern_speedup},
                                      {"predicted", a.predicted},
                                      {"measured", a.measured},
                                      {"fraction", a.fraction_known() ? nlohmann::json(a.fraction) : nlohmann::json()}};
    }
    w.cases.push_back(std::move(c));
  }
  // k_beats_variant is a std::map: compile sorts before eager; eager reads first.
  std::sort(w.cases.begin(), w.cases.end(),
            [](const case_result& a, const case_result& b) { return a.name == "eager" && b.name != "eager"; });
  return w;
}

void apply_e2e_gate(workload_result& w, const e2e_result& r, const e2e_spec& spec, const history_context& h,
                    const gate_options& o) {
  w.checks.clear();
  w.checks.push_back(make_gate_check("kernel", "", "",
                                     r.patched.empty() ? check_outcome::failed : check_outcome::passed,
                                     r.patched.empty() ? "kforge.patch found no module of the model whose "
                                                         "forward is a loaded workload's graph, and the graph "
                                                         "rewrites replaced no pattern: the operators are not in "
                                                         "the model"
                                                       : w.kernel_note));
  for (const auto& c : w.verify.checks)
    w.checks.push_back(
        make_gate_check("verify", c.case_name, "", c.passed ? check_outcome::passed : check_outcome::failed,
                        c.passed ? fmt::format("outputs match eager: {}", c.detail) : c.detail, c.numbers));
  for (const auto& [baseline, variant] : k_beats_variant) {
    const case_result* c = w.find_case(baseline);
    if (!c) {
      if (required(spec, baseline))
        w.checks.push_back(
            make_gate_check("beats", baseline, baseline, check_outcome::failed,
                            fmt::format("e2e.must_beat has {}, but the {} variant did not run", baseline, variant)));
      continue;
    }
    w.checks.push_back(beats_check(*c, baseline, required(spec, baseline), o));
    w.checks.back().advisory = !required(spec, baseline);
    if (w.checks.back().outcome == check_outcome::passed || w.checks.back().outcome == check_outcome::failed)
      w.checks.back().sentence = fmt::format("{} (the {} variant as `kernel`)", w.checks.back().sentence, variant);

    // The history: this entry of the note on the merge-base or the parent commit.
    const case_result* pc = h.previous ? h.previous->find_case(baseline) : nullptr;
    const impl_result* pk = pc ? pc->find("kernel") : nullptr;
    if (h.previous) {
      const sample_series* before = pk && pk->status == impl_status::ok ? &pk->series(c->metric) : nullptr;
      w.checks.push_back(
          regression_check(*c, before, "history", h.origin.empty() ? "history" : h.origin, spec.max_regression, o));
    } else {
      std::string s = h.missing_why.empty() ? "no history to compare with" : h.missing_why;
      w.checks.push_back(make_gate_check("regression", baseline, "history",
                                         o.require_history ? check_outcome::failed : check_outcome::skipped,
                                         o.require_history ? s + " (--require-history)" : s));
    }
  }
  if (spec.min_speedup > 1) {
    double s = r.speedup("kforge", "eager");
    bool ok = s >= spec.min_speedup;
    w.checks.push_back(make_gate_check("speedup", "eager", "eager",
                                       s <= 0 ? check_outcome::failed
                                       : ok   ? check_outcome::passed
                                              : check_outcome::failed,
                                       s <= 0 ? "the kforge variant was not timed against eager"
                                              : fmt::format("kforge is {:.3f}x eager's speed ({} "
                                                            "medians); e2e.min_speedup is {:.3f}x",
                                                            s, r.metric(), spec.min_speedup),
                                       {{"speedup", s}, {"min_speedup", spec.min_speedup}}));
  }
  w.checks.push_back(amdahl_check(r, spec));
}

gate_check amdahl_check(const e2e_result& r, const e2e_spec& spec) {
  const bool gated = spec.min_predicted_fraction.has_value();
  const double need = spec.min_predicted_fraction.value_or(0);
  const std::string held = gated ? fmt::format("; e2e.min_predicted_fraction is {:.0f}%", need * 100) : "";
  gate_check c;
  if (const share_prediction& p = r.shares; p.has_shares()) {
    // The capture's shares and the stored winners' recorded speedups: issue #23's prediction.
    nlohmann::json numbers = {{"source", "capture shares"},
                              {"share", p.share},
                              {"predicted", p.predicted},
                              {"measured", p.measured}};
    if (p.fraction_known()) numbers["fraction"] = p.fraction;
    if (gated) numbers["min_predicted_fraction"] = need;
    if (p.measured <= 0)
      c = make_gate_check("amdahl", "eager", "prediction", gated ? check_outcome::failed : check_outcome::skipped,
                          "the kforge variant was not timed against eager, so there is no measured gain to hold to "
                          "the capture's prediction",
                          numbers);
    else if (!p.fraction_known())
      c = make_gate_check("amdahl", "eager", "prediction", check_outcome::skipped,
                          fmt::format("the capture's shares predict no gain ({:.3f}x: the replaced cases take {:.1f}% "
                                      "of the captured time), so there is no fraction of it to reach",
                                      p.predicted, p.share * 100),
                          numbers);
    else
      c = make_gate_check("amdahl", "eager", "prediction",
                          !gated || p.fraction >= need ? check_outcome::passed : check_outcome::failed,
                          fmt::format("measured {:.3f}x over eager ({} medians), {:.0f}% of the {:.3f}x the capture's "
                                      "shares predict (the replaced cases take {:.1f}% of the captured time, at their "
                                      "stored winners' speedups over eager){}",
                                      p.measured, p.metric, p.fraction * 100, p.predicted, p.share * 100, held),
                          numbers);
    c.advisory = !gated;
    return c;
  }
  // No replaced workload's spec has kforge capture's shares: the in-model profile's prediction.
  const amdahl& a = r.profile;
  const std::string from = "from the in-model profile: no replaced workload's spec has capture shares";
  nlohmann::json numbers = {{"source", "in-model profile"},
                            {"share", a.share},
                            {"pattern_speedup", a.pattern_speedup},
                            {"predicted", a.predicted},
                            {"measured", a.measured}};
  if (a.fraction_known()) numbers["fraction"] = a.fraction;
  if (gated) numbers["min_predicted_fraction"] = need;
  if (!a.profiled)
    c = make_gate_check("amdahl", "eager", "prediction", gated ? check_outcome::failed : check_outcome::skipped,
                        fmt::format("{} ({})", a.why, from), numbers);
  else if (!a.fraction_known())
    c = make_gate_check("amdahl", "eager", "prediction", check_outcome::skipped,
                        fmt::format("the profile predicts no gain ({:.3f}x: the patched "
                                    "patterns take {:.1f}% of the forward at "
                                    "{:.2f}x), so there is no fraction of it to reach ({})",
                                    a.predicted, a.share * 100, a.pattern_speedup, from),
                        numbers);
  else
    c = make_gate_check("amdahl", "eager", "prediction",
                        !gated || a.fraction >= need ? check_outcome::passed : check_outcome::failed,
                        fmt::format("measured {:.3f}x over eager, {:.0f}% of the {:.3f}x the "
                                    "profile predicts (the patched patterns "
                                    "take {:.1f}% of the forward, {:.2f}x faster; {}){}",
                                    a.measured, a.fraction * 100, a.predicted, a.share * 100, a.pattern_speedup, from,
                                    held),
                        numbers);
  c.advisory = !gated;
  return c;
}

workload_result failed_entry(const e2e_spec& spec, const std::string& why) {
  workload_result w;
  w.name = "e2e:" + spec.name;
  w.spec_path = spec.path;
  w.error = why;
  return w;
}

}  // namespace kf::e2e
