// The worker's `measure` command (docs/worker-protocol.md): times the requested implementations of each
// gated case together, interleaved, and reports samples, floors and the environment.
#pragma once
#include <nlohmann/json.hpp>

#include "exec/worker_command.h"

namespace kf {

nlohmann::json measure_command(const nlohmann::json& request, worker_context& ctx);

}  // namespace kf
