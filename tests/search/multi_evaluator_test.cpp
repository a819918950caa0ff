// The search over several devices (search/multi_evaluator.h) with fake evaluators: a batch is split over the
// devices and each candidate evaluated once, times from a slower device are put on the reference's scale, a device
// that fails is taken out and its candidates finish elsewhere, and losing every device is the one-device error.
// Decisions only: the fakes meet at a rendezvous rather than racing the clock.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "pipeline/device_list.h"
#include "search/multi_evaluator.h"
#include "search/roots.h"
#include "search/search_driver.h"
#include "search_fake_evaluator.h"
#include "search_test_specs.h"
#include "util/error.h"
#include "util/fs.h"

namespace kf {
namespace {

candidate make_candidate(int i, const char* vector_width = "8") {
  candidate c;
  c.family = "row_softmax_cpu";
  c.knobs = {{"vector_width", vector_width}, {"unroll", std::to_string(i)}};
  c.source = "// candidate " + std::to_string(i);
  c.source_hash = c.source;
  c.origin = "test";
  return c;
}

// Each call waits (up to 30 s) until `need` calls have started over every device sharing it: a device cannot take
// a second candidate before the others took their first.
struct rendezvous {
  std::mutex mu;
  std::condition_variable cv;
  int started = 0, need = 2;
  void arrive() {
    std::unique_lock lock(mu);
    ++started;
    cv.notify_all();
    cv.wait_for(lock, std::chrono::seconds(30), [&] { return started >= need; });
  }
};

// A device `factor` times slower than the reference: its baselines and its candidates' times alike.
class scaled_evaluator : public test::fake_evaluator {
 public:
  scaled_evaluator(double factor, rendezvous* meet = nullptr) : m_factor(factor), m_meet(meet) {}
  std::vector<std::string> seen;  // the sources it evaluated
  nlohmann::json baselines() override {
    auto b = fake_evaluator::baselines();
    for (auto& [name, cases] : b.items())
      for (auto& [c, t] : cases.items()) t = t.get<double>() * m_factor;
    return b;
  }
  std::vector<eval_result> evaluate(const std::vector<candidate>& batch, double full_below_us,
                                    double stop_at_s) override {
    if (m_meet) m_meet->arrive();
    for (auto& c : batch) seen.push_back(c.source);
    auto out = fake_evaluator::evaluate(batch, full_below_us * m_factor, stop_at_s);
    for (auto& r : out)
      for (auto& [c, t] : r.case_us) t *= m_factor;
    return out;
  }

 private:
  double m_factor;
  rendezvous* m_meet;
};

// A device whose worker is gone: evaluate() throws as worker_evaluator does when it cannot start one.
class dead_evaluator : public test::fake_evaluator {
 public:
  std::atomic<bool>* called = nullptr;
  std::vector<eval_result> evaluate(const std::vector<candidate>&, double, double) override {
    if (called) *called = true;
    throw infra_error("the cuda:1 worker crashed (SIGSEGV) and could not be started again");
  }
};

TEST(multi_evaluator, a_batch_is_split_over_the_devices_and_each_candidate_evaluated_once) {
  rendezvous meet;
  scaled_evaluator a(1.0, &meet), b(1.0, &meet);
  std::mutex compiled_mu;
  std::map<std::string, int> compiled;  // compiles are shared: each candidate compiled once, whichever device times it
  multi_evaluator_options o;
  o.compile_first = false;  // in the background, as on a GPU: the device waits for its candidate's compile
  o.compile = [&](const std::vector<candidate>& cs) {
    std::lock_guard lock(compiled_mu);
    for (auto& c : cs) ++compiled[c.source];
  };
  multi_evaluator m({{"cpu#1", &a}, {"cpu#2", &b}}, o);
  m.baselines();
  std::vector<candidate> batch;
  for (int i = 0; i < 8; ++i) batch.push_back(make_candidate(i));
  auto out = m.evaluate(batch, std::numeric_limits<double>::infinity(), 0);
  ASSERT_EQ(out.size(), 8u);
  EXPECT_GE(a.seen.size(), 1u);
  EXPECT_GE(b.seen.size(), 1u);
  EXPECT_EQ(a.seen.size() + b.seen.size(), 8u);
  std::map<std::string, int> times;
  for (auto& s : a.seen) ++times[s];
  for (auto& s : b.seen) ++times[s];
  EXPECT_EQ(times.size(), 8u);
  EXPECT_EQ(compiled.size(), 8u);
  for (auto& [src, n] : compiled) EXPECT_EQ(n, 1) << src;
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].status, node_status::measured) << i;
    const std::string dev = out[i].results.value("device", "");
    const auto& seen = dev == "cpu#1" ? a.seen : b.seen;
    EXPECT_NE(std::find(seen.begin(), seen.end(), batch[i].source), seen.end()) << i << " on " << dev;
    for (auto& e : out[i].stages) EXPECT_EQ(e.detail.value("device", ""), dev);  // the search db says where
  }
  EXPECT_EQ(m.devices()[0].evaluations + m.devices()[1].evaluations, 8);
  EXPECT_EQ(m.reference(), "cpu#1");
}

TEST(multi_evaluator, a_candidate_timed_on_a_slower_device_ranks_as_on_the_reference) {
  rendezvous meet;
  scaled_evaluator ref(1.0, &meet), slow(2.0, &meet);
  multi_evaluator m({{"gpu0", &ref}, {"gpu1", &slow}});
  auto base = m.baselines();
  EXPECT_EQ(base["eager"]["c1"], 100.0);  // the reference's baselines are the search's
  EXPECT_EQ(m.scale_baseline(), "eager");
  EXPECT_DOUBLE_EQ(m.devices()[1].scale.at("c1"), 0.5);
  // Two candidates of one landscape point: each device takes one (neither takes a second before the other starts).
  auto out = m.evaluate({make_candidate(1, "16"), make_candidate(2, "16")}, std::numeric_limits<double>::infinity(), 0);
  ASSERT_EQ(ref.seen.size(), 1u);
  ASSERT_EQ(slow.seen.size(), 1u);
  ASSERT_EQ(out[0].case_us.size(), 1u);
  EXPECT_DOUBLE_EQ(out[0].case_us.at("c1"), out[1].case_us.at("c1"));
  EXPECT_DOUBLE_EQ(out[0].case_us.at("c1"), test::fake_evaluator::time_of(make_candidate(1, "16")));
  EXPECT_EQ(out[0].status, out[1].status);  // the full-protocol threshold is scaled too
  const size_t on_slow = out[0].results["device"] == "gpu1" ? 0 : 1;
  EXPECT_DOUBLE_EQ(out[on_slow].results["raw_case_us"]["c1"].get<double>(), 2 * out[on_slow].case_us.at("c1"));
  // confirm runs on the reference, whose times are its own
  auto c = m.confirm(make_candidate(3, "16"));
  EXPECT_EQ(c.results["device"], "gpu0");
  EXPECT_DOUBLE_EQ(c.case_us.at("c1"), out[0].case_us.at("c1"));
}

TEST(multi_evaluator, a_device_that_fails_is_taken_out_and_its_candidates_finish_on_the_other) {
  std::atomic<bool> dead_called{false};
  dead_evaluator dead;
  dead.called = &dead_called;
  struct waiting : scaled_evaluator {  // takes its first candidate only once the dead device has taken one
    std::atomic<bool>* other = nullptr;
    waiting() : scaled_evaluator(1.0) {}
    std::vector<eval_result> evaluate(const std::vector<candidate>& b, double f, double s) override {
      for (int i = 0; i < 3000 && !*other; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return scaled_evaluator::evaluate(b, f, s);
    }
  } alive;
  alive.other = &dead_called;
  multi_evaluator m({{"cuda:1", &dead}, {"cuda:2", &alive}});
  m.baselines();
  std::vector<candidate> batch;
  for (int i = 0; i < 4; ++i) batch.push_back(make_candidate(i));
  auto out = m.evaluate(batch, std::numeric_limits<double>::infinity(), 0);
  ASSERT_TRUE(dead_called);
  EXPECT_EQ(alive.seen.size(), 4u);
  for (auto& r : out) {
    EXPECT_EQ(r.status, node_status::measured);
    EXPECT_EQ(r.results["device"], "cuda:2");
  }
  EXPECT_TRUE(m.devices()[0].lost);
  EXPECT_NE(m.devices()[0].why_lost.find("crashed (SIGSEGV)"), std::string::npos) << m.devices()[0].why_lost;
  EXPECT_FALSE(m.devices()[1].lost);
  EXPECT_EQ(m.devices()[1].evaluations, 4);
  // The reference was lost: the winner is confirmed on the device that is left.
  EXPECT_EQ(m.reference(), "cuda:2");
  EXPECT_EQ(m.confirm(make_candidate(9)).results["device"], "cuda:2");
}

// A device that fails every candidate and then cannot time its baselines (a poisoned context) is taken out after
// a few in a row; those candidates are evaluated again on the other device.
TEST(multi_evaluator, a_device_failing_in_a_row_whose_probe_fails_is_taken_out) {
  struct poisoned : test::fake_evaluator {
    std::atomic<int> evaluated{0};
    std::atomic<bool> lost{false};
    int baseline_calls = 0;
    nlohmann::json baselines() override {
      return ++baseline_calls == 1 ? fake_evaluator::baselines() : nlohmann::json::object();
    }
    std::vector<eval_result> evaluate(const std::vector<candidate>& batch, double, double) override {
      std::vector<eval_result> out(batch.size());
      for (auto& r : out) {
        r.status = node_status::verify_failed;
        r.detail = "the worker crashed (SIGSEGV) while timing";
      }
      ++evaluated;
      return out;
    }
  } bad;
  struct waiting : scaled_evaluator {  // starts once the poisoned device has failed three
    poisoned* other = nullptr;
    waiting() : scaled_evaluator(1.0) {}
    std::vector<eval_result> evaluate(const std::vector<candidate>& b, double f, double s) override {
      for (int i = 0; i < 3000 && other->evaluated < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return scaled_evaluator::evaluate(b, f, s);
    }
  } good;
  good.other = &bad;
  multi_evaluator m({{"cuda:0", &good}, {"cuda:1", &bad}});
  m.baselines();
  std::vector<candidate> batch;
  for (int i = 0; i < 6; ++i) batch.push_back(make_candidate(i));
  auto out = m.evaluate(batch, std::numeric_limits<double>::infinity(), 0);
  EXPECT_EQ(bad.evaluated, 3);
  EXPECT_TRUE(m.devices()[1].lost);
  EXPECT_NE(m.devices()[1].why_lost.find("3 candidates in a row failed"), std::string::npos) << m.devices()[1].why_lost;
  EXPECT_EQ(good.seen.size(), 6u);
  for (auto& r : out) EXPECT_EQ(r.status, node_status::measured) << r.detail;
  EXPECT_EQ(m.devices()[0].evaluations, 6);
  EXPECT_EQ(m.devices()[1].evaluations, 0);
}

// The search loop over two devices: it finds the same best as on one. Both searches get the same seed and budget,
// and the slower device's times come back on the reference's scale, so the tree sees the same times and the two
// runs choose the same candidates: the winner is compared with the one-device run's, not with a fixed landscape
// point that only some proposer seeds reach within the budget (1 of 6 in 40 evaluations, 4 of 5 in 100, once
// row_softmax_cpu gained `split` and its moves reshuffled the proposer's order).
TEST(multi_evaluator, the_search_over_two_devices_finds_the_best) {
  auto spec = test::softmax_spec();
  spec.hash = "h1";
  search_options o;
  o.budget = 40;
  o.batch = 4;
  // Two roots (the default and a tried variant), so the first batch has a candidate for each device.
  auto roots = search_roots(spec, device_kind::cpu, "cpu-x86-64", "/nonexistent").roots;
  for (auto& c : tried_roots(spec, device_kind::cpu, "vector_width=4")) roots.push_back(c);
  auto search = [&](evaluator& ev, const char* name) {
    temp_dir dir(name);
    search_db db(dir.path() / "search.db");
    return search_driver(spec, device_kind::cpu, "cpu-x86-64", db, ev, o).run(roots);
  };
  scaled_evaluator solo(1.0);
  const auto one = search(solo, "kf-search-one");
  rendezvous meet;  // the first batch is split over both devices (the fast one would take every candidate)
  scaled_evaluator a(1.0, &meet), b(3.0, &meet);
  multi_evaluator m({{"cpu#1", &a}, {"cpu#2", &b}});
  const auto two = search(m, "kf-search-multi");
  ASSERT_TRUE(one.winner.has_value()) << one.stop_reason;
  ASSERT_TRUE(two.winner.has_value()) << two.stop_reason;
  EXPECT_EQ(two.winner->cand.knobs, one.winner->cand.knobs);
  EXPECT_NEAR(*two.winner->time_us, *one.winner->time_us, 1e-9);  // on the reference's scale
  EXPECT_LT(*two.winner->time_us, 0.9 * one.trajectory.front()) << "the search improved on its first candidate";
  EXPECT_GT(a.seen.size(), 0u);
  EXPECT_GT(b.seen.size(), 0u) << "both devices took candidates";
  EXPECT_EQ(m.devices()[0].evaluations + m.devices()[1].evaluations, static_cast<int>(a.seen.size() + b.seen.size()));
  EXPECT_TRUE(two.winner->results.contains("device"));
}

TEST(multi_evaluator, every_device_lost_stops_with_the_one_device_error) {
  dead_evaluator a, b;
  multi_evaluator m({{"cuda:0", &a}, {"cuda:1", &b}});
  m.baselines();
  try {
    m.evaluate({make_candidate(0), make_candidate(1)}, std::numeric_limits<double>::infinity(), 0);
    FAIL() << "no error with every device lost";
  } catch (const infra_error& e) {
    EXPECT_NE(std::string(e.what()).find("could not be started again"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(m.devices()[0].lost && m.devices()[1].lost);
  EXPECT_THROW(m.confirm(make_candidate(2)), infra_error);
}

TEST(multi_evaluator, devices_of_different_gpu_keys_are_refused) {
  EXPECT_NO_THROW(check_one_gpu_key({"cuda:0", "cuda:1"}, {"sm90-nvidia-h200", "sm90-nvidia-h200"}, "one key"));
  try {
    check_one_gpu_key({"cuda:0", "cuda:1"}, {"sm90-nvidia-h200", "sm80-nvidia-a100"}, "one key");
    FAIL() << "differing keys accepted";
  } catch (const user_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--devices"), std::string::npos) << m;
    EXPECT_NE(m.find("sm80-nvidia-a100 on cuda:1"), std::string::npos) << m;
    EXPECT_NE(m.find("sm90-nvidia-h200 on cuda:0"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace kf
