#include "gate/runner.h"

#include <algorithm>
#include <chrono>
#include <ctime>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/summarize.h"
#include "store/git_repo.h"
#include "store/history.h"
#include "store/winners.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

namespace kf {
using json = nlohmann::json;

namespace {

std::string now_iso() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

void say(const run_options& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

// A worker that did not answer (crash, timeout, exit) or answered ok:false, in one sentence.
std::string failure_of(const worker_outcome& out) {
  if (!out.ok()) {
    std::string s = fmt::format("the worker {}", out.describe());
    if (!out.message.empty() && out.message != out.describe()) s += ": " + out.message;
    if (!out.stderr_tail.empty()) s += fmt::format(" (worker log: {})", tail_text(out.stderr_tail, 600));
    return s;
  }
  return out.response.value("error", "the worker answered ok: false without an error");
}

sample_series series_from(const json& j) {
  sample_series s;
  if (!j.is_object()) return s;
  s.samples_us = j.value("samples_us", std::vector<double>{});
  s.discarded = j.value("discarded", 0);
  return s;
}

// The worker's measure answer into one case_result per gated case, impls in a fixed order.
void apply_measure(workload_result& w, const json& r, const std::vector<std::string>& cases,
                   const std::vector<std::string>& impls, const std::map<std::string, std::string>& skipped) {
  const json& floors = r.value("floor", json::object());
  for (auto& name : cases) {
    case_result c;
    c.name = name;
    for (auto& impl : impls) {
      impl_result i;
      i.impl = impl;
      if (auto s = skipped.find(impl); s != skipped.end()) {
        i.status = impl_status::skipped;
        i.why = s->second;
        c.impls.push_back(std::move(i));
        continue;
      }
      auto it = std::find_if(r["results"].begin(), r["results"].end(),
                             [&](const json& e) { return e.value("impl", "") == impl && e.value("case", "") == name; });
      if (it == r["results"].end()) {
        i.status = impl_status::skipped;
        i.why = "the worker reported nothing for it";
      } else if (!it->value("available", true)) {
        i.status = impl_status::skipped;
        i.why = it->value("not_available", "not available");
      } else if (!it->value("error", "").empty()) {
        i.status = impl_status::failed;
        i.why = it->value("error", "");
      } else {
        i.description = it->value("description", "");
        if (it->contains("details") && (*it)["details"].is_object()) i.details = (*it)["details"];
        i.cold = series_from(it->value("cold", json()));
        i.hot = series_from(it->value("hot", json()));
        if (i.cold.empty()) {
          i.status = impl_status::failed;
          i.why = "no samples were kept";
        }
      }
      c.impls.push_back(std::move(i));
    }
    summarize_case(c);
    if (floors.contains(name)) {
      const json& f = floors[name];
      bool hot = c.metric == "hot";
      c.floor.bytes = f.value("bytes", 0.0);
      c.floor.bandwidth_floor_us = f.value("bandwidth_floor_us", 0.0);
      c.floor.launch_floor_us = hot ? f.value("launch_floor_hot_us", 0.0) : f.value("launch_floor_us", 0.0);
      c.floor.floor_us = hot ? f.value("floor_hot_us", 0.0) : f.value("floor_us", 0.0);
      summarize_case(c);  // the fraction of the floor
    }
    w.cases.push_back(std::move(c));
  }
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

  json kernel_impl = {{"kind", "kernel"}, {"name", "kernel"}, {"so", checked.so_path}};

  std::vector<std::string> cases;
  for (auto& c : spec.cases)
    if (c.gate && c.runs_on(backend.device_kind_name())) cases.push_back(c.name);
  if (cases.empty()) return finish();

  std::vector<std::string> baselines = o.baselines.empty() ? spec.baselines : o.baselines;
  json impls = json::array({kernel_impl});
  std::vector<std::string> names = {"kernel"};
  std::map<std::string, std::string> skipped;
  if (!base_so.empty()) {
    impls.push_back({{"kind", "kernel"}, {"name", "base"}, {"so", base_so}});
    names.push_back("base");
  }
  for (auto& b : baselines) {  // each baseline's impl object, from its parent side (spec/baseline_registry.h)
    names.push_back(b);
    const baseline* d = find_baseline(b);
    if (d && d->make_preparer) say(o, fmt::format("{}: {} the {} baseline", spec.name, d->preparing, d->title_or_name()));
    json impl = backend.baseline_impl(b, spec, cases, gpu_key);
    if (std::string why; baseline_skipped(impl, &why)) skipped[b] = why;
    else impls.push_back(impl);
  }

  say(o, fmt::format("{}: timing {} case{} ({})", spec.name, cases.size(), cases.size() == 1 ? "" : "s",
                     fmt::join(names, ", ")));
  std::vector<std::string> compared;  // the baselines the gate compares the kernel with
  for (auto& b : baselines)
    if (!skipped.count(b)) compared.push_back(b);
  json stopping = {{"min_samples", o.stopping.min_samples}, {"max_noise", o.stopping.max_noise},
                   {"min_seconds", o.stopping.min_seconds}, {"timeout_s", o.stopping.timeout_s}, {"hot", "auto"},
                   {"alpha", o.gate.alpha}, {"resolution", o.gate.resolution}, {"first_look", o.gate.first_look}};
  // Timing stops once the gate's questions are answered (measure/timing.h), at the latest at the timeout.
  if (o.decide) stopping["questions"] = gate_questions(compared, !base_so.empty(), spec.gate.max_regression);
  json measure_req = {{"cmd", "measure"}, {"spec", to_json(spec)}, {"impls", impls}, {"cases", cases}, {"stopping", stopping}};
  // Each case is timed until every impl stops (cold and hot each have the timeout), plus the worker's setup.
  auto budget = std::chrono::seconds(static_cast<int64_t>(o.stopping.timeout_s * 2 * static_cast<double>(cases.size())));
  worker_outcome out = backend.measure(measure_req, budget + o.measure_slack);
  // A worker that died, hung, exited or garbled its answer while timing (not one that never started).
  auto died = [](const worker_outcome& w) { return !w.ok() && w.status != worker_status::start_failed; };
  // ... or one that says the kernel failed.
  auto kernel_failed = [&](const worker_outcome& w) {
    return died(w) || (w.ok() && !w.response.value("ok", false) && w.response.value("kind", "") == "candidate");
  };
  bool candidate = kernel_failed(out);  // with baselines beside the kernel, a death is judged below
  if (died(out) && impls.size() > 1) {
    // The worker died or hung while timing the kernel beside the baselines: time the kernel alone, in a fresh
    // worker. If it fails there too it is the kernel's doing (the gate fails it: exit 1, not an infrastructure
    // error); if it passes, the first failure stands as the infrastructure's.
    say(o, fmt::format("{}: the worker {} while timing; timing the kernel alone to see whose doing it was",
                       spec.name, out.describe()));
    json alone = measure_req;
    alone["impls"] = json::array({kernel_impl});
    worker_outcome solo = backend.measure(alone, budget + o.measure_slack);
    candidate = kernel_failed(solo);
    if (candidate) out = solo;
  }
  if (!out.ok() || !out.response.value("ok", false)) {
    w.error = fmt::format("timing {}: {}", candidate ? "failed because of the kernel" : "could not finish", failure_of(out));
    if (candidate) {
      // Still a result: the kernel is marked failed on every case and the gate fails it.
      w.error.clear();
      for (auto& name : cases) {
        case_result c;
        c.name = name;
        impl_result failed;
        failed.impl = "kernel";
        failed.status = impl_status::failed;
        failed.why = failure_of(out);
        c.impls.push_back(std::move(failed));
        w.cases.push_back(std::move(c));
      }
    }
    return finish();
  }
  apply_measure(w, out.response, cases, names, skipped);
  if (!base_note.empty()) w.kernel_note += (w.kernel_note.empty() ? "" : "; ") + base_note;
  update_env(env, out.response.value("env", json()));
  return finish();
}

// A baseline with a parent side (torch.compile's packages) made ready for every workload that has a kernel here
// and times it, together before the first workload (the exports are the slow part of a cold run).
void prepare_baseline(const baseline& b, const std::vector<workload_spec>& specs, run_backend& backend,
                      const std::string& key, const run_options& o, double* prepare_seconds) {
  std::vector<baseline_work> work;
  size_t packages = 0;
  for (const auto& spec : specs) {
    const auto& baselines = o.baselines.empty() ? spec.baselines : o.baselines;
    if (std::find(baselines.begin(), baselines.end(), b.name) == baselines.end()) continue;
    if (!find_winner(kernels_dir(spec.path, spec.name), key).kernel) continue;
    std::vector<std::string> cases;
    for (auto& c : spec.cases)
      if (c.gate && c.runs_on(backend.device_kind_name())) cases.push_back(c.name);
    if (cases.empty()) continue;
    packages += cases.size();
    work.push_back({&spec, std::move(cases)});
  }
  if (work.empty()) return;
  say(o, fmt::format("preparing the {} baseline: {} case(s) of {} workload(s), in parallel", b.title_or_name(),
                     packages, work.size()));
  auto started = std::chrono::steady_clock::now();
  backend.prepare_baseline(b.name, work, key);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  say(o, fmt::format("{} baseline ready in {:.0f} s", b.title_or_name(), seconds));
  if (prepare_seconds) *prepare_seconds = seconds;
}

run_result run_workloads(const std::vector<workload_spec>& specs, run_backend& backend, git_repo* repo,
                         const run_options& o) {
  run_result r;
  r.env.started_at = now_iso();
  json worker_env = backend.env();
  std::string key = worker_env.value("gpu_key", "");
  if (key.empty()) key = gpu_key(worker_env);  // cuda workers report arch and name; the key is formed here
  std::string started = r.env.started_at;
  r.env = env_from_worker(worker_env, key);
  r.env.started_at = started;
  r.env.compiler = backend.compiler_identity();
  r.baselines = o.baselines;
  r.options = {{"min_samples", o.stopping.min_samples}, {"max_noise", o.stopping.max_noise},
               {"min_seconds", o.stopping.min_seconds}, {"timeout_s", o.stopping.timeout_s},
               {"alpha", o.gate.alpha},                 {"min_samples_gate", o.gate.min_samples},
               {"resolution", o.gate.resolution},       {"first_look", o.gate.first_look},
               {"stop_when_decided", o.decide}};

  // History: the merge-base's note with --base, else the first parent's (a run on main compares with the
  // commit before it).
  history_entry history;
  std::string base_commit;
  if (repo) {
    r.env.git_commit = repo->resolve("HEAD");
    if (!o.base_ref.empty()) {
      base_commit = repo->merge_base("HEAD", o.base_ref);
      r.base_ref = o.base_ref;
      r.base_commit = base_commit;
      history = load_history(*repo, base_commit, key);
    } else if (auto parent = repo->try_resolve("HEAD^")) {
      history = load_history(*repo, *parent, key);
    } else {
      history.why = "HEAD has no parent commit: nothing to compare with";
    }
  } else {
    history.why = "not in a git repository: no history to compare with";
  }
  std::string origin = history.result ? fmt::format("the history note of {}{}", history.commit.substr(0, 12),
                                                    o.base_ref.empty() ? " (the parent commit)" : " (the merge-base)")
                                      : "";

  for (const auto& b : registered_baselines()) {  // exports (or cache hits) before the first workload
    if (!b.make_preparer) continue;
    double seconds = 0;
    prepare_baseline(b, specs, backend, key, o, &seconds);
    r.options[b.name + "_prepare_seconds"] = seconds;  // compile_prepare_seconds
  }

  for (size_t i = 0; i < specs.size(); ++i) {
    const auto& spec = specs[i];
    if (o.stop_requested && o.stop_requested()) {
      r.complete = false;
      r.incomplete_reason = fmt::format("interrupted after {} of {} workloads", i, specs.size());
      break;
    }
    say(o, fmt::format("[{}/{}] {}", i + 1, specs.size(), spec.name));
    workload_result w;
    try {
      w = run_one(spec, backend, key, base_commit, repo, o, r.env);
    } catch (const std::exception& e) {
      // One workload's environment failure (a worker that cannot start, an unreadable kernel file) is its
      // error; the others still run.
      w = workload_result{};
      w.name = spec.name;
      w.spec_path = spec.path;
      w.error = e.what();
    }
    history_context h;
    h.previous = history.result ? history.result->find_workload(spec.name) : nullptr;
    h.origin = origin;
    h.missing_why = history.result ? fmt::format("{} has no results for {}", origin, spec.name) : history.why;
    if (w.error.empty()) apply_gate(w, spec.gate, h, o.gate);
    r.workloads.push_back(std::move(w));
  }
  apply_false_discovery_control(r, o.gate);
  r.env.finished_at = now_iso();
  return r;
}

}  // namespace kf
