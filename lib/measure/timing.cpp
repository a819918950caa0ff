// Interleaved timing of the implementations of one case: see timing.h.
#include "measure/timing.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "measure/compare.h"
#include "measure/ratio_test.h"

namespace kf::measure {

double steady_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

timing_options timing_options_from_json(const nlohmann::json& j) {
  timing_options o;
  if (j.is_null()) return o;
  if (!j.is_object()) throw std::invalid_argument("stopping: expected an object");
  auto number = [&](const char* key, double& out, double lo) {
    if (!j.contains(key)) return;
    if (!j[key].is_number() || j[key].get<double>() < lo)
      throw std::invalid_argument(fmt::format("stopping.{}: expected a number >= {}, got {}", key, lo, j[key].dump()));
    out = j[key].get<double>();
  };
  double min_samples = o.stopping.min_samples;
  number("min_samples", min_samples, 1);
  o.stopping.min_samples = static_cast<int>(min_samples);
  number("max_noise", o.stopping.max_noise, 0);
  number("min_seconds", o.stopping.min_seconds, 0);
  number("timeout_s", o.stopping.timeout_s, 1e-3);
  number("hot_below_us", o.hot_below_s, 0);
  if (j.contains("hot_below_us")) o.hot_below_s *= 1e-6;
  if (j.contains("cold_follows_hot")) {
    if (!j["cold_follows_hot"].is_boolean())
      throw std::invalid_argument("stopping.cold_follows_hot: expected true or false, got " + j["cold_follows_hot"].dump());
    o.cold_follows_hot = j["cold_follows_hot"].get<bool>();
  }
  if (j.contains("race") && !j["race"].is_object())
    throw std::invalid_argument("stopping.race: expected an object of case names, got " + j["race"].dump());
  number("alpha", o.alpha, 1e-12);
  number("resolution", o.resolution, 0);
  double first_look = o.first_look;
  number("first_look", first_look, 2);
  o.first_look = static_cast<int>(first_look);
  if (j.contains("questions")) {
    if (!j["questions"].is_array())
      throw std::invalid_argument("stopping.questions: expected an array, got " + j["questions"].dump());
    for (const auto& q : j["questions"]) {
      if (!q.is_object() || !q.contains("a") || !q["a"].is_string() || !q.contains("b") || !q["b"].is_string() ||
          !q.contains("threshold") || !q["threshold"].is_number() || q["threshold"].get<double>() <= 0)
        throw std::invalid_argument(
            "stopping.questions: expected {\"a\": name, \"b\": name, \"threshold\": a number > 0}, got " + q.dump());
      o.questions.push_back({q["a"].get<std::string>(), q["b"].get<std::string>(), q["threshold"].get<double>()});
    }
  }
  if (j.contains("hot")) {
    const auto& h = j["hot"];
    if (h.is_boolean()) o.hot = h.get<bool>() ? hot_mode::always : hot_mode::never;
    else if (h == "auto") o.hot = hot_mode::automatic;
    else throw std::invalid_argument("stopping.hot: expected true, false or \"auto\", got " + h.dump());
  }
  return o;
}

timing_options race_for(timing_options options, const nlohmann::json& j, const std::string& case_name) {
  if (!j.is_object() || !j.contains("race") || !j["race"].contains(case_name)) return options;
  const auto& r = j["race"][case_name];
  if (!r.is_object() || !r.contains("us") || !r["us"].is_number() || r["us"].get<double>() < 0 ||
      (r.contains("hot") && !r["hot"].is_boolean()))
    throw std::invalid_argument(
        fmt::format("stopping.race.{}: expected {{\"us\": a number >= 0, \"hot\": true or false}}, got {}", case_name,
                    r.dump()));
  options.race_s = r["us"].get<double>() * 1e-6;
  options.race_hot = r.value("hot", false);
  return options;
}

namespace {

// The state of one implementation (or of its hot loop) in the interleaved loop.
struct track {
  explicit track(const stats::stopping_options& o) : criterion(o) {}
  stats::stopping_criterion criterion;
  sample_set* out = nullptr;
  bool done = false;

  void add(const sample& s) {
    if (s.sm_clock_mhz > 0) {
      out->sm_clock_min_mhz = out->sm_clock_min_mhz == 0 ? s.sm_clock_mhz : std::min(out->sm_clock_min_mhz, s.sm_clock_mhz);
      out->sm_clock_max_mhz = std::max(out->sm_clock_max_mhz, s.sm_clock_mhz);
    }
    if (!s.kept) {
      ++out->discarded;
      return;
    }
    out->samples_us.push_back(s.seconds * 1e6);
    criterion.add(s.seconds * static_cast<double>(out->launches_per_sample));
  }
  void check(double elapsed) {
    stats::stop_state st = criterion.check(elapsed);
    if (st == stats::stop_state::running) return;
    done = true;
    out->stop = std::string(stats::stop_state_name(st));
  }
};

struct impl_state {
  const timed_impl* impl;
  impl_timing* result;
  track cold;
  std::optional<track> hot;
  std::unique_ptr<hot_loop> loop;
  bool hot_decided = false;
  bool failed = false;
};

bool names(const std::string& impl, const std::string& q) {
  return impl == q || (impl.size() > q.size() && impl.compare(0, q.size(), q) == 0 && impl[q.size()] == '[');
}

// Whether every one of the gate's questions is decided (ratio_test.h) on what has been measured so far.
bool questions_decided(const std::vector<impl_timing>& results, const timing_options& o) {
  const bool hot = compares_hot(results);
  const auto first = static_cast<std::size_t>(o.first_look);
  for (const auto& q : o.questions)
    for (const auto& a : results)
      for (const auto& b : results) {
        if (&a == &b || !names(a.impl, q.a) || !names(b.impl, q.b) || !a.error.empty() || !b.error.empty()) continue;
        const auto& sa = hot && a.hot ? a.hot->samples_us : a.cold.samples_us;
        const auto& sb = hot && b.hot ? b.hot->samples_us : b.cold.samples_us;
        if (std::min(sa.size(), sb.size()) < first) return false;
        if (judge_ratio(sa, sb, q.threshold, {o.alpha, o.resolution, o.first_look}).decision == stats::decision::open)
          return false;
      }
  return true;
}

}  // namespace

std::vector<impl_timing> time_interleaved(sampler& s, const std::vector<timed_impl>& impls,
                                          const timing_options& options, const clock_fn& now) {
  std::vector<impl_timing> results(impls.size());
  // With the gate's questions, they stop the series (below); each series' own rule keeps only the cap.
  stats::stopping_options per_series = options.stopping;
  per_series.converge = options.questions.empty();
  std::vector<impl_state> states;
  states.reserve(impls.size());
  for (std::size_t i = 0; i < impls.size(); ++i) {
    results[i].impl = impls[i].name;
    states.push_back(impl_state{&impls[i], &results[i], track(per_series), std::nullopt, nullptr});
    states.back().cold.out = &results[i].cold;
  }
  auto fail = [](impl_state& st, const std::string& why) {
    st.failed = true;
    st.result->error = why;
    if (st.result->cold.stop.empty()) st.result->cold.stop = "failed";
    if (st.result->hot && st.result->hot->stop.empty()) st.result->hot->stop = "failed";
  };
  for (auto& st : states) {
    try {
      s.warmup(*st.impl);
    } catch (const launch_failure& e) {
      fail(st, e.what());
    }
  }
  if (options.hot == hot_mode::never)
    for (auto& st : states) st.result->hot_skipped = "hot samples turned off";

  // Decides on and prepares the hot loop once the first cold sample is in.
  auto decide_hot = [&](impl_state& st, double cold_s) {
    st.hot_decided = true;
    if (options.hot == hot_mode::never) return;
    if (options.hot == hot_mode::automatic && cold_s >= options.hot_below_s) {
      st.result->hot_skipped = fmt::format("first cold sample {:.1f} us >= {:.1f} us: launch gaps do not matter",
                                           cold_s * 1e6, options.hot_below_s * 1e6);
      return;
    }
    try {
      st.loop = s.make_hot(*st.impl, cold_s, options.hot_target_s);
    } catch (const launch_failure& e) {
      fail(st, e.what());
      return;
    } catch (const std::runtime_error& e) {  // cannot run back to back: cold only, and say why
      st.result->hot_skipped = std::string("hot loop not available: ") + e.what();
      return;
    }
    st.result->hot.emplace();
    st.result->hot->launches_per_sample = st.loop->launches();
    st.hot.emplace(per_series);
    st.hot->out = &*st.result->hot;
  };

  // The judged series is in (min_samples) and even its lower quartile is slower than the race: stop both.
  auto race = [&](impl_state& st) {
    // Hot samples when the race is on them and there are any (an implementation without a hot loop is judged cold).
    track* judged = options.race_hot && st.hot ? &*st.hot : &st.cold;
    const auto& us = judged->out->samples_us;
    if (static_cast<int>(us.size()) < options.stopping.min_samples ||
        stats::summarize(us).q1 <= options.race_s * 1e6 * (1 + k_race_margin))
      return;
    for (track* t : {&st.cold, st.hot ? &*st.hot : nullptr})
      if (t && !t->done) t->done = true, t->out->stop = "lost_race";
  };

  // The gate's questions are looked at when the pairs double (alpha is spent per look: ratio_test.h).
  std::size_t next_look = static_cast<std::size_t>(std::max(options.first_look, options.stopping.min_samples));
  auto fewest_samples = [&] {
    std::size_t n = SIZE_MAX;
    for (auto& st : states) {
      if (st.failed) continue;
      n = std::min(n, st.result->cold.samples_us.size());
      if (st.hot) n = std::min(n, st.result->hot->samples_us.size());
    }
    return n;
  };
  auto stop_decided = [&] {
    for (auto& st : states)
      for (track* t : {&st.cold, st.hot ? &*st.hot : nullptr})
        if (t && !t->done) t->done = true, t->out->stop = "decided";
  };

  const double t0 = now();
  // Rounds alternate their order (a b, b a, ...): whatever the position in a round does to a sample (a cache the
  // previous implementation warmed, a clock that ramps) falls on every implementation alike.
  for (std::size_t round = 0;; ++round) {
    bool any = false;
    for (std::size_t j = 0; j < states.size(); ++j) {
      auto& st = states[round % 2 ? states.size() - 1 - j : j];
      if (st.failed) continue;
      bool hot_pending = st.hot && !st.hot->done;
      if (st.cold.done && !hot_pending && st.hot_decided) continue;
      any = true;
      try {
        if (!st.cold.done) {
          sample c = s.cold(*st.impl);
          st.cold.add(c);
          if (!st.hot_decided && c.kept) decide_hot(st, c.seconds);
        }
        if (st.hot && !st.hot->done) st.hot->add(st.loop->run());
      } catch (const launch_failure& e) {
        fail(st, e.what());
        continue;
      }
      // The race first: a series that has its min_samples and lost says so, even when the clock ran out on the
      // same sample (on a loaded machine the timeout often falls due just as min_samples is reached).
      if (options.race_s > 0) race(st);
      double elapsed = now() - t0;
      if (!st.cold.done) st.cold.check(elapsed);
      if (st.hot && !st.hot->done) st.hot->check(elapsed);
      if (options.cold_follows_hot && !st.cold.done && st.hot && st.hot->done && st.result->hot->stop == "converged" &&
          static_cast<int>(st.result->cold.samples_us.size()) >= options.stopping.min_samples) {
        st.cold.done = true;
        st.result->cold.stop = "follows_hot";
      }
      if (!st.hot_decided && st.cold.done) {  // never got a kept cold sample before stopping
        st.hot_decided = true;
        if (st.result->hot_skipped.empty()) st.result->hot_skipped = "no kept cold sample to size the hot loop";
      }
    }
    if (!any) break;
    if (!options.questions.empty() && fewest_samples() >= next_look) {
      if (questions_decided(results, options)) stop_decided();
      next_look *= 2;
    }
  }
  return results;
}

bool compares_hot(const std::vector<impl_timing>& timed_together) {
  std::vector<timed_side> sides;
  for (const auto& t : timed_together) sides.push_back({t.error.empty(), t.hot && !t.hot->samples_us.empty()});
  return compares_hot(sides);
}

double compared_median(const impl_timing& t, bool hot) {
  const sample_set& s = hot && t.hot ? *t.hot : t.cold;
  return s.samples_us.empty() ? 0 : s.summary().median;
}

nlohmann::json to_json(const sample_set& s) {
  stats::summary sum = s.summary();
  nlohmann::json j{{"samples_us", s.samples_us},
                   {"discarded", s.discarded},
                   {"launches_per_sample", s.launches_per_sample},
                   {"stop", s.stop},
                   {"median_us", sum.median},
                   {"q1_us", sum.q1},
                   {"q3_us", sum.q3},
                   {"min_us", sum.min},
                   {"mean_us", sum.mean},
                   {"noise", sum.noise}};
  if (s.sm_clock_max_mhz > 0) j["sm_clock_mhz"] = {{"min", s.sm_clock_min_mhz}, {"max", s.sm_clock_max_mhz}};
  return j;
}

nlohmann::json to_json(const impl_timing& t) {
  nlohmann::json j{{"impl", t.impl}, {"cold", to_json(t.cold)}};
  if (t.hot) j["hot"] = to_json(*t.hot);
  if (!t.hot_skipped.empty()) j["hot_skipped"] = t.hot_skipped;
  if (!t.error.empty()) j["error"] = t.error;
  return j;
}

sample_set sample_set_from_json(const nlohmann::json& j) {
  sample_set s;
  s.samples_us = j.at("samples_us").get<std::vector<double>>();
  s.discarded = j.value("discarded", 0);
  s.launches_per_sample = j.value("launches_per_sample", 1);
  s.stop = j.value("stop", "");
  if (j.contains("sm_clock_mhz")) {
    s.sm_clock_min_mhz = j["sm_clock_mhz"].at("min").get<double>();
    s.sm_clock_max_mhz = j["sm_clock_mhz"].at("max").get<double>();
  }
  return s;
}

impl_timing impl_timing_from_json(const nlohmann::json& j) {
  impl_timing t;
  t.impl = j.at("impl").get<std::string>();
  t.cold = sample_set_from_json(j.at("cold"));
  if (j.contains("hot")) t.hot = sample_set_from_json(j["hot"]);
  t.hot_skipped = j.value("hot_skipped", "");
  t.error = j.value("error", "");
  return t;
}

}  // namespace kf::measure
