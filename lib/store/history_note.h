// What a history note keeps of a run, per GPU key (schema "kforge.note/2", docs/json-schema.md): the
// environment's essentials and, per workload, its kernel, outcome and time, and per case the compared metric
// and each implementation's status and statistics summary. No samples, no verification checks, no sentences:
// the note is written on every main commit and read by every pull request, so it stays a few KB per GPU key.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "report/run_result.h"

namespace kf {

// The order of the numbers in a note's stats arrays (also written into the note, so it reads on its own).
inline constexpr const char* k_note_stats[] = {"count", "median_us", "q1_us", "q3_us", "min_us", "noise", "ci_lo_us", "ci_hi_us"};

// The compact entry of `r` (its GPU key's slot in the note).
nlohmann::json note_entry(const run_result& r);
// Back to a run result: series carry `stats` only (samples_us empty); a workload that did not pass carries one
// check of kind "recorded" with its outcome, so workload_result::outcome() reads as recorded.
// Throws user_error naming `origin` when the entry is malformed.
run_result run_from_note_entry(const nlohmann::json& j, const std::string& origin);
// `update`'s workloads merged into `existing` (same name: replaced; new: appended); env from `update`;
// incomplete when either is.
nlohmann::json merge_note_entries(const nlohmann::json& existing, const nlohmann::json& update);

}  // namespace kf
