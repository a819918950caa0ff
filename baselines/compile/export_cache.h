// The torch.compile baseline's parent side: exports a workload case to an AOTInductor package (.pt2) with
// baselines/compile/export.py, once per (spec hash, case, torch version, GPU key, mode), cached under
// <cache root>/aoti/. No python, or no torch in it, is a result ("skipped: <why>"), never a zero time.
#pragma once
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/spec.h"

namespace kf {

struct export_options {
  std::filesystem::path cache_root = ".kforge/cache";
  std::string python = "python3";                  // a name on PATH or a path
  std::filesystem::path script;                    // empty: baselines/compile/export.py of the source tree
  std::chrono::seconds timeout{900};               // max-autotune on a large case takes minutes
};

// The modes exported by default; the worker times each and keeps the faster.
const std::vector<std::string>& export_modes();  // {"default", "max-autotune"}

struct export_outcome {
  std::string mode;
  std::string pt2;      // absolute path when exported (or cached)
  std::string skipped;  // "skipped: <why>" when there is no package
  bool cached = false;
  double seconds = 0;   // export time (0 when cached)
  std::string log;      // the exporter's output when it failed
  bool ok() const { return skipped.empty(); }
};

// How many exports run at once: KFORGE_EXPORT_JOBS, else a quarter of the cores (1 to 4). On a GPU their
// timings take turns (bench_lock); their code generation overlaps.
int export_jobs();

class export_cache {
 public:
  explicit export_cache(export_options options = {});

  // "" when python with torch can run the exporter, else "skipped: <why>". Asked once.
  const std::string& unavailable();
  const std::string& torch_version();  // "" when unavailable

  // The cache key of a case and mode (sha256 hex of spec hash, case, torch version, GPU key, mode and
  // the exporter script's text).
  std::string key(const workload_spec& spec, const std::string& case_name, const std::string& gpu_key,
                  const std::string& mode);

  // The package for one case and mode on `device` ("cuda" or "cpu"), exporting it when not cached.
  export_outcome get(const workload_spec& spec, const std::string& case_name, const std::string& device,
                     const std::string& gpu_key, const std::string& mode);

  // The protocol's impl object for `cases` and all export modes: {"kind": "compile", "pt2": {"<case>":
  // {"<mode>": "/abs.pt2"}}}, plus "skipped": {"<case>": {"<mode>": "skipped: ..."}} where an export failed.
  nlohmann::json impl_for(const workload_spec& spec, const std::vector<std::string>& cases, const std::string& device,
                          const std::string& gpu_key, const std::vector<std::string>& modes = export_modes());

  // Exports every (spec, case, mode) not cached yet, export_jobs() at once across all the specs, so that a run
  // over many workloads pays for the slowest exports once rather than workload by workload. Returns how many
  // packages were exported (cached ones excluded); failures are left for impl_for to report.
  struct wanted {
    const workload_spec* spec;
    std::vector<std::string> cases;
  };
  int prefetch(const std::vector<wanted>& work, const std::string& device, const std::string& gpu_key,
               const std::vector<std::string>& modes = export_modes());

  std::filesystem::path folder() const { return m_options.cache_root / "aoti"; }

  // The file whose lock every exporter on `device` (cuda[:N]) holds while inductor times kernel configurations
  // (export.py --bench-lock): the GPU's timing lock (exec/device.h gpu_timing_lock), which kforge's own measure
  // and verify requests hold too. Concurrent exports take turns at the GPU, and take turns with a search or run
  // timing on it, so each picks its configurations on an otherwise idle GPU.
  std::filesystem::path bench_lock(const std::string& device) const;

 private:
  struct export_job {
    const workload_spec* spec;
    std::string case_name, mode;
  };
  // get() for every job, export_jobs() at once; the outcomes in the jobs' order.
  std::vector<export_outcome> get_all(const std::vector<export_job>& jobs, const std::string& device,
                                      const std::string& gpu_key);

  export_options m_options;
  std::optional<std::string> m_unavailable;
  std::string m_torch_version;
  std::string m_script_text;
};

}  // namespace kf
