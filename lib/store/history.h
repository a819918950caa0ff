// Timing history in git: a JSON note per commit under refs/notes/kforge, holding a compact record of a run per
// GPU key (docs/design.md "Stores"; history_note.h says what is kept). Recording merges into the note (other GPU keys
// are kept; within this key a workload replaces the one of the same name). A PR compares with the note on its
// merge-base. Notes of the older schema "kforge.note/1" (full run results, raw samples) still load.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "report/run_result.h"
#include "store/git_repo.h"

namespace kf {

inline constexpr const char* k_notes_ref = "refs/notes/kforge";
inline constexpr const char* k_note_schema = "kforge.note/2";
inline constexpr const char* k_note_schema_v1 = "kforge.note/1";  // read, rewritten as /2 when recorded into

struct history_entry {
  std::string commit;                // the commit whose note was read
  std::optional<run_result> result;  // this GPU key's results there, or nullopt
  std::string why;                   // when nullopt: a sentence saying why (no note, no results for the key)
};

// This GPU key's results in the note on `commit` (a sha): series carry summaries (`stats`), no samples (a
// kforge.note/1 note still yields its samples). A note that is not kforge JSON is reported in
// `why`, not thrown: history is evidence, and a broken note must not stop a run.
history_entry load_history(const git_repo& repo, std::string_view commit, std::string_view gpu_key,
                           std::string_view notes_ref = k_notes_ref);

// Merges `r` (under r.env.gpu_key) into the note on `commit` and writes it. Search trees are not stored.
void record_history(git_repo& repo, std::string_view commit, const run_result& r, std::string_view notes_ref = k_notes_ref);

// The note's JSON text with `r` merged in (pure; used by record_history). `existing` may be empty or invalid.
std::string merge_note(std::string_view existing, const run_result& r);

}  // namespace kf
