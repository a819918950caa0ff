// A stored search as the report's tree explorer reads it (`kforge report render --search T.json`):
// {"workload", "gpu_key", "nodes": [{"id", "parent" (-1 for a root), "label", "status" ("ok" | "failed: ..." |
// "pending"), "time_us", "reward", "source", "origin", "prompt_version" (an LLM candidate's)}]}. A repair of a
// failed LLM candidate is its child (origin "llm-repair:<n>:<model>"), so a repair chain reads down the tree.
#pragma once
#include <nlohmann/json.hpp>

#include "search/search_db.h"

namespace kf {

nlohmann::json search_tree_json(search_db& db, const search_row& search);

}  // namespace kf
