#include "search/multi_evaluator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "util/error.h"

namespace kf {
namespace {

// The baseline both devices timed that scales are taken from: eager when both have it, else the first in common.
std::string common_baseline(const nlohmann::json& ref, const nlohmann::json& dev) {
  if (!ref.is_object() || !dev.is_object()) return "";
  if (ref.contains("eager") && dev.contains("eager")) return "eager";
  for (auto& [name, cases] : ref.items())
    if (dev.contains(name)) return name;
  return "";
}

}  // namespace

multi_evaluator::multi_evaluator(std::vector<multi_device> devices, multi_evaluator_options options)
    : m_devices(std::move(devices)), m_options(std::move(options)) {
  KF_ASSERT(!m_devices.empty(), "a multi_evaluator needs a device");
  for (auto& d : m_devices) m_state.push_back({d.name});
  m_baselines.resize(m_devices.size(), nlohmann::json::object());
}

size_t multi_evaluator::first_alive() const {
  for (size_t d = 0; d < m_state.size(); ++d)
    if (!m_state[d].lost) return d;
  return m_state.size();
}

std::string multi_evaluator::reference() const {
  size_t d = first_alive();
  return d < m_state.size() ? m_state[d].name : "";
}

void multi_evaluator::lose(size_t d, std::string why, std::exception_ptr e) {
  if (m_state[d].lost) return;
  m_state[d].lost = true;
  m_state[d].why_lost = std::move(why);
  m_last_error =
      e ? e : std::make_exception_ptr(infra_error(fmt::format("{}: {}", m_state[d].name, m_state[d].why_lost)));
}

void multi_evaluator::all_lost() const {
  KF_ASSERT(m_last_error, "every device lost without an error");
  std::rethrow_exception(m_last_error);
}

nlohmann::json multi_evaluator::baselines() {
  // The reference first (its first use may export a baseline's package into the shared cache), the rest together.
  auto time_one = [&](size_t d) {
    try {
      m_baselines[d] = m_devices[d].ev->baselines();
    } catch (const infra_error& e) {
      lose(d, fmt::format("timing the baselines: {}", e.what()), std::current_exception());
    }
  };
  size_t ref = first_alive();
  for (; ref < m_devices.size(); ref = first_alive()) {
    time_one(ref);
    if (!m_state[ref].lost) break;
  }
  if (ref == m_devices.size()) all_lost();
  {
    std::vector<std::thread> threads;
    for (size_t d = ref + 1; d < m_devices.size(); ++d)
      if (!m_state[d].lost) threads.emplace_back(time_one, d);
    for (auto& t : threads) t.join();
  }
  // Scales: per case, the reference's time over this device's, for the baseline both timed.
  const nlohmann::json& r = m_baselines[ref];
  m_scale_by.clear();
  for (size_t d = 0; d < m_devices.size(); ++d) {
    if (m_state[d].lost) continue;
    auto& s = m_state[d].scale;
    s.clear();
    if (d == ref || r.empty()) continue;  // the reference, or nothing to scale by: times as they are
    std::string by = common_baseline(r, m_baselines[d]);
    if (!by.empty() && m_scale_by.empty()) m_scale_by = by;
    if (!by.empty())
      for (auto& [c, t] : r[by].items()) {
        const auto& mine = m_baselines[d][by];
        if (t.is_number() && mine.contains(c) && mine[c].is_number() && mine[c].get<double>() > 0)
          s[c] = t.get<double>() / mine[c].get<double>();
      }
    if (s.empty())
      lose(d, "its baselines could not be timed, so its times cannot be put on the reference device's scale");
  }
  if (!r.empty() && m_scale_by.empty()) m_scale_by = common_baseline(r, r);
  m_calibrated = true;
  return r;
}

void multi_evaluator::calibrate() {
  if (!m_calibrated) baselines();  // a resumed search reads its baselines from the tree: time them here
}

double multi_evaluator::geoscale(size_t d) const {
  const auto& s = m_state[d].scale;
  if (s.empty()) return 1.0;
  double log_sum = 0;
  for (auto& [c, x] : s) log_sum += std::log(x);
  return std::exp(log_sum / static_cast<double>(s.size()));
}

void multi_evaluator::normalize(size_t d, eval_result& r) const {
  r.results["device"] = m_state[d].name;
  for (auto& e : r.stages)
    if (e.detail.is_object() || e.detail.is_null()) e.detail["device"] = m_state[d].name;
  if (r.case_us.empty()) return;
  const auto& s = m_state[d].scale;
  r.results["raw_case_us"] = r.case_us;
  if (s.empty()) return;
  const double mean = geoscale(d);  // a case this device has no baseline time for: the mean of the others
  for (auto& [c, us] : r.case_us) {
    auto it = s.find(c);
    us *= it != s.end() ? it->second : mean;
  }
  r.results["scale"] = s;
}

std::vector<eval_result> multi_evaluator::evaluate(const std::vector<candidate>& batch, double full_below_us,
                                                   double stop_at_s) {
  calibrate();
  std::vector<eval_result> out(batch.size());
  if (batch.empty()) return out;
  if (first_alive() == m_devices.size()) all_lost();
  // Compiles shared: one per candidate, before the devices take them (cpu) or in the background (cuda).
  std::vector<std::shared_future<void>> compiled(batch.size());
  if (m_options.compile && m_options.compile_first) {
    m_options.compile(batch);
  } else if (m_options.compile) {
    for (size_t i = 0; i < batch.size(); ++i)
      compiled[i] = std::async(std::launch::async, [this, c = batch[i]] { m_options.compile({c}); }).share();
  }

  std::mutex mu;
  std::condition_variable cv;
  std::deque<size_t> queue;
  for (size_t i = 0; i < batch.size(); ++i) queue.push_back(i);
  std::vector<int> tries(batch.size(), 0);
  std::vector<std::string> lost_on(batch.size());
  int in_flight = 0, started = 0;

  auto work = [&](size_t d) {
    std::vector<size_t> failed_in_row;  // candidates that failed here in a row (a probe may send them back)
    for (;;) {
      size_t i;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return !queue.empty() || in_flight == 0; });
        if (queue.empty() || m_state[d].lost) return;
        // The time limit: a candidate after the first not started by then stays pending (evaluator.h).
        if (left_out(static_cast<size_t>(started), stop_at_s)) {
          queue.clear();
          cv.notify_all();
          return;
        }
        i = queue.front();
        queue.pop_front();
        ++tries[i];
        ++in_flight;
        ++started;
      }
      if (compiled[i].valid()) compiled[i].wait();
      auto t0 = std::chrono::steady_clock::now();
      std::vector<eval_result> rs;
      std::exception_ptr error, fatal;
      std::string what;
      try {
        rs = m_devices[d].ev->evaluate({batch[i]}, full_below_us / geoscale(d), 0);
        KF_ASSERT(rs.size() == 1, "{} returned {} results for one candidate", m_state[d].name, rs.size());
      } catch (const infra_error& e) {
        error = std::current_exception();
        what = e.what();
      } catch (...) { fatal = std::current_exception(); }
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::unique_lock lock(mu);
      --in_flight;
      auto give_back = [&](size_t j, const std::string& why) {  // once; a second loss fails the candidate
        lost_on[j] += (lost_on[j].empty() ? "" : "; ") + m_state[d].name + ": " + why;
        if (tries[j] < 2) {
          queue.push_back(j);
          return;
        }
        out[j] = eval_result{};
        out[j].status = node_status::verify_failed;
        out[j].detail = fmt::format("every device that evaluated it was lost ({})", lost_on[j]);
        out[j].stages.push_back({"device_lost", false, {{"error", out[j].detail}}, 0, {}});
      };
      if (fatal) {  // not the device's failure: the search stops with it, as on one device
        if (!m_fatal) m_fatal = fatal;
        queue.clear();
        cv.notify_all();
        return;
      }
      if (error) {
        lose(d, what, error);
        give_back(i, what);
        cv.notify_all();
        return;
      }
      eval_result r = std::move(rs.front());
      normalize(d, r);
      m_state[d].busy_s += secs;
      ++m_state[d].evaluations;
      const bool infra_like = is_failure(r.status) && r.status != node_status::compile_failed;
      const std::string detail = r.detail;
      out[i] = std::move(r);
      if (!infra_like) {
        failed_in_row.clear();
        cv.notify_all();
        continue;
      }
      failed_in_row.push_back(i);
      if (static_cast<int>(failed_in_row.size()) < m_options.probe_after_failures || m_baselines[d].empty()) {
        cv.notify_all();
        continue;
      }
      // Several failures in a row: probe the device by timing its baselines again (outside the lock).
      ++in_flight;
      lock.unlock();
      bool alive = true;
      std::exception_ptr probe_error;
      try {
        alive = !m_devices[d].ev->baselines().empty();
      } catch (const infra_error&) {
        alive = false;
        probe_error = std::current_exception();
      } catch (...) { alive = false; }
      lock.lock();
      --in_flight;
      if (alive) {
        failed_in_row.clear();
        cv.notify_all();
        continue;
      }
      const std::string why = fmt::format("{} candidates in a row failed on it ({}) and its baselines no longer time",
                                          failed_in_row.size(), detail);
      lose(d, why, probe_error);
      for (size_t j : failed_in_row)  // their failures may be the device's: evaluated again elsewhere, once
        if (tries[j] < 2) {
          m_state[d].evaluations--;
          give_back(j, why);
        }
      cv.notify_all();
      return;
    }
  };
  std::vector<std::thread> threads;
  for (size_t d = 0; d < m_devices.size(); ++d)
    if (!m_state[d].lost) threads.emplace_back(work, d);
  for (auto& t : threads) t.join();
  if (m_fatal) std::rethrow_exception(std::exchange(m_fatal, nullptr));
  if (first_alive() == m_devices.size()) all_lost();
  return out;
}

eval_result multi_evaluator::confirm(const candidate& c) {
  calibrate();
  for (size_t d = first_alive(); d < m_devices.size(); d = first_alive()) {
    try {
      eval_result r = m_devices[d].ev->confirm(c);
      normalize(d, r);
      return r;
    } catch (const infra_error& e) {
      lose(d, fmt::format("confirming the winner: {}", e.what()), std::current_exception());
    }
  }
  all_lost();
}

nlohmann::json multi_evaluator::environment() {
  for (size_t d = first_alive(); d < m_devices.size(); d = first_alive()) {
    try {
      return m_devices[d].ev->environment();
    } catch (const infra_error& e) {
      lose(d, fmt::format("reporting its environment: {}", e.what()), std::current_exception());
    }
  }
  all_lost();
}

evaluator::beside_baselines multi_evaluator::time_beside_baselines(const candidate& winner, const candidate* stored) {
  for (size_t d = first_alive(); d < m_devices.size(); d = first_alive()) {
    try {
      return m_devices[d].ev->time_beside_baselines(winner, stored);  // one device: compared as measured
    } catch (const infra_error& e) {
      lose(d, fmt::format("timing the winner beside the baselines: {}", e.what()), std::current_exception());
    }
  }
  all_lost();
}

}  // namespace kf
