// kforge calibrate: see calibrate.h.
#include "pipeline/calibrate.h"

#include <chrono>

#include <fmt/format.h>

#include "gate/gate.h"
#include "measure/stats.h"
#include "report/summarize.h"
#include "store/winners.h"
#include "util/error.h"
#include "util/fs.h"

namespace kf {
using json = nlohmann::json;

namespace {

void say(const calibrate_options& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

sample_series series_of(const json& r, const char* kind) {
  sample_series s;
  if (r.contains(kind) && r[kind].is_object()) s.samples_us = r[kind].value("samples_us", std::vector<double>{});
  return s;
}

// One measure request for one case; the worker's results as impls of a case_result (named as in the request).
case_result measure_case(run_backend& backend, const workload_spec& spec, const std::string& case_name,
                         const json& impls, const json& stopping, double timeout_s) {
  json req = {{"cmd", "measure"}, {"spec", to_json(spec)}, {"impls", impls}, {"cases", {case_name}}, {"stopping", stopping}};
  worker_outcome out = backend.measure(req, std::chrono::seconds(static_cast<int64_t>(timeout_s * 4 + 120)));
  if (!out.ok() || !out.response.value("ok", false))
    throw infra_error(fmt::format("timing {}: {}", case_name,
                                  out.ok() ? out.response.value("error", "the worker said no") : out.describe()));
  case_result c;
  c.name = case_name;
  for (const auto& r : out.response.value("results", json::array())) {
    impl_result i;
    i.impl = r.value("impl", "");
    if (!r.value("error", "").empty()) {
      i.status = impl_status::failed;
      i.why = r.value("error", "");
    }
    i.cold = series_of(r, "cold");
    i.hot = series_of(r, "hot");
    c.impls.push_back(std::move(i));
  }
  summarize_case(c);
  for (const auto& i : c.impls)
    if (i.status == impl_status::failed) throw infra_error(fmt::format("timing {}: {} failed: {}", case_name, i.impl, i.why));
  return c;
}

void calibrate_case(calibration_case& cc, const workload_spec& spec, run_backend& backend, const std::string& so,
                    const calibrate_options& o) {
  auto started = std::chrono::steady_clock::now();
  json stopping = {{"min_samples", o.stopping.min_samples}, {"max_noise", 0.005}, {"min_seconds", 0.05},
                   {"timeout_s", std::min(o.stopping.timeout_s, 3.0)}, {"hot", "auto"}};
  // The kernel alone first: its median sizes the injected delay on the series the gate will compare.
  case_result probe = measure_case(backend, spec, cc.case_name, json::array({{{"kind", "kernel"}, {"name", "kernel"}, {"so", so}}}),
                                   stopping, o.stopping.timeout_s);
  cc.metric = probe.metric;
  cc.kernel_us = probe.find("kernel")->series(probe.metric).stats.median_us;
  cc.delay_us = cc.kernel_us * o.slowdown;

  json questions = gate_questions({}, true, o.threshold);
  json decide = {{"min_samples", o.stopping.min_samples}, {"max_noise", o.stopping.max_noise},
                 {"min_seconds", 0.0},                    {"timeout_s", o.stopping.timeout_s},
                 {"hot", "auto"},                         {"alpha", o.gate.alpha},
                 {"resolution", o.gate.resolution},       {"first_look", o.gate.first_look},
                 {"questions", questions}};
  for (int run = 0; run < o.runs; ++run)
    for (bool slowed : {false, true}) {
      json head = {{"kind", "kernel"}, {"name", "kernel"}, {"so", so}};
      if (slowed) head["delay_us"] = cc.delay_us;
      json impls = json::array({head, {{"kind", "kernel"}, {"name", "base"}, {"so", so}}});
      case_result c = measure_case(backend, spec, cc.case_name, impls, decide, o.stopping.timeout_s);
      const impl_result* base = c.find("base");
      gate_check k = regression_check(c, &base->series(c.metric), "base", "the unchanged kernel", o.threshold, o.gate);
      double ratio = k.numbers.value("ratio", 0.0);
      cc.pairs += k.numbers.value("pairs", 0);
      if (slowed) {
        ++cc.slow_runs;
        cc.detections += k.outcome == check_outcome::failed;
        cc.slow_inconclusive += k.outcome == check_outcome::inconclusive;
        cc.slow_ratios.push_back(ratio);
      } else {
        ++cc.aa_runs;
        cc.false_alarms += k.outcome == check_outcome::failed;
        cc.aa_inconclusive += k.outcome == check_outcome::inconclusive;
        cc.aa_ratios.push_back(ratio);
      }
    }
  cc.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

}  // namespace

int calibration::false_alarms() const {
  int n = 0;
  for (auto& c : cases) n += c.false_alarms;
  return n;
}
int calibration::aa_runs() const {
  int n = 0;
  for (auto& c : cases) n += c.aa_runs;
  return n;
}
int calibration::detections() const {
  int n = 0;
  for (auto& c : cases) n += c.detections;
  return n;
}
int calibration::slow_runs() const {
  int n = 0;
  for (auto& c : cases) n += c.slow_runs;
  return n;
}

calibration calibrate(const std::vector<workload_spec>& specs, run_backend& backend, const calibrate_options& o) {
  calibration cal;
  cal.options = o;
  json env = backend.env();
  cal.gpu_key = env.value("gpu_key", "");
  if (cal.gpu_key.empty()) cal.gpu_key = gpu_key(env);
  cal.device = env.value("device", "");
  for (const auto& spec : specs) {
    winner_lookup found = find_winner(kernels_dir(spec.path, spec.name), cal.gpu_key);
    if (!found.kernel) {
      say(o, fmt::format("{}: {}: skipped", spec.name, found.why));
      continue;
    }
    candidate_check checked = backend.check(spec, read_file(found.kernel->source), spec.name);
    int taken = 0;
    for (const auto& cs : spec.cases) {
      if (!cs.gate || !cs.runs_on(backend.device_kind_name())) continue;
      if (o.max_cases > 0 && taken >= o.max_cases) break;
      ++taken;
      calibration_case cc;
      cc.workload = spec.name;
      cc.case_name = cs.name;
      if (checked.verify.verdict != "passed" || checked.so_path.empty()) {
        cc.error = "the stored kernel does not pass verification: " + checked.verify.why;
      } else {
        say(o, fmt::format("{} [{}]: {} A/A and {} slowed runs", spec.name, cs.name, o.runs, o.runs));
        try {
          calibrate_case(cc, spec, backend, checked.so_path, o);
        } catch (const std::exception& e) {
          cc.error = e.what();
        }
      }
      cal.cases.push_back(std::move(cc));
    }
  }
  return cal;
}

json to_json(const calibration& c) {
  json cases = json::array();
  for (const auto& k : c.cases) {
    json j = {{"workload", k.workload}, {"case", k.case_name}, {"metric", k.metric}, {"kernel_us", k.kernel_us},
              {"delay_us", k.delay_us}, {"aa_runs", k.aa_runs}, {"false_alarms", k.false_alarms},
              {"aa_inconclusive", k.aa_inconclusive}, {"slow_runs", k.slow_runs}, {"detections", k.detections},
              {"slow_inconclusive", k.slow_inconclusive}, {"aa_ratios", k.aa_ratios}, {"slow_ratios", k.slow_ratios},
              {"seconds", k.seconds}, {"pairs", k.pairs}};
    if (!k.error.empty()) j["error"] = k.error;
    cases.push_back(j);
  }
  return {{"schema", "kforge.calibration/1"},
          {"gpu_key", c.gpu_key},
          {"device", c.device},
          {"runs", c.options.runs},
          {"slowdown", c.options.slowdown},
          {"threshold", c.options.threshold},
          {"alpha", c.options.gate.alpha},
          {"false_alarms", c.false_alarms()},
          {"aa_runs", c.aa_runs()},
          {"detections", c.detections()},
          {"slow_runs", c.slow_runs()},
          {"cases", cases}};
}

std::string to_markdown(const calibration& c) {
  std::string s = fmt::format(
      "## kforge calibrate on {}\n\nEach case: {} runs of the kernel against itself (A/A) and {} with a {:.1f}% slowdown "
      "injected, judged with gate.max_regression {:.1f}% at alpha {} by the sequential rule of `kforge run --base`.\n\n"
      "| workload | case | metric | kernel | false alarms | A/A inconclusive | detections | slowed inconclusive | "
      "median A/A ratio | median slowed ratio | s/run |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
      c.gpu_key, c.options.runs, c.options.runs, c.options.slowdown * 100, c.options.threshold * 100, c.options.gate.alpha);
  for (const auto& k : c.cases) {
    if (!k.error.empty()) {
      s += fmt::format("| {} | {} | | | error: {} | | | | | | |\n", k.workload, k.case_name, k.error);
      continue;
    }
    s += fmt::format("| {} | {} | {} | {:.2f} us | {}/{} | {} | {}/{} | {} | {:.4f} | {:.4f} | {:.2f} |\n", k.workload,
                     k.case_name, k.metric, k.kernel_us, k.false_alarms, k.aa_runs, k.aa_inconclusive, k.detections,
                     k.slow_runs, k.slow_inconclusive, k.aa_ratios.empty() ? 0 : stats::median(k.aa_ratios),
                     k.slow_ratios.empty() ? 0 : stats::median(k.slow_ratios),
                     k.aa_runs + k.slow_runs ? k.seconds / (k.aa_runs + k.slow_runs) : 0);
  }
  s += fmt::format("\n**{} false alarms in {} A/A runs; {} detections in {} slowed runs.**\n", c.false_alarms(), c.aa_runs(),
                   c.detections(), c.slow_runs());
  return s;
}

}  // namespace kf
