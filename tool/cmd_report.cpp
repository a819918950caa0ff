// kforge report: render a run result (JSON, schema kforge.run/1) in other formats, or merge shards.
//   kforge report render IN.json [--markdown F] [--junit F] [--html F] [--gbench F] [--json F] [--search T.json]
//                                [--samples F --samples-from S.json,...]
//   kforge report merge OUT.json IN.json...
//   kforge report record IN.json [--commit REV]
#include <filesystem>

#include <fmt/format.h>

#include "args.h"
#include "commands.h"
#include "report/reporter.h"
#include "report/samples_file.h"
#include "search/search_db.h"
#include "search/tree_export.h"
#include "store/git_repo.h"
#include "store/history.h"
#include "store/shard.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/term.h"

namespace kf {
namespace {

std::vector<flag_def> render_flags() {
  std::vector<flag_def> defs;
  for (auto& r : reporters()) defs.push_back({std::string(r->format()), true, std::string(r->description()), "FILE"});
  defs.push_back({"search", true, "add a search tree (JSON: {workload, gpu_key, nodes}) to the HTML explorer", "FILE"});
  defs.push_back({"search-db", true, "add every search tree stored in a search database (.kforge/search.db)", "FILE"});
  defs.push_back({"max-bytes", true, "limit for --markdown (default 65536)", "N"});
  defs.push_back({"samples-from", true, "raw samples to put back (files of `kforge run --samples`), for --samples", "F,..."});
  return defs;
}

// A PR comment's size limit: GitHub takes 65536 characters; below 1 KiB not even the summary fits.
int max_bytes(const args& a) {
  const int n = a.get_int("max-bytes", 65536);
  if (n < 1024) throw user_error(fmt::format("--max-bytes: expected at least 1024 (the summary alone needs that), got {}", n));
  return n;
}

int write_outputs(const run_result& r, const args& a) {
  // A run JSON holds summaries only: writing a samples file from it would be an empty file that looks like data.
  if (a.has("samples") && count_sample_series(r) == 0)
    throw user_error("--samples: this run result holds no raw samples (the run JSON keeps summaries); give the files "
                     "`kforge run --samples` wrote with --samples-from");
  int written = 0;
  for (auto& rep : reporters()) {
    auto path = a.get(std::string(rep->format()));
    if (!path) continue;
    if (rep->format() == "markdown" && a.has("max-bytes"))
      write_file_atomic(*path, render_markdown(r, static_cast<size_t>(max_bytes(a))));
    else
      rep->write(r, *path);
    term::say("wrote {} ({})", *path, rep->format());
    ++written;
  }
  return written;
}

int render(const std::vector<std::string>& argv) {
  args a(argv, render_flags());
  if (a.positional().size() != 1) throw user_error("usage: kforge report render IN.json [--markdown F] [--junit F] ...");
  run_result r = load_run_result(a.positional()[0]);
  for (auto& f : a.get_list("samples-from")) load_samples(r, f);
  if (auto s = a.get("search")) {
    auto j = nlohmann::json::parse(read_file(*s), nullptr, false);
    if (j.is_discarded()) throw user_error(source_loc{*s}, "not valid JSON (expected a search tree)");
    nlohmann::json wrapped = {{"schema", k_run_schema}, {"searches", j.is_array() ? j : nlohmann::json::array({j})}};
    auto trees = run_result_from_json(wrapped, *s).searches;
    r.searches.insert(r.searches.end(), trees.begin(), trees.end());
  }
  if (auto p = a.get("search-db")) {
    if (!std::filesystem::exists(*p)) throw user_error(source_loc{*p}, "no such search database");
    search_db db(*p);
    nlohmann::json trees = nlohmann::json::array();
    for (auto& s : db.list_searches()) trees.push_back(search_tree_json(db, s));
    auto loaded = run_result_from_json({{"schema", k_run_schema}, {"searches", trees}}, *p).searches;
    r.searches.insert(r.searches.end(), loaded.begin(), loaded.end());
  }
  if (write_outputs(r, a) == 0)
    throw user_error("nothing to render: give at least one of --markdown, --junit, --html, --gbench, --json");
  return exit_ok;
}

std::vector<flag_def> merge_flags() {
  auto defs = render_flags();
  defs.push_back({"verdict", false, "exit with the merged run's verdict (0 passed, 1 a check failed, 2 incomplete), "
                                    "as `kforge run` would have: the final job of a sharded CI run"});
  return defs;
}

int merge(const std::vector<std::string>& argv) {
  args a(argv, merge_flags());
  const auto& pos = a.positional();
  if (pos.size() < 2) throw user_error("usage: kforge report merge OUT.json IN.json...");
  std::vector<run_result> shards;
  for (size_t i = 1; i < pos.size(); ++i) shards.push_back(load_run_result(pos[i]));
  run_result merged = merge_runs(shards);
  for (auto& f : a.get_list("samples-from")) load_samples(merged, f);
  // Shards of `kforge run --shard`: a missing or disagreeing shard makes the merged run incomplete (exit 2 with
  // --verdict), never a pass over fewer workloads.
  if (std::string wrong = check_shards(shards); !wrong.empty()) {
    merged.complete = false;
    merged.incomplete_reason += (merged.incomplete_reason.empty() ? "" : "; ") + wrong;
  }
  join_shard_records(merged, shards);
  find_reporter("json").write(merged, pos[0]);
  term::say("merged {} shard{} ({} workloads) into {}{}", shards.size(), shards.size() == 1 ? "" : "s",
            merged.workloads.size(), pos[0], merged.complete ? "" : " (incomplete: " + merged.incomplete_reason + ")");
  write_outputs(merged, a);
  if (!a.has("verdict")) return exit_ok;
  term::say("verdict of the merged run: exit {}", merged.exit_code());
  return merged.exit_code();
}

// Merges a saved run into the history note of a commit (CI: after fetching notes another runner pushed).
int record(const std::vector<std::string>& argv) {
  args a(argv, {{"commit", true, "the commit whose note gets the results (default: the run's git_commit)", "REV"}});
  if (a.positional().size() != 1) throw user_error("usage: kforge report record IN.json [--commit REV]");
  run_result r = load_run_result(a.positional()[0]);
  if (r.env.gpu_key.empty()) throw user_error(source_loc{a.positional()[0]}, "the run has no env.gpu_key to file it under");
  git_repo repo(".");
  std::string rev = a.get_or("commit", r.env.git_commit.empty() ? "HEAD" : r.env.git_commit);
  std::string commit = repo.resolve(rev);
  record_history(repo, commit, r);
  term::say("recorded {} workloads for {} as the {} note of {}", r.workloads.size(), r.env.gpu_key, k_notes_ref,
            commit.substr(0, 12));
  return exit_ok;
}

}  // namespace

std::string report_help() {
  return "usage: kforge report render IN.json [formats...]\n"
         "       kforge report merge OUT.json IN.json... [formats...] [--verdict]\n"
         "       kforge report record IN.json [--commit REV]   (merge into the commit's refs/notes/kforge note)\n\n"
         "Renders a run result (kforge run --json; schema in docs/json-schema.md) in other formats, or merges\n"
         "shards of one run (a later shard's workload replaces an earlier one of the same name; shards of\n"
         "`kforge run --shard K/N` must be all N of one split, each once, or the merged run is incomplete).\n\n"
         "formats:\n" +
         flags_help(render_flags()) +
         "\nexit codes: 0 written, 2 bad input (the file and what was expected are named); with --verdict, merge\n"
         "            exits as `kforge run` does: 0 passed, 1 a check failed, 2 incomplete\n";
}

int report_run(const std::vector<std::string>& argv) {
  if (argv.empty()) throw user_error("kforge report needs a subcommand: render, merge or record (see kforge report --help)");
  std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (argv[0] == "render") return render(rest);
  if (argv[0] == "merge") return merge(rest);
  if (argv[0] == "record") return record(rest);
  throw user_error(fmt::format("unknown report subcommand '{}': expected render, merge or record", argv[0]));
}

}  // namespace kf
