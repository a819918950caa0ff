// kforge capture's analysis of a trace, start to end: lift the operators to spec ops (lift.h), chain them into
// patterns (group.h), write each call as a spec graph (pattern.h), merge the calls of each pattern into one
// workload (merge.h), rank the workloads by their share of the model's traced time and name them, and list what
// no spec expresses, by operator, with its share. The result is a plain record that the summary (summary.h) and
// the spec writer (spec_yaml.h) render.
#pragma once
#include <string>
#include <vector>

#include "capture/merge.h"
#include "capture/trace.h"

namespace kf::capture {

struct uncovered_op {
  std::string op;                  // "aten.mm.default"
  int calls = 0;
  double time_us = 0;
  std::vector<std::string> where;  // module paths, layers folded
};

struct capture_result {
  std::string model;          // FILE.py:FUNCTION
  std::string device;
  std::string torch_version;
  size_t operators = 0;       // in the trace
  double total_us = 0;        // the sum of every operator's time: what shares are of
  std::vector<captured_workload> workloads;  // ranked, largest share first; named
  std::vector<uncovered_op> uncovered;       // ranked, largest share first

  double share(double time_us) const { return total_us > 0 ? time_us / total_us : 0; }
};

capture_result analyze(const trace& t);

// "examples/models/llama3_decoder.py:make" -> "llama3-decoder": the workloads' name prefix.
std::string model_slug(const std::string& model);

}  // namespace kf::capture
