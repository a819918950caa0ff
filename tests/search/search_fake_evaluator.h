// A deterministic evaluator for the search tests: a candidate's "time" is a function of its knobs (a known
// landscape with one best point), some knob values fail to compile; an optional delay makes a search slow
// enough to be killed mid-way.
#pragma once
#include <chrono>
#include <thread>

#include "search/evaluator.h"

namespace kf::test {

class fake_evaluator : public evaluator {
 public:
  explicit fake_evaluator(int delay_ms = 0) : m_delay_ms(delay_ms) {}
  int calls = 0, confirms = 0;

  nlohmann::json baselines() override {
    if (baseline_delay_ms) std::this_thread::sleep_for(std::chrono::milliseconds(baseline_delay_ms));
    return {{"eager", {{"c1", 100.0}}}, {"compile", {{"c1", 80.0}}}};
  }
  int baseline_delay_ms = 0;  // a slow first baseline (a torch.compile export)
  bool fail_all = false;       // every candidate "does not compile"
  // Candidates with this knob at this value fail verification (a knob whose numerics are wrong for the spec).
  std::pair<std::string, std::string> verify_fails_with;

  static double time_of(const candidate& c) {
    if (c.family.empty()) return 90.0;
    double t = 100.0;
    auto get = [&](const char* k) { auto it = c.knobs.find(k); return it == c.knobs.end() ? std::string() : it->second; };
    if (get("vector_width") == "16") t *= 0.6;
    else if (get("vector_width") == "8") t *= 0.8;
    if (get("passes") == "online") t *= 0.9;
    if (get("rows_per_chunk") == "64") t *= 0.95;
    return t;
  }

  eval_result one(const candidate& c, bool full) {
    ++calls;
    if (m_delay_ms) std::this_thread::sleep_for(std::chrono::milliseconds(m_delay_ms));
    eval_result r;
    r.stages.push_back({"compile", true, nlohmann::json::object(), 0.01, {}});
    if (fail_all || (c.knobs.count("threads") && c.knobs.at("threads") == "4")) {  // "does not compile"
      r.status = node_status::compile_failed;
      r.stages.back().ok = false;
      r.detail = "error: fake compile failure for threads=4";
      return r;
    }
    if (auto it = c.knobs.find(verify_fails_with.first); it != c.knobs.end() && it->second == verify_fails_with.second) {
      r.status = node_status::verify_failed;
      r.detail = "match on case c1: fake numerics of " + it->first + "=" + it->second;
      return r;
    }
    double t = time_of(c);
    r.case_us["c1"] = t;
    r.stages.push_back({full ? "measure" : "screen", true, nlohmann::json::object(), 0.01,
                        {{"kernel", "c1", "cold", {t, t * 1.01, t * 0.99}}}});
    r.status = full ? node_status::measured : node_status::screened;
    return r;
  }

  std::vector<eval_result> evaluate(const std::vector<candidate>& batch, double full_below_us,
                                    double stop_at_s) override {
    std::vector<eval_result> out;
    for (size_t i = 0; i < batch.size(); ++i)
      out.push_back(left_out(i, stop_at_s) ? eval_result{} : one(batch[i], time_of(batch[i]) < full_below_us));
    return out;
  }
  eval_result confirm(const candidate& c) override {
    ++confirms;
    return one(c, true);
  }
  nlohmann::json environment() override { return {{"device", "cpu"}, {"fake", true}}; }

 private:
  int m_delay_ms;
};

}  // namespace kf::test
