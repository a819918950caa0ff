// The worker's `verify` command (docs/worker-protocol.md): runs the dynamic rules of docs/design.md "Verify" on one
// implementation for the requested cases and seeds, and answers with a verdict.
//
// Request: {"cmd": "verify", "spec": <spec JSON>, "impl": {...}, "cases": [names; empty = every case that runs on
// this device kind], "seeds": N (default 3), "options": {"base_seed": 1, "adversarial": true,
// "cpu_settle_ms": 20}}.
// Response: {"ok": true, "verdict": {...}, "seconds": s}; on a poisoned CUDA context {"ok": false, "kind":
// "cuda_poisoned", "error": ..., "verdict": <the checks so far, with the failed cuda_error check>}. A candidate
// kernel that runs in this process and leaves work on a cpu thread (`stream` failed), or during whose case the
// worker itself fails (anything but running out of memory), may have written the worker's own memory: the answer
// is {"ok": false, "kind": "tainted", "error": ..., "verdict": <with that failure>} and the worker exits.
#pragma once
#include <nlohmann/json.hpp>

#include "exec/worker_command.h"

namespace kf {

nlohmann::json verify_command(const nlohmann::json& request, worker_context& ctx);

}  // namespace kf
