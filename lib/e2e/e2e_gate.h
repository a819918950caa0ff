// The e2e gate of `kforge run E2E.yaml` (docs/design.md "End-to-end latency"): a model's e2e result as one entry of
// the run's record, `e2e:<name>`, so that the reporters, the history note and the exit code treat it as any workload.
// Its cases are the baselines the operators are held to: case "eager" times the kforge variant (as "kernel") against
// eager, case "compile" compile_kforge against compile. Its checks:
//   kernel              kforge.patch patched at least one module
//   verify[<variant>]   the variant's outputs match eager's within the tolerance
//   beats[<b>][<b>]     the gate's paired-ratio check (gate/gate.h beats_check), required for e2e.must_beat
//   speedup[eager]      the kforge variant's median speedup over eager reaches e2e.min_speedup (when above 1)
//   regression[<b>]     not slower than the history note's entry (gate/gate.h regression_check, "history")
//   amdahl[eager]       measured gain / predicted gain >= e2e.min_predicted_fraction (advisory when not set); the
//                       prediction from the capture's shares where a replaced workload's spec has them, else from
//                       the in-model profile, the message saying which
#pragma once
#include "e2e/e2e_result.h"
#include "e2e/e2e_spec.h"
#include "gate/gate.h"

namespace kf::e2e {

// The run-record entry of a result (cases, impls, summaries; no checks yet). `workloads` is where the kernels were.
workload_result to_workload_result(const e2e_result& r, const e2e_spec& spec, const std::string& workloads);

// Fills w.checks from the result and the spec; `history.previous` is the same entry in the history note, if any.
void apply_e2e_gate(workload_result& w, const e2e_result& r, const e2e_spec& spec, const history_context& history,
                    const gate_options& options = {});

// The amdahl[eager] check alone (part of apply_e2e_gate).
gate_check amdahl_check(const e2e_result& r, const e2e_spec& spec);

// The entry of an e2e run that could not run at all (the model failed to load): one failed check saying why.
workload_result failed_entry(const e2e_spec& spec, const std::string& why);

}  // namespace kf::e2e
