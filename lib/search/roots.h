// Where a search starts (docs/design.md "Search": roots): the stored winner for this GPU key, stored winners of other
// GPU keys whose .json names a family + knobs that this device's family of the same kind can re-emit, and each
// covering family's default variant: for the whole spec, and for each tuned case alone where that differs.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "search/mcts.h"
#include "spec/spec.h"

namespace kf {

struct root_set {
  std::vector<candidate> roots;
  std::vector<std::string> notes;  // stored kernels that could not seed the search, and why
};

// `kernels_dir`: workloads/<name>/kernels (may not exist). Candidates are unique by candidate_key.
root_set search_roots(const workload_spec& spec, device_kind device, const std::string& gpu_key,
                      const std::filesystem::path& kernels_dir);

// `kforge search --try`: variants a user names ("threads=32 tpp=1", several separated by ';', each optionally
// "FAMILY:" first; without it, the one family of the device that covers the spec), each knob not named at the
// family's default for the spec. Throws user_error naming the variant and what is wrong with it (an unknown family
// or knob, a value not among the knob's, a combination the family rejects).
std::vector<candidate> tried_roots(const workload_spec& spec, device_kind device, const std::string& text);

// "row_softmax" for "row_softmax_cuda" (the family's kind, without the device).
std::string family_kind(const std::string& family_name);

}  // namespace kf
