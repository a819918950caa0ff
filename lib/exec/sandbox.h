// The sandbox around untrusted code (docs/sandbox.md): kforge-worker runs candidate kernels that kforge did not
// write, so the worker gets nothing worth stealing and no way out.
//
//  - environment: the parent starts the worker with an allowlisted environment (paths, CUDA, threading and kforge
//    settings), never a name that looks like a secret; HOME and TMPDIR point at the worker's scratch folder.
//  - enter_sandbox_early (worker, before any thread): a fresh network namespace, a private /tmp (an overlay whose
//    writes stay in memory), and Landlock: files written only under the scratch folder and /tmp (and the device nodes), nothing read under /proc but the worker's own entries and
//    the system ones, no TCP, no signals to processes outside the sandbox.
//  - enter_sandbox_filter (worker, after the device is set up, before any request): a seccomp filter (libseccomp)
//    on every thread that denies sockets, io_uring, new processes, exec, ptrace, signals to other processes,
//    namespaces and mounts, kernel modules and bpf, and opens for writing outside the scratch folder. A denied call
//    returns an error to the caller and is recorded: the verdict names it (rules `sandbox.*`).
// Core header: no LibTorch, no CUDA.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kf {

enum class sandbox_mode {
  off,     // no protections (debugging a kernel by hand; never for code you did not write)
  on,      // every protection the machine allows; the rest are reported as unavailable (default)
  strict,  // refuse to run candidates unless every protection is active
};
std::string_view sandbox_mode_name(sandbox_mode m);
// "off", "on", "strict"; throws user_error naming `what` (a flag or variable) otherwise.
sandbox_mode parse_sandbox_mode(std::string_view text, std::string_view what);
// The mode workers start with: set_default_sandbox_mode's, else $KFORGE_SANDBOX, else on.
sandbox_mode default_sandbox_mode();
void set_default_sandbox_mode(sandbox_mode m);

// Whether a variable of the parent may reach the worker: the allowlist (docs/sandbox.md) less every name that
// looks like a secret (TOKEN, SECRET, KEY, PASSWORD, ...). KFORGE_WORKER_ENV=NAME,... adds names.
bool worker_env_allowed(std::string_view name);
// The worker's environment ("NAME=value" strings): the allowed part of `parent` (environ-style, null-ended; all of
// it without `allowlist`, for --sandbox off), then `set` (which wins; used for HOME, TMPDIR and test settings).
std::vector<std::string> worker_environment(char** parent, const std::map<std::string, std::string>& set,
                                            bool allowlist = true);

// One protection as the worker found it.
struct protection {
  std::string name;    // "environment", "network_namespace", "landlock", "seccomp"
  bool active = false;
  std::string detail;  // what it covers, or why it is not active
};
// The protections, as the worker reports them in its hello ({"mode": ..., "protections": [...]}).
nlohmann::json protections_to_json(sandbox_mode mode, const std::vector<protection>& p);
// The names of the protections that `report` (a hello's "sandbox") lists as not active; for strict mode.
std::vector<std::string> inactive_protections(const nlohmann::json& report);

// The comma-separated items of an environment variable (KFORGE_WORKER_ENV, KFORGE_SANDBOX_SKIP, ...); empty ones
// dropped.
std::vector<std::string> env_list(const char* variable);
// KFORGE_SANDBOX_SKIP=network_namespace,landlock,seccomp leaves those out (finding which one a library cannot
// live with); each is then reported as not active, so strict refuses.
bool sandbox_skipped(std::string_view name);
protection skipped_protection(std::string_view name);

// Worker side. Must run while the worker has one thread (Landlock and namespaces bind the calling thread and
// what it starts later). Appends to `out`; returns the folders the worker may write beneath (the scratch folder,
// /tmp when it is private, KFORGE_SANDBOX_WRITE's), for enter_sandbox_filter.
std::vector<std::string> enter_sandbox_early(const std::string& scratch, std::vector<protection>& out);
// The network and mount namespaces (a private /tmp); true when /tmp is private (sandbox_namespaces.cpp).
bool enter_namespaces(const std::string& scratch, std::vector<protection>& out);
// Installs the seccomp filter on every thread, and the supervisor thread that answers what it denies.
void enter_sandbox_filter(const std::vector<std::string>& writable, std::vector<protection>& out);

// A call the sandbox denied, for the verdict.
struct sandbox_denial {
  std::string rule;    // "sandbox.network", "sandbox.process", ...
  std::string detail;  // "socket(AF_INET) denied", "openat(\"/etc/x\", write) denied: outside the scratch folder"
};
// The denials recorded since the last call (and clears them). Safe to call when no filter is installed.
std::vector<sandbox_denial> take_sandbox_denials();
nlohmann::json denials_to_json(const std::vector<sandbox_denial>& d);

}  // namespace kf

namespace kf {

// The files this process has mapped as code (/proc/self/maps, executable, file-backed), for `sandbox.library`:
// a candidate that loads a library or maps a file as code while it runs is named, whether it went through the
// dynamic loader or raw system calls.
std::vector<std::string> code_mappings();
// The entries of `after` that `before` lacks.
std::vector<std::string> new_code_mappings(const std::vector<std::string>& before, const std::vector<std::string>& after);

}  // namespace kf
