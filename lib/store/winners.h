// The stored kernels ("winners"): workloads/<name>/kernels/<gpu-key>.cu (+ .json metadata), .cpp for the
// cpu key. Lookup falls back to another key of the same architecture (sm90-nvidia-h100 for
// sm90-nvidia-h200) and says so; writing is atomic and puts the winner's provenance in the source's opening comment
// (kernel_header.h).
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kf {

struct stored_kernel {
  std::filesystem::path source;    // the .cu / .cpp file
  std::filesystem::path metadata;  // the .json beside it (may not exist)
  std::string gpu_key;             // the key it was stored for
  bool fallback = false;           // stored for another GPU of the same architecture
  std::string note;                // for a fallback or unreadable metadata: a sentence
  nlohmann::json meta = nlohmann::json::object();
};

struct winner_lookup {
  std::optional<stored_kernel> kernel;
  std::string why;  // when there is none: "no kernel for sm90-nvidia-h200 in workloads/x/kernels (it has: ...)"
};

// <folder of the spec>/<workload name>/kernels
std::filesystem::path kernels_dir(const std::filesystem::path& spec_path, std::string_view workload_name);
// "sm90" for "sm90-nvidia-h200", "cpu" for "cpu-x86-64".
std::string arch_prefix(std::string_view gpu_key);
// ".cpp" for cpu keys, ".cu" for GPU keys.
std::string kernel_extension(std::string_view gpu_key);

winner_lookup find_winner(const std::filesystem::path& kernels_dir, std::string_view gpu_key);

struct winner_write {
  std::string workload;
  std::string source;                   // the candidate's translation unit, as emitted (its kernel header first)
  std::vector<std::string> provenance;  // lines after "kforge winner: W on KEY": how it was found, what it measured
  nlohmann::json metadata = nlohmann::json::object();  // family, family_version, knobs, results, lineage, environment
};

// Writes <kernels_dir>/<gpu_key>.{cu,cpp} and .json atomically (source first, then metadata). The source gets the
// provenance lines after its kernel header (with_provenance), the first of them "kforge winner: W on KEY". Returns
// where.
stored_kernel write_winner(const std::filesystem::path& kernels_dir, std::string_view gpu_key, const winner_write& w);

}  // namespace kf
