// The raw samples of a run, written only on request (`kforge run --samples FILE`): the run JSON and the
// history note keep summaries (#19: raw samples made the seed suite's JSON 33 MB). Schema "kforge.samples/1"
// (docs/json-schema.md): one line per series, samples at 6 significant digits.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "report/run_result.h"

namespace kf {

inline constexpr const char* k_samples_schema = "kforge.samples/1";

// Every series that holds raw samples (a run loaded from its JSON holds none: the list is then empty).
std::string render_samples(const run_result& r);
int count_sample_series(const run_result& r);  // series with raw samples in hand

// Puts a side file's samples back into `r`, matched by workload, case, impl and series ("cold" | "hot");
// returns how many series matched. The stats already in `r` are kept (they came from the same samples).
// Throws user_error naming `origin` on another schema or a malformed file.
int attach_samples(run_result& r, const nlohmann::json& j, const std::string& origin);
int load_samples(run_result& r, const std::string& path);

}  // namespace kf
