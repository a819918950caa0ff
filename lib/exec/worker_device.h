// The worker's device setup and its `env` command, defined on the device side (worker_device_torch.cpp). The
// command table is tool/worker/main.cpp's.
#pragma once
#include "exec/worker_command.h"

namespace kf {

// Binds the worker to its device (cudaSetDevice) and installs the device health check.
void worker_setup(worker_context& ctx);

// The environment as the worker sees it (docs/worker-protocol.md `env`). Also used by `measure`.
nlohmann::json worker_env(const worker_context& ctx);
// The `env` command: {"ok": true, "env": worker_env(ctx)}.
nlohmann::json env_command(const nlohmann::json& request, worker_context& ctx);

}  // namespace kf
