// The Amdahl prediction from the capture's shares: see share_prediction.h.
#include "e2e/share_prediction.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "util/error.h"

namespace kf::e2e {
namespace {

using json = nlohmann::json;

std::optional<double> positive(const json& j, const std::string& source, const std::string& field) {
  if (j.is_null()) return std::nullopt;
  if (!j.is_number() || !std::isfinite(j.get<double>()) || j.get<double>() < 0)
    throw user_error(fmt::format("{}: not kforge e2e samples: replaced_cases.{} must be a number >= 0", source, field));
  return j.get<double>();
}

}  // namespace

double replaced_case::counted_share() const {
  if (!share) return 0;
  if (!captured_calls || *captured_calls <= 0) return *share;
  return *share * static_cast<double>(calls) / *captured_calls;
}

double replaced_case::speedup() const {
  if (record_eager_us && record_kernel_us && *record_eager_us > 0 && *record_kernel_us > 0)
    return *record_eager_us / *record_kernel_us;
  if (record_speedup && *record_speedup > 0) return *record_speedup;
  return 1;
}

std::string replaced_case::speedup_source() const {
  if (record_eager_us && record_kernel_us && *record_eager_us > 0 && *record_kernel_us > 0) return "case";
  if (record_speedup && *record_speedup > 0) return "record";
  return "none";
}

bool share_prediction::has_shares() const {
  return std::any_of(cases.begin(), cases.end(), [](const replaced_case& c) { return c.share.has_value(); });
}

share_prediction predict_from_shares(std::vector<replaced_case> cases, double measured, const std::string& metric) {
  share_prediction p;
  p.cases = std::move(cases);
  p.measured = measured;
  p.metric = metric;
  if (!p.has_shares()) return p;
  double rest = 0;  // sum s / k
  for (const auto& c : p.cases) {
    p.share += c.counted_share();
    rest += c.counted_share() / c.speedup();
  }
  // Shares rounded by the capture can add up past 1; the model cannot be more than all of it.
  if (p.share > 1) {
    rest /= p.share;
    p.share = 1;
  }
  const double time = 1 - p.share + rest;
  p.predicted = time > 0 ? 1 / time : 0;
  if (p.fraction_known()) p.fraction = (p.measured - 1) / (p.predicted - 1);
  return p;
}

std::vector<replaced_case> replaced_cases_from_json(const json& j, const std::string& source) {
  std::vector<replaced_case> out;
  if (j.is_null()) return out;
  if (!j.is_array()) throw user_error(fmt::format("{}: not kforge e2e samples: replaced_cases must be a list", source));
  for (const auto& e : j) {
    if (!e.is_object() || !e.contains("workload"))
      throw user_error(fmt::format("{}: not kforge e2e samples: a replaced case without a workload", source));
    replaced_case c;
    c.workload = e.value("workload", "");
    c.case_name = e.value("case", json()).is_string() ? e["case"].get<std::string>() : "";
    c.calls = e.value("calls", 0);
    c.share = positive(e.value("share", json()), source, "share");
    if (auto n = positive(e.value("captured_calls", json()), source, "captured_calls")) c.captured_calls = static_cast<int>(*n);
    c.key = e.value("key", json()).is_string() ? e["key"].get<std::string>() : "";
    c.record_eager_us = positive(e.value("record_eager_us", json()), source, "record_eager_us");
    c.record_kernel_us = positive(e.value("record_kernel_us", json()), source, "record_kernel_us");
    c.record_speedup = positive(e.value("record_speedup", json()), source, "record_speedup");
    out.push_back(std::move(c));
  }
  return out;
}

json to_json(const share_prediction& p) {
  json cases = json::array();
  for (const auto& c : p.cases) {
    json o = {{"workload", c.workload},       {"case", c.case_name.empty() ? json() : json(c.case_name)},
              {"calls", c.calls},             {"share", c.share ? json(*c.share) : json()},
              {"counted_share", c.counted_share()}, {"speedup", c.speedup()},
              {"speedup_from", c.speedup_source()}, {"key", c.key}};
    if (c.captured_calls) o["captured_calls"] = *c.captured_calls;
    cases.push_back(o);
  }
  return {{"source", "capture shares"},
          {"has_shares", p.has_shares()},
          {"cases", cases},
          {"share", p.share},
          {"predicted_speedup", p.predicted > 0 ? json(p.predicted) : json()},
          {"measured_speedup", p.measured > 0 ? json(p.measured) : json()},
          {"metric", p.metric},
          {"measured_fraction", p.fraction_known() ? json(p.fraction) : json()}};
}

std::string share_prediction_line(const share_prediction& p) {
  if (p.cases.empty()) return "Amdahl from the capture's shares: the kforge variant replaced no call a stored kernel takes";
  if (!p.has_shares())
    return "Amdahl from the capture's shares: none (no replaced workload's spec has kforge capture's `share`)";
  std::string s = fmt::format(
      "Amdahl from the capture's shares: the replaced cases take {:.1f}% of the captured time, at their stored "
      "winners' speedups: predicted {:.2f}x, measured {} ({} medians)",
      p.share * 100, p.predicted, p.measured > 0 ? fmt::format("{:.2f}x", p.measured) : std::string("-"), p.metric);
  if (p.fraction_known()) s += fmt::format(" ({:.0f}% of the predicted gain)", p.fraction * 100);
  return s;
}

}  // namespace kf::e2e
