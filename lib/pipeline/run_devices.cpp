// `kforge run` over several devices (runner.h, docs/design.md "Several devices"): one thread per device takes
// workloads from a shared queue, runs each whole on its device, and the results are put back in the specs' order.
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "pipeline/device_list.h"
#include "pipeline/runner.h"
#include "util/error.h"
#include "util/time.h"

namespace kf {
using json = nlohmann::json;

namespace {

struct device_slot {
  std::string name;
  run_backend* backend = nullptr;
  json env;          // its worker's env answer
  std::string key;   // its GPU key
  std::string lost;  // why it was taken out; empty while it works
  int finished = 0;  // workloads it finished
  run_env clocks;    // the clocks its timings last reported
  std::exception_ptr start_error;
};

// The names the reports give the devices: the given one, else the worker's, else "device N".
void name_devices(std::vector<device_slot>& slots) {
  for (size_t d = 0; d < slots.size(); ++d) {
    if (!slots[d].name.empty()) continue;
    slots[d].name = slots[d].env.is_object() ? slots[d].env.value("device", "") : "";
    if (slots[d].name.empty()) slots[d].name = fmt::format("device {}", d + 1);
  }
}

// Every device's worker starts and says where it is, all at once (a worker's start loads LibTorch and CUDA).
// One that cannot start is lost before the run; all of them: the first one's error is the run's, as with one.
void start_devices(std::vector<device_slot>& slots) {
  auto start = [](device_slot& s) {
    try {
      s.env = s.backend->env();
      s.key = key_of_env(s.env);
    } catch (...) { s.start_error = std::current_exception(); }
  };
  if (slots.size() == 1) {
    start(slots[0]);
  } else {
    std::vector<std::thread> threads;
    for (auto& s : slots) threads.emplace_back(start, std::ref(s));
    for (auto& t : threads) t.join();
  }
  name_devices(slots);
  size_t started = 0;
  for (auto& s : slots) {
    if (!s.start_error) {
      ++started;
      continue;
    }
    try {
      std::rethrow_exception(s.start_error);
    } catch (const std::exception& e) { s.lost = fmt::format("its worker could not start: {}", e.what()); }
  }
  if (started == 0) std::rethrow_exception(slots[0].start_error);
  // The history, the stored kernels and the baselines' packages are all per GPU key: one run, one key.
  std::vector<std::string> names, keys;
  for (auto& s : slots)
    if (s.lost.empty()) names.push_back(s.name), keys.push_back(s.key);
  check_one_gpu_key(names, keys, "results and history are kept per GPU key, so one run uses devices of one key");
}

// The queue the device threads share, and what they found.
class scheduler {
 public:
  scheduler(const std::vector<workload_spec>& specs, std::vector<device_slot>& slots, const std::string& key,
            const run_history& history, git_repo* repo, const run_options& o)
      : m_specs(specs),
        m_slots(slots),
        m_key(key),
        m_history(history),
        m_repo(repo),
        m_o(o),
        m_results(specs.size()),
        m_failed_on(specs.size()),
        m_last_failure(specs.size()) {
    for (size_t i = 0; i < specs.size(); ++i) m_queue.push_back(i);
  }

  void run() {
    std::vector<size_t> live;
    for (size_t d = 0; d < m_slots.size(); ++d)
      if (m_slots[d].lost.empty()) live.push_back(d);
    if (live.size() == 1) return device_loop(live[0]);  // one device: on this thread, as before
    std::vector<std::thread> threads;
    for (size_t d : live) threads.emplace_back([this, d] { device_loop(d); });
    for (auto& t : threads) t.join();
  }

  // The results in the specs' order, gated; the run incomplete when interrupted or when every device was lost.
  void finish(run_result& r) {
    bool any_left = false;
    for (auto& s : m_slots) any_left = any_left || s.lost.empty();
    size_t done = 0;
    for (auto& w : m_results) done += w.has_value();
    if (!any_left) {
      std::vector<std::string> why;
      for (auto& s : m_slots) why.push_back(fmt::format("{}: {}", s.name, s.lost));
      r.complete = false;
      r.incomplete_reason = fmt::format("every device was lost ({}); {} of {} workloads did not finish",
                                        fmt::join(why, "; "), m_specs.size() - done, m_specs.size());
      for (size_t i : m_queue)  // a workload its device was lost under, with no device left to run it again
        if (m_last_failure[i]) {
          m_results[i] = std::move(*m_last_failure[i]);
          m_results[i]->error += " (its device was lost and no device was left to run it again)";
        }
    } else if (m_interrupted) {
      r.complete = false;
      r.incomplete_reason = fmt::format("interrupted after {} of {} workloads", done, m_specs.size());
    }
    for (size_t i = 0; i < m_specs.size(); ++i) {
      if (!m_results[i]) continue;
      pipeline::gate_workload(*m_results[i], m_specs[i], m_history, m_o);
      r.workloads.push_back(std::move(*m_results[i]));
    }
    // The clocks the last timed workload's device reported, as one device's run keeps its last.
    for (const auto& w : r.workloads)
      for (auto& s : m_slots)
        if (!w.cases.empty() && s.name == w.device && s.clocks.sm_clock_mhz > 0) {
          r.env.sm_clock_mhz = s.clocks.sm_clock_mhz;
          r.env.mem_clock_mhz = s.clocks.mem_clock_mhz;
        }
    for (auto& s : m_slots) r.env.devices.push_back({s.name, s.lost, s.finished});
  }

 private:
  void device_loop(size_t d) {
    device_slot& slot = m_slots[d];
    run_options o = m_o;  // progress lines name the device when there are several
    if (m_o.progress && m_slots.size() > 1)
      o.progress = [this, &slot](const std::string& line) {
        std::lock_guard lock(m_say);
        m_o.progress(slot.name + ": " + line);
      };
    for (;;) {
      size_t i = 0;
      {
        std::unique_lock lock(m_mutex);
        // An empty queue with work in flight may still get a workload back from a device that is lost.
        m_changed.wait(lock, [&] { return m_stopping || !m_queue.empty() || m_in_flight == 0; });
        if (m_stopping || m_queue.empty()) return;
        if (m_o.stop_requested && m_o.stop_requested()) {  // Ctrl-C: every device stops after its workload
          m_stopping = m_interrupted = true;
          m_changed.notify_all();
          return;
        }
        i = m_queue.front();
        m_queue.pop_front();
        ++m_in_flight;
      }
      const workload_spec& spec = m_specs[i];
      if (o.progress) o.progress(fmt::format("[{}/{}] {}", i + 1, m_specs.size(), spec.name));
      workload_result w;
      try {
        w = run_one(spec, *slot.backend, m_key, m_history.base_commit, m_repo, o, slot.clocks);
      } catch (const std::exception& e) {
        // One workload's environment failure (a worker that cannot start, an unreadable kernel file) is its
        // error; the others still run.
        w = workload_result{};
        w.name = spec.name;
        w.spec_path = spec.path;
        w.error = e.what();
      }
      w.device = slot.name;
      // An infrastructure failure: is the device still usable, or is the failure the device's?
      std::string broken;
      if (!w.error.empty()) {
        try {
          broken = slot.backend->probe();
        } catch (const std::exception& e) { broken = e.what(); }
      }
      std::unique_lock lock(m_mutex);
      --m_in_flight;
      if (broken.empty()) {
        m_results[i] = std::move(w);
        ++slot.finished;
        m_changed.notify_all();
        continue;
      }
      slot.lost = fmt::format("{} (while running {})", broken, spec.name);
      m_failed_on[i].push_back(fmt::format("{}: {}", slot.name, broken));
      if (m_failed_on[i].size() >= 2) {  // it took out two devices: the workload, not the devices, is suspect
        w.error = fmt::format("{} devices were lost running it ({}); not tried again", m_failed_on[i].size(),
                              fmt::join(m_failed_on[i], "; "));
        m_results[i] = std::move(w);
      } else {
        m_last_failure[i] = std::move(w);
        m_queue.push_front(i);  // another device runs it next
      }
      if (m_o.progress) {
        std::lock_guard say(m_say);
        m_o.progress(fmt::format("{}: device lost ({}); the other devices go on", slot.name, slot.lost));
      }
      m_changed.notify_all();
      return;
    }
  }

  const std::vector<workload_spec>& m_specs;
  std::vector<device_slot>& m_slots;
  const std::string& m_key;
  const run_history& m_history;
  git_repo* m_repo;
  const run_options& m_o;

  std::mutex m_mutex;  // guards everything below, and the slots' `lost` and `finished`
  std::condition_variable m_changed;
  std::deque<size_t> m_queue;
  size_t m_in_flight = 0;
  bool m_stopping = false, m_interrupted = false;
  std::vector<std::optional<workload_result>> m_results;
  std::vector<std::vector<std::string>> m_failed_on;  // per workload: the devices lost running it, and why
  std::vector<std::optional<workload_result>> m_last_failure;
  std::mutex m_say;  // one progress line at a time
};

}  // namespace

run_result run_workloads(const std::vector<workload_spec>& specs, const std::vector<run_device>& devices,
                         git_repo* repo, const run_options& o) {
  KF_ASSERT(!devices.empty(), "run_workloads without a device");
  std::vector<device_slot> slots;
  for (const auto& d : devices) {
    slots.emplace_back();
    slots.back().name = d.name;
    slots.back().backend = d.backend;
  }
  std::string started = utc_now();
  start_devices(slots);
  const device_slot* first = nullptr;
  for (auto& s : slots)
    if (!first && s.lost.empty()) first = &s;

  run_history history;
  run_result r = pipeline::start_run(specs, *first->backend, first->env, repo, o, history);
  r.env.started_at = started;
  if (slots.size() > 1) {
    std::vector<std::string> names;
    for (auto& s : slots) names.push_back(s.name);
    r.env.device = fmt::format("{}", fmt::join(names, ","));
  }
  if (o.prepare_only) {
    r.env.finished_at = utc_now();
    return r;
  }
  for (auto& s : slots) s.clocks = r.env;
  scheduler run(specs, slots, first->key, history, repo, o);
  run.run();
  run.finish(r);
  apply_false_discovery_control(r, o.gate);
  r.env.finished_at = utc_now();
  return r;
}

}  // namespace kf
