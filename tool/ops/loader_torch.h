// Loading workloads as operators: every spec in a folder (or the named ones), each one's stored winner for the
// devices asked for (found as kforge run finds it: store/winners.h), compiled by kforge's compile service into its
// cache and loaded once, then installed as torch.ops.kforge.<workload> (op_registry_torch.h). All compiling happens
// here, never inside an operator's call. Include only from *_torch.cpp.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kf::ops {

struct load_options {
  std::string workloads_dir;
  // Whose kernels to load: "cpu", "cuda" (the current GPU), "cuda:N", several joined by commas, or "auto" (the
  // current GPU where there is one, else cpu). A device kind not asked for keeps what an earlier load gave it.
  std::string device = "auto";
  // The compile cache's root; empty: KFORGE_CACHE_DIR, else <workloads_dir>/../.kforge/cache (kforge's own cache
  // when the folder is a checkout's workloads/) where that can be written, else ~/.cache/kforge.
  std::string cache_dir;
  std::vector<std::string> names;  // only these workloads (empty: every spec in the folder)
};

// Loads and installs; a spec that does not parse, a kernel that does not compile or load is reported (the
// operator then runs the eager graph), never fatal. Throws user_error for a folder that is not one, a name with no
// spec, a device that is not there. Returns the report: {"workloads_dir", "cache_dir", "devices", "loaded": [each
// operator's op_entry::to_json()], "skipped": [{"spec", "why"}]}.
nlohmann::json load(const load_options& options);

}  // namespace kf::ops
