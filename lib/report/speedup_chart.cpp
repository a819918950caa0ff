#include "report/speedup_chart.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include <fmt/format.h>

#include "report/run_summary.h"
#include "report/text_escape.h"
#include "spec/baseline_registry.h"

namespace kf {
namespace {

constexpr double k_label_w = 300, k_axis_x = 310, k_axis_w = 420, k_floor_x = 760, k_floor_w = 140, k_top = 30;
constexpr double k_bar_h = 11, k_bar_gap = 2, k_row_gap = 8;
constexpr double k_lo = -2, k_hi = 4;  // log2 of the speedup axis: x0.25 .. x16 (beyond: clamped, marked)

double x_of(double speedup) {
  double l = std::clamp(std::log2(speedup), k_lo, k_hi);
  return k_axis_x + k_axis_w * (l - k_lo) / (k_hi - k_lo);
}

std::string_view color_of(const std::string& name) {  // a baseline's, or the merge-base's kernel's
  if (name == "base") return "#b279a2";
  const baseline* b = find_baseline(name);
  return b && !b->color.empty() ? std::string_view(b->color) : "#888";
}

std::string_view outcome_color(check_outcome o) {
  switch (o) {
    case check_outcome::passed: return "#1a7f37";
    case check_outcome::failed: return "#cf222e";
    case check_outcome::error: return "#8250df";
    case check_outcome::inconclusive: return "#0969da";
    case check_outcome::skipped: return "#9a6700";
  }
  return "#222";
}

// Baselines in a fixed order (the registered ones in their order, then the rest as named), so rows read alike.
std::vector<std::pair<std::string, double>> ordered(const std::map<std::string, double>& speedups) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& b : registered_baselines())
    if (auto it = speedups.find(b.name); it != speedups.end()) out.emplace_back(*it);
  for (auto& [b, s] : speedups)
    if (!find_baseline(b)) out.emplace_back(b, s);
  return out;
}

}  // namespace

std::string speedup_chart_svg(const run_result& r) {
  std::string body;
  auto out = std::back_inserter(body);
  double y = k_top;
  int rows = 0;
  for (auto& w : r.workloads)
    for (auto& c : w.cases) {
      auto bars = ordered(c.speedups);
      bool has_floor = c.floor.fraction > 0;
      if (bars.empty() && !has_floor) continue;
      ++rows;
      double h = std::max<double>(1, bars.size()) * (k_bar_h + k_bar_gap);
      std::string label = w.name + " " + c.name;
      if (label.size() > 46) label = label.substr(0, 45) + "…";
      fmt::format_to(out, "<text x=\"{}\" y=\"{:.0f}\" text-anchor=\"end\" fill=\"{}\"><title>{}</title>{}</text>\n",
                     k_label_w, y + k_bar_h - 1, outcome_color(headline_outcome(w, c.name)),
                     html_escape(w.name + " " + c.name), html_escape(valid_utf8(label)));
      double one = x_of(1);
      for (size_t k = 0; k < bars.size(); ++k) {
        auto& [b, s] = bars[k];
        double by = y + k * (k_bar_h + k_bar_gap), x = x_of(s);
        bool clamped = std::log2(s) < k_lo || std::log2(s) > k_hi;
        fmt::format_to(out, "<rect x=\"{:.1f}\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}: {:.3g}x</title></rect>",
                       std::min(x, one), by, std::max(std::abs(x - one), 1.0), k_bar_h, color_of(b), html_escape(b), s);
        fmt::format_to(out, "<text x=\"{:.1f}\" y=\"{:.0f}\" text-anchor=\"{}\" font-size=\"10\">{}{:.2f} {}</text>\n",
                       s >= 1 ? x + 3 : x - 3, by + k_bar_h - 2, s >= 1 ? "start" : "end", clamped ? "»" : "×", s, html_escape(b));
      }
      if (has_floor) {
        double f = std::clamp(c.floor.fraction, 0.0, 1.0);
        fmt::format_to(out, "<rect x=\"{}\" y=\"{:.0f}\" width=\"{}\" height=\"{}\" fill=\"#eee\"/>"
                            "<rect x=\"{}\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"{}\" fill=\"#777\"/>"
                            "<text x=\"{}\" y=\"{:.0f}\" font-size=\"10\">{:.0f}%</text>\n",
                       k_floor_x, y, k_floor_w, k_bar_h, k_floor_x, y, k_floor_w * f, k_bar_h, k_floor_x + k_floor_w + 4,
                       y + k_bar_h - 2, c.floor.fraction * 100);
      }
      y += h + k_row_gap;
    }
  if (rows == 0) return "";
  std::string axis;
  auto ax = std::back_inserter(axis);
  for (double l = k_lo; l <= k_hi; ++l) {
    double x = k_axis_x + k_axis_w * (l - k_lo) / (k_hi - k_lo);
    fmt::format_to(ax, "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2:.0f}\" stroke=\"{3}\"/>"
                       "<text x=\"{0:.1f}\" y=\"{4}\" text-anchor=\"middle\" font-size=\"10\">×{5:g}</text>\n",
                   x, k_top - 6, y, l == 0 ? "#222" : "#ddd", k_top - 10, std::exp2(l));
  }
  fmt::format_to(ax, "<text x=\"{}\" y=\"12\" font-size=\"11\">kernel speedup vs baseline (log scale; left of ×1: slower)</text>"
                     "<text x=\"{}\" y=\"12\" font-size=\"11\">of the floor</text>\n",
                 k_axis_x, k_floor_x);
  double legend_x = 10;
  std::vector<std::string> legend;
  for (const auto& b : registered_baselines()) legend.push_back(b.name);
  legend.push_back("base");
  for (const auto& b : legend) {
    fmt::format_to(ax, "<rect x=\"{}\" y=\"4\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"13\" font-size=\"11\">{}</text>",
                   legend_x, color_of(b), legend_x + 13, html_escape(b));
    legend_x += 70;
  }
  return fmt::format("<svg id=\"speedups\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{:.0f}\" "
                     "font-family=\"system-ui,sans-serif\" font-size=\"12\" role=\"img\" aria-label=\"speedup chart\">\n{}{}</svg>\n",
                     k_floor_x + k_floor_w + 50, y + 4, axis, body);
}

}  // namespace kf
