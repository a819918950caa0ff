// The compile service: candidate source -> shared object, through nvcc (cuda) or the host compiler (cpu).
// Results are cached by content (source, flags, compiler version, arch) under <cache root>/compile/, and a batch
// compiles in parallel on the host's cores. A candidate that does not compile is a result with its log.
#pragma once
#include <chrono>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/device.h"

namespace kf {

// From `-Xptxas -v`; -1 where unknown (cpu builds, or ptxas printed nothing). The worst kernel of the unit.
struct resource_usage {
  int registers = -1;
  int64_t smem_bytes = -1;     // static shared memory
  int64_t spill_stores = -1;   // bytes
  int64_t spill_loads = -1;    // bytes
  int64_t stack_bytes = -1;
  int kernels = 0;             // entry functions reported
  bool known() const { return kernels > 0; }
  nlohmann::json to_json() const;
  static resource_usage from_json(const nlohmann::json& j);
};
resource_usage parse_ptxas_resources(std::string_view log);

struct compile_request {
  std::string source;
  device_kind device = device_kind::cuda;
  std::string arch = "sm_90a";            // cuda only
  std::vector<std::string> extra_flags;   // appended to the compiler's command line
  std::string name = "candidate";         // for messages and the file name
};

struct compile_result {
  bool ok = false;
  std::string so_path;   // absolute; valid while the cache entry exists
  std::string log;       // the compiler's output (errors, ptxas report)
  std::string error;     // one line when !ok: "compile error", "timed out after 120 s", ...
  resource_usage resource;
  double seconds = 0;    // compile time (0 when cached)
  bool cached = false;
  std::string key;       // the cache key (sha256 hex)
  nlohmann::json to_json() const;
};

struct compile_options {
  std::filesystem::path cache_root = ".kforge/cache";
  std::chrono::seconds timeout{180};
  int jobs = 0;             // threads for a batch; 0: one per core
  std::string nvcc;         // empty: KFORGE_NVCC from the build, else nvcc on PATH / in /usr/local/cuda
  std::string cxx;          // empty: $CXX, else the build's compiler, else g++
  std::string include_dir;  // folder with kf_abi.h; empty: found (see abi_include_dir)
};

// The folder holding kf_abi.h: $KFORGE_INCLUDE_DIR, <binary dir>/../include/kforge, or the source tree's lib/exec.
// Throws infra_error when none has it.
std::string abi_include_dir();

class compiler {
 public:
  explicit compiler(compile_options options = {});
  compile_result compile(const compile_request& request);
  // Compiles all requests on a pool of threads; results are in the order of the requests. Requests with one
  // cache key (the same source and flags) are compiled once and share the result.
  std::vector<compile_result> compile_batch(const std::vector<compile_request>& requests);
  // The cache key of a request: its device, arch, flags, the compiler's identity, kf_abi.h and the source.
  std::string cache_key(const compile_request& request);
  const compile_options& options() const { return m_options; }

  // The compiler command line for one request, and the compiler's identity (part of the cache key).
  std::vector<std::string> command(const compile_request& request, const std::string& src,
                                   const std::string& out) const;
  std::string compiler_identity(device_kind device);  // `--version` output, memoized

 private:
  compile_options m_options;
  std::string m_nvcc, m_cxx;
  std::mutex m_mutex;  // guards the memoized identities
  std::string m_nvcc_identity, m_cxx_identity;
};

}  // namespace kf
