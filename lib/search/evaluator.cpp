#include "search/evaluator.h"

#include <cmath>

namespace kf {

double geomean_us(const std::map<std::string, double>& case_us) {
  if (case_us.empty()) return std::nan("");
  double s = 0;
  for (auto& [_, t] : case_us) s += std::log(t);
  return std::exp(s / static_cast<double>(case_us.size()));
}

nlohmann::json best_baselines(const nlohmann::json& baselines) {
  nlohmann::json best = nlohmann::json::object();
  if (!baselines.is_object()) return best;
  for (auto& [name, cases] : baselines.items()) {
    if (!cases.is_object()) continue;
    for (auto& [c, t] : cases.items()) {
      if (!t.is_number() || t.get<double>() <= 0) continue;
      if (!best.contains(c) || t.get<double>() < best[c]["us"].get<double>()) best[c] = {{"name", name}, {"us", t}};
    }
  }
  return best;
}

double reward_of(const std::map<std::string, double>& case_us, const nlohmann::json& baselines) {
  auto best = best_baselines(baselines);
  double sum = 0;
  int n = 0;
  for (auto& [c, t] : case_us) {
    if (!best.contains(c) || t <= 0) continue;
    sum += std::log(best[c]["us"].get<double>() / t);
    ++n;
  }
  if (n > 0) return sum / n;
  return std::log(1.0 / geomean_us(case_us));
}

}  // namespace kf
