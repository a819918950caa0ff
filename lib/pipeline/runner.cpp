#include "pipeline/runner.h"

#include <algorithm>
#include <chrono>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "pipeline/case_results.h"
#include "pipeline/measure_call.h"
#include "store/git_repo.h"
#include "store/history.h"
#include "store/winners.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"
#include "util/time.h"

namespace kf {
using json = nlohmann::json;

namespace {

// The device threads share the repository; libgit2 wants one user of a repository at a time.
std::mutex g_repo_mutex;

void say(const run_options& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

void update_env(run_env& env, const json& e) {
  if (!e.is_object()) return;
  if (e.contains("sm_clock_mhz")) env.sm_clock_mhz = e.value("sm_clock_mhz", env.sm_clock_mhz);
  if (e.contains("mem_clock_mhz")) env.mem_clock_mhz = e.value("mem_clock_mhz", env.mem_clock_mhz);
}

}  // namespace

run_env env_from_worker(const json& e, const std::string& gpu_key) {
  run_env env;
  env.gpu_key = gpu_key;
  env.gpu_name = e.value("gpu_name", "");
  env.device = e.value("device", "");
  env.sm_count = e.value("sm_count", 0);
  env.l2_bytes = e.value("l2_bytes", int64_t{0});
  env.sm_clock_mhz = e.value("sm_clock_mhz", 0.0);
  env.mem_clock_mhz = e.value("mem_clock_mhz", 0.0);
  env.driver = e.value("driver", "");
  env.cuda_runtime = e.value("cuda_runtime", "");
  env.cudnn = e.value("cudnn", "");
  env.torch = e.value("torch", "");
  env.cpu_model = e.value("cpu_model", "");
  env.sandbox = e.value("sandbox", json::object());
  env.threads = e.value("threads", 0);
  env.kforge_version = KFORGE_VERSION;
  return env;
}

namespace {

// What one workload's measurement times: the kernel, the merge-base's kernel when there is one, and each
// baseline's impl object from its parent side (spec/baseline_registry.h); a baseline that cannot be timed here is
// kept with why, for the reports.
struct implementations {
  pipeline::measure_request request;
  std::vector<std::string> names;                // as reported, in order
  std::map<std::string, std::string> skipped;    // baseline -> why it was not sent
};

implementations build_implementations(const workload_spec& spec, run_backend& backend, const std::string& gpu_key,
                                      const std::vector<std::string>& cases, const std::string& kernel_so,
                                      const std::string& base_so, const run_options& o) {
  implementations m;
  m.request.spec = &spec;
  m.request.cases = cases;
  m.request.impls.push_back(pipeline::impl_request::kernel("kernel", kernel_so));
  m.names.push_back("kernel");
  if (!base_so.empty()) {
    m.request.impls.push_back(pipeline::impl_request::kernel("base", base_so));
    m.names.push_back("base");
  }
  std::vector<std::string> compared;  // the baselines the gate compares the kernel with
  for (auto& b : o.baselines.empty() ? spec.baselines : o.baselines) {
    m.names.push_back(b);
    const baseline* d = find_baseline(b);
    if (d && d->make_preparer) say(o, fmt::format("{}: {} the {} baseline", spec.name, d->preparing, d->title_or_name()));
    json impl = backend.baseline_impl(b, spec, cases, gpu_key);
    if (std::string why; baseline_skipped(impl, &why)) {
      m.skipped[b] = why;
    } else {
      m.request.impls.push_back({impl});
      compared.push_back(b);
    }
  }
  pipeline::stopping_rules& st = m.request.stopping;
  st.min_samples = o.stopping.min_samples;
  st.max_noise = o.stopping.max_noise;
  st.min_seconds = o.stopping.min_seconds;
  st.timeout_s = o.stopping.timeout_s;
  st.sequential = {o.gate.alpha, o.gate.resolution, o.gate.first_look};
  // Timing stops once the gate's questions are answered (measure/timing.h), at the latest at the timeout.
  if (o.decide) st.questions = gate_questions(compared, !base_so.empty(), spec.gate.max_regression);
  return m;
}

// Times the implementations together and says whose doing a failure was. A worker that dies or hangs while
// timing the kernel beside the baselines gets a second try with the kernel alone, in a fresh worker: a failure
// there too is the kernel's (the gate fails it: exit 1, not an infrastructure error); a pass leaves the first
// failure as the infrastructure's.
pipeline::measure_call time_implementations(const workload_spec& spec, run_backend& backend,
                                            const implementations& m, const run_options& o) {
  // Each case is timed until every impl stops (cold and hot each have the timeout), plus the worker's setup.
  auto budget = std::chrono::seconds(
                    static_cast<int64_t>(o.stopping.timeout_s * 2 * static_cast<double>(m.request.cases.size()))) +
                o.measure_slack;
  auto call = [&](const pipeline::measure_request& q) {
    return pipeline::read_measure_outcome(backend.measure(q.to_json(), budget));
  };
  pipeline::measure_call out = call(m.request);
  const bool died = !out.outcome.ok() && out.outcome.status != worker_status::start_failed;
  if (!died || m.request.impls.size() == 1) return out;
  say(o, fmt::format("{}: the worker {} while timing; timing the kernel alone to see whose doing it was", spec.name,
                     out.outcome.describe()));
  pipeline::measure_request alone = m.request;
  alone.impls.resize(1);
  pipeline::measure_call solo = call(alone);
  if (solo.kernel_failed()) return solo;
  out.not_the_kernel = true;
  return out;
}

}  // namespace

workload_result run_one(const workload_spec& spec, run_backend& backend, const std::string& gpu_key,
                        const std::string& base_commit, git_repo* repo, const run_options& o, run_env& env) {
  auto started = std::chrono::steady_clock::now();
  workload_result w;
  w.name = spec.name;
  w.spec_path = spec.path;
  auto finish = [&] {
    w.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return w;
  };

  winner_lookup found = find_winner(kernels_dir(spec.path, spec.name), gpu_key);
  if (!found.kernel) {
    w.kernel_note = found.why;
    return finish();
  }
  const stored_kernel& k = *found.kernel;
  w.kernel_path = k.source.string();
  w.kernel_key = k.gpu_key;
  w.kernel_note = k.note;

  say(o, fmt::format("{}: verifying {}", spec.name, k.source.filename().string()));
  std::string source = read_file(k.source);
  candidate_check checked = backend.check(spec, source, spec.name);
  w.verify = std::move(checked.verify);
  w.compile_log = tail_text(checked.compile_log, 4000);
  if (w.verify.verdict != "passed" || checked.so_path.empty()) return finish();

  // The merge-base's version of the kernel, timed alongside (docs/design.md "Gate", docs/statistics.md).
  std::string base_so, base_note;
  if (repo && !base_commit.empty()) {
    std::optional<std::string> base_src;
    try {
      std::lock_guard lock(g_repo_mutex);
      base_src = repo->file_at(base_commit, repo->relative(k.source));
    } catch (const user_error&) {
      // The kernel lives outside the repository: there is no base version to load.
    }
    // Timed alongside whether the change touched it or not: the regression check compares two series taken
    // interleaved in one worker, never a series with a stored one from another day (unchanged: the same object
    // twice, an A/A comparison).
    if (base_src && *base_src == source) {
      base_so = checked.so_path;
    } else if (base_src) {
      compile_result b = backend.compile(*base_src, spec.name + "-base");
      if (b.ok) base_so = b.so_path;
      else base_note = "the merge-base's version of the kernel does not compile: " + b.error;
    }
  }

  std::vector<std::string> cases;
  for (auto& c : spec.cases)
    if (c.gate && c.runs_on(backend.device_kind_name())) cases.push_back(c.name);
  if (cases.empty()) return finish();

  implementations impls = build_implementations(spec, backend, gpu_key, cases, checked.so_path, base_so, o);
  say(o, fmt::format("{}: timing {} case{} ({})", spec.name, cases.size(), cases.size() == 1 ? "" : "s",
                     fmt::join(impls.names, ", ")));
  pipeline::measure_call timed = time_implementations(spec, backend, impls, o);
  if (!timed.ok()) {
    if (!timed.kernel_failed()) {
      w.error = fmt::format("timing could not finish: {}", timed.failure());
      return finish();
    }
    // Still a result: the kernel is marked failed on every case and the gate fails it.
    w.cases = pipeline::kernel_failed_cases(cases, timed.failure());
    return finish();
  }
  w.cases = pipeline::case_results(timed.reply, cases, impls.names, impls.skipped);
  if (!base_note.empty()) w.kernel_note += (w.kernel_note.empty() ? "" : "; ") + base_note;
  update_env(env, timed.reply.env);
  return finish();
}

// A baseline with a parent side (torch.compile's packages) made ready for every workload that has a kernel here
// and times it, together before the first workload (the exports are the slow part of a cold run).
// Returns how many cases it prepared (0: no workload given times this baseline with a kernel here).
static size_t prepare_baseline(const baseline& b, const std::vector<workload_spec>& specs, run_backend& backend,
                               const std::string& key, const run_options& o, double* prepare_seconds) {
  std::vector<baseline_work> work;
  size_t packages = 0;
  for (const auto& spec : specs) {
    const auto& baselines = o.baselines.empty() ? spec.baselines : o.baselines;
    if (std::find(baselines.begin(), baselines.end(), b.name) == baselines.end()) continue;
    // A run times the baselines of the workloads it has a kernel for; a cache step (--prepare-only) also
    // prepares the others, whose first search may run beside it and whose next run will want them.
    if (!o.prepare_only && !find_winner(kernels_dir(spec.path, spec.name), key).kernel) continue;
    std::vector<std::string> cases;
    for (auto& c : spec.cases)
      if (c.gate && c.runs_on(backend.device_kind_name())) cases.push_back(c.name);
    if (cases.empty()) continue;
    packages += cases.size();
    work.push_back({&spec, std::move(cases)});
  }
  if (work.empty()) return 0;
  say(o, fmt::format("preparing the {} baseline: {} case(s) of {} workload(s), in parallel", b.title_or_name(),
                     packages, work.size()));
  auto started = std::chrono::steady_clock::now();
  backend.prepare_baseline(b.name, work, key);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  say(o, fmt::format("{} baseline ready in {:.0f} s", b.title_or_name(), seconds));
  if (prepare_seconds) *prepare_seconds = seconds;
  return packages;
}

history_context history_for(const run_history& rh, const std::string& name) {
  history_context h;
  h.previous = rh.entry.result ? rh.entry.result->find_workload(name) : nullptr;
  h.origin = rh.origin;
  h.missing_why = rh.entry.result ? fmt::format("{} has no results for {}", rh.origin, name) : rh.entry.why;
  return h;
}

run_history load_run_history(git_repo* repo, const std::string& base_ref, const std::string& key) {
  run_history h;
  auto head = repo ? repo->try_resolve("HEAD") : std::nullopt;
  if (repo && !head && base_ref.empty()) {
    h.entry.why = "HEAD has no commit yet (a new repository): no history to compare with";
  } else if (repo) {
    h.head = head ? *head : repo->resolve("HEAD");  // with a base ref, an unborn HEAD is the user's error, said so
    if (!base_ref.empty()) {
      h.base_commit = repo->merge_base("HEAD", base_ref);
      h.entry = load_history(*repo, h.base_commit, key);
    } else if (auto parent = repo->try_resolve("HEAD^")) {
      h.entry = load_history(*repo, *parent, key);
    } else {
      h.entry.why = "HEAD has no parent commit: nothing to compare with";
    }
  } else {
    h.entry.why = "not in a git repository: no history to compare with";
  }
  if (h.entry.result)
    h.origin = fmt::format("the history note of {}{}", h.entry.commit.substr(0, 12),
                           base_ref.empty() ? " (the parent commit)" : " (the merge-base)");
  return h;
}

std::string key_of_env(const json& worker_env) {
  std::string key = worker_env.value("gpu_key", "");
  return key.empty() ? gpu_key(worker_env) : key;  // cuda workers report arch and name; the key is formed here
}

namespace pipeline {

run_result start_run(const std::vector<workload_spec>& specs, run_backend& backend, const json& worker_env,
                     git_repo* repo, const run_options& o, run_history& history) {
  run_result r;
  std::string started = utc_now();
  std::string key = key_of_env(worker_env);
  r.env = env_from_worker(worker_env, key);
  r.env.started_at = started;
  r.env.compiler = backend.compiler_identity();
  r.baselines = o.baselines;
  r.options = {{"min_samples", o.stopping.min_samples}, {"max_noise", o.stopping.max_noise},
               {"min_seconds", o.stopping.min_seconds}, {"timeout_s", o.stopping.timeout_s},
               {"alpha", o.gate.alpha},                 {"min_samples_gate", o.gate.min_samples},
               {"resolution", o.gate.resolution},       {"first_look", o.gate.first_look},
               {"stop_when_decided", o.decide}};

  history = load_run_history(repo, o.base_ref, key);
  if (repo) r.env.git_commit = history.head;
  if (repo && !o.base_ref.empty()) {
    r.base_ref = o.base_ref;
    r.base_commit = history.base_commit;
  }

  for (const auto& b : registered_baselines()) {  // exports (or cache hits) before the first workload
    if (!b.make_preparer) continue;
    double seconds = 0;
    const size_t cases = prepare_baseline(b, specs, backend, key, o, &seconds);
    r.options[b.name + "_prepare_seconds"] = seconds;  // compile_prepare_seconds
    r.options[b.name + "_prepared_cases"] = cases;     // 0: nothing to prepare
  }
  return r;
}

void gate_workload(workload_result& w, const workload_spec& spec, const run_history& rh, const run_options& o) {
  if (!w.error.empty()) return;
  apply_gate(w, spec.gate, history_for(rh, spec.name), o.gate);
}

}  // namespace pipeline

run_result run_workloads(const std::vector<workload_spec>& specs, run_backend& backend, git_repo* repo,
                         const run_options& o) {
  return run_workloads(specs, std::vector<run_device>{{"", &backend}}, repo, o);
}

}  // namespace kf
