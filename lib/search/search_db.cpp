#include "search/search_db.h"

#include <sqlite3.h>

#include <algorithm>

#include <fmt/format.h>

#include "util/error.h"

namespace kf {
namespace {

constexpr const char* k_schema = R"(
CREATE TABLE IF NOT EXISTS searches (
  id INTEGER PRIMARY KEY, workload TEXT NOT NULL, spec_hash TEXT, device TEXT, gpu_key TEXT NOT NULL,
  proposer TEXT, state TEXT NOT NULL, baselines TEXT, options TEXT,
  started_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),
  updated_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),
  UNIQUE (workload, gpu_key));
CREATE TABLE IF NOT EXISTS nodes (
  id INTEGER PRIMARY KEY, search_id INTEGER NOT NULL REFERENCES searches(id) ON DELETE CASCADE,
  parent_id INTEGER REFERENCES nodes(id) ON DELETE CASCADE, family TEXT, knobs TEXT, prompt TEXT, source TEXT,
  source_hash TEXT, origin TEXT, status TEXT NOT NULL, time_us REAL, reward REAL, detail TEXT, results TEXT,
  result_seq INTEGER, created_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')), prompt_version TEXT,
  conversation TEXT);
CREATE INDEX IF NOT EXISTS nodes_by_search ON nodes(search_id);
CREATE TABLE IF NOT EXISTS edges (
  search_id INTEGER NOT NULL REFERENCES searches(id) ON DELETE CASCADE,
  parent_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
  child_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE, move TEXT,
  PRIMARY KEY (parent_id, child_id));
CREATE TABLE IF NOT EXISTS evaluations (
  id INTEGER PRIMARY KEY, node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE, stage TEXT NOT NULL,
  ok INTEGER NOT NULL, detail TEXT, seconds REAL,
  at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')));
CREATE INDEX IF NOT EXISTS evaluations_by_node ON evaluations(node_id);
CREATE TABLE IF NOT EXISTS samples (
  evaluation_id INTEGER NOT NULL REFERENCES evaluations(id) ON DELETE CASCADE, impl TEXT, case_name TEXT,
  kind TEXT, values_us TEXT);
)";

// A prepared statement, finalized on scope exit; binds by position from 1.
class stmt {
 public:
  stmt(sqlite3* db, const char* sql) : m_db(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &m_s, nullptr) != SQLITE_OK)
      throw infra_error(fmt::format("search db: {} (in: {})", sqlite3_errmsg(db), sql));
  }
  ~stmt() { sqlite3_finalize(m_s); }
  stmt& bind(int i, int64_t v) { return check(sqlite3_bind_int64(m_s, i, v)); }
  stmt& bind(int i, const std::string& v) { return check(sqlite3_bind_text(m_s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT)); }
  stmt& bind(int i, std::optional<double> v) { return check(v ? sqlite3_bind_double(m_s, i, *v) : sqlite3_bind_null(m_s, i)); }
  stmt& bind(int i, std::optional<int64_t> v) { return check(v ? sqlite3_bind_int64(m_s, i, *v) : sqlite3_bind_null(m_s, i)); }
  bool step() {
    int rc = sqlite3_step(m_s);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw infra_error(fmt::format("search db: {}", sqlite3_errmsg(m_db)));
  }
  void run() { while (step()) {} }
  int64_t i64(int c) const { return sqlite3_column_int64(m_s, c); }
  double f64(int c) const { return sqlite3_column_double(m_s, c); }
  bool null(int c) const { return sqlite3_column_type(m_s, c) == SQLITE_NULL; }
  std::string text(int c) const {
    auto p = sqlite3_column_text(m_s, c);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(m_s, c))) : "";
  }
  std::optional<double> opt_f64(int c) const { return null(c) ? std::nullopt : std::optional<double>(f64(c)); }
  nlohmann::json json(int c) const {
    auto t = text(c);
    return t.empty() ? nlohmann::json::object() : nlohmann::json::parse(t, nullptr, false);
  }

 private:
  stmt& check(int rc) {
    if (rc != SQLITE_OK) throw infra_error(fmt::format("search db: bind: {}", sqlite3_errmsg(m_db)));
    return *this;
  }
  sqlite3* m_db;
  sqlite3_stmt* m_s = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT; rolled back when the scope is left by an exception.
class transaction {
 public:
  explicit transaction(sqlite3* db) : m_db(db) { stmt(db, "BEGIN IMMEDIATE").run(); }
  ~transaction() {
    if (!m_done) sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    stmt(m_db, "COMMIT").run();
    m_done = true;
  }

 private:
  sqlite3* m_db;
  bool m_done = false;
};

std::string knobs_text(const knob_values& v) { return nlohmann::json(v).dump(); }

}  // namespace

search_db::search_db(const std::filesystem::path& path) : m_path(path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (sqlite3_open_v2(path.c_str(), &m_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
    std::string msg = m_db ? sqlite3_errmsg(m_db) : "out of memory";
    sqlite3_close(m_db);
    throw infra_error(fmt::format("cannot open the search db {}: {}", path.string(), msg));
  }
  sqlite3_busy_timeout(m_db, 10000);  // another search on the same file holds the write lock briefly
  exec("PRAGMA journal_mode=WAL");
  exec("PRAGMA synchronous=NORMAL");
  exec("PRAGMA foreign_keys=ON");
  exec(k_schema);
  // Columns added since the first schema (a file written by an older kforge gets them, empty).
  std::vector<std::string> columns;
  {
    stmt q(m_db, "PRAGMA table_info(nodes)");
    while (q.step()) columns.push_back(q.text(1));
  }
  for (const char* added : {"prompt_version", "conversation"})
    if (std::find(columns.begin(), columns.end(), added) == columns.end())
      exec(fmt::format("ALTER TABLE nodes ADD COLUMN {} TEXT", added).c_str());
}

search_db::~search_db() { sqlite3_close(m_db); }

void search_db::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(m_db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "?";
    sqlite3_free(err);
    throw infra_error(fmt::format("search db {}: {}", m_path.string(), msg));
  }
}

namespace {
search_row search_from(const stmt& s) {
  search_row r;
  r.id = s.i64(0);
  r.workload = s.text(1);
  r.spec_hash = s.text(2);
  r.device = s.text(3);
  r.gpu_key = s.text(4);
  r.proposer = s.text(5);
  r.state = s.text(6);
  r.baselines = s.json(7);
  r.options = s.json(8);
  r.started_at = s.text(9);
  r.updated_at = s.text(10);
  return r;
}
constexpr const char* k_search_columns =
    "SELECT id, workload, spec_hash, device, gpu_key, proposer, state, baselines, options, started_at, updated_at "
    "FROM searches ";
}  // namespace

std::optional<search_row> search_db::find_search(const std::string& workload, const std::string& gpu_key) {
  stmt s(m_db, (std::string(k_search_columns) + "WHERE workload = ? AND gpu_key = ?").c_str());
  s.bind(1, workload).bind(2, gpu_key);
  if (!s.step()) return std::nullopt;
  return search_from(s);
}

std::vector<search_row> search_db::list_searches() {
  stmt s(m_db, (std::string(k_search_columns) + "ORDER BY workload, gpu_key").c_str());
  std::vector<search_row> out;
  while (s.step()) out.push_back(search_from(s));
  return out;
}

int64_t search_db::create_search(const search_row& r) {
  transaction t(m_db);
  stmt s(m_db, "INSERT INTO searches (workload, spec_hash, device, gpu_key, proposer, state, baselines, options) "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  s.bind(1, r.workload).bind(2, r.spec_hash).bind(3, r.device).bind(4, r.gpu_key).bind(5, r.proposer);
  s.bind(6, r.state).bind(7, r.baselines.dump()).bind(8, r.options.dump());
  s.run();
  int64_t id = sqlite3_last_insert_rowid(m_db);
  t.commit();
  return id;
}

void search_db::delete_search(int64_t id) {
  transaction t(m_db);
  // Children reference parents: delete samples, evaluations, edges, then nodes and the search.
  stmt(m_db, "DELETE FROM samples WHERE evaluation_id IN (SELECT e.id FROM evaluations e JOIN nodes n ON e.node_id = n.id WHERE n.search_id = ?)").bind(1, id).run();
  stmt(m_db, "DELETE FROM evaluations WHERE node_id IN (SELECT id FROM nodes WHERE search_id = ?)").bind(1, id).run();
  stmt(m_db, "DELETE FROM edges WHERE search_id = ?").bind(1, id).run();
  stmt(m_db, "UPDATE nodes SET parent_id = NULL WHERE search_id = ?").bind(1, id).run();
  stmt(m_db, "DELETE FROM nodes WHERE search_id = ?").bind(1, id).run();
  stmt(m_db, "DELETE FROM searches WHERE id = ?").bind(1, id).run();
  t.commit();
}

void search_db::set_state(int64_t id, const std::string& state) {
  transaction t(m_db);
  stmt(m_db, "UPDATE searches SET state = ?, updated_at = strftime('%Y-%m-%dT%H:%M:%SZ','now') WHERE id = ?")
      .bind(1, state).bind(2, id).run();
  t.commit();
}

void search_db::set_baselines(int64_t id, const nlohmann::json& baselines) {
  transaction t(m_db);
  stmt(m_db, "UPDATE searches SET baselines = ? WHERE id = ?").bind(1, baselines.dump()).bind(2, id).run();
  t.commit();
}

int64_t search_db::add_node(int64_t search, std::optional<int64_t> parent, const candidate& c) {
  transaction t(m_db);
  stmt s(m_db, "INSERT INTO nodes (search_id, parent_id, family, knobs, prompt, source, source_hash, origin, status, "
               "prompt_version, conversation) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)");
  s.bind(1, search).bind(2, parent).bind(3, c.family).bind(4, knobs_text(c.knobs)).bind(5, c.prompt);
  s.bind(6, c.source).bind(7, c.source_hash).bind(8, c.origin).bind(9, c.prompt_version).bind(10, c.conversation);
  s.run();
  int64_t id = sqlite3_last_insert_rowid(m_db);
  if (parent)
    stmt(m_db, "INSERT INTO edges (search_id, parent_id, child_id, move) VALUES (?, ?, ?, ?)")
        .bind(1, search).bind(2, *parent).bind(3, id).bind(4, c.origin).run();
  t.commit();
  return id;
}

void search_db::record(int64_t node, const std::vector<evaluation_row>& stages, node_status status,
                       std::optional<double> time_us, std::optional<double> reward, const std::string& detail,
                       const nlohmann::json& results) {
  transaction t(m_db);
  int64_t eval = 0;
  for (auto& e : stages) {
    stmt ins(m_db, "INSERT INTO evaluations (node_id, stage, ok, detail, seconds) VALUES (?, ?, ?, ?, ?)");
    ins.bind(1, node).bind(2, e.stage).bind(3, int64_t{e.ok}).bind(4, e.detail.dump()).bind(5, std::optional<double>(e.seconds));
    ins.run();
    eval = sqlite3_last_insert_rowid(m_db);
    for (auto& smp : e.samples)
      stmt(m_db, "INSERT INTO samples (evaluation_id, impl, case_name, kind, values_us) VALUES (?, ?, ?, ?, ?)")
          .bind(1, eval).bind(2, smp.impl).bind(3, smp.case_name).bind(4, smp.kind)
          .bind(5, nlohmann::json(smp.values_us).dump()).run();
  }
  KF_ASSERT(eval > 0 || status == node_status::pending, "node {}: a result without an evaluation", node);
  // Verdicts only get worse: a failed node keeps its failure; the first result fixes result_seq.
  stmt up(m_db, "UPDATE nodes SET status = ?, time_us = ?, reward = ?, detail = ?, results = ?, "
                "result_seq = COALESCE(result_seq, ?) "
                "WHERE id = ? AND status NOT IN ('compile_failed', 'verify_failed')");
  up.bind(1, std::string(node_status_name(status))).bind(2, time_us).bind(3, reward).bind(4, detail);
  up.bind(5, results.dump()).bind(6, status == node_status::pending ? std::nullopt : std::optional<int64_t>(eval)).bind(7, node);
  up.run();
  t.commit();
}

std::vector<node_row> search_db::load_nodes(int64_t search) {
  stmt s(m_db, "SELECT id, parent_id, family, knobs, prompt, source, source_hash, origin, status, time_us, reward, "
               "detail, result_seq, results, prompt_version, conversation FROM nodes WHERE search_id = ? ORDER BY id");
  s.bind(1, search);
  std::vector<node_row> out;
  while (s.step()) {
    node_row r;
    r.id = s.i64(0);
    if (!s.null(1)) r.parent = s.i64(1);
    r.cand.family = s.text(2);
    auto k = s.json(3);
    if (k.is_object())
      for (auto& [name, v] : k.items()) r.cand.knobs[name] = v.is_string() ? v.get<std::string>() : v.dump();
    r.cand.prompt = s.text(4);
    r.cand.source = s.text(5);
    r.cand.source_hash = s.text(6);
    r.cand.origin = s.text(7);
    auto st = parse_node_status(s.text(8));
    KF_ASSERT(st.has_value(), "search db: node {} has status '{}'", r.id, s.text(8));
    r.status = *st;
    r.time_us = s.opt_f64(9);
    r.reward = s.opt_f64(10);
    r.detail = s.text(11);
    if (!s.null(12)) r.result_seq = s.i64(12);
    r.results = s.json(13);
    r.cand.prompt_version = s.text(14);
    r.cand.conversation = s.text(15);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<evaluation_row> search_db::load_evaluations(int64_t node) {
  stmt s(m_db, "SELECT id, stage, ok, detail, seconds FROM evaluations WHERE node_id = ? ORDER BY id");
  s.bind(1, node);
  std::vector<evaluation_row> out;
  while (s.step()) {
    evaluation_row e;
    e.stage = s.text(1);
    e.ok = s.i64(2) != 0;
    e.detail = s.json(3);
    e.seconds = s.f64(4);
    stmt q(m_db, "SELECT impl, case_name, kind, values_us FROM samples WHERE evaluation_id = ?");
    q.bind(1, s.i64(0));
    while (q.step()) e.samples.push_back({q.text(0), q.text(1), q.text(2), q.json(3).get<std::vector<double>>()});
    out.push_back(std::move(e));
  }
  return out;
}

int64_t search_db::count_nodes(int64_t search) {
  stmt s(m_db, "SELECT COUNT(*) FROM nodes WHERE search_id = ?");
  s.bind(1, search);
  s.step();
  return s.i64(0);
}

int64_t search_db::count_evaluations(int64_t search) {
  stmt s(m_db, "SELECT COUNT(*) FROM evaluations e JOIN nodes n ON e.node_id = n.id WHERE n.search_id = ?");
  s.bind(1, search);
  s.step();
  return s.i64(0);
}

std::vector<stage_time> search_db::stage_times(int64_t search) {
  stmt s(m_db,
         "SELECT e.stage, COUNT(*), COALESCE(SUM(e.seconds), 0) FROM evaluations e JOIN nodes n ON e.node_id = n.id "
         "WHERE n.search_id = ? GROUP BY e.stage ORDER BY MIN(e.id)");
  s.bind(1, search);
  std::vector<stage_time> out;
  while (s.step()) out.push_back({s.text(0), s.i64(1), s.f64(2)});
  return out;
}

}  // namespace kf
