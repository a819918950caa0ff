// The search tree on disk (docs/design.md "Stores": `.kforge/search.db`, SQLite in WAL mode). Tables: searches (one
// per workload x GPU key), nodes, edges (parent -> child with the move), evaluations (each stage a candidate went
// through) and samples (raw timings). Every state change is one transaction, so a killed search loses at most
// the evaluations it had in flight; searches on different workloads share the file (busy timeout, WAL). A node
// keeps an LLM candidate's prompt versions and conversation (columns that opening an older file adds, empty).
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/mcts.h"

struct sqlite3;

namespace kf {

struct search_row {
  int64_t id = 0;
  std::string workload;
  std::string spec_hash;
  std::string device;     // "cpu", "cuda"
  std::string gpu_key;
  std::string proposer;
  std::string state = "running";  // running | stopped | done
  nlohmann::json baselines = nlohmann::json::object();  // {"eager": {"<case>": us}, ...}
  nlohmann::json options = nlohmann::json::object();
  std::string started_at, updated_at;
};

struct node_row {
  int64_t id = 0;                  // database id
  std::optional<int64_t> parent;   // database id
  candidate cand;
  node_status status = node_status::pending;
  std::optional<double> time_us, reward;
  std::string detail;
  std::optional<int64_t> result_seq;  // order in which results arrived (replayed on resume)
  nlohmann::json results = nlohmann::json::object();  // per-case times, verify summary
};

struct sample_row {
  std::string impl, case_name, kind;  // kind: cold | hot
  std::vector<double> values_us;
};

struct evaluation_row {
  std::string stage;  // compile | screen | verify | measure
  bool ok = false;
  nlohmann::json detail = nlohmann::json::object();
  double seconds = 0;
  std::vector<sample_row> samples;
};

struct stage_time {
  std::string stage;
  int64_t count = 0;
  double seconds = 0;
};

class search_db {
 public:
  // Opens (creating) the file and its schema. Throws infra_error when SQLite fails.
  explicit search_db(const std::filesystem::path& path);
  ~search_db();
  search_db(const search_db&) = delete;
  search_db& operator=(const search_db&) = delete;

  std::optional<search_row> find_search(const std::string& workload, const std::string& gpu_key);
  std::vector<search_row> list_searches();  // every stored search, by workload then GPU key
  int64_t create_search(const search_row& s);
  // Removes a search with its nodes, edges, evaluations and samples (--fresh).
  void delete_search(int64_t id);
  void set_state(int64_t id, const std::string& state);
  void set_baselines(int64_t id, const nlohmann::json& baselines);

  // A new pending node and the edge from its parent, in one transaction. Returns the node's id.
  int64_t add_node(int64_t search, std::optional<int64_t> parent, const candidate& c);
  // The stages a node went through (with their samples) and its new status, in one transaction. A node
  // already failed keeps its failure (verdicts only get worse).
  void record(int64_t node, const std::vector<evaluation_row>& stages, node_status status, std::optional<double> time_us,
              std::optional<double> reward, const std::string& detail, const nlohmann::json& results);

  std::vector<node_row> load_nodes(int64_t search);
  std::vector<evaluation_row> load_evaluations(int64_t node);
  int64_t count_nodes(int64_t search);
  int64_t count_evaluations(int64_t search);
  // Where the search's time went: per evaluation stage (compile, screen_verify, ...), in first-seen order.
  std::vector<stage_time> stage_times(int64_t search);
  const std::filesystem::path& path() const { return m_path; }

 private:
  void exec(const char* sql);
  std::filesystem::path m_path;
  sqlite3* m_db = nullptr;
};

}  // namespace kf
