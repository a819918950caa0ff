// What the worker's commands look like (docs/worker-protocol.md): a table of named handlers that take a request
// and return a response. The table itself is beside the worker's main (tool/worker/main.cpp); to add a command,
// write a handler and add one line there. Core header: no LibTorch here.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/device.h"

namespace kf {

// The worker's state, shared by the commands.
struct worker_context {
  device_id device;
  bool shutdown = false;                        // set by `shutdown`: exit after replying
  // Returns "" while the device is usable, else what is wrong (a sticky CUDA error). Set by the device side;
  // the loop asks after every command and turns a bad answer into a cuda_poisoned response and an exit.
  std::function<std::string()> device_health;
  nlohmann::json sandbox = nlohmann::json::object();  // the protections in force (hello's "sandbox")
};

// A handler returns the response ({"ok": true, ...}). It reports a candidate's failure in the response and
// throws only for a bad request (user_error) or the environment (infra_error, std::exception).
using worker_handler = std::function<nlohmann::json(const nlohmann::json& request, worker_context& ctx)>;

struct worker_command {
  std::string name;
  std::string summary;
  worker_handler run;
};

// Exit code of a worker that stops because its CUDA context is poisoned.
constexpr int k_worker_exit_poisoned = 3;
// Exit code of a worker that stops because an untrusted candidate may have corrupted its memory (a handler
// answers kind "tainted"): the client starts a fresh one for the next request.
constexpr int k_worker_exit_tainted = 4;

// The worker's main loop: protects the protocol pipe from stray output (fd 1 becomes stderr), exits when the
// parent dies, reads requests, dispatches through `table`, writes responses. Returns the process exit code.
int run_worker(int argc, char** argv, const std::vector<worker_command>& table,
               const std::function<void(worker_context&)>& setup);

// Commands that need no device library: hello, shutdown, and (with KFORGE_WORKER_TEST=1) `debug`, which
// crashes, hangs, exits or writes garbage on request so the parent's failure handling can be tested.
std::vector<worker_command> core_worker_commands();

}  // namespace kf
