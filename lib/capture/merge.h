// Merging the calls of one pattern (the same graph, dtypes and arguments: one signature) into one workload with
// a case per distinct shape, symbols where the sizes vary (symbols.h), the results read outside the pattern
// returned through `as` and `outputs`, the case with the largest share of the time gated, and the bundled
// workloads' baselines and gate.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "capture/pattern.h"
#include "spec/spec.h"

namespace kf::capture {

struct case_stats {
  int calls = 0;
  double time_us = 0;
  int64_t bytes = 0;  // one call's inputs and results
};

struct captured_workload {
  workload_spec spec;              // complete but for its name and model line (capture.h sets them)
  std::string pattern;             // "add -> rms_norm"
  std::vector<std::string> where;  // where in the model, layers folded: "layers.* + layers.*.input_layernorm"
  std::vector<case_stats> stats;   // per case, in spec.cases' order (the largest share first)
  int calls = 0;
  double time_us = 0;
};

struct merge_options {
  std::string device = "cpu";             // where the trace ran
  int64_t cpu_case_bytes = 64ll << 20;    // a case captured on cuda that moves more runs on cuda only
};

// One workload per signature, in the order each was first seen.
std::vector<captured_workload> merge_patterns(const std::vector<pattern_call>& calls, const merge_options& o = {});

// Module paths with the layer numbers folded where several layers share one: {"layers.0.mlp", "layers.1.mlp"}
// -> {"layers.*.mlp"}; a path seen once stays as it is.
std::vector<std::string> fold_layers(const std::vector<std::string>& paths);

}  // namespace kf::capture
