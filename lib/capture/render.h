// Rendering a capture_result: each workload's spec file (the spec with comments saying where in the model it
// came from and what share of the time it takes), the summary table kforge capture prints, and its JSON.
#pragma once
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "capture/capture.h"

namespace kf::capture {

// The YAML of workload `index` (its rank - 1), with its provenance comments.
std::string captured_spec_text(const capture_result& r, size_t index);

// Which workloads were written, by index, to which file.
using written_files = std::map<size_t, std::string>;

// The table: every workload ranked (rank, workload, pattern, calls, shapes, share, where; a * marks those
// written), then what no spec expresses, by operator, with its share.
std::string summary_table(const capture_result& r, const written_files& written);

nlohmann::json summary_json(const capture_result& r, const written_files& written);

}  // namespace kf::capture
