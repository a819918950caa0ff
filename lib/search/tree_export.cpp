#include "search/tree_export.h"

#include <fmt/format.h>

namespace kf {

nlohmann::json search_tree_json(search_db& db, const search_row& search) {
  nlohmann::json nodes = nlohmann::json::array();
  for (auto& n : db.load_nodes(search.id)) {
    std::string label = n.cand.origin;
    if (!n.cand.family.empty()) {
      std::string knobs;
      for (auto& [k, v] : n.cand.knobs) knobs += fmt::format("{}{}={}", knobs.empty() ? "" : " ", k, v);
      label = fmt::format("{} [{}] ({})", n.cand.family, knobs, n.cand.origin);
    }
    std::string status = n.status == node_status::pending ? "pending"
                         : is_failure(n.status)           ? fmt::format("failed: {}", n.detail)
                                                          : "ok";
    nlohmann::json node = {{"id", n.id}, {"parent", n.parent ? *n.parent : int64_t{-1}}, {"label", label},
                           {"status", status}, {"time_us", n.time_us.value_or(0.0)}, {"reward", n.reward.value_or(0.0)},
                           {"source", n.cand.source}, {"origin", n.cand.origin}};
    if (!n.cand.prompt_version.empty()) node["prompt_version"] = n.cand.prompt_version;
    nodes.push_back(std::move(node));
  }
  return {{"workload", search.workload}, {"gpu_key", search.gpu_key}, {"nodes", nodes}};
}

}  // namespace kf
