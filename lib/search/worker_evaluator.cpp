#include "search/worker_evaluator.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <map>

#include <fmt/format.h>

#include "gate/gate.h"
#include "measure/stats.h"
#include "pipeline/case_results.h"
#include "pipeline/measure_call.h"
#include "spec/baseline_registry.h"
#include "util/error.h"
#include "util/text.h"
#include "verify/check.h"
#include "verify/static_scan.h"

namespace kf {
namespace {

double median(const std::vector<double>& v) { return v.empty() ? std::nan("") : stats::median(v); }

// The time a result stands for: the hot samples' median when there are any (short kernels) and hot is allowed,
// else cold's.
double result_us(const pipeline::timed& r, bool allow_hot = true) {
  return median(allow_hot && !r.hot.empty() ? r.hot.samples_us : r.cold.samples_us);
}

}  // namespace

worker_evaluator::worker_evaluator(const workload_spec& spec, worker_evaluator_options options)
    : m_spec(spec), m_options(std::move(options)),
      m_compiler([this] {
        compile_options co;
        co.cache_root = m_options.cache_root;
        co.jobs = m_options.jobs;
        return co;
      }()) {
  worker_options wo;
  wo.device = m_options.device;
  m_worker = std::make_unique<worker_client>(wo);
  std::string kind(device_kind_name(m_options.device.kind));
  for (auto& c : spec.cases) {
    if (!c.runs_on(kind)) continue;
    m_all.push_back(c.name);
    if (c.gate) m_gated.push_back(c.name);
  }
  if (m_all.empty()) throw user_error(fmt::format("{}: no case runs on the {} device", spec.path.empty() ? spec.name : spec.path, kind));
  if (m_gated.empty()) throw user_error(fmt::format("{}: no gated case runs on the {} device (the search times gated cases)",
                                                    spec.path.empty() ? spec.name : spec.path, kind));
}

worker_evaluator::~worker_evaluator() = default;

worker_outcome worker_evaluator::request(nlohmann::json req, std::chrono::seconds timeout) {
  return m_worker->request(std::move(req), std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
}

nlohmann::json worker_evaluator::environment() {
  if (m_env.is_null() || m_env.empty()) {
    auto o = request({{"cmd", "env"}}, std::chrono::seconds(120));
    if (o.ok() && o.response.value("ok", false)) m_env = o.response["env"];
  }
  return m_env;
}

// Each baseline that runs on this device, by its parent side (spec/baseline_registry.h), as a protocol impl
// object; one that cannot be timed here (no package exported) is left out, and `names` gets those kept.
std::vector<pipeline::impl_request> worker_evaluator::baseline_impls(std::vector<std::string>* names) const {
  std::vector<pipeline::impl_request> impls;
  std::string kind(device_kind_name(m_options.device.kind));
  baseline_preparers sides({kind, m_options.cache_root});
  for (auto& b : m_options.baselines) {
    const baseline* d = find_baseline(b);
    if (!d || !d->runs_on(kind)) continue;
    nlohmann::json impl = sides.impl(b, m_spec, m_gated, m_options.gpu_key);
    if (baseline_skipped(impl)) continue;
    impls.push_back({impl});
    if (names) names->push_back(b);
  }
  return impls;
}

nlohmann::json worker_evaluator::baselines() {
  nlohmann::json out = nlohmann::json::object();
  pipeline::measure_request q;
  q.spec = &m_spec;
  q.cases = m_gated;
  q.impls = baseline_impls(nullptr);
  q.stopping = pipeline::stopping_rules::from_json(m_options.full_stopping);
  if (q.impls.empty()) return out;
  auto call = pipeline::call_measure(*m_worker, q, m_options.measure_timeout);
  if (!call.ok()) return out;  // no baseline: rewards fall back (evaluator.h)
  if (!call.reply.env.is_null()) m_env = call.reply.env;
  // Compare like with like, as `kforge run` does (measure/compare.h): a case is judged on hot samples only when
  // every baseline has them (a long baseline is timed cold only), so the candidate is then judged cold too.
  m_case_hot.clear();
  for (auto& r : call.reply.results)
    if (r.ok()) m_case_hot[r.case_name] = call.reply.compares_hot(r.case_name);
  for (auto& r : call.reply.results) {
    if (!r.ok()) continue;
    double t = result_us(r, m_case_hot[r.case_name]);
    if (std::isfinite(t) && t > 0) out[r.impl][r.case_name] = t;
  }
  return out;
}

bool worker_evaluator::verify(const compile_result& cr, const std::vector<std::string>& cases, eval_result& r,
                              const char* stage, int seeds) {
  // Case by case through exec's verify_in_worker: a hang or crash is pinned to its case.
  auto t0 = std::chrono::steady_clock::now();
  nlohmann::json impl = {{"kind", "kernel"}, {"name", "candidate"}, {"so", cr.so_path}};
  verdict v = verify_in_worker(m_spec, impl, *m_worker, check_options_for(cases, seeds), &m_verify_steps);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  evaluation_row e{stage, v.passed(), {{"verdict", v.to_json()}, {"cases", cases}}, secs, {}};
  if (!e.ok) {
    r.detail = v.first_failure();
    if (r.detail.empty()) r.detail = "verification proved nothing (no checks ran)";
    e.detail["error"] = r.detail;
    r.status = node_status::verify_failed;
  }
  r.stages.push_back(std::move(e));
  return r.stages.back().ok;
}

check_options worker_evaluator::check_options_for(const std::vector<std::string>& cases, int seeds) const {
  check_options co;
  co.cases = cases;
  co.seeds = seeds;
  co.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(m_options.verify_timeout);
  return co;
}

void worker_evaluator::warm_inputs() {
  m_warmed = true;
  auto t0 = std::chrono::steady_clock::now();
  try {
    std::map<std::string, double> steps;  // not the candidates' verification: kept out of m_verify_steps
    verify_in_worker(m_spec, {{"kind", "eager"}, {"name", "eager"}}, *m_worker, check_options_for(m_all, m_options.seeds),
                     &steps);
  } catch (const std::exception&) {
    // Only a head start: the first candidate draws the inputs itself.
  }
  m_warm_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool worker_evaluator::judged_hot(const std::string& c) const {
  auto it = m_case_hot.find(c);
  return it == m_case_hot.end() || it->second;
}

bool worker_evaluator::measure(const compile_result& cr, const nlohmann::json& stopping, eval_result& r,
                               const char* stage, bool race) {
  // When every gated case is judged on hot samples, the cold ones need not converge (only their count matters).
  nlohmann::json stop = stopping;
  const bool all_hot = !m_case_hot.empty() && std::all_of(m_gated.begin(), m_gated.end(), [&](const std::string& c) {
    auto it = m_case_hot.find(c);
    return it != m_case_hot.end() && it->second;
  });
  if (all_hot) stop["cold_follows_hot"] = true;
  if (race && m_options.race)
    for (auto& [c, us] : m_fastest_us) stop["race"][c] = {{"us", us}, {"hot", judged_hot(c)}};
  pipeline::measure_request q;
  q.spec = &m_spec;
  q.cases = m_gated;
  q.impls = {pipeline::impl_request::kernel("candidate", cr.so_path)};
  q.stopping = pipeline::stopping_rules::from_json(stop);
  auto call = pipeline::call_measure(*m_worker, q, m_options.measure_timeout);
  evaluation_row e{stage, false, nlohmann::json::object(), call.outcome.seconds, {}};
  r.case_us.clear();
  if (call.ok()) {
    for (auto& res : call.reply.results) {
      if (!res.error.empty()) {
        r.detail = fmt::format("failed while timed on case {}: {}", res.case_name, nlohmann::json(res.error).dump());
        continue;
      }
      double t = result_us(res, judged_hot(res.case_name));
      if (!std::isfinite(t) || t <= 0) continue;
      r.case_us[res.case_name] = t;
      if (res.lost_race()) e.detail["lost_race"].push_back(res.case_name);
      if (!res.cold.empty()) e.samples.push_back({"candidate", res.case_name, "cold", res.cold.samples_us});
      if (!res.hot.empty()) e.samples.push_back({"candidate", res.case_name, "hot", res.hot.samples_us});
    }
    if (!call.reply.floors.empty()) e.detail["floor"] = call.reply.floors;
    if (!call.reply.env.is_null()) m_env = call.reply.env;
  } else {
    r.detail = call.outcome.ok() ? fmt::format("measure: {}", call.reply.error.empty() ? "failed" : call.reply.error)
                                 : fmt::format("the worker {} while timing", call.outcome.describe());
  }
  e.ok = r.case_us.size() == m_gated.size();
  if (!e.ok && r.detail.empty()) r.detail = "not every gated case was timed";
  if (std::string_view(stage) == "measure") {  // a full measurement: counted, and its times are what later ones race
    ++m_full_measures;
    m_lost_races += e.detail.contains("lost_race");
    if (e.ok)
      for (auto& [c, us] : r.case_us) {
        auto [it, fresh] = m_fastest_us.try_emplace(c, us);
        if (!fresh) it->second = std::min(it->second, us);
      }
  }
  e.detail["case_us"] = r.case_us;
  r.stages.push_back(std::move(e));
  // A kernel that verified but crashes or errs while timed is not a winner either.
  if (!r.stages.back().ok) r.status = node_status::verify_failed;
  return r.stages.back().ok;
}

bool worker_evaluator::scan(const candidate& c, eval_result& r) {
  verdict v;
  add_scan_checks(v, static_scan(c.source, scan_options{m_options.device.kind, m_spec.allow_libraries}));
  evaluation_row e{"static_scan", v.passed(), {{"verdict", v.to_json()}}, 0, {}};
  if (!e.ok) {
    r.detail = v.first_failure();
    r.status = node_status::verify_failed;
  }
  r.stages.push_back(std::move(e));
  return r.stages.back().ok;
}

eval_result worker_evaluator::after_compile(eval_result r, const compile_result& cr, double full_below_us) {
  r.stages.push_back({"compile", cr.ok, cr.to_json(), cr.seconds, {}});
  if (!cr.ok) {
    r.status = node_status::compile_failed;
    r.detail = cr.error.empty() ? "compile error" : cr.error;
    r.results["compile_log"] = tail_text(cr.log, 4000);
    return r;
  }
  if (!verify(cr, {m_gated.front()}, r, "screen_verify", 1)) return r;
  if (!measure(cr, m_options.screen_stopping, r, "screen_measure")) return r;
  r.status = node_status::screened;
  r.results["screen_us"] = r.case_us;
  if (!(geomean_us(r.case_us) < full_below_us)) return r;
  if (!verify(cr, m_all, r, "verify", m_options.seeds)) return r;
  if (!measure(cr, m_options.full_stopping, r, "measure", true)) return r;
  r.status = node_status::measured;
  return r;
}

std::vector<eval_result> worker_evaluator::evaluate(const std::vector<candidate>& batch, double full_below_us,
                                                   double stop_at_s) {
  // The static scan first: a candidate that fails it is neither compiled nor run.
  std::vector<eval_result> scanned(batch.size());
  std::vector<bool> passed(batch.size());
  std::vector<compile_request> reqs;
  for (size_t i = 0; i < batch.size(); ++i)
    if ((passed[i] = scan(batch[i], scanned[i])))
      reqs.push_back({batch[i].source, m_options.device.kind, "sm_90a", {}, fmt::format("candidate{}", i)});
  std::vector<eval_result> out;
  if (m_options.device.kind == device_kind::cuda) {
    // Compile every candidate in the background; time each as soon as its own compile is done.
    std::vector<std::future<compile_result>> jobs;
    for (auto& q : reqs) jobs.push_back(std::async(std::launch::async, [this, q] { return m_compiler.compile(q); }));
    if (!m_warmed) warm_inputs();
    for (size_t i = 0, job = 0; i < batch.size(); ++i) {
      if (!passed[i]) out.push_back(std::move(scanned[i]));
      else if (left_out(i, stop_at_s)) ++job, out.push_back(eval_result{});
      else out.push_back(after_compile(std::move(scanned[i]), jobs[job++].get(), full_below_us));
    }
    return out;  // the futures of candidates left out wait for their compiles here (they run side by side)
  }
  auto compiled = m_compiler.compile_batch(reqs);
  for (size_t i = 0, job = 0; i < batch.size(); ++i) {
    if (!passed[i]) out.push_back(std::move(scanned[i]));
    else if (left_out(i, stop_at_s)) ++job, out.push_back(eval_result{});
    else out.push_back(after_compile(std::move(scanned[i]), compiled[job++], full_below_us));
  }
  return out;
}

eval_result worker_evaluator::confirm(const candidate& c) {
  eval_result r;
  if (!scan(c, r)) return r;
  auto cr = m_compiler.compile({c.source, m_options.device.kind, "sm_90a", {}, "winner"});
  r.stages.push_back({"compile", cr.ok, cr.to_json(), cr.seconds, {}});
  if (!cr.ok) {
    r.status = node_status::compile_failed;
    r.detail = cr.error;
    return r;
  }
  if (!verify(cr, m_all, r, "verify", m_options.seeds)) return r;
  if (!measure(cr, m_options.full_stopping, r, "measure")) return r;
  r.status = node_status::measured;
  return r;
}

evaluator::beside_baselines worker_evaluator::time_beside_baselines(const candidate& winner, const candidate* stored) {
  beside_baselines out;
  auto build = [&](const candidate& c, const char* name) {  // a compile-cache hit: the search compiled it before
    return m_compiler.compile({c.source, m_options.device.kind, "sm_90a", {}, name});
  };
  compile_result w = build(winner, "winner");
  if (!w.ok) {
    out.why = "the winner did not compile again: " + w.error;
    return out;
  }
  pipeline::measure_request q;
  q.spec = &m_spec;
  q.cases = m_gated;
  q.impls.push_back(pipeline::impl_request::kernel("kernel", w.so_path));
  std::vector<std::string> names = {"kernel"}, compared;
  bool with_stored = false;  // the stored kernel compiled and is timed beside the winner
  if (stored) {
    compile_result s = build(*stored, "stored");
    with_stored = s.ok;
    if (s.ok) q.impls.push_back(pipeline::impl_request::kernel("stored", s.so_path)), names.push_back("stored");
  }
  for (auto& impl : baseline_impls(&compared)) q.impls.push_back(impl);
  names.insert(names.end(), compared.begin(), compared.end());
  if (compared.empty()) {
    out.why = "no baseline could be timed beside the winner";
    return out;
  }
  // The run's stopping rule: every series stops once the gate's questions are decided (and the winner's question
  // against the stored kernel), at the latest at the timeout; no race, no noise target.
  q.stopping = pipeline::stopping_rules::from_json(m_options.full_stopping);
  q.stopping.race = nullptr;
  q.stopping.cold_follows_hot = false;
  q.stopping.questions = gate_questions(compared, false, 0);
  if (with_stored)
    q.stopping.questions.push_back({{"a", "kernel"}, {"b", "stored"}, {"threshold", 1.0}});
  auto call = pipeline::call_measure(*m_worker, q, m_options.measure_timeout);
  if (!call.ok()) {
    out.why = "timing the winner beside the baselines: " + call.failure();
    return out;
  }
  if (!call.reply.env.is_null()) m_env = call.reply.env;
  out.cases = pipeline::case_results(call.reply, m_gated, names);
  return out;
}

}  // namespace kf
