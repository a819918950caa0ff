#include "search/search_driver.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/summarize.h"
#include "util/error.h"

namespace kf {

search_driver::search_driver(const workload_spec& spec, device_kind device, std::string gpu_key, search_db& db,
                             evaluator& ev, search_options options)
    : m_spec(spec), m_device(device), m_gpu_key(std::move(gpu_key)), m_db(db), m_ev(ev),
      m_options(std::move(options)), m_tree(m_options.mcts) {
  m_db_id.push_back(0);  // the virtual root has no row
}

int64_t search_driver::add_node(int64_t parent_tree_id, candidate c) {
  std::optional<int64_t> parent;
  if (parent_tree_id != 0) parent = m_db_id.at(static_cast<size_t>(parent_tree_id));
  int64_t db_id = m_db.add_node(m_search.id, parent, c);
  int64_t tid = m_tree.add(parent_tree_id, std::move(c));
  m_db_id.push_back(db_id);
  return tid;
}

void search_driver::open_search(const std::vector<candidate>& roots) {
  auto existing = m_db.find_search(m_spec.name, m_gpu_key);
  if (existing && m_options.fresh) {
    m_db.delete_search(existing->id);
    existing.reset();
  }
  if (existing && !m_options.resume)
    throw user_error(fmt::format(
        "a search for {} on {} is stored in {} ({} nodes): pass --resume to continue it or --fresh to start over",
        m_spec.name, m_gpu_key, m_db.path().string(), m_db.count_nodes(existing->id)));
  if (existing) {
    if (!existing->spec_hash.empty() && !m_spec.hash.empty() && existing->spec_hash != m_spec.hash)
      throw user_error(fmt::format("{}: the spec changed since the stored search began; pass --fresh to start over",
                                   m_spec.path.empty() ? m_spec.name : m_spec.path));
    m_search = *existing;
    m_db.set_state(m_search.id, "running");
    // Rebuild the tree: nodes in id order (parents first), then results in the order they arrived.
    auto rows = m_db.load_nodes(m_search.id);
    std::map<int64_t, int64_t> tree_of;
    for (auto& r : rows) {
      int64_t parent = r.parent ? tree_of.at(*r.parent) : 0;
      int64_t tid = m_tree.add(parent, r.cand);
      tree_of[r.id] = tid;
      m_db_id.push_back(r.id);
    }
    std::vector<const node_row*> done;
    for (auto& r : rows)
      if (r.result_seq && r.status != node_status::pending) done.push_back(&r);
    std::sort(done.begin(), done.end(), [](auto* a, auto* b) { return *a->result_seq < *b->result_seq; });
    for (auto* r : done) {
      if (r->results.contains("case_us") && r->results["case_us"].is_object())
        m_case_us[tree_of.at(r->id)] = r->results["case_us"].get<std::map<std::string, double>>();
      m_tree.record(tree_of.at(r->id), r->status, r->time_us, r->reward, r->detail);
      ++m_evaluated;
      if (is_failure(r->status)) ++m_failures;
      auto b = m_tree.best();
      m_trajectory_best.push_back(b ? *m_tree.at(*b).time_us : std::nan(""));
    }
    return;
  }
  search_row s;
  s.workload = m_spec.name;
  s.spec_hash = m_spec.hash;
  s.device = std::string(device_kind_name(m_device));
  s.gpu_key = m_gpu_key;
  s.proposer = m_options.proposer;
  s.options = {{"budget", m_options.budget}, {"seed", m_options.seed},
               {"exploration", m_options.mcts.exploration}, {"widening_c", m_options.mcts.widening_c},
               {"widening_alpha", m_options.mcts.widening_alpha}, {"stagnation_k", m_options.mcts.stagnation_k}};
  m_search = s;
  m_search.id = m_db.create_search(s);
  m_search.baselines = m_ev.baselines();
  m_db.set_baselines(m_search.id, m_search.baselines);
  for (auto& r : roots)
    if (!m_tree.contains(candidate_key(r))) add_node(0, r);
}

double search_driver::full_threshold() const {
  auto b = m_tree.best();
  if (!b) return std::numeric_limits<double>::infinity();
  return *m_tree.at(*b).time_us * (1.0 + m_options.full_margin);
}

void search_driver::apply(int64_t tid, const eval_result& r) {
  std::optional<double> time, reward;
  bool ok = r.status == node_status::screened || r.status == node_status::measured;
  KF_ASSERT(ok || is_failure(r.status), "an evaluation ended {}", node_status_name(r.status));
  if (ok) {
    time = geomean_us(r.case_us);
    reward = reward_of(r.case_us, m_search.baselines);
  }
  nlohmann::json results = r.results;
  results["case_us"] = r.case_us;
  bool first = m_tree.at(tid).status == node_status::pending;
  if (ok) m_case_us[tid] = r.case_us;
  m_db.record(m_db_id.at(static_cast<size_t>(tid)), r.stages, r.status, time, reward, r.detail, results);
  m_tree.record(tid, r.status, time, reward, r.detail);
  if (!first) return;
  ++m_evaluated;
  ++m_session;
  if (is_failure(r.status)) ++m_failures;
  auto b = m_tree.best();
  m_trajectory_best.push_back(b ? *m_tree.at(*b).time_us : std::nan(""));
}

namespace {

// The compiler's output from its first error (and the line naming the function it is in), at most `max_lines`
// lines and `max_chars` characters, saying how much was left out.
std::string compiler_excerpt(const std::string& log, size_t max_lines = 60, size_t max_chars = 3000) {
  std::vector<std::string> lines;
  for (size_t pos = 0; pos < log.size();) {
    size_t nl = log.find('\n', pos);
    if (nl == std::string::npos) nl = log.size();
    lines.push_back(log.substr(pos, nl - pos));
    pos = nl + 1;
  }
  size_t first = 0;
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find("error") != std::string::npos) {
      first = i;
      if (i > 0 && lines[i - 1].find(": In ") != std::string::npos) first = i - 1;
      break;
    }
  std::string out;
  size_t i = first;
  for (; i < lines.size() && i - first < max_lines && out.size() + lines[i].size() < max_chars; ++i)
    out += lines[i] + "\n";
  if (i < lines.size()) out += fmt::format("... ({} more lines of compiler output)\n", lines.size() - i);
  if (out.empty()) out = "(the compiler printed nothing)\n";
  return out;
}

// The failed checks of a stage's verdict (worker_evaluator: detail.verdict.checks), one line each.
std::vector<std::string> failed_checks(const evaluation_row& e) {
  std::vector<std::string> out;
  const auto verdict = e.detail.value("verdict", nlohmann::json::object());
  for (const auto& c : verdict.value("checks", nlohmann::json::array())) {
    if (c.value("passed", true)) continue;
    std::string where;
    if (!c.value("case", std::string()).empty()) where += " on case " + c.value("case", std::string());
    if (c.value("seed", -1) >= 0) where += fmt::format(" seed {}", c.value("seed", -1));
    out.push_back(fmt::format("{}{}: {}", c.value("rule", std::string("?")), where, c.value("detail", std::string())));
  }
  return out;
}

}  // namespace

failure_report failure_of(const eval_result& r) {
  failure_report f;
  const evaluation_row* bad = nullptr;
  for (const auto& e : r.stages)
    if (!e.ok) bad = &e;
  const std::string stage = bad ? bad->stage : "";
  if (r.status == node_status::compile_failed) {
    f.what = "did not compile";
    std::string log = bad && bad->detail.contains("log") && bad->detail["log"].is_string()
                          ? bad->detail["log"].get<std::string>()
                          : r.results.value("compile_log", std::string());
    f.message = fmt::format("{}. The compiler's output:\n```\n{}```", r.detail.empty() ? "compile error" : r.detail,
                            compiler_excerpt(log));
    return f;
  }
  if (stage == "static_scan") {
    f.what = "was rejected by the static scan (it is neither compiled nor run)";
    f.message = "Findings:\n";
    for (auto& line : failed_checks(*bad)) f.message += "- " + line + "\n";
    return f;
  }
  if (stage.find("verify") != std::string::npos) {
    f.what = "failed verification against the float64 reference and the anti-cheat rules";
    auto checks = failed_checks(*bad);
    f.message = fmt::format("The first failed check (rule, case, seed, evidence): {}", r.detail);
    size_t shown = 0;
    for (auto& line : checks) {
      if (line == r.detail) continue;
      if (shown == 0) f.message += "\nOther failed checks:";
      if (++shown > 6) {
        f.message += fmt::format("\n- ... and {} more", checks.size() - 1 - 6);
        break;
      }
      f.message += "\n- " + line;
    }
    return f;
  }
  if (stage.find("measure") != std::string::npos) {
    f.what = "passed verification but failed while it was timed";
    f.message = r.detail;
    return f;
  }
  f.what = "failed";
  f.message = r.detail;
  return f;
}

void search_driver::evaluate_batch(const std::vector<int64_t>& ids) {
  // The same source evaluated before (two knob sets that emit one kernel) reuses that result.
  std::map<std::string, int64_t> by_hash;
  for (auto& n : m_tree.nodes())
    if (n.id != 0 && n.status != node_status::pending) by_hash.emplace(n.cand.source_hash, n.id);
  std::vector<candidate> todo;
  std::vector<int64_t> todo_ids;
  std::vector<std::pair<int64_t, eval_result>> done;
  for (auto tid : ids) {
    auto& n = m_tree.at(tid);
    auto it = by_hash.find(n.cand.source_hash);
    if (it == by_hash.end()) {
      todo.push_back(n.cand);
      todo_ids.push_back(tid);
      continue;
    }
    auto& prior = m_tree.at(it->second);
    eval_result r;
    r.status = prior.status;
    r.detail = prior.detail;
    if (auto c = m_case_us.find(prior.id); c != m_case_us.end()) r.case_us = c->second;
    if (!is_failure(r.status) && r.case_us.empty()) {  // nothing to copy: evaluate after all
      todo.push_back(n.cand);
      todo_ids.push_back(tid);
      continue;
    }
    r.stages.push_back({"dedup", true, {{"same_source_as_node", m_db_id.at(static_cast<size_t>(prior.id))}}, 0, {}});
    done.emplace_back(tid, std::move(r));
  }
  if (!todo.empty()) {
    const double stop_at = m_options.time_s > 0 ? m_started + m_options.time_s : 0.0;
    auto results = m_ev.evaluate(todo, full_threshold(), stop_at);
    KF_ASSERT(results.size() == todo.size(), "the evaluator returned {} results for {} candidates", results.size(), todo.size());
    for (size_t i = 0; i < todo.size(); ++i)
      if (results[i].status != node_status::pending) done.emplace_back(todo_ids[i], std::move(results[i]));  // else left for a resumed run
  }
  settle(done);
}

void search_driver::settle(const std::vector<std::pair<int64_t, eval_result>>& results) {
  // Room in the budget for repairs: what is left after these results and the nodes still waiting elsewhere.
  int waiting = 0;
  for (auto& n : m_tree.nodes())
    if (n.id != 0 && n.status == node_status::pending) ++waiting;
  int room = m_options.budget - m_evaluated - waiting;  // these results are pending in the tree until applied
  const bool stopping = (m_options.stop_requested && m_options.stop_requested()) ||
                        (m_options.time_s > 0 && steady_seconds() - m_started >= m_options.time_s);
  const int max_repairs = m_proposer ? m_proposer->max_repairs() : 0;
  for (auto& [tid, r] : results) {
    if (is_failure(r.status) && max_repairs > 0 && room > 0 && !stopping && m_tree.at(tid).children.empty()) {
      int number = 1;  // this repair's number: one more than the failed attempts above it in its chain
      for (int64_t a = m_tree.at(tid).parent; a != 0 && is_failure(m_tree.at(a).status); a = m_tree.at(a).parent) ++number;
      if (number <= max_repairs)
        if (auto fix = m_proposer->repair({m_spec, m_device, m_tree, tid, 1}, failure_of(r), number);
            fix && !m_tree.contains(candidate_key(*fix))) {
          add_node(tid, std::move(*fix));
          --room;
        }
    }
    apply(tid, r);
  }
}

search_progress search_driver::progress() const {
  search_progress p;
  p.evaluations = m_evaluated;
  p.budget = m_options.budget;
  p.failures = m_failures;
  if (auto b = m_tree.best()) {
    p.best_us = m_tree.at(*b).time_us;
    p.best_reward = m_tree.at(*b).reward;
  }
  p.best_baselines = best_baselines(m_search.baselines);
  p.baselines = m_search.baselines;
  p.elapsed_s = steady_seconds() - m_started;
  if (m_session > 0) p.eta_s = p.elapsed_s / m_session * std::max(0, m_options.budget - m_evaluated);
  // A time limit ends the run first when it comes before the budget does.
  if (m_options.time_s > 0 && (p.eta_s < 0 || p.elapsed_s + p.eta_s > m_options.time_s))
    p.eta_s = std::max(0.0, m_options.time_s - p.elapsed_s);
  return p;
}

search_outcome search_driver::run(const std::vector<candidate>& roots,
                                  const std::function<void(const search_progress&)>& on_progress) {
  const double opened = steady_seconds();
  open_search(roots);  // times the baselines: a first torch.compile export takes minutes, not the search's time
  m_started = steady_seconds();
  m_baseline_s = m_started - opened;
  proposer_options po;
  po.seed = m_options.seed + static_cast<uint64_t>(m_evaluated);
  po.llm_record = m_options.llm_record;
  po.llm_record_append = m_options.resume;
  po.llm_replay = m_options.llm_replay;
  po.llm_replay_follow = !m_options.resume;  // the record's first choices were the first session's
  m_proposer = make_proposer(m_options.proposer, po);
  m_next_dispatch = std::max(m_options.dispatch.first_check, 1);
  while (m_next_dispatch <= m_evaluated) m_next_dispatch *= 2;  // a resumed search: its next checkpoint
  std::string reason;
  for (;;) {
    if (m_options.stop_requested && m_options.stop_requested()) { reason = "interrupted"; break; }
    if (m_evaluated >= m_options.budget) { reason = "budget"; break; }
    if (m_options.time_s > 0 && steady_seconds() - m_started >= m_options.time_s) { reason = "time"; break; }
    int room = std::min(m_options.batch, m_options.budget - m_evaluated);
    std::vector<int64_t> batch;
    for (auto& n : m_tree.nodes())  // pending first: roots, and what a killed run had in flight
      if (n.id != 0 && n.status == node_status::pending && static_cast<int>(batch.size()) < room) batch.push_back(n.id);
    const bool seeds = !batch.empty();
    while (static_cast<int>(batch.size()) < room) {
      auto sel = m_proposer->next_node(m_tree);  // a replay follows the recorded search's choices
      if (!sel) sel = case_best_node();
      if (!sel) sel = m_tree.select();
      if (!sel) break;
      auto cands = m_proposer->propose({m_spec, m_device, m_tree, *sel, 1});
      if (cands.empty()) {
        m_tree.mark_exhausted(*sel);
        continue;
      }
      for (auto& c : cands) batch.push_back(add_node(*sel, std::move(c)));
    }
    if (batch.empty() && m_tree.reopen_stagnant() > 0) {  // stagnation closed everything; time and budget remain
      ++m_reopened;
      continue;
    }
    if (batch.empty()) {  // nothing left to expand: a tree that measured something converged, else all failed
      const auto& ns = m_tree.nodes();
      const bool any = std::any_of(ns.begin(), ns.end(), [](const auto& n) { return n.status == node_status::measured; });
      reason = any ? "converged" : "every candidate failed";
      break;
    }
    evaluate_batch(batch);
    // Dispatch checkpoints (dispatch_options::first_check): the plan over what is timed so far, evaluated as a
    // node when it is new and promises its gain. Also right after the roots: their defaults are often made for
    // different shape classes (a vocabulary's one row and its 512), and a composite of them is the search's
    // best from its first batches.
    if (m_options.dispatch.first_check > 0 && (seeds || m_evaluated >= m_next_dispatch)) {
      try_dispatch(&m_dispatch_note);
      while (m_next_dispatch <= m_evaluated) m_next_dispatch *= 2;
    }
    if (on_progress) on_progress(progress());
  }
  return finish(reason);
}

bool search_driver::passes_gate(int64_t tid) const {
  auto times = m_case_us.find(tid);
  if (times == m_case_us.end()) return false;
  for (auto& b : m_spec.gate.must_beat) {
    if (!m_search.baselines.contains(b)) continue;  // not timed by this search: nothing to compare with
    for (auto& [c, us] : m_search.baselines[b].items()) {
      auto t = times->second.find(c);
      if (t == times->second.end() || !us.is_number() || !(t->second < us.get<double>())) return false;
    }
  }
  return true;
}

namespace {

// The gate's beats checks (gate/gate.h) of each case's "kernel" against every `gate.must_beat` baseline.
std::vector<gate_check> beats_checks(const std::vector<case_result>& cases, const gate_spec& policy) {
  std::vector<gate_check> out;
  for (const auto& c : cases)
    for (const auto& b : policy.must_beat) out.push_back(beats_check(c, b, true, gate_options{}));
  return out;
}

bool passes(const std::vector<gate_check>& checks) {
  return std::none_of(checks.begin(), checks.end(), [](const gate_check& c) {
    return c.outcome == check_outcome::failed || c.outcome == check_outcome::error;
  });
}

// The same measurement as the stored kernel sees it: "stored" becomes the kernel, the winner is left out.
std::vector<case_result> stored_as_kernel(std::vector<case_result> cases) {
  for (auto& c : cases) {
    std::erase_if(c.impls, [](const impl_result& i) { return i.impl == "kernel"; });
    for (auto& i : c.impls)
      if (i.impl == "stored") i.impl = "kernel";
    summarize_case(c);
  }
  return cases;
}

// The geometric means over cases of the winner's and the stored kernel's medians in the verdict's measurement
// (the series each case compares), when both were timed there on every case.
std::optional<std::pair<double, double>> joint_times(const search_outcome& o) {
  if (o.verdict_cases.empty()) return std::nullopt;
  double log_k = 0, log_s = 0;
  for (const auto& c : o.verdict_cases) {
    const impl_result* k = c.find("kernel");
    const impl_result* s = c.find("stored");
    if (!k || !s || k->status != impl_status::ok || s->status != impl_status::ok) return std::nullopt;
    double km = k->series(c.metric).stats.median_us, sm = s->series(c.metric).stats.median_us;
    if (!(km > 0) || !(sm > 0)) return std::nullopt;
    log_k += std::log(km);
    log_s += std::log(sm);
  }
  const double n = static_cast<double>(o.verdict_cases.size());
  return std::make_pair(std::exp(log_k / n), std::exp(log_s / n));
}

}  // namespace

void search_driver::judge_winner(search_outcome& o, int64_t winner, std::optional<int64_t> stored) {
  if (m_spec.gate.must_beat.empty()) return;  // nothing to beat: the medians' answer (true) stands
  const bool other_stored = stored && *stored != winner;
  auto timed = m_ev.time_beside_baselines(m_tree.at(winner).cand, other_stored ? &m_tree.at(*stored).cand : nullptr);
  if (timed.cases.empty()) {
    o.verdict_why = timed.why;
    return;
  }
  o.verdict_cases = timed.cases;
  o.verdict = beats_checks(timed.cases, m_spec.gate);
  o.winner_passes_gate = passes(o.verdict);
  if (other_stored) o.stored_root_passes_gate = passes(beats_checks(stored_as_kernel(timed.cases), m_spec.gate));
  else if (stored) o.stored_root_passes_gate = o.winner_passes_gate;
}

bool replaces_stored(const search_outcome& o, double min_gain, std::string* why) {
  auto say = [&](std::string m) {
    if (why) *why = std::move(m);
    return false;
  };
  if (!o.winner || !o.winner->time_us) return say("no candidate passed the full verification and measure");
  if (!o.stored_root || !o.stored_root->time_us) return true;
  if (o.winner->id == o.stored_root->id) return say("the stored kernel is still the best");
  if (o.winner_passes_gate && !o.stored_root_passes_gate) return true;
  double stored = *o.stored_root->time_us, best = *o.winner->time_us;
  const char* where = "timed in this search";
  if (auto joint = joint_times(o)) {  // both timed interleaved in the verdict's measurement: compare those
    std::tie(best, stored) = *joint;
    where = "timed together, interleaved";
  }
  if (best > stored * (1.0 - min_gain))
    return say(fmt::format("the best candidate ({:.2f} us) is not {:.3g} % faster than the stored kernel ({:.2f} us, "
                           "{}): the stored kernel stays (--min-gain)",
                           best, 100.0 * min_gain, stored, where));
  return true;
}

std::optional<int64_t> search_driver::winner_node(bool measured_only) const {
  // A candidate that passes the gate outranks a faster one that does not (the gate judges every case, the
  // reward only their mean); then measured before screened; then the reward.
  std::optional<int64_t> w;
  std::tuple<bool, bool, double> w_rank;
  for (auto& n : m_tree.nodes()) {
    if (n.id == 0 || !n.reward) continue;
    const bool measured = n.status == node_status::measured;
    if (measured_only && !measured) continue;
    auto rank = std::make_tuple(passes_gate(n.id), measured, *n.reward);
    if (!w || rank > w_rank) w = n.id, w_rank = rank;
  }
  return w;
}

bool search_driver::dispatch_part(const node& n) const {
  return n.id != 0 && !n.cand.family.empty() && n.cand.family != k_dispatch_family &&
         (n.status == node_status::screened || n.status == node_status::measured) && m_case_us.count(n.id) &&
         find_family(n.cand.family, m_device);
}

std::map<std::string, int64_t> search_driver::timed_case_bytes() const {
  std::map<std::string, int64_t> bytes;
  for (auto& [_, per_case] : m_case_us)
    for (auto& [name, __] : per_case)
      if (!bytes.count(name))
        if (const case_spec* c = m_spec.find_case(name)) bytes.emplace(name, input_bytes(m_spec, *c));
  return bytes;
}

std::optional<int64_t> search_driver::case_best_node() {
  if (m_options.dispatch.max_parts < 2 || ++m_case_turn % 4 != 0) return std::nullopt;
  const auto bytes = timed_case_bytes();
  std::set<int64_t> sizes;
  for (auto& [_, b] : bytes) sizes.insert(b);
  if (sizes.size() < 2) return std::nullopt;
  auto it = bytes.begin();
  std::advance(it, static_cast<long>((m_case_turn / 4) % static_cast<int64_t>(bytes.size())));
  const std::string& name = it->first;
  std::optional<int64_t> best;
  double best_us = 0;
  for (auto& n : m_tree.nodes()) {
    if (n.exhausted || !dispatch_part(n)) continue;
    const auto& per_case = m_case_us.at(n.id);
    auto us = per_case.find(name);
    if (us != per_case.end() && (!best || us->second < best_us)) best = n.id, best_us = us->second;
  }
  return best;
}

void search_driver::try_dispatch(std::string* note) {
  if (m_options.dispatch.max_parts < 2) return;
  std::map<int64_t, std::map<std::string, double>> times;  // family candidates of this device that were timed
  for (auto& n : m_tree.nodes())
    if (dispatch_part(n)) times[n.id] = m_case_us.at(n.id);
  const auto bytes = timed_case_bytes();
  auto plan = plan_dispatch(times, bytes, m_options.dispatch);
  if (!plan) {
    if (times.size() > 1 && bytes.size() > 1)
      *note = fmt::format("no dispatch kernel: no candidate was {:.3g} % faster than the best one over a run of the "
                          "sizes (of {} timed candidates)",
                          100.0 * m_options.dispatch.part_gain, times.size());
    return;
  }
  std::vector<const candidate*> parts;
  std::vector<std::string> said;
  for (size_t i = 0; i < plan->parts.size(); ++i) {
    parts.push_back(&m_tree.at(plan->parts[i]).cand);
    std::vector<std::string> cases;
    for (auto& [c, part] : plan->case_part)
      if (part == i) cases.push_back(c);
    said.push_back(fmt::format("node {} ({}){} for {}", m_db_id.at(static_cast<size_t>(plan->parts[i])),
                               m_tree.at(plan->parts[i]).cand.family,
                               i < plan->up_to.size() ? fmt::format(" up to {} input bytes", plan->up_to[i]) : "",
                               fmt::join(cases, ", ")));
  }
  std::string why;
  auto c = dispatch_candidate(m_spec, m_device, parts, plan->up_to,
                              fmt::format("dispatch: {}", fmt::join(said, "; ")), &why);
  if (!c) {
    *note = "no dispatch kernel: " + why;
    return;
  }
  const std::string planned = fmt::format("{}; planned {:.3g} us against {:.3g} us for the best single candidate",
                                          c->origin, plan->planned_us, plan->single_us);
  if (m_tree.contains(candidate_key(*c))) {
    // Tried at a checkpoint of the search (or in an earlier session): what it measured then stands.
    *note = !m_dispatch_note.empty() && m_dispatch_note.starts_with(planned) ? m_dispatch_note
                                                                             : planned + " (evaluated before)";
    return;
  }
  const int64_t tid = add_node(plan->single, std::move(*c));
  apply(tid, m_ev.confirm(m_tree.at(tid).cand));
  const node& n = m_tree.at(tid);
  *note = n.time_us ? fmt::format("{}; measured {:.3g} us at evaluation {}", planned, *n.time_us, m_evaluated)
                    : fmt::format("{}; it failed: {}", planned, n.detail);
}

search_outcome search_driver::finish(std::string reason) {
  search_outcome o;
  o.search_id = m_search.id;
  o.stop_reason = reason;
  o.reopened = m_reopened;
  o.baselines = m_search.baselines;
  o.baseline_seconds = m_baseline_s;
  if (reason != "interrupted") try_dispatch(&o.dispatch_note);
  // The winner must have passed the full protocol: confirm a screened best (a few tries down the ranking).
  if (reason != "interrupted") {
    for (int tries = 0; tries < 3; ++tries) {
      auto b = winner_node(false);
      if (!b || m_tree.at(*b).status == node_status::measured) break;
      apply(*b, m_ev.confirm(m_tree.at(*b).cand));
    }
  }
  auto rows = m_db.load_nodes(m_search.id);
  std::map<int64_t, const node_row*> by_db;
  for (auto& r : rows) by_db[r.id] = &r;
  auto b = winner_node(true);
  if (b) {
    o.winner = *by_db.at(m_db_id.at(static_cast<size_t>(*b)));
    o.winner_passes_gate = passes_gate(*b);
    for (auto id : m_tree.lineage(*b)) o.lineage.push_back(*by_db.at(m_db_id.at(static_cast<size_t>(id))));
  }
  std::optional<int64_t> root;
  for (auto c : m_tree.at(0).children)
    if (m_tree.at(c).reward && (!root || *m_tree.at(c).reward > *m_tree.at(*root).reward)) root = c;
  if (root) o.best_root = *by_db.at(m_db_id.at(static_cast<size_t>(*root)));
  std::optional<int64_t> stored;
  for (auto c : m_tree.at(0).children)
    if (m_tree.at(c).status == node_status::measured && m_tree.at(c).cand.origin == "stored:" + m_gpu_key)
      o.stored_root = *by_db.at(m_db_id.at(static_cast<size_t>(c))), o.stored_root_passes_gate = passes_gate(c),
      stored = c;
  if (b && reason != "interrupted") judge_winner(o, *b, stored);
  for (auto& r : rows)
    if (is_failure(r.status) && o.failure_samples.size() < 3 &&
        std::find(o.failure_samples.begin(), o.failure_samples.end(), r.detail) == o.failure_samples.end())
      o.failure_samples.push_back(r.detail);
  o.evaluations = m_evaluated;
  o.session_evaluations = m_session;
  o.trajectory = m_trajectory_best;
  if (o.winner) o.environment = m_ev.environment();
  m_db.set_state(m_search.id, reason == "interrupted" ? "stopped" : "done");
  return o;
}

}  // namespace kf
