// Rendering a capture_result: see render.h.
#include "capture/render.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "capture/spec_yaml.h"

namespace kf::capture {
namespace {

using json = nlohmann::json;

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (const auto& e : v) s += (s.empty() ? "" : sep) + e;
  return s;
}

// At most `n` entries, then how many more.
std::string some(const std::vector<std::string>& v, size_t n) {
  if (v.size() <= n) return join(v, ", ");
  return join({v.begin(), v.begin() + static_cast<long>(n)}, ", ") + fmt::format(", ... ({} more)", v.size() - n);
}

std::string percent(double share) { return fmt::format("{:.1f}%", 100 * share); }

std::string plural(size_t n, const char* word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); }

std::string ops_text(const capture_result& r) {
  return fmt::format("{} on {}{}: {}, {:.2f} ms traced", r.model, r.device,
                     r.torch_version.empty() ? "" : fmt::format(" (torch {})", r.torch_version),
                     plural(r.operators, "operator"), r.total_us / 1000);
}

}  // namespace

std::string captured_spec_text(const capture_result& r, size_t index) {
  const captured_workload& w = r.workloads.at(index);
  spec_comments c;
  c.header = {
      fmt::format("Captured by `kforge capture` from {} on {}{}.", r.model, r.device,
                  r.torch_version.empty() ? "" : fmt::format(" (torch {})", r.torch_version)),
      fmt::format("Where: {}", join(w.where, "; ")),
      fmt::format("Share: {} of the model's traced time (rank {} of {}): {} at {}.", percent(r.share(w.time_us)),
                  index + 1, r.workloads.size(), plural(static_cast<size_t>(w.calls), "call"), plural(w.spec.cases.size(), "shape")),
      "Each case is a shape the model ran (its calls and share beside it); the one with the largest share is gated.",
  };
  for (const auto& s : w.stats)
    c.cases.push_back(fmt::format("{}, {} of the model's time", plural(static_cast<size_t>(s.calls), "call"), percent(r.share(s.time_us))));
  return spec_yaml(w.spec, c);
}

std::string summary_table(const capture_result& r, const written_files& written) {
  std::string out = fmt::format("captured {}\n\n", ops_text(r));
  if (r.workloads.empty()) {
    out += "no pattern a spec expresses was found\n";
  } else {
    size_t wn = 8, wp = 7;
    for (const auto& w : r.workloads) {
      wn = std::max(wn, w.spec.name.size() + 1);
      wp = std::max(wp, w.pattern.size());
    }
    wp = std::min<size_t>(wp, 48);
    out += fmt::format("{:>4}  {:<{}}  {:<{}}  {:>5}  {:>6}  {:>6}  {}\n", "rank", "workload", wn, "pattern", wp, "calls",
                       "shapes", "share", "where");
    double covered = 0, written_share = 0;
    for (size_t i = 0; i < r.workloads.size(); ++i) {
      const auto& w = r.workloads[i];
      covered += r.share(w.time_us);
      if (written.count(i)) written_share += r.share(w.time_us);
      out += fmt::format("{:>4}  {:<{}}  {:<{}}  {:>5}  {:>6}  {:>6}  {}\n", i + 1,
                         w.spec.name + (written.count(i) ? "*" : ""), wn, w.pattern, wp, w.calls, w.spec.cases.size(),
                         percent(r.share(w.time_us)), some(w.where, 2));
    }
    out += fmt::format("\nthe workloads cover {} of the time; {} written (marked *, {}){}\n", percent(covered),
                       plural(written.size(), "spec"), percent(written_share),
                       written.empty() ? "" : " to " + std::filesystem::path(written.begin()->second).parent_path().string() + "/");
  }
  if (!r.uncovered.empty()) {
    double left = 0;
    for (const auto& u : r.uncovered) left += r.share(u.time_us);
    out += fmt::format("\nnot expressible as a spec ({} of the time):\n", percent(left));
    size_t wo = 8;
    for (const auto& u : r.uncovered) wo = std::max(wo, u.op.size());
    out += fmt::format("  {:<{}}  {:>5}  {:>6}  {}\n", "operator", wo, "calls", "share", "where");
    const size_t shown = std::min<size_t>(r.uncovered.size(), 12);
    for (size_t i = 0; i < shown; ++i) {
      const auto& u = r.uncovered[i];
      out += fmt::format("  {:<{}}  {:>5}  {:>6}  {}\n", u.op, wo, u.calls, percent(r.share(u.time_us)), some(u.where, 2));
    }
    if (shown < r.uncovered.size()) {
      double rest = 0;
      int calls = 0;
      for (size_t i = shown; i < r.uncovered.size(); ++i) {
        rest += r.share(r.uncovered[i].time_us);
        calls += r.uncovered[i].calls;
      }
      out += fmt::format("  {:<{}}  {:>5}  {:>6}\n", fmt::format("({} more operators)", r.uncovered.size() - shown), wo, calls, percent(rest));
    }
  }
  return out;
}

json summary_json(const capture_result& r, const written_files& written) {
  json workloads = json::array(), uncovered = json::array();
  double covered = 0, written_share = 0;
  for (size_t i = 0; i < r.workloads.size(); ++i) {
    const auto& w = r.workloads[i];
    json ops = json::array(), cases = json::array();
    for (const auto& c : w.spec.graph) ops.push_back(c.op);
    for (size_t k = 0; k < w.spec.cases.size(); ++k)
      cases.push_back({{"name", w.spec.cases[k].name}, {"calls", w.stats[k].calls}, {"time_us", w.stats[k].time_us},
                       {"share", r.share(w.stats[k].time_us)}, {"gate", w.spec.cases[k].gate}});
    auto f = written.find(i);
    workloads.push_back({{"rank", i + 1}, {"name", w.spec.name}, {"pattern", w.pattern}, {"ops", ops}, {"calls", w.calls},
                         {"shapes", w.spec.cases.size()}, {"time_us", w.time_us}, {"share", r.share(w.time_us)},
                         {"where", w.where}, {"cases", cases}, {"file", f == written.end() ? json() : json(f->second)}});
    covered += r.share(w.time_us);
    if (f != written.end()) written_share += r.share(w.time_us);
  }
  for (const auto& u : r.uncovered)
    uncovered.push_back({{"op", u.op}, {"calls", u.calls}, {"time_us", u.time_us}, {"share", r.share(u.time_us)}, {"where", u.where}});
  return {{"model", r.model}, {"device", r.device}, {"torch", r.torch_version}, {"operators", r.operators},
          {"total_us", r.total_us}, {"covered_share", covered}, {"written_share", written_share},
          {"workloads", workloads}, {"uncovered", uncovered}};
}

}  // namespace kf::capture
