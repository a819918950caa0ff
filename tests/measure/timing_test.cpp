// The interleaved timing loop against a fake sampler (order of samples, stopping, discards, hot decisions,
// failures), the cpu sampler on a tiny real workload, the NVML loader without NVML, and floors.
#include "measure/timing.h"

#include <map>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "measure/cpu_sampler.h"
#include "measure/floor.h"
#include "measure/nvml.h"
#include "util/fs.h"
#include "util/error.h"

namespace kf::measure {
namespace {

// Each launch returns the impl's code; a sample's duration is `durations[name]`; every `discard_every`-th
// sample is reported at a low clock. The fake clock advances by the sample time (plus a fixed overhead).
class fake_sampler : public sampler {
 public:
  std::map<std::string, double> durations;
  std::vector<std::string> order;  // "cold:name" / "hot:name" as taken
  int discard_every = 0;
  double cold_jitter = 0;  // cold samples alternate between (1 - j) and (1 + j) times the duration
  double random_jitter = 0;  // cold samples are (1 + j u) times the duration, u uniform in [-1, 1]
  std::mt19937_64 rng{42};
  int colds = 0;
  double clock = 0;
  int taken = 0;
  bool hot_unavailable = false;

  std::string name_of(const launch_fn& f) {
    // The launch writes its name into `current` (see make_impl below).
    current.clear();
    last_rc = f(nullptr);
    if (last_rc != 0) throw launch_failure(last_rc);
    return current;
  }
  sample take(const std::string& kind, const launch_fn& f, int launches) {
    std::string n = name_of(f);
    order.push_back(kind + ":" + n);
    clock += durations[n] * launches + 1e-3;
    ++taken;
    bool kept = discard_every == 0 || taken % discard_every != 0;
    double d = durations[n];
    if (kind == "cold" && cold_jitter > 0) d *= ++colds % 2 ? 1 + cold_jitter : 1 - cold_jitter;
    if (kind == "cold" && random_jitter > 0) d *= 1 + random_jitter * std::uniform_real_distribution<double>(-1, 1)(rng);
    return sample{d, kept, kept ? 1980.0 : 900.0};
  }
  void warmup(const timed_impl& i) override { name_of(i.launch); }
  sample cold(const timed_impl& i) override { return take("cold", i.launch, 1); }
  std::unique_ptr<hot_loop> make_hot(const timed_impl& i, double, double) override {
    const launch_fn& f = i.launch;
    if (hot_unavailable) throw std::runtime_error("cannot capture");
    struct loop : hot_loop {
      fake_sampler* s;
      launch_fn f;
      sample run() override { return s->take("hot", f, 4); }
      int launches() const override { return 4; }
    };
    auto l = std::make_unique<loop>();
    l->s = this;
    l->f = f;
    return l;
  }
  double copy_bandwidth_gbs() override { return 100; }
  launch_fn empty_launch() override { return [](void*) { return 0; }; }
  std::string clock_check() const override { return "fake"; }
  nlohmann::json environment() const override { return {{"device", "fake"}}; }

  std::string current;
  int last_rc = 0;
};

timed_impl make_impl(fake_sampler& s, std::string name, int rc = 0) {
  return timed_impl{name, [&s, name, rc](void*) {
                      s.current = name;
                      return rc;
                    }};
}

timing_options quick(hot_mode hot = hot_mode::never) {
  timing_options o;
  o.stopping = {.min_samples = 10, .max_noise = 0.005, .min_seconds = 0, .timeout_s = 1000};
  o.hot = hot;
  return o;
}

// The gate's questions stop every series once they are answered: a 2x difference and an exact tie are both
// decided at the first look, long before the noise target or the cap; compile's modes answer for `compile`.
TEST(timing, the_gates_questions_stop_the_series_once_decided) {
  fake_sampler s;
  s.durations = {{"kernel", 10e-6}, {"eager", 20e-6}, {"compile[default]", 10e-6}};
  timing_options o = quick();
  o.stopping.max_noise = 0;  // the noise rule alone would never stop
  o.questions = {{"kernel", "eager", 1.0}, {"kernel", "compile", 1.0}};
  auto r = time_interleaved(s, {make_impl(s, "kernel"), make_impl(s, "eager"), make_impl(s, "compile[default]")}, o,
                            [&] { return s.clock; });
  ASSERT_EQ(r.size(), 3u);
  for (auto& t : r) {
    EXPECT_EQ(t.cold.stop, "decided") << t.impl;
    EXPECT_EQ(t.cold.samples_us.size(), 16u) << t.impl;  // the first look
  }
}

TEST(timing, an_open_question_runs_to_the_cap) {
  fake_sampler s;
  s.durations = {{"kernel", 10e-6}, {"eager", 10e-6}};
  s.random_jitter = 0.5;  // +-50 % noise: the ratio's interval stays wide for hundreds of rounds
  timing_options o = quick();
  o.stopping.timeout_s = 0.2;  // the fake clock: ~1 ms a sample
  o.resolution = 0;
  o.questions = {{"kernel", "eager", 1.0}};
  auto r = time_interleaved(s, {make_impl(s, "kernel"), make_impl(s, "eager")}, o, [&] { return s.clock; });
  EXPECT_EQ(r[0].cold.stop, "timed_out");
  EXPECT_GT(r[0].cold.samples_us.size(), 16u);
}

TEST(timing, questions_are_read_from_the_stopping_object) {
  auto o = timing_options_from_json({{"questions", {{{"a", "kernel"}, {"b", "base"}, {"threshold", 1.05}}}},
                                     {"alpha", 0.02}, {"resolution", 0.005}, {"first_look", 32}});
  ASSERT_EQ(o.questions.size(), 1u);
  EXPECT_EQ(o.questions[0].b, "base");
  EXPECT_DOUBLE_EQ(o.questions[0].threshold, 1.05);
  EXPECT_DOUBLE_EQ(o.alpha, 0.02);
  EXPECT_EQ(o.first_look, 32);
  EXPECT_THROW(timing_options_from_json({{"questions", {{{"a", "kernel"}}}}}), std::invalid_argument);
  EXPECT_THROW(timing_options_from_json({{"questions", "kernel"}}), std::invalid_argument);
}

TEST(timing, interleaves_round_robin_and_stops_at_min_samples) {
  fake_sampler s;
  s.durations = {{"a", 1e-5}, {"b", 2e-5}};
  auto results = time_interleaved(s, {make_impl(s, "a"), make_impl(s, "b")}, quick(), [&] { return s.clock; });
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].cold.samples_us.size(), 10u);
  EXPECT_EQ(results[1].cold.samples_us.size(), 10u);
  EXPECT_EQ(results[0].cold.stop, "converged");
  EXPECT_DOUBLE_EQ(results[1].cold.summary().median, 20);
  ASSERT_GE(s.order.size(), 4u);
  EXPECT_EQ(s.order[0], "cold:a");  // rounds alternate their order: a b, b a, a b, ...
  EXPECT_EQ(s.order[1], "cold:b");
  EXPECT_EQ(s.order[2], "cold:b");
  EXPECT_EQ(s.order[3], "cold:a");
  EXPECT_EQ(results[0].hot_skipped, "hot samples turned off");
}

TEST(timing, discarded_samples_are_counted_not_kept) {
  fake_sampler s;
  s.durations = {{"a", 1e-5}};
  s.discard_every = 3;
  auto r = time_interleaved(s, {make_impl(s, "a")}, quick(), [&] { return s.clock; });
  EXPECT_EQ(r[0].cold.samples_us.size(), 10u);
  EXPECT_EQ(r[0].cold.discarded, 4);  // samples 3, 6, 9, 12 of 14
  EXPECT_DOUBLE_EQ(r[0].cold.sm_clock_min_mhz, 900);
  EXPECT_DOUBLE_EQ(r[0].cold.sm_clock_max_mhz, 1980);
}

TEST(timing, hot_only_for_short_kernels_in_auto_mode) {
  fake_sampler s;
  s.durations = {{"short", 5e-6}, {"long", 200e-6}};
  auto r = time_interleaved(s, {make_impl(s, "short"), make_impl(s, "long")}, quick(hot_mode::automatic),
                            [&] { return s.clock; });
  ASSERT_TRUE(r[0].hot.has_value());
  EXPECT_EQ(r[0].hot->launches_per_sample, 4);
  EXPECT_GE(r[0].hot->samples_us.size(), 10u);
  EXPECT_FALSE(r[1].hot.has_value());
  EXPECT_NE(r[1].hot_skipped.find("launch gaps do not matter"), std::string::npos);
}

// The series a comparison uses (torch.compile's mode is picked on it): hot only when every implementation that did
// not fail has hot samples. A 15.7 us hot / 23.7 us cold compile beside a 300 us vendor call is compared cold.
TEST(timing, comparisons_use_hot_samples_only_when_everyone_has_them) {
  auto timing = [](std::vector<double> cold, std::vector<double> hot, std::string error = "") {
    impl_timing t;
    t.cold.samples_us = std::move(cold);
    if (!hot.empty()) t.hot = sample_set{}, t.hot->samples_us = std::move(hot);
    t.error = std::move(error);
    return t;
  };
  auto compile = timing({23.0, 23.7, 24.0}, {15.6, 15.7, 15.8});
  auto vendor = timing({294.0, 295.0, 296.0}, {});
  EXPECT_FALSE(compares_hot({compile, vendor}));
  EXPECT_DOUBLE_EQ(compared_median(compile, false), 23.7);
  EXPECT_TRUE(compares_hot({compile}));
  EXPECT_DOUBLE_EQ(compared_median(compile, true), 15.7);
  EXPECT_TRUE(compares_hot({compile, timing({}, {}, "launch failed")}));  // a failure is not compared
  EXPECT_FALSE(compares_hot({timing({}, {}, "launch failed")}));
  EXPECT_DOUBLE_EQ(compared_median(vendor, true), 295.0);  // no hot series: its cold one
}

TEST(timing, hot_unavailable_is_said_and_cold_still_taken) {
  fake_sampler s;
  s.hot_unavailable = true;
  s.durations = {{"a", 5e-6}};
  auto r = time_interleaved(s, {make_impl(s, "a")}, quick(hot_mode::always), [&] { return s.clock; });
  EXPECT_FALSE(r[0].hot.has_value());
  EXPECT_EQ(r[0].hot_skipped, "hot loop not available: cannot capture");
  EXPECT_EQ(r[0].cold.samples_us.size(), 10u);
}

TEST(timing, failing_impl_is_a_result_and_others_continue) {
  fake_sampler s;
  s.durations = {{"good", 1e-5}, {"bad", 1e-5}};
  auto r = time_interleaved(s, {make_impl(s, "bad", 7), make_impl(s, "good")}, quick(), [&] { return s.clock; });
  EXPECT_EQ(r[0].error, "launch returned 7");
  EXPECT_EQ(r[0].cold.stop, "failed");
  EXPECT_TRUE(r[0].cold.samples_us.empty());
  EXPECT_EQ(r[1].cold.samples_us.size(), 10u);
}

TEST(timing, noisy_impl_runs_until_timeout) {
  fake_sampler s;
  s.durations = {{"a", 1e-3}};
  s.discard_every = 2;  // half discarded; the kept ones are all equal, so noise is 0 ...
  timing_options o = quick();
  o.stopping.min_seconds = 1e9;  // ... but min_seconds can never be reached
  o.stopping.timeout_s = 0.5;
  auto r = time_interleaved(s, {make_impl(s, "a")}, o, [&] { return s.clock; });
  EXPECT_EQ(r[0].cold.stop, "timed_out");
  EXPECT_GT(r[0].cold.discarded, 0);
}

TEST(timing, cold_stops_with_a_converged_hot_series_when_asked) {
  timing_options o = quick(hot_mode::always);
  o.stopping.timeout_s = 0.5;
  fake_sampler noisy;
  noisy.durations = {{"a", 5e-6}};
  noisy.cold_jitter = 0.3;  // cold never converges; hot (constant) does
  auto r = time_interleaved(noisy, {make_impl(noisy, "a")}, o, [&] { return noisy.clock; });
  ASSERT_TRUE(r[0].hot.has_value());
  EXPECT_EQ(r[0].hot->stop, "converged");
  EXPECT_EQ(r[0].cold.stop, "timed_out");

  o.cold_follows_hot = true;
  fake_sampler follows;
  follows.durations = {{"a", 5e-6}};
  follows.cold_jitter = 0.3;
  auto f = time_interleaved(follows, {make_impl(follows, "a")}, o, [&] { return follows.clock; });
  EXPECT_EQ(f[0].hot->stop, "converged");
  EXPECT_EQ(f[0].cold.stop, "follows_hot");
  EXPECT_EQ(f[0].cold.samples_us.size(), 10u);  // min_samples, then it stopped with hot
  EXPECT_LT(f[0].cold.samples_us.size(), r[0].cold.samples_us.size());
}

// A race against a known time: a slower implementation stops at min_samples instead of running to its timeout;
// one within the margin, or faster, keeps going until it converges.
TEST(timing, an_implementation_that_lost_the_race_stops_at_min_samples) {
  timing_options o = quick();
  o.stopping.timeout_s = 0.5;
  o.race_s = 10e-6;
  fake_sampler s;
  s.durations = {{"slow", 11e-6}, {"close", 10.1e-6}, {"fast", 9e-6}};
  o.stopping.min_seconds = 1e9;  // nothing converges: without the race everything runs to the timeout
  auto r = time_interleaved(s, {make_impl(s, "slow"), make_impl(s, "close"), make_impl(s, "fast")}, o,
                            [&] { return s.clock; });
  EXPECT_EQ(r[0].cold.stop, "lost_race");
  EXPECT_EQ(r[0].cold.samples_us.size(), 10u);
  EXPECT_DOUBLE_EQ(r[0].cold.summary().median, 11);  // still a time for the tree, from min_samples
  EXPECT_EQ(r[1].cold.stop, "timed_out");  // 1 % slower is inside the 3 % margin: a contender
  EXPECT_EQ(r[2].cold.stop, "timed_out");
  EXPECT_GT(r[2].cold.samples_us.size(), 10u);

  // Judged on hot samples: the hot series decides, and both series stop.
  timing_options h = quick(hot_mode::always);
  h.stopping.timeout_s = 0.5;
  h.stopping.min_seconds = 1e9;  // neither series can converge
  h.race_s = 4e-6;
  h.race_hot = true;
  fake_sampler hs;
  hs.durations = {{"slow", 5e-6}};
  hs.cold_jitter = 0.3;
  auto hr = time_interleaved(hs, {make_impl(hs, "slow")}, h, [&] { return hs.clock; });
  ASSERT_TRUE(hr[0].hot.has_value());
  EXPECT_EQ(hr[0].hot->stop, "lost_race");
  EXPECT_EQ(hr[0].cold.stop, "lost_race");
  EXPECT_EQ(hr[0].hot->samples_us.size(), 10u);

  // Judged on hot samples, but this implementation has no hot loop: its cold series is what is raced.
  fake_sampler cs;
  cs.hot_unavailable = true;
  cs.durations = {{"slow", 5e-6}};
  auto cr = time_interleaved(cs, {make_impl(cs, "slow")}, h, [&] { return cs.clock; });
  EXPECT_FALSE(cr[0].hot.has_value());
  EXPECT_EQ(cr[0].cold.stop, "lost_race");
  EXPECT_EQ(cr[0].cold.samples_us.size(), 10u);

  // A loaded machine: the timeout falls due before min_samples are in. The loser still stops at min_samples and
  // says it lost rather than that it timed out (the search counts lost races; CI once saw "timed_out" here).
  timing_options late = quick();
  late.stopping.timeout_s = 2e-3;  // two samples in (each moves the fake clock 1 ms), far from the 10x cap
  late.stopping.min_seconds = 1e9;
  late.race_s = 10e-6;
  fake_sampler ls;
  ls.durations = {{"slow", 11e-6}};
  auto lr = time_interleaved(ls, {make_impl(ls, "slow")}, late, [&] { return ls.clock; });
  EXPECT_EQ(lr[0].cold.stop, "lost_race");
  EXPECT_EQ(lr[0].cold.samples_us.size(), 10u);
}

TEST(timing, race_of_a_case_from_the_stopping_object) {
  nlohmann::json j = {{"min_samples", 5}, {"race", {{"N=1", {{"us", 12.5}, {"hot", true}}}}}};
  timing_options base = timing_options_from_json(j);
  EXPECT_EQ(base.race_s, 0);  // no case picked yet
  timing_options c = race_for(base, j, "N=1");
  EXPECT_DOUBLE_EQ(c.race_s, 12.5e-6);
  EXPECT_TRUE(c.race_hot);
  EXPECT_EQ(c.stopping.min_samples, 5);
  EXPECT_EQ(race_for(base, j, "N=2").race_s, 0);
  EXPECT_THROW(timing_options_from_json({{"race", 3}}), std::invalid_argument);
  EXPECT_THROW(race_for(base, {{"race", {{"N=1", {{"us", "fast"}}}}}}, "N=1"), std::invalid_argument);
}

TEST(timing, options_from_json) {
  timing_options o = timing_options_from_json(
      {{"min_samples", 3}, {"max_noise", 0.02}, {"min_seconds", 0.1}, {"timeout_s", 5}, {"hot", "auto"}});
  EXPECT_EQ(o.stopping.min_samples, 3);
  EXPECT_DOUBLE_EQ(o.stopping.max_noise, 0.02);
  EXPECT_EQ(o.hot, hot_mode::automatic);
  EXPECT_EQ(timing_options_from_json({{"hot", false}}).hot, hot_mode::never);
  EXPECT_EQ(timing_options_from_json(nullptr).stopping.min_samples, 10);
  EXPECT_THROW(timing_options_from_json({{"min_samples", 0}}), std::invalid_argument);
  EXPECT_THROW(timing_options_from_json({{"hot", "sometimes"}}), std::invalid_argument);
  EXPECT_TRUE(timing_options_from_json({{"cold_follows_hot", true}}).cold_follows_hot);
  EXPECT_FALSE(timing_options_from_json(nullptr).cold_follows_hot);
  EXPECT_THROW(timing_options_from_json({{"cold_follows_hot", 1}}), std::invalid_argument);
}

TEST(timing, json_round_trip) {
  impl_timing t;
  t.impl = "eager";
  t.cold.samples_us = {3, 4, 5};
  t.cold.discarded = 2;
  t.cold.stop = "converged";
  t.hot.emplace();
  t.hot->samples_us = {1, 1.5};
  t.hot->launches_per_sample = 300;
  nlohmann::json j = to_json(t);
  EXPECT_DOUBLE_EQ(j["cold"]["median_us"].get<double>(), 4);
  impl_timing back = impl_timing_from_json(j);
  EXPECT_EQ(back.cold.samples_us, t.cold.samples_us);
  EXPECT_EQ(back.cold.discarded, 2);
  ASSERT_TRUE(back.hot.has_value());
  EXPECT_EQ(back.hot->launches_per_sample, 300);
}

TEST(timing, cpu_sampler_times_a_real_workload) {
  cpu_sampler s;
  EXPECT_GT(s.flush_bytes(), 0);
  std::vector<float> v(4096, 1.0f);
  volatile float sink = 0;
  timed_impl work{"sum", [&](void*) {
                    sink = std::accumulate(v.begin(), v.end(), 0.0f);
                    return 0;
                  }};
  timing_options o;
  o.stopping = {.min_samples = 10, .max_noise = 0.005, .min_seconds = 0, .timeout_s = 0.5};
  o.hot = hot_mode::always;
  auto r = time_interleaved(s, {work, {"empty", s.empty_launch()}}, o);
  for (const auto& t : r) {
    EXPECT_GE(t.cold.samples_us.size(), 10u) << t.impl;
    EXPECT_EQ(t.cold.discarded, 0);
    ASSERT_TRUE(t.hot.has_value()) << t.impl;
    EXPECT_GE(t.hot->launches_per_sample, 1);
    EXPECT_GT(t.cold.summary().min, 0) << t.impl;
  }
  EXPECT_DOUBLE_EQ(sink, 4096.0f);
  EXPECT_GT(s.copy_bandwidth_gbs(), 0);
  EXPECT_EQ(s.environment()["device"], "cpu");
}

TEST(timing, llc_size_from_sysfs_layout) {
  temp_dir d;
  write_file_atomic(d.path() / "index0/level", "1\n");
  write_file_atomic(d.path() / "index0/size", "48K\n");
  write_file_atomic(d.path() / "index3/level", "3\n");
  write_file_atomic(d.path() / "index3/size", "36864K\n");
  write_file_atomic(d.path() / "index2/level", "2\n");
  write_file_atomic(d.path() / "index2/size", "2M\n");
  EXPECT_EQ(last_level_cache_bytes(d.path().string()), 36864LL << 10);
  EXPECT_EQ(last_level_cache_bytes((d.path() / "missing").string()), 0);
}

TEST(timing, nvml_absent_is_said_not_fatal) {
  nvml_clocks n("0000:00:00.0", "libkforge-no-such-nvml.so.1");
  EXPECT_FALSE(n.available());
  EXPECT_NE(n.why_not().find("cannot load libkforge-no-such-nvml.so.1"), std::string::npos);
  EXPECT_FALSE(n.sm_clock_mhz().has_value());
}

TEST(timing, floors_take_the_larger) {
  // 1 GB at 1000 GB/s = 1000 us: bandwidth-bound.
  floor_info f = make_floor(unavoidable_bytes(0.5e9, 0.25e9, 1.5), 1000, 3.5, 0.9);
  EXPECT_DOUBLE_EQ(f.bytes, 1e9);
  EXPECT_NEAR(f.bandwidth_floor_us, 1000, 1e-9);
  EXPECT_NEAR(f.floor_us, 1000, 1e-9);
  // 1 KB: launch-bound.
  floor_info g = make_floor(1000, 1000, 3.5, 0.9);
  EXPECT_DOUBLE_EQ(g.floor_us, 3.5);
  EXPECT_DOUBLE_EQ(g.floor_hot_us, 0.9);
  EXPECT_DOUBLE_EQ(floor_fraction(3.5, 7), 0.5);
  EXPECT_DOUBLE_EQ(floor_info_from_json(to_json(g)).floor_hot_us, 0.9);
}

TEST(timing, the_physical_floor_reads_the_inputs_and_the_outputs_the_cache_cannot_hold) {
  // 1.25 GB/s of reads at 1000 GB/s copy bandwidth: 1 GB in, 0.5 GB out of which 0.2 GB stay in a 0.3 GB cache.
  EXPECT_NEAR(physical_floor_us(1e9, 0.5e9, 0.3e9, 1000), 1.2e9 / 1250e9 * 1e6, 1e-6);
  // An output that fits the cache costs nothing; the bound stays below the bandwidth floor.
  EXPECT_NEAR(physical_floor_us(1e9, 0.2e9, 0.3e9, 1000), 800, 1e-6);
  EXPECT_LT(physical_floor_us(1e9, 1e9, 0, 1000), make_floor(2e9, 1000, 1, 1).bandwidth_floor_us);
  floor_info f = make_floor(1e9, 1000, 1, 1);
  f.physical_floor_us = 123;
  EXPECT_DOUBLE_EQ(floor_info_from_json(to_json(f)).physical_floor_us, 123);
}

}  // namespace
}  // namespace kf::measure
