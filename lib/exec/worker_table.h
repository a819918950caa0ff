// The worker's command table and device setup, defined on the device side (worker_commands_torch.cpp).
#pragma once
#include <vector>

#include "exec/worker_command.h"

namespace kf {

const std::vector<worker_command>& worker_commands();
// Binds the worker to its device (cudaSetDevice) and installs the device health check.
void worker_setup(worker_context& ctx);

// The environment as the worker sees it (docs/worker-protocol.md `env`). Also used by `measure`.
nlohmann::json worker_env(const worker_context& ctx);

}  // namespace kf
