#include "store/history.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/text_escape.h"
#include "store/history_note.h"
#include "util/error.h"
#include "util/term.h"

namespace kf {
using json = nlohmann::json;

namespace {

// The note's JSON, or null when the text is not a kforge note.
json parse_note(std::string_view text, std::string* why) {
  if (text.empty()) return nullptr;
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *why = "the note is not JSON";
    return nullptr;
  }
  std::string schema = j.value("schema", "");
  if (schema != k_note_schema && schema != k_note_schema_v1) {
    *why = fmt::format("the note's schema is \"{}\", expected \"{}\" (or \"{}\")", schema, k_note_schema, k_note_schema_v1);
    return nullptr;
  }
  if (!j.contains("results") || !j["results"].is_object()) {
    *why = "the note has no \"results\" object";
    return nullptr;
  }
  return j;
}

}  // namespace

history_entry load_history(const git_repo& repo, std::string_view commit, std::string_view gpu_key,
                           std::string_view notes_ref) {
  history_entry h;
  h.commit = std::string(commit);
  std::string short_sha = h.commit.substr(0, 12);
  auto text = repo.read_note(commit, notes_ref);
  if (!text) {
    h.why = fmt::format("no kforge history note on {} (record one on the main branch with `kforge run --record`; "
                        "in CI fetch notes with `git fetch origin {}:{}`)", short_sha, notes_ref, notes_ref);
    return h;
  }
  std::string why;
  json note = parse_note(*text, &why);
  if (note.is_null()) {
    h.why = fmt::format("the history note on {} cannot be used: {}", short_sha, why);
    return h;
  }
  const json& results = note["results"];
  auto it = results.find(std::string(gpu_key));
  if (it == results.end()) {
    std::vector<std::string> keys;
    for (auto& [k, _] : results.items()) keys.push_back(k);
    h.why = fmt::format("the history note on {} has no results for {} (it has: {})", short_sha, gpu_key,
                        keys.empty() ? "none" : fmt::format("{}", fmt::join(keys, ", ")));
    return h;
  }
  try {
    std::string origin = fmt::format("{} note on {}", notes_ref, short_sha);
    h.result = note["schema"] == k_note_schema_v1 ? run_result_from_json(*it, origin) : run_from_note_entry(*it, origin);
  } catch (const user_error& e) {
    h.why = fmt::format("the history note on {} cannot be used: {}", short_sha, e.what());
  }
  return h;
}

std::string merge_note(std::string_view existing, const run_result& r) {
  std::string why;
  json note = parse_note(existing, &why);
  if (note.is_null()) {
    if (!existing.empty()) term::say("kforge: replacing a history note that is not kforge's ({})", why);
    note = {{"schema", k_note_schema}, {"results", json::object()}};
  }
  if (note["schema"] == k_note_schema_v1) {  // full run results with samples: rewritten in the compact form
    json compact = json::object();
    for (auto& [key, entry] : note["results"].items()) {
      try {
        compact[key] = note_entry(run_result_from_json(entry));
      } catch (const user_error& e) {
        term::say("kforge: dropping the unreadable {} entry of a kforge.note/1 history note ({})", key, e.what());
      }
    }
    note = {{"schema", k_note_schema}, {"results", compact}};
  }
  json update = note_entry(r);
  auto& slot = note["results"][r.env.gpu_key];
  // An unreadable older entry for this key is replaced by the new one.
  slot = slot.is_object() && slot.contains("workloads") && slot["workloads"].is_array() ? merge_note_entries(slot, update) : update;
  return safe_dump(note) + "\n";
}

void record_history(git_repo& repo, std::string_view commit, const run_result& r, std::string_view notes_ref) {
  KF_ASSERT(!r.env.gpu_key.empty(), "a run without a GPU key cannot be recorded");
  auto existing = repo.read_note(commit, notes_ref);
  repo.write_note(commit, notes_ref, merge_note(existing.value_or(""), r));
}

}  // namespace kf
