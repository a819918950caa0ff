// Summarizing e2e.py's samples and rendering them: see e2e_result.h.
#include "e2e/e2e_result.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "measure/stats.h"
#include "report/summarize.h"
#include "report/text_escape.h"
#include "util/error.h"

namespace kf::e2e {
namespace {

using json = nlohmann::json;

[[noreturn]] void bad(const std::string& source, const std::string& what) {
  throw user_error(fmt::format("{}: not kforge e2e samples: {}", source, what));
}

std::vector<double> numbers(const json& j, const std::string& source, const std::string& field) {
  if (j.is_null()) return {};
  if (!j.is_array()) bad(source, field + " must be a list of numbers");
  std::vector<double> out;
  for (const auto& v : j) {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
      bad(source, field + " holds a value that is not a time");
    out.push_back(v.get<double>());
  }
  return out;
}

sample_series series(std::vector<double> samples) {
  sample_series s;
  s.samples_us = std::move(samples);
  summarize(s);
  return s;
}

void fill_prediction(e2e_result& r, const json& profile, const std::string& source) {
  amdahl& a = r.profile;
  if (!profile.is_object()) {
    a.why = r.patched.empty() ? "nothing patched (no module, no graph pattern): nothing to predict"
                              : "no profile (the kforge variant did not run)";
    return;
  }
  a.profiled = true;
  a.passes = profile.value("passes", 0);
  a.forward_us = stats::median(numbers(profile.value("total_us", json()), source, "profile.total_us"));
  double eager = 0, kforge = 0;
  for (const auto& p : profile.value("patterns", json::array())) {
    pattern_time t;
    t.module = p.value("module", "");
    t.workloads = p.value("workloads", std::vector<std::string>{});
    auto e = numbers(p.value("eager_us", json()), source, "profile.patterns.eager_us");
    auto k = numbers(p.value("kforge_us", json()), source, "profile.patterns.kforge_us");
    t.eager_us = e.empty() ? 0 : stats::median(e);
    t.kforge_us = k.empty() ? 0 : stats::median(k);
    t.share = a.forward_us > 0 ? t.eager_us / a.forward_us : 0;
    t.speedup = t.kforge_us > 0 ? t.eager_us / t.kforge_us : 0;
    eager += t.eager_us;
    kforge += t.kforge_us;
    a.patterns.push_back(t);
  }
  a.share = a.forward_us > 0 ? std::min(1.0, eager / a.forward_us) : 0;
  a.pattern_speedup = kforge > 0 ? eager / kforge : 0;
  if (a.pattern_speedup > 0) a.predicted = 1 / (1 - a.share + a.share / a.pattern_speedup);
  // The profile times single forwards, so the measurement it predicts is the cold one.
  const variant_result* ev = r.find("eager");
  const variant_result* kv = r.find("kforge");
  if (ev && kv && kv->status == impl_status::ok && kv->cold.stats.median_us > 0)
    a.measured = ev->cold.stats.median_us / kv->cold.stats.median_us;
  if (a.fraction_known()) a.fraction = (a.measured - 1) / (a.predicted - 1);
}

std::string us(double v) { return v > 0 ? format_us(v) + " us" : "-"; }

std::string speed(double s) { return s > 0 ? fmt::format("{:.2f}x", s) : "-"; }

std::string median_cell(const sample_series& s) {
  if (!s.measured()) return "-";
  return fmt::format("{} [{}, {}]", us(s.stats.median_us), format_us(s.stats.ci_lo_us), format_us(s.stats.ci_hi_us));
}

json series_json(const sample_series& s) {
  if (!s.measured()) return nullptr;
  return {{"n", s.stats.count},           {"median_us", s.stats.median_us}, {"q1_us", s.stats.q1_us},
          {"q3_us", s.stats.q3_us},       {"min_us", s.stats.min_us},       {"noise", s.stats.noise},
          {"ci_lo_us", s.stats.ci_lo_us}, {"ci_hi_us", s.stats.ci_hi_us},   {"samples_us", s.samples_us}};
}

std::string prediction_line(const amdahl& a) {
  // A diagnostic: synchronized hooks around each pattern, which on cuda time launches and syncs more than GPU work.
  if (!a.profiled) return "In-model profile (diagnostic) Amdahl: " + a.why;
  std::string s = fmt::format(
      "In-model profile (diagnostic, synchronized hooks) Amdahl: the patched patterns take {:.1f}% of the eager forward ({} of "
      "{}), {} faster with kforge: predicted "
      "{}, measured {}",
      a.share * 100, us(a.share * a.forward_us), us(a.forward_us), speed(a.pattern_speedup), speed(a.predicted),
      speed(a.measured));
  if (a.fraction_known()) s += fmt::format(" ({:.0f}% of the predicted gain)", a.fraction * 100);
  else if (a.predicted > 0 && a.predicted <= 1) s += " (the profile predicts no gain)";
  return s;
}

}  // namespace

const variant_result* e2e_result::find(std::string_view name) const {
  for (const auto& v : variants)
    if (v.name == name) return &v;
  return nullptr;
}

std::string e2e_result::metric() const {
  bool any = false;
  for (const auto& v : variants) {
    if (v.status != impl_status::ok) continue;
    if (!v.hot.measured()) return "cold";
    any = true;
  }
  return any ? "hot" : "cold";
}

double e2e_result::speedup(std::string_view b, std::string_view over_a) const {
  const variant_result* vb = find(b);
  const variant_result* va = find(over_a);
  if (!va || !vb || va->status != impl_status::ok || vb->status != impl_status::ok) return 0;
  const std::string m = metric();
  double ma = va->series(m).stats.median_us, mb = vb->series(m).stats.median_us;
  return ma > 0 && mb > 0 ? ma / mb : 0;
}

bool e2e_result::any_failed() const {
  return std::any_of(variants.begin(), variants.end(),
                     [](const variant_result& v) { return v.status == impl_status::failed; });
}

e2e_result result_from_samples(const json& j, const std::string& source) {
  if (!j.is_object()) bad(source, "expected a JSON object");
  if (j.value("version", 0) != k_samples_version)
    bad(source, fmt::format("version {} (expected {})", j.value("version", json()).dump(), k_samples_version));
  if (!j.contains("variants") || !j["variants"].is_array()) bad(source, "no list of variants");
  e2e_result r;
  r.model = j.value("model", "");
  r.device = j.value("device", "");
  r.torch = j.value("torch", "");
  r.threads = j.value("threads", 0);
  r.hot_skipped = j.value("hot_skipped", "");
  r.cold_stop = j.value("cold_stop", "");
  r.hot_stop = j.value("hot_stop", "");
  r.patched = j.value("patched", json::array());
  for (const auto& v : j["variants"]) {
    variant_result out;
    if (!v.is_object() || !v.contains("name")) bad(source, "a variant without a name");
    out.name = v.value("name", "");
    std::string st = v.value("status", "ok");
    out.status = st == "ok" ? impl_status::ok : st == "skipped" ? impl_status::skipped : impl_status::failed;
    out.why = v.value("why", "");
    out.note = v.value("note", "");
    if (v.contains("max_error_ratio") && v["max_error_ratio"].is_number())
      out.max_error_ratio = v["max_error_ratio"].get<double>();
    out.cold = series(numbers(v.value("cold_us", json()), source, out.name + ".cold_us"));
    out.hot = series(numbers(v.value("hot_us", json()), source, out.name + ".hot_us"));
    out.launches_per_sample = v.value("launches_per_sample", 1);
    out.hot_skipped = v.value("hot_skipped", r.hot_skipped);
    if (out.status == impl_status::ok && !out.cold.measured())
      bad(source, fmt::format("variant {} ran but has no cold samples", out.name));
    r.variants.push_back(std::move(out));
  }
  fill_prediction(r, j.value("profile", json()), source);
  r.shares = predict_from_shares(replaced_cases_from_json(j.value("replaced_cases", json()), source),
                                 r.speedup("kforge", "eager"), r.metric());
  return r;
}

json to_json(const e2e_result& r) {
  json variants = json::array();
  for (const auto& v : r.variants) {
    json o = {{"name", v.name},
              {"status", impl_status_name(v.status)},
              {"cold", series_json(v.cold)},
              {"hot", series_json(v.hot)}};
    if (!v.why.empty()) o["why"] = v.why;
    if (!v.note.empty()) o["note"] = v.note;
    if (v.max_error_ratio) o["max_error_ratio"] = *v.max_error_ratio;
    if (!v.hot.measured()) o["hot_skipped"] = v.hot_skipped.empty() ? "not timed" : v.hot_skipped;
    if (v.hot.measured()) o["launches_per_sample"] = v.launches_per_sample;
    variants.push_back(o);
  }
  json speedups = json::object();
  for (const auto& v : r.variants)
    if (v.name != "eager" && r.speedup(v.name, "eager") > 0) speedups[v.name + "/eager"] = r.speedup(v.name, "eager");
  if (double s = r.speedup("compile_kforge", "compile"); s > 0) speedups["compile_kforge/compile"] = s;
  const amdahl& a = r.profile;
  json pred = {{"source", "in-model profile (diagnostic)"}, {"profiled", a.profiled}};
  if (!a.profiled) {
    pred["why"] = a.why;
  } else {
    json patterns = json::array();
    for (const auto& p : a.patterns)
      patterns.push_back({{"module", p.module},
                          {"workloads", p.workloads},
                          {"eager_us", p.eager_us},
                          {"kforge_us", p.kforge_us},
                          {"share", p.share},
                          {"speedup", p.speedup}});
    pred.update({{"passes", a.passes},
                 {"forward_us", a.forward_us},
                 {"patterns", patterns},
                 {"share", a.share},
                 {"pattern_speedup", a.pattern_speedup},
                 {"predicted_speedup", a.predicted},
                 {"measured_speedup", a.measured},
                 {"measured_fraction", a.fraction_known() ? json(a.fraction) : json(nullptr)}});
  }
  return {{"schema", k_e2e_schema}, {"model", r.model},     {"device", r.device},           {"torch", r.torch},
          {"threads", r.threads},   {"metric", r.metric()}, {"hot_skipped", r.hot_skipped}, {"cold_stop", r.cold_stop},
          {"hot_stop", r.hot_stop}, {"patched", r.patched}, {"variants", variants},         {"speedups", speedups},
          {"prediction", to_json(r.shares)}, {"amdahl", pred}};
}

std::string table_text(const e2e_result& r) {
  std::string out = fmt::format("{} on {} (torch {}, {} threads); compared: {} medians [99% interval]\n", r.model,
                                r.device, r.torch, r.threads, r.metric());
  out += fmt::format("{:<15} {:<7} {:<30} {:>5} {:>9}  {:<30} {:>9}\n", "variant", "status", "cold median", "n",
                     "vs eager", "hot (CUDA graph)", "vs eager");
  const variant_result* eager = r.find("eager");
  for (const auto& v : r.variants) {
    auto vs = [&](const sample_series& s, const sample_series* e) {
      return e && s.measured() && e->measured() ? speed(e->stats.median_us / s.stats.median_us) : std::string("-");
    };
    std::string hot = v.hot.measured()
                          ? median_cell(v.hot)
                          : (v.status == impl_status::ok
                                 ? "- (" + (v.hot_skipped.empty() ? std::string("not timed") : v.hot_skipped) + ")"
                                 : "-");
    out += fmt::format("{:<15} {:<7} {:<30} {:>5} {:>9}  {:<30} {:>9}\n", v.name, impl_status_name(v.status),
                       median_cell(v.cold), v.cold.stats.count, vs(v.cold, eager ? &eager->cold : nullptr), hot,
                       vs(v.hot, eager ? &eager->hot : nullptr));
  }
  for (const auto& v : r.variants)
    if (v.status != impl_status::ok) out += fmt::format("  {} {}: {}\n", v.name, impl_status_name(v.status), v.why);
    else if (!v.note.empty()) out += fmt::format("  {} note: {}\n", v.name, v.note);
  if (double s = r.speedup("compile_kforge", "compile"); s > 0)
    out += fmt::format("compile_kforge vs compile: {}\n", speed(s));
  out += share_prediction_line(r.shares) + "\n";
  for (const auto& c : r.shares.cases)
    out += fmt::format("  {} [{}]: {} call{}{}, {} over eager ({})\n", c.workload,
                       c.case_name.empty() ? "no spec case" : c.case_name, c.calls, c.calls == 1 ? "" : "s",
                       c.share ? fmt::format(", {:.2f}% of the captured time", c.counted_share() * 100) : "",
                       speed(c.speedup()), c.speedup_source() == "case" ? "recorded on the case"
                                           : c.speedup_source() == "record" ? "the record across its cases"
                                                                            : "no record: counted as 1x");
  out += prediction_line(r.profile) + "\n";
  for (const auto& p : r.profile.patterns)
    out += fmt::format("  {} ({}): eager {}, kforge {}, {}, {:.1f}% of the forward\n",
                       p.module.empty() ? "(model)" : p.module, fmt::join(p.workloads, ", "), us(p.eager_us),
                       us(p.kforge_us), speed(p.speedup), p.share * 100);
  return out;
}

std::string markdown(const e2e_result& r) {
  std::string out = fmt::format(
      "## End-to-end latency: `{}`\n\n{} (torch {}, "
      "{} threads); compared: {} medians, 99% "
      "interval of the median in brackets.\n\n",
      md_cell(r.model), md_cell(r.device), md_cell(r.torch), r.threads, r.metric());
  out +=
      "| variant | status | cold median | n | vs eager | hot (CUDA graph) | "
      "vs eager |\n|---|---|---|---:|---:|---|---:|\n";
  const variant_result* eager = r.find("eager");
  for (const auto& v : r.variants) {
    auto vs = [&](const sample_series& s, const sample_series* e) {
      return e && s.measured() && e->measured() ? speed(e->stats.median_us / s.stats.median_us) : std::string("-");
    };
    // A note (how an ok variant was made) goes below the table, as in the table text: a cell holds the status.
    std::string status =
        v.status != impl_status::ok ? fmt::format("{}: {}", impl_status_name(v.status), v.why) : std::string("ok");
    std::string hot = v.hot.measured() ? median_cell(v.hot) : (v.hot_skipped.empty() ? "-" : v.hot_skipped);
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", v.name, md_cell(status), median_cell(v.cold),
                       v.cold.stats.count, vs(v.cold, eager ? &eager->cold : nullptr), md_cell(hot),
                       vs(v.hot, eager ? &eager->hot : nullptr));
  }
  bool notes = false;
  for (const auto& v : r.variants)
    if (v.status == impl_status::ok && !v.note.empty()) {
      out += fmt::format("{}- {} note: {}\n", notes ? "" : "\n", v.name, md_cell(v.note));
      notes = true;
    }
  out += "\n" + md_cell(share_prediction_line(r.shares)) + "\n";
  if (!r.shares.cases.empty()) {
    out += "\n| replaced workload | case | calls | share | speedup over eager |\n|---|---|---:|---:|---:|\n";
    for (const auto& c : r.shares.cases)
      out += fmt::format("| {} | {} | {} | {} | {} |\n", md_cell(c.workload),
                         md_cell(c.case_name.empty() ? "-" : c.case_name), c.calls,
                         c.share ? fmt::format("{:.2f}%", c.counted_share() * 100) : "-", speed(c.speedup()));
  }
  out += "\n" + md_cell(prediction_line(r.profile)) + "\n";
  if (!r.profile.patterns.empty()) {
    out +=
        "\n| patched module | workloads | eager | kforge | speedup | share "
        "|\n|---|---|---:|---:|---:|---:|\n";
    for (const auto& p : r.profile.patterns)
      out += fmt::format("| {} | {} | {} | {} | {} | {:.1f}% |\n", md_cell(p.module),
                         md_cell(fmt::format("{}", fmt::join(p.workloads, ", "))), us(p.eager_us), us(p.kforge_us),
                         speed(p.speedup), p.share * 100);
  }
  return out;
}

}  // namespace kf::e2e
