// The sandbox's policy side (core): the mode, the worker's environment allowlist, the protections report.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

#include "exec/sandbox.h"
#include "util/error.h"

namespace kf {
namespace {

std::atomic<int> g_default_mode{-1};

// Exact names a worker may see: paths the loader and the toolkits need, locale, time zone.
constexpr std::string_view k_names[] = {
    "PATH", "LD_LIBRARY_PATH", "LANG", "LANGUAGE", "TZ", "TERM", "USER", "LOGNAME",
    "KMP_AFFINITY", "KMP_BLOCKTIME", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
};
// Prefixes of settings a worker may see: CUDA and its libraries, the GPU container runtime, the CPU threading
// libraries, LibTorch, sanitizers, and kforge's own.
constexpr std::string_view k_prefixes[] = {
    "LC_",     "CUDA_", "NVIDIA_", "CUDNN_", "CUBLAS_", "CUBLASLT_", "NCCL_", "NVSHMEM_", "TORCH_", "PYTORCH_",
    "OMP_",    "GOMP_", "MKL_",    "ASAN_",  "UBSAN_",  "LSAN_",     "TSAN_", "KFORGE_",
};
// Words that mark a secret wherever they appear in a name (KFORGE_LLM_API_KEY, CUDA_TOKEN, ...).
constexpr std::string_view k_secret_words[] = {"TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "CREDENTIAL",
                                               "AUTH", "COOKIE", "SESSION", "PRIVATE", "CERT"};

std::string upper(std::string_view s) {
  std::string u(s);
  for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

bool env_list_has(const char* variable, std::string_view name) {
  for (const auto& item : env_list(variable))
    if (item == name) return true;
  return false;
}

}  // namespace

std::string_view sandbox_mode_name(sandbox_mode m) {
  switch (m) {
    case sandbox_mode::off: return "off";
    case sandbox_mode::on: return "on";
    case sandbox_mode::strict: return "strict";
  }
  return "?";
}

sandbox_mode parse_sandbox_mode(std::string_view text, std::string_view what) {
  for (auto m : {sandbox_mode::off, sandbox_mode::on, sandbox_mode::strict})
    if (text == sandbox_mode_name(m)) return m;
  throw user_error(fmt::format("{}: '{}' is not a sandbox mode; expected on, strict or off", what, text));
}

sandbox_mode default_sandbox_mode() {
  int set = g_default_mode.load();
  if (set >= 0) return static_cast<sandbox_mode>(set);
  const char* env = std::getenv("KFORGE_SANDBOX");
  return env && *env ? parse_sandbox_mode(env, "KFORGE_SANDBOX") : sandbox_mode::on;
}

void set_default_sandbox_mode(sandbox_mode m) { g_default_mode = static_cast<int>(m); }

bool worker_env_allowed(std::string_view name) {
  if (name.empty()) return false;
  const std::string u = upper(name);
  for (auto w : k_secret_words)
    if (u.find(w) != std::string::npos) return false;
  if (std::find(std::begin(k_names), std::end(k_names), name) != std::end(k_names)) return true;
  for (auto p : k_prefixes)
    if (name.starts_with(p)) return true;
  return env_list_has("KFORGE_WORKER_ENV", name);
}

std::vector<std::string> worker_environment(char** parent, const std::map<std::string, std::string>& set,
                                            bool allowlist) {
  std::vector<std::string> env;
  for (char** e = parent; e && *e; ++e) {
    std::string_view kv = *e;
    std::string_view name = kv.substr(0, kv.find('='));
    if (kv.find('=') == std::string_view::npos || set.count(std::string(name))) continue;
    if (allowlist && !worker_env_allowed(name)) continue;
    env.emplace_back(kv);
  }
  for (auto& [k, v] : set) env.push_back(k + "=" + v);
  return env;
}

nlohmann::json protections_to_json(sandbox_mode mode, const std::vector<protection>& p) {
  nlohmann::json list = nlohmann::json::array();
  for (auto& x : p) list.push_back({{"name", x.name}, {"active", x.active}, {"detail", x.detail}});
  return {{"mode", sandbox_mode_name(mode)}, {"protections", list}};
}

std::vector<std::string> inactive_protections(const nlohmann::json& report) {
  std::vector<std::string> out;
  if (!report.is_object() || !report.contains("protections")) return {"all (the worker reported none)"};
  for (auto& p : report["protections"])
    if (!p.value("active", false)) out.push_back(fmt::format("{} ({})", p.value("name", "?"), p.value("detail", "")));
  return out;
}

std::vector<std::string> env_list(const char* variable) {
  std::vector<std::string> out;
  const char* value = std::getenv(variable);
  std::string_view list = value ? value : "";
  while (!list.empty()) {
    size_t comma = list.find(',');
    if (comma != 0) out.emplace_back(list.substr(0, comma));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

bool sandbox_skipped(std::string_view name) { return env_list_has("KFORGE_SANDBOX_SKIP", name); }

protection skipped_protection(std::string_view name) {
  return {std::string(name), false, "skipped: named in KFORGE_SANDBOX_SKIP"};
}

nlohmann::json denials_to_json(const std::vector<sandbox_denial>& d) {
  nlohmann::json list = nlohmann::json::array();
  for (auto& x : d) list.push_back({{"rule", x.rule}, {"detail", x.detail}});
  return list;
}

}  // namespace kf
