#include "store/shard.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "exec/device.h"
#include "store/history.h"
#include "util/error.h"

namespace kf {
using json = nlohmann::json;

namespace {

bool parse_positive(std::string_view s, int* out) {
  if (s.empty() || s.size() > 6 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  std::from_chars(s.data(), s.data() + s.size(), *out);
  return true;
}

}  // namespace

shard_id parse_shard(std::string_view text) {
  const std::string expected =
      fmt::format("--shard {}: expected K/N, this runner's shard K of N shards, with 1 <= K <= N (such as 1/2)", text);
  auto slash = text.find('/');
  shard_id id;
  if (slash == std::string_view::npos || !parse_positive(text.substr(0, slash), &id.index) ||
      !parse_positive(text.substr(slash + 1), &id.count))
    throw user_error(expected);
  if (id.count < 1 || id.index < 1 || id.index > id.count) throw user_error(expected);
  return id;
}

std::vector<std::vector<std::string>> assign_shards(const std::vector<std::string>& names,
                                                    const std::map<std::string, double>& seconds, int count) {
  KF_ASSERT(count >= 1, "assign_shards: {} shards", count);
  double known = 0;
  int n_known = 0;
  for (auto& n : names)
    if (auto it = seconds.find(n); it != seconds.end() && it->second > 0) known += it->second, ++n_known;
  const double fallback = n_known ? known / n_known : 1.0;
  std::vector<std::pair<double, std::string>> order;
  for (auto& n : names) {
    auto it = seconds.find(n);
    order.emplace_back(it != seconds.end() && it->second > 0 ? it->second : fallback, n);
  }
  std::sort(order.begin(), order.end(),
            [](auto& a, auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  std::vector<double> load(count, 0.0);
  std::map<std::string, int> shard_of;
  for (auto& [secs, name] : order) {
    int best = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());  // first minimum
    load[best] += secs;
    shard_of[name] = best;
  }
  std::vector<std::vector<std::string>> plan(count);
  for (auto& n : names) plan[shard_of.at(n)].push_back(n);
  return plan;
}

std::map<std::string, double> recorded_seconds(const run_result& history) {
  std::map<std::string, double> out;
  for (auto& w : history.workloads)
    if (w.seconds > 0) out[w.name] = w.seconds;
  return out;
}

json shard_record(const shard_id& id, const std::vector<std::vector<std::string>>& plan,
                  const std::vector<std::string>& all_names, const std::string& weights_from) {
  return {{"index", id.index},
          {"count", id.count},
          {"workloads", plan.at(id.index - 1)},
          {"of", all_names},
          {"weights_from", weights_from}};
}

json keep_shard(const shard_id& id, std::vector<workload_spec>& specs, const git_repo* repo, const std::string& base_ref,
                const json& worker_env) {
  std::string key = worker_env.value("gpu_key", "");
  if (key.empty()) key = gpu_key(worker_env);
  std::map<std::string, double> seconds;
  std::string from = "equal weights: not in a git repository";
  if (repo) {
    std::optional<std::string> commit = base_ref.empty() ? repo->try_resolve("HEAD^") : repo->merge_base("HEAD", base_ref);
    history_entry h;
    if (commit) h = load_history(*repo, *commit, key);
    if (h.result) {
      seconds = recorded_seconds(*h.result);
      from = fmt::format("the times in the history note of {} for {}", commit->substr(0, 12), key);
    } else {
      from = "equal weights: " + (commit ? h.why : std::string("HEAD has no parent commit"));
    }
  }
  std::vector<std::string> names;
  for (auto& s : specs) names.push_back(s.name);
  auto plan = assign_shards(names, seconds, id.count);
  const auto& mine = plan[id.index - 1];
  std::erase_if(specs, [&](const workload_spec& s) { return std::find(mine.begin(), mine.end(), s.name) == mine.end(); });
  return shard_record(id, plan, names, from);
}

std::string check_shards(const std::vector<run_result>& shards) {
  int with = 0;
  for (auto& s : shards) with += s.options.contains("shard") && s.options["shard"].contains("index");
  if (with == 0) return "";
  if (with != static_cast<int>(shards.size())) return "some inputs are shards of a run (--shard) and some are not";
  const json& first = shards.front().options["shard"];
  const int count = first.value("count", 0);
  const json all = first.value("of", json::array());
  std::map<int, int> seen;
  std::map<std::string, std::vector<int>> where;
  for (auto& s : shards) {
    const json& sh = s.options["shard"];
    const int index = sh.value("index", 0);
    if (sh.value("count", 0) != count)
      return fmt::format("the shards disagree on how many there are ({} and {})", count, sh.value("count", 0));
    if (sh.value("of", json::array()) != all)
      return fmt::format("shard {}/{} was cut from another list of workloads than shard {}/{} (different specs "
                         "or history on the runners)", index, count, first.value("index", 0), count);
    ++seen[index];
    for (auto& w : s.workloads) where[w.name].push_back(index);
  }
  std::vector<std::string> problems;
  for (int k = 1; k <= count; ++k) {
    if (seen[k] == 0) problems.push_back(fmt::format("shard {}/{} is missing", k, count));
    if (seen[k] > 1) problems.push_back(fmt::format("shard {}/{} is given {} times", k, count, seen[k]));
  }
  for (auto& n : all) {
    auto name = n.get<std::string>();
    auto it = where.find(name);
    if (it == where.end() && seen.size() == static_cast<size_t>(count) && problems.empty())
      problems.push_back(fmt::format("{} is in no shard", name));
    else if (it != where.end() && it->second.size() > 1)
      problems.push_back(fmt::format("{} is in shards {}", name, fmt::join(it->second, " and ")));
  }
  return fmt::format("{}", fmt::join(problems, "; "));
}

void join_shard_records(run_result& merged, const std::vector<run_result>& shards) {
  if (!merged.options.contains("shard") || !merged.options["shard"].contains("of")) return;
  const json all = merged.options["shard"]["of"];
  auto position = [&](const std::string& name) {
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i] == name) return i;
    return all.size();
  };
  std::stable_sort(merged.workloads.begin(), merged.workloads.end(),
                   [&](auto& a, auto& b) { return position(a.name) < position(b.name); });
  json joined = {{"merged", json::array()}, {"count", merged.options["shard"].value("count", 0)}, {"of", all}};
  for (auto& s : shards)
    if (s.options.contains("shard")) joined["merged"].push_back(s.options["shard"].value("index", 0));
  merged.options["shard"] = joined;
}

}  // namespace kf
