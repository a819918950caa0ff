#include "search_session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "args.h"
#include "exec/compile.h"
#include "measure/timing.h"
#include "search/family.h"
#include "search/graph_match.h"
#include "search/interrupt.h"
#include "pipeline/device_list.h"
#include "search/multi_evaluator.h"
#include "search/roots.h"
#include "search/tree_export.h"
#include "search/worker_evaluator.h"
#include "spec/baseline_registry.h"
#include "store/kernel_header.h"
#include "store/winners.h"
#include "util/fs.h"
#include "util/error.h"
#include "util/term.h"
#include "util/time.h"
#include "verify/check.h"
#include "verify/static_scan.h"

namespace kf {
namespace {

std::string duration_text(double s) {
  if (s < 0) return "?";
  if (s < 90) return fmt::format("{:.0f}s", s);
  if (s < 5400) return fmt::format("{:.0f}m{:02.0f}s", std::floor(s / 60), std::fmod(s, 60));
  return fmt::format("{:.1f}h", s / 3600);
}

// Per baseline: the geometric mean of its gated-case times, for "1.9x eager" style comparisons.
std::map<std::string, double> baseline_geomeans(const nlohmann::json& baselines) {
  std::map<std::string, double> out;
  if (!baselines.is_object()) return out;
  for (auto& [name, cases] : baselines.items()) {
    std::map<std::string, double> m;
    for (auto& [c, t] : cases.items())
      if (t.is_number()) m[c] = t.get<double>();
    if (!m.empty()) out[name] = geomean_us(m);
  }
  return out;
}

std::string versus(double t, const nlohmann::json& baselines) {
  std::vector<std::string> parts;
  for (auto& [name, b] : baseline_geomeans(baselines)) parts.push_back(fmt::format("{:.2f}x {}", b / t, name));
  return parts.empty() ? "no baseline timed" : fmt::format("{}", fmt::join(parts, ", "));
}

std::string knobs_text(const knob_values& v) {
  std::string s;
  for (auto& [k, x] : v) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, x);
  return s;
}

// One line per family of the device (the fallbacks too, or not) that does not cover the spec, saying why.
std::string why_not_covered(const workload_spec& spec, device_kind kind, bool with_fallbacks) {
  std::string why;
  for (auto& f : families()) {
    if (f->device() != kind || (f->fallback() && !with_fallbacks)) continue;
    std::string w;
    if (!selects(spec, *f)) w = "not in the spec's search.families";
    else if (f->covers(spec, &w)) continue;
    why += fmt::format("\n  {}: {}", f->name(), w);
  }
  return why;
}

std::string describe(const node_row& n) {
  if (n.cand.family.empty()) return n.cand.origin;
  return fmt::format("{} [{}] ({})", n.cand.family, knobs_text(n.cand.knobs), n.cand.origin);
}

}  // namespace

double min_gain_flag(const args& a) {
  auto v = a.get("min-gain");
  if (!v) return 0.02;
  double g = a.get_double("min-gain", 2.0);
  if (v->empty() || v->back() != '%') g /= 100.0;  // "2" is 2 %, as "2%" is
  if (!(g >= 0.0 && g < 0.995))
    throw user_error(fmt::format("--min-gain {}: expected a percentage from 0 to 99 (2%: replace the stored kernel "
                                 "only with one at least 2 % faster)", *v));
  return g;
}

session_result run_search_session(const workload_spec& spec, const session_settings& st) {
  session_result res;
  device_kind kind = st.device.kind;
  auto fams = covering_families(spec, kind);
  if (fams.empty())
    throw user_error(source_loc{spec.path, 0, 0}, fmt::format("no kernel family covers {} on the {} device:{}", spec.name,
                                                              device_kind_name(kind), why_not_covered(spec, kind, true)));
  if (std::all_of(fams.begin(), fams.end(), [](const family* f) { return f->fallback(); }) && spec.search.families.empty()) {
    const std::string why = why_not_covered(spec, kind, false);
    term::say("no kernel family covers {} on the {} device; the search starts from the generic code generator ({}: "
              "correct on any graph, not tuned), which the proposers rewrite:{}",
              spec.name, device_kind_name(kind), fams.front()->name(), term::dim(why));
  }
  worker_evaluator_options eo;
  eo.device = st.device;
  eo.cache_root = st.cache_root;
  eo.baselines = st.baselines.empty() ? spec.baselines : st.baselines;
  eo.gpu_key = kind == device_kind::cpu ? cpu_key() : "";
  if (kind == device_kind::cpu) {  // a shared host is noisy: looser targets, longer timeouts
    eo.screen_stopping = {{"min_samples", 5}, {"max_noise", 0.05}, {"min_seconds", 0.02}, {"timeout_s", 1}};
    eo.full_stopping = {{"min_samples", 10}, {"max_noise", 0.02}, {"min_seconds", 0.1}, {"timeout_s", 3}};
  }
  // One worker per device (--devices: several, search/multi_evaluator.h); every one must have the same GPU key.
  std::vector<device_id> ids = st.devices.empty() ? std::vector<device_id>{st.device} : st.devices;
  std::vector<std::string> names = st.devices.empty() ? std::vector<std::string>{st.device.str()} : st.device_names;
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i].kind != kind)
      throw user_error(fmt::format("--devices: {} is not a {} device like {}; a search compares times on one kind of "
                                   "device and files its winner under one GPU key: list devices of one kind",
                                   names[i], device_kind_name(kind), names.front()));
  std::vector<std::unique_ptr<worker_evaluator>> workers;
  for (auto& id : ids) {
    eo.device = id;
    workers.push_back(std::make_unique<worker_evaluator>(spec, eo));
  }
  if (eo.gpu_key.empty()) {
    std::vector<std::future<nlohmann::json>> envs;
    for (auto& w : workers) envs.push_back(std::async(std::launch::async, [&w] { return w->environment(); }));
    for (size_t i = 0; i < workers.size(); ++i) {
      auto env = envs[i].get();
      if (env.empty()) throw infra_error(fmt::format("the {} worker did not report its environment", names[i]));
      workers[i]->set_gpu_key(gpu_key(env));
    }
  }
  std::vector<std::string> keys;
  for (auto& w : workers) keys.push_back(w->gpu_key());
  check_one_gpu_key(names, keys,
                    "a search compares times on one kind of GPU and files its winner under one key: list devices "
                    "of one kind");
  std::unique_ptr<multi_evaluator> multi;
  if (workers.size() > 1) {
    multi_evaluator_options mo;
    mo.compile_first = kind == device_kind::cpu;  // as worker_evaluator does: a compiler would skew cpu timing
    auto shared = std::make_shared<compiler>([&] {
      compile_options co;
      co.cache_root = st.cache_root;
      return co;
    }());
    mo.compile = [shared, kind, &spec](const std::vector<candidate>& batch) {
      std::vector<compile_request> reqs;  // what the static scan rejects is never compiled (worker_evaluator)
      for (auto& c : batch) {
        verdict v;
        add_scan_checks(v, static_scan(c.source, scan_options{kind, spec.allow_libraries}));
        if (v.passed()) reqs.push_back({c.source, kind, "sm_90a", {}, "candidate"});
      }
      if (!reqs.empty()) shared->compile_batch(reqs);
    };
    std::vector<multi_device> devs;
    for (size_t i = 0; i < workers.size(); ++i) devs.push_back({names[i], workers[i].get()});
    multi = std::make_unique<multi_evaluator>(std::move(devs), std::move(mo));
  }
  evaluator& ev = multi ? static_cast<evaluator&>(*multi) : *workers.front();
  res.gpu_key = workers.front()->gpu_key();
  auto kdir = kernels_dir(spec.path, spec.name);
  auto roots = search_roots(spec, kind, res.gpu_key, kdir);
  for (const candidate& c : st.tried)
    if (std::none_of(roots.roots.begin(), roots.roots.end(), [&](auto& r) { return candidate_key(r) == candidate_key(c); }))
      roots.roots.push_back(c);
  for (auto& n : roots.notes) term::say("{}", term::dim(n));
  term::say("search {} on {} ({}): {} root(s), budget {} evaluations{}", spec.name, fmt::join(names, ", "), res.gpu_key,
            roots.roots.size(), st.search.budget,
            st.search.time_s > 0 ? fmt::format(", at most {}", duration_text(st.search.time_s)) : "");

  std::vector<std::string> first_use;  // baselines whose parent side works on first use (exporting torch.compile)
  for (auto& b : eo.baselines)
    if (const baseline* d = find_baseline(b); d && d->make_preparer)
      first_use.push_back(fmt::format("{} the {} baseline", d->preparing, d->title_or_name()));
  term::say("timing the baselines ({}) first{}", fmt::join(eo.baselines, ", "),
            first_use.empty() ? "" : fmt::format(": {} on first use (minutes; cached in {})", fmt::join(first_use, ", "),
                                                 st.cache_root));
  search_db db(st.db_path);
  search_options so = st.search;
  so.stop_requested = [] { return search_interrupted(); };
  search_driver driver(spec, kind, res.gpu_key, db, ev, so);
  auto started = std::chrono::steady_clock::now();
  res.outcome = driver.run(roots.roots, [&](const search_progress& p) {
    std::string best = p.best_us ? fmt::format("best {:.2f} us: {}", *p.best_us, versus(*p.best_us, p.baselines))
                                 : "no candidate passed yet";
    term::step(fmt::format("{}: {}/{} evaluations, {} failed | {} | ETA {}", spec.name, p.evaluations, p.budget,
                               p.failures, best, duration_text(p.eta_s)));
  });
  term::end_progress();
  auto& o = res.outcome;
  if (!so.llm_record.empty())
    term::say("wrote the LLM requests and answers to {} (--replay-llm {} runs this search again without the endpoint)",
              so.llm_record, so.llm_record);
  if (!st.tree_path.empty())
    if (auto row = db.find_search(spec.name, res.gpu_key)) {
      write_file_atomic(st.tree_path, search_tree_json(db, *row).dump(1) + "\n");
      term::say("wrote the search tree to {}", st.tree_path);
    }
  term::say("{}: stopped ({}) after {} evaluations ({} in this run){}", spec.name, o.stop_reason, o.evaluations,
            o.session_evaluations, o.stop_reason == "interrupted" ? "; the tree is kept: --resume continues it" : "");
  double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  nlohmann::json stage_seconds = nlohmann::json::object();
  std::string where;
  for (auto& t : db.stage_times(o.search_id)) {
    stage_seconds[t.stage] = {{"count", t.count}, {"seconds", t.seconds}};
    where += fmt::format("{}{} {:.1f} s", where.empty() ? "" : ", ", t.stage, t.seconds);
  }
  wall_s -= o.baseline_seconds;  // the speed is the search's: the baselines are timed once, before it
  double per_minute = wall_s > 0 ? o.session_evaluations * 60.0 / wall_s : 0;
  term::say("  baselines timed in {:.1f} s (before --time starts)", o.baseline_seconds);
  term::say("  speed: {} evaluations in {:.1f} s ({:.1f} a minute); time by stage (all runs): {}", o.session_evaluations,
            wall_s, per_minute, where.empty() ? "none" : where);
  std::map<std::string, double> step_seconds;
  double warm_s = 0;
  int lost_races = 0, full_measures = 0;
  for (auto& w : workers) {
    for (auto& [step, s] : w->verify_step_seconds()) step_seconds[step] += s;
    warm_s += w->warm_seconds();
    lost_races += w->lost_races();
    full_measures += w->full_measures();
  }
  std::string steps;
  for (auto& [step, s] : step_seconds) steps += fmt::format("{}{} {:.1f} s", steps.empty() ? "" : ", ", step, s);
  if (!steps.empty()) term::say("  verify by step (this run): {}", steps);
  if (warm_s > 0)
    term::say("  inputs drawn while the first batch compiled (eager verified on them): {:.1f} s", warm_s);
  if (lost_races > 0)
    term::say("  racing (this run): {} of {} full measurements stopped early, a case {:.0f} % slower than the fastest so far",
              lost_races, full_measures, measure::k_race_margin * 100);
  if (multi) {  // throughput per device, and the devices lost
    std::string per;
    for (auto& d : multi->devices())
      per += fmt::format("{}{} {} evaluations ({:.1f} a minute of its time){}", per.empty() ? "" : ", ", d.name,
                         d.evaluations, d.busy_s > 0 ? d.evaluations * 60.0 / d.busy_s : 0.0, d.lost ? " (lost)" : "");
    term::say("  devices: {}; times put on {}'s scale by the {} baseline", per, names.front(),
              multi->scale_baseline().empty() ? "(no)" : multi->scale_baseline());
    for (auto& d : multi->devices())
      if (d.lost) {
        res.lost_devices.push_back(fmt::format("{}: {}", d.name, d.why_lost));
        term::say("  {}", term::yellow(fmt::format("lost {}: {}; the search went on without it", d.name, d.why_lost)));
      }
  }
  if (o.reopened > 0)
    term::say("  stagnation closed every subtree {} time(s) with time and budget left: opened them again", o.reopened);
  if (!o.dispatch_note.empty()) term::say("  {}", o.dispatch_note);
  if (o.baselines.empty())
    term::say("  {}", term::yellow("no baseline could be timed: rewards rank candidates by time alone"));
  if (o.best_root && o.best_root->time_us)
    term::say("  best root:   {:9.2f} us  {}  {}", *o.best_root->time_us, versus(*o.best_root->time_us, o.baselines), describe(*o.best_root));
  if (!o.winner) {
    res.why_not_written = "no candidate passed the full verification and measure";
    term::say("  {}", term::red(res.why_not_written));
    for (auto& f : o.failure_samples) term::say("    failed: {}", f);
    return res;
  }
  term::say("  winner:      {:9.2f} us  {}  {}", *o.winner->time_us, versus(*o.winner->time_us, o.baselines), describe(*o.winner));
  // The verdict as `kforge run` reaches it: the winner timed beside the baselines, judged by the gate's rule.
  if (!o.verdict.empty()) {
    term::say("  verdict (timed beside the baselines, the gate's rule):");
    for (auto& c : o.verdict)
      term::say("    {} {}: {}", check_outcome_name(c.outcome), c.test_name(), c.sentence);
  } else if (!o.verdict_why.empty() && !spec.gate.must_beat.empty()) {
    term::say("  verdict from medians timed apart ({})", o.verdict_why);
  }
  if (!spec.gate.must_beat.empty() && !o.baselines.empty() && !o.winner_passes_gate)
    term::say("  {}", term::yellow(fmt::format("no candidate beat {} on every gated case: the fastest overall is the winner, "
                                               "and the gate will fail", fmt::join(spec.gate.must_beat, " and "))));
  // Bind the per-case times first: .items() on a temporary would iterate a destroyed object.
  const nlohmann::json case_us = o.winner->results.value("case_us", nlohmann::json::object());
  for (auto& [c, t] : case_us.items())
    if (t.is_number()) term::say("    {:<28} {:9.2f} us", c, t.get<double>());
    else term::say("    {:<28} (not timed)", c);
  if (!st.write) {
    res.why_not_written = "--no-write";
    return res;
  }
  if (!replaces_stored(o, st.min_gain, &res.why_not_written)) {
    term::say("  {}", res.why_not_written);
    return res;
  }
  // The stored winner: the source with a header a reviewer reads, and its metadata beside it.
  winner_write w;
  w.workload = spec.name;
  w.source = o.winner->cand.source;
  std::vector<std::string> lineage;
  nlohmann::json lineage_json = nlohmann::json::array();
  for (auto& n : o.lineage) {
    lineage.push_back(n.cand.origin);
    lineage_json.push_back({{"family", n.cand.family}, {"knobs", n.cand.knobs}, {"origin", n.cand.origin},
                            {"time_us", n.time_us ? nlohmann::json(*n.time_us) : nlohmann::json()}});
  }
  // The family and knobs are in the source's kernel header; the .json records the same (every knob, as the code
  // reads it) with the family's version.
  w.provenance = {
      fmt::format("found: by `kforge search` ({} proposer) on {}", so.proposer, utc_now()),
      fmt::format("lineage: {}", fmt::join(lineage, " -> ")),
      fmt::format("measured: {:.2f} us (geometric mean over gated cases), {}", *o.winner->time_us,
                  versus(*o.winner->time_us, o.baselines)),
  };
  nlohmann::json speedups = nlohmann::json::object();
  for (auto& [name, b] : baseline_geomeans(o.baselines)) speedups[name] = b / *o.winner->time_us;
  w.metadata = {
      {"schema", "kforge.kernel/1"},
      {"workload", spec.name},
      {"spec_hash", spec.hash},
      {"gpu_key", res.gpu_key},
      {"family", o.winner->cand.family},
      {"knobs", o.winner->cand.knobs},
      {"origin", o.winner->cand.origin},
      {"source_sha256", o.winner->cand.source_hash},
      {"lineage", lineage_json},
      {"results", {{"case_us", o.winner->results.value("case_us", nlohmann::json::object())},
                   {"time_us", *o.winner->time_us},
                   {"baselines", o.baselines},
                   {"speedup", speedups}}},
      {"environment", o.environment},
      {"trajectory", o.trajectory},
      {"search", {{"evaluations", o.evaluations}, {"proposer", so.proposer}, {"seed", so.seed},
                  {"stop_reason", o.stop_reason}, {"db", st.db_path}, {"date", utc_now()},
                  {"wall_seconds", wall_s}, {"baseline_seconds", o.baseline_seconds}, {"evaluations_per_minute", per_minute}, {"stage_seconds", stage_seconds},
                  {"passes_gate", o.winner_passes_gate}}},
  };
  for (auto& c : o.verdict)  // the gate's checks on the winner timed beside the baselines
    w.metadata["verdict"].push_back(
        {{"test", c.test_name()}, {"outcome", check_outcome_name(c.outcome)}, {"sentence", c.sentence}});
  const family* winner_family = o.winner->cand.family.empty() ? nullptr : find_family(o.winner->cand.family, kind);
  if (winner_family) {  // what the header says: the version and knobs that emitted it (a resumed tree may be older)
    auto header = parse_kernel_header(w.source);
    const bool ours = header && header->family == winner_family->name();
    w.metadata["family_version"] = ours ? header->version : 0;
    w.metadata["knobs"] = ours ? header->knobs : winner_family->canonical_knobs(spec, o.winner->cand.knobs);
  } else if (o.winner->cand.family == k_dispatch_family) {  // its parts' families and versions are in its knobs
    w.metadata["family_version"] = k_dispatch_version;
    w.metadata["knobs"] = o.winner->cand.knobs;
  }
  for (auto& t : w.metadata["trajectory"])
    if (t.is_number() && std::isnan(t.get<double>())) t = nullptr;
  auto stored = write_winner(kdir, res.gpu_key, w);
  res.written = stored.source.string();
  term::say("  wrote {} and {}", stored.source.string(), stored.metadata.filename().string());
  return res;
}

}  // namespace kf
